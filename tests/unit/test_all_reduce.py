"""Runtime all-reduce: values against numpy, the documented ring schedule and byte rule, the trace, bad input."""

import numpy as np
import pytest

from dfcore import errors
from dfcore.distribute import all_reduce, batch_all_reduce, build_schedule, ring_bytes_sent
from dfcore.distribute.schedules import chunk_layout
from dfcore.runtime.rendezvous import Rendezvous

ALGORITHMS = ("ring", "reduce_to_one", "tree", "recursive_halving_doubling")
GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"


def _inputs(n, shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("n", range(1, 10))
def test_sum_equals_numpy_for_every_n_and_uneven_lengths(algorithm, n):
    for length in (0, 1, n - 1, 7, 37):
        values = _inputs(n, (length,), seed=length)
        result = all_reduce(values, algorithm=algorithm)
        want = np.sum(values, axis=0)
        assert len(result.outputs) == n
        for out in result.outputs:
            np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("reduction,reference", [("mean", np.mean), ("max", np.max)])
def test_mean_and_max_with_subchunks_and_shapes(algorithm, reduction, reference):
    values = _inputs(5, (3, 7))
    result = all_reduce(values, algorithm=algorithm, reduction=reduction, num_subchunks=3)
    for out in result.outputs:
        assert out.shape == (3, 7) and out.dtype == np.float64
        np.testing.assert_allclose(out, reference(values, axis=0), rtol=1e-12)


@pytest.mark.parametrize("dtype,rtol", [(np.float16, 2e-3), (np.float32, 1e-6), (np.float64, 1e-14)])
def test_dtypes_are_kept(dtype, rtol):
    values = _inputs(4, (33,), dtype)
    result = all_reduce(values)
    for out in result.outputs:
        assert out.dtype == dtype
        np.testing.assert_allclose(out.astype(np.float64), np.sum(np.array(values, np.float64), 0), rtol=rtol,
                                   atol=rtol)


def test_every_rank_gets_bitwise_the_same_result_and_inputs_are_untouched():
    values = _inputs(6, (101,), np.float32)
    before = [v.copy() for v in values]
    result = all_reduce(values)
    for out in result.outputs[1:]:
        assert np.array_equal(out, result.outputs[0])
        assert not np.shares_memory(out, result.outputs[0])
    for v, b in zip(values, before):
        assert np.array_equal(v, b)


def test_in_place_writes_the_inputs():
    values = _inputs(3, (10,))
    want = np.sum(values, 0)
    result = all_reduce(values, in_place=True)
    for v, out in zip(values, result.outputs):
        assert out is v
        np.testing.assert_allclose(v, want)


def test_chunking_rule_is_array_split():
    assert chunk_layout(10, 1, 4) == ((0, 3), (3, 6), (6, 8), (8, 10))
    assert chunk_layout(2, 1, 4) == ((0, 1), (1, 2), (2, 2), (2, 2))
    assert chunk_layout(10, 2, 2) == ((0, 3), (3, 5), (5, 8), (8, 10))
    for k, n in ((37, 5), (3, 8), (64, 4)):
        sizes = [b - a for a, b in chunk_layout(k, 1, n)]
        assert sizes == [len(p) for p in np.array_split(np.arange(k), n)]


@pytest.mark.parametrize("convention,offset", [("textbook", 0), ("nccl", 1)])
def test_ring_schedule_follows_the_documented_convention(convention, offset):
    n = 5
    trace = all_reduce(_inputs(n, (23,)), convention=convention).trace
    assert trace.num_rounds == 2 * (n - 1)
    for record in trace.rounds:
        s = record.round
        assert record.phase == ("scatter_reduce" if s < n - 1 else "allgather")
        assert len(record.transfers) == n
        for t in record.transfers:
            i = t.src
            assert t.dst == (i + 1) % n
            if s < n - 1:
                assert t.chunk_id == (i - s - offset) % n and t.op == "reduce"
            else:
                assert t.chunk_id == (i + 1 - (s - n + 1) - offset) % n and t.op == "copy"
    # after scatter-reduce, rank i owns the full sum of chunk (i+1) mod n (textbook) or i (NCCL)
    values = trace.inputs
    last = trace.rounds[n - 2]
    for t in last.transfers:
        owned = (t.dst + 1 - offset) % n
        assert t.chunk_id == owned
        lo, hi = trace.chunk_ranges[owned]
        np.testing.assert_allclose(t.partial_sum_after, np.sum([v[lo:hi] for v in values], 0))


def test_trace_values_are_the_partial_sums_round_by_round():
    values = [np.arange(8.0) * (r + 1) for r in range(4)]
    trace = all_reduce(values).trace
    state = [v.copy() for v in values]
    for record in trace.rounds:
        for t in record.transfers:
            lo, hi = t.element_range
            np.testing.assert_array_equal(t.value_sent, state[t.src][lo:hi])
        for t in record.transfers:  # a round's messages were all sent from the previous state
            lo, hi = t.element_range
            state[t.dst][lo:hi] = state[t.dst][lo:hi] + t.value_sent if t.op == "reduce" else t.value_sent
            np.testing.assert_array_equal(t.partial_sum_after, state[t.dst][lo:hi])
    assert trace.rounds[0].transfers[1].partial_sum_after.tolist() == [10.0, 15.0]  # GPU:2: 3·[2, 3] + 2·[2, 3]


@pytest.mark.parametrize("n", range(2, 10))
@pytest.mark.parametrize("length", [1, 10, 37, 64])
def test_ring_bytes_per_device_follow_the_stated_rule(n, length):
    result = all_reduce(_inputs(n, (length,), np.float32), devices=[GPU.format(i) for i in range(n)])
    sent = result.trace.bytes_sent_per_device
    sizes = [b - a for a, b in chunk_layout(length, 1, n)]
    for i in range(n):
        rule = 4 * (2 * length - sizes[(i + 1) % n] - sizes[(i + 2) % n])
        assert sent[GPU.format(i)] == rule == ring_bytes_sent(i, n, length, 4)
        assert rule <= 2 * (n - 1) * -(-length // n) * 4
        if length % n == 0:
            assert rule == 2 * (n - 1) * length // n * 4
    assert sum(sent.values()) == 2 * (n - 1) * length * 4
    assert sum(r.nbytes for r in result.transfers) == sum(sent.values())
    assert sum(result.trace.bytes_per_link.values()) == sum(sent.values())


def test_every_message_crosses_the_rendezvous_with_its_key():
    rendezvous = Rendezvous()
    result = all_reduce(_inputs(3, (9,)), rendezvous=rendezvous, name="grads")
    transfers = rendezvous.transfers()
    assert len(transfers) == 2 * 2 * 3 == len(result.transfers)
    assert transfers[0].tensor_name == "grads/ring/r0/c0"
    assert [t.key for t in result.trace.transfers] == [r.key for r in transfers]
    assert all(r.src_device != r.dst_device for r in transfers)


def test_trace_can_be_turned_off_or_kept_without_values():
    values = _inputs(4, (16,))
    assert all_reduce(values, trace=False).trace is None
    lean = all_reduce(values, trace_values=False).trace
    assert lean.transfers[0].value_sent is None and lean.inputs is None
    assert lean.bytes_sent_per_device == all_reduce(values).trace.bytes_sent_per_device


def test_n_equals_one_and_zero_length():
    (out,) = all_reduce([np.arange(3.0)], devices=["/gpu:0"]).outputs
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])
    result = all_reduce([np.zeros((0, 4), np.float32)] * 3)
    assert [o.shape for o in result.outputs] == [(0, 4)] * 3
    assert sum(result.trace.bytes_sent_per_device.values()) == 0


