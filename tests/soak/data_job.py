"""The soak's tf.data kind: input pipelines broken the way users break them, run beside the MPI jobs.

    python tests/soak/data_job.py --duration-s 60 --seed 0 --out summary.json

run_soak.py starts this program in its own process (:func:`start`) for the soak's whole duration, so the
soak takes no longer, and adds its tallies and violations to the table (:func:`collect`). Each round runs
one scenario, drawn with the seed:

* ``failing_map``: ``range(n).map(f)`` where ``f`` (a raising ``py_func`` or ``check_numerics`` on a NaN)
  fails on random elements, with random ``num_parallel_calls``, ``prefetch``, ``batch`` and
  ``ignore_errors``; the invariant: every element delivered exactly once, in order, or reported as an
  error (a batch holding a failed element is one error, as TF's ``batch``);
* ``hanging_generator``: a ``from_generator`` source that hangs after ``k`` elements, read with a deadline;
  invariants: ``k`` elements then ``DeadlineExceededError``, ``Session.close()`` within 1 s, the abandoned
  generator thread reported, and gone once the generator returns;
* ``deadline_shuffle``: an endless source into ``shuffle(10**12)`` (optionally ``prefetch``) read with a
  deadline; invariant: no element is pulled into the buffer after the step is aborted (bounded memory);
* ``closed_mid_stream``: the session closes while another thread reads a parallel-map pipeline; invariants:
  that read ends with ``CancelledError``, the elements read before it are a prefix of the input, in order.

After every round: no pipeline thread left, and the process's RSS stays flat (:mod:`invariants`).
"""

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import invariants

import dfcore as tf

CLOSE_BOUND_S = 1.0
SCENARIOS = ("failing_map", "hanging_generator", "deadline_shuffle", "closed_mid_stream")
ERROR = "error"


def expected_outcomes(n: int, failing: set, batch: int | None, ignore: bool) -> list:
    """What TF delivers for ``range(n).map(f)[.batch(batch)][.ignore_errors()]``, ``f`` failing on ``failing``:
    element values (lists for batches) and ERROR, in order."""
    outcomes: list = []
    current: list = []
    for i in range(n):
        if i in failing:
            current = []
            outcomes.append(ERROR)
        elif batch is None:
            outcomes.append(i)
        else:
            current.append(i)
            if len(current) == batch:
                outcomes.append(current)
                current = []
    if current:
        outcomes.append(current)
    return [o for o in outcomes if o != ERROR] if ignore else outcomes


def _drain(sess, get_next, limit: int) -> list:
    outcomes: list = []
    for _ in range(limit):
        try:
            value = sess.run(get_next)
        except tf.errors.OutOfRangeError:
            return outcomes
        except tf.errors.InvalidArgumentError:
            outcomes.append(ERROR)
            continue
        outcomes.append(np.asarray(value).astype(np.int64).tolist())
    return outcomes + ["no end of sequence"]


def failing_map(rng: random.Random) -> list:
    n = rng.randint(5, 60)
    failing = set(rng.sample(range(n), rng.randint(0, min(5, n))))
    batch = rng.choice([None, None, 1, 3, 7])
    ignore, parallel, prefetch = rng.random() < 0.3, rng.choice([None, 2, 4]), rng.choice([None, 1, 3])
    use_py_func = rng.random() < 0.5

    def raising(x):
        if int(x) in failing:
            raise ValueError(f"element {x} fails")
        return x

    def map_fn(x):
        if use_py_func:
            return tf.py_func(raising, [x], tf.int64)
        bad = tf.reduce_any(tf.equal(x, tf.constant(sorted(failing) or [-1], tf.int64)))
        value = tf.cast(x, tf.float64)
        return tf.check_numerics(tf.where(bad, value * np.nan, value), "failing element")

    with tf.Graph().as_default():
        dataset = tf.data.Dataset.range(n).map(map_fn, num_parallel_calls=parallel)
        dataset = dataset.prefetch(prefetch) if prefetch else dataset
        dataset = dataset.batch(batch) if batch else dataset
        dataset = dataset.apply(tf.data.experimental.ignore_errors()) if ignore else dataset
        get_next = tf.data.make_one_shot_iterator(dataset).get_next()
        with tf.Session() as sess:
            got = _drain(sess, get_next, 2 * n + 2)
    expected = expected_outcomes(n, failing, batch, ignore)
    if got != expected:
        return [f"failing_map n={n} failing={sorted(failing)} batch={batch} parallel={parallel} "
                f"prefetch={prefetch} ignore={ignore}: delivered {got}, expected {expected}"]
    return []


def _closed_promptly(sess, what: str) -> list:
    started = time.monotonic()
    sess.close()
    took = time.monotonic() - started
    return [f"{what}: Session.close() took {took:.2f} s (bound {CLOSE_BOUND_S:g} s)"] if took > CLOSE_BOUND_S else []


