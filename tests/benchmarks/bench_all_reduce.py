"""Ring all-reduce on simulated devices vs plain numpy, small-message cost, and the cost of tracing.

(a) 4 devices × 16 MiB float32: ``dfcore.distribute.all_reduce`` (ring, out of place,
no trace) vs plain numpy reduce + broadcast (three adds into a fresh buffer, three
copies: every device ends with its own sum) — target ≤ 1.2× (issue 14; each message is
copied once: the receiver's reduction or copy into its output reads the sender's chunk).
(b) 4 devices × 1 KiB: wall time per chunk transfer (24 transfers) — target ≤ 2 µs, and no more
than a bare rendezvous ``send`` + ``recv_async`` of the same chunks and keys (copied, as a
``_Send`` across devices is) + 1 µs (issue 14).
(c) 16 MiB: trace with chunk records (no values) vs no trace — target ≤ 5% (G7); and
the full trace with every value sent and partial sum, which keeps ≈ 3(N−1)/N·K
elements of fresh memory per device (reported, no target).
Ratios of paired, interleaved samples; never a pass/fail on time.
"""

import statistics

import numpy as np
from _timing import interleaved_samples_s, median_ratio, report

from dfcore.distribute import all_reduce, schedules
from dfcore.distribute.all_reduce import canonical_devices, message_keys
from dfcore.runtime.rendezvous import Rendezvous

REPEATS = 15
N = 4


def reduce_broadcast(values):
    """Plain numpy: sum into one fresh buffer, then one copy per other device."""
    total = np.add(values[0], values[1])
    for v in values[2:]:
        np.add(total, v, out=total)
    return [total] + [total.copy() for _ in values[1:]]


def bare_transfers(chunks):
    """A callable making the ring's messages as bare rendezvous transfers: one ``send`` (a copy across
    devices) and one ``recv_async`` per message of a 4 × ``chunks`` ring, on a fresh rendezvous."""
    schedule = schedules.build_schedule("ring", N, N * chunks.size, 1, "textbook", 0)
    keys = [k for k in message_keys(schedule, canonical_devices(None, N), "bare") if k is not None]

    def done(error, value):
        pass

    def run():
        rendezvous = Rendezvous()
        for key in keys:
            rendezvous.send(key, chunks)
            rendezvous.recv_async(key, done)

    return run, len(keys)


def main():
    """Print the three ratios and the per-transfer time."""
    rng = np.random.default_rng(0)
    big = [rng.random(4 << 20, dtype=np.float32) for _ in range(N)]  # 16 MiB each
    ring_t, numpy_t = interleaved_samples_s(
        [lambda: all_reduce(big, trace=False), lambda: reduce_broadcast(big)], REPEATS, warmup=2)
    small = [rng.random(256, dtype=np.float32) for _ in range(N)]  # 1 KiB each
    transfers = 2 * (N - 1) * N
    bare, bare_count = bare_transfers(small[0][:small[0].size // N])
    assert bare_count == transfers
    small_t, bare_t = interleaved_samples_s([lambda: all_reduce(small, trace=False), bare], 200, warmup=20, inner=5)
    meta_t, off_t, full_t = interleaved_samples_s(
        [lambda: all_reduce(big, trace_values=False), lambda: all_reduce(big, trace=False),
         lambda: all_reduce(big)], REPEATS, warmup=2)
    small_sorted = sorted(small_t)
    print(f"ring all-reduce, {N} devices; medians of interleaved rounds")
    report([
        ("(a) ring 4x16 MiB vs numpy reduce+broadcast (target <= 1.2x)", median_ratio(ring_t, numpy_t), "x"),
        ("    ring 4x16 MiB, median", sorted(ring_t)[len(ring_t) // 2] * 1e3, "ms"),
        ("    numpy reduce+broadcast, median", sorted(numpy_t)[len(numpy_t) // 2] * 1e3, "ms"),
        ("(b) 4x1 KiB, per chunk transfer (target <= 2 us)", small_sorted[len(small_sorted) // 2] / transfers * 1e6,
         "us"),
        ("    bare rendezvous send + recv_async per chunk", sorted(bare_t)[len(bare_t) // 2] / transfers * 1e6, "us"),
        ("    all-reduce minus bare, per chunk (target <= 1 us)",
         statistics.median(a - b for a, b in zip(small_t, bare_t)) / transfers * 1e6, "us"),
        ("(c) chunk trace on vs off at 16 MiB (target <= 1.05x)", median_ratio(meta_t, off_t), "x"),
        ("    trace with values vs off at 16 MiB", median_ratio(full_t, off_t), "x"),
    ])


if __name__ == "__main__":
    main()