def test_nan_propagates_and_check_numerics_flags_it():
    values = _inputs(3, (5,))
    values[1][2] = np.nan
    for out in all_reduce(values).outputs:
        assert np.isnan(out[2]) and not np.isnan(np.delete(out, 2)).any()
    with pytest.raises(errors.InvalidArgumentError, match="GPU:1 : Tensor had NaN values"):
        all_reduce(values, check_numerics=True)


@pytest.mark.parametrize("values,kwargs,error,match", [
    ([], {}, ValueError, "empty list"),
    ([np.zeros(3), np.zeros(4)], {}, ValueError, "one shape"),
    ([np.zeros(3), np.zeros(3, np.float32)], {}, TypeError, "one dtype"),
    ([np.zeros(3, np.int32)] * 2, {}, TypeError, "float16, float32 and float64"),
    ([np.zeros(3)] * 2, {"devices": ["/gpu:0", "/device:GPU:0"]}, ValueError, "listed twice"),
    ([np.zeros(3)] * 2, {"devices": ["/gpu:0"]}, ValueError, "one device per tensor"),
    ([np.zeros(3)] * 2, {"algorithm": "butterfly"}, ValueError, "Unknown all-reduce algorithm"),
    ([np.zeros(3)] * 2, {"reduction": "prod"}, ValueError, "Unknown reduction"),
    ([np.zeros(3)] * 2, {"num_subchunks": 0}, ValueError, "num_subchunks"),
])
def test_bad_input(values, kwargs, error, match):
    with pytest.raises(error, match=match):
        all_reduce(values, **kwargs)