def hanging_generator(rng: random.Random) -> list:
    k, release = rng.randint(0, 3), threading.Event()
    prefetch = rng.random() < 0.5

    def gen():
        yield from range(k)
        release.wait()
        yield k

    problems = []
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.from_generator(gen, tf.int64, [])
        dataset = dataset.prefetch(2) if prefetch else dataset
        get_next = tf.data.make_one_shot_iterator(dataset).get_next()
        sess = tf.Session()
        got: list = [int(sess.run(get_next)) for _ in range(k)]
        try:
            sess.run(get_next, options=tf.RunOptions(timeout_in_ms=rng.randint(50, 300)))
            got.append("no deadline")
        except tf.errors.DeadlineExceededError:
            pass
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            problems += _closed_promptly(sess, "hanging_generator")
    if got != list(range(k)):
        problems.append(f"hanging_generator k={k}: delivered {got}, expected {list(range(k))} then a deadline")
    if sum("abandoned" in str(w.message) for w in caught) != 1:
        problems.append(f"hanging_generator: {len(caught)} warnings, expected one about the abandoned thread")
    release.set()
    return problems


def deadline_shuffle(rng: random.Random) -> list:
    pulled = [0]

    def gen():
        for i in itertools.count():
            pulled[0] = i + 1
            yield i

    prefetch = rng.random() < 0.5
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.from_generator(gen, tf.int64, []).shuffle(10 ** 12)
        dataset = dataset.prefetch(10 ** 9) if prefetch else dataset
        get_next = tf.data.make_one_shot_iterator(dataset).get_next()
        sess = tf.Session()
        try:
            sess.run(get_next, options=tf.RunOptions(timeout_in_ms=rng.randint(50, 300)))
        except tf.errors.DeadlineExceededError:
            pass
        time.sleep(0.05)
        after_abort = pulled[0]
        time.sleep(0.2)
        problems = []
        if pulled[0] > after_abort + 1:  # one pull may have been in flight on a descheduled thread
            problems.append(f"deadline_shuffle prefetch={prefetch}: {pulled[0] - after_abort} elements pulled "
                            "into the buffer after the step was aborted")
        return problems + _closed_promptly(sess, "deadline_shuffle")


def closed_mid_stream(rng: random.Random) -> list:
    n = 10 ** 6
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.range(n).map(lambda x: x * 1, num_parallel_calls=rng.choice([2, 3]))
        get_next = tf.data.make_one_shot_iterator(dataset.prefetch(rng.choice([1, 4]))).get_next()
        sess = tf.Session()
        got, ended = [], []

        def read():
            try:
                while True:
                    got.append(int(sess.run(get_next)))
            except tf.errors.CancelledError:
                ended.append("cancelled")
            except (tf.errors.OpError, RuntimeError) as error:
                ended.append(type(error).__name__)

        reader = threading.Thread(target=read, name="soak_reader")
        reader.start()
        time.sleep(rng.uniform(0.05, 0.3))
        problems = _closed_promptly(sess, "closed_mid_stream")
        reader.join(10)
    # a read starting after close gets RuntimeError ("Attempted to use a closed Session.") as TF's
    if reader.is_alive() or ended not in (["cancelled"], ["RuntimeError"]):
        problems.append(f"closed_mid_stream: the reading step ended with {ended or 'nothing (still running)'}")
    if got != list(range(len(got))):
        problems.append("closed_mid_stream: the elements read are not the input's prefix in order")
    return problems


def _pipeline_threads(wait_s: float = 10.0) -> list:
    deadline = time.monotonic() + wait_s
    for thread in [t for t in threading.enumerate() if t.name.startswith("tf_data")]:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threading.enumerate() if t.name.startswith("tf_data")]


def run(duration_s: float, seed: int) -> dict:
    """Rounds of random scenarios for ``duration_s`` seconds: ``{"rounds": {scenario: count}, "violations":
    [...], "rss_mib": [first, last]}``."""
    rng, end = random.Random(seed), time.monotonic() + duration_s
    rounds = dict.fromkeys(SCENARIOS, 0)
    violations, rss = [], []
    baseline = threading.active_count()
    while time.monotonic() < end:
        scenario = rng.choice(SCENARIOS)
        rounds[scenario] += 1
        problems = globals()[scenario](rng)
        left = _pipeline_threads()
        problems += [f"{scenario}: pipeline threads left: {left}"] if left else []
        problems += invariants.thread_problems(baseline)
        rss.append(invariants.rss_bytes())
        violations += [f"tf.data round {sum(rounds.values())} ({scenario}): {p}" for p in problems]
    violations += invariants.memory_problems(rss)
    return {"rounds": rounds, "violations": violations,
            "rss_mib": [round(rss[0] / 2 ** 20), round(rss[-1] / 2 ** 20)] if rss else []}


def start(duration_s: float, seed: int, out_path: str) -> subprocess.Popen:
    """This program in its own process for ``duration_s`` seconds, writing its summary to ``out_path``."""
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--duration-s", str(duration_s),
                             "--seed", str(seed), "--out", out_path])


def collect(process: subprocess.Popen, out_path: str, timeout_s: float = 60.0) -> tuple[list, list]:
    """``(table rows, violations)`` of a run :func:`start` began, once it has ended."""
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return [("tf.data rounds", "-")], [f"the tf.data soak did not end within {timeout_s:g} s of the soak"]
    if process.returncode != 0 or not os.path.exists(out_path):
        return [("tf.data rounds", "-")], [f"the tf.data soak exited with {process.returncode} and no summary"]
    with open(out_path) as f:
        summary = json.load(f)
    rounds = ", ".join(f"{k} {v}" for k, v in summary["rounds"].items())
    rss = summary["rss_mib"]
    return ([("tf.data rounds", rounds),
             ("tf.data RSS first / last round", f"{rss[0]} MiB / {rss[1]} MiB" if rss else "-")],
            summary["violations"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    summary = run(args.duration_s, args.seed)
    with open(args.out, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