class _FailingRendezvous(Rendezvous):
    """A device that dies after ``after`` messages: its next send fails."""

    def __init__(self, after):
        super().__init__()
        self.after = after

    def send(self, key, value, nbytes=None, copy=True):
        if len(self.transfers()) == self.after:
            raise errors.UnavailableError(None, None, "GPU:2 failed")
        return super().send(key, value, nbytes, copy)


def test_device_failing_mid_ring_aborts_with_the_first_error():
    rendezvous = _FailingRendezvous(after=7)
    with pytest.raises(errors.UnavailableError, match="GPU:2 failed"):
        all_reduce(_inputs(4, (16,)), rendezvous=rendezvous)
    assert rendezvous.is_aborted
    with pytest.raises(errors.AbortedError, match="GPU:2 failed"):  # every later transfer fails too
        rendezvous.recv("/gpu:0;0000000000000001;/gpu:1;x;0:0", timeout_s=1)


def test_schedules_are_deterministic_and_cover_every_chunk():
    for algorithm in ALGORITHMS:
        for n in (1, 3, 6, 8):
            a = build_schedule(algorithm, n, 50)
            assert a is build_schedule(algorithm, n, 50)
            covered = sorted(c for m in a.messages for c in m.chunks)
            assert set(covered) <= set(range(len(a.chunk_ranges)))


def test_fusion_packs_small_tensors_and_shows_the_copies():
    per_device = [[np.full(3, d, np.float32), np.full((2, 2), d, np.float32), np.ones(100, np.float32),
                   np.ones(2)] for d in range(3)]
    result = batch_all_reduce(per_device, fusion_threshold_bytes=64)
    assert result.groups == ((0, 1), (2,), (3,))
    np.testing.assert_array_equal(result.outputs[2][1], np.full((2, 2), 3.0))
    assert result.outputs[0][3].dtype == np.float64
    copies = result.results[0].trace.fusion_copies
    assert [c.name for c in copies].count("MEMCPY_IN_FUSION_BUFFER") == 6
    assert [c.name for c in copies].count("MEMCPY_OUT_FUSION_BUFFER") == 6
    assert copies[1].buffer_range == (3, 7) and copies[1].nbytes == 16
    unfused = batch_all_reduce(per_device, fusion_threshold_bytes=0)
    assert unfused.groups == ((0,), (1,), (2,), (3,))
    assert result.results[0].simulated_time_s < sum(r.simulated_time_s for r in unfused.results[:2])
