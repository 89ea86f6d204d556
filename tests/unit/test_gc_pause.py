"""The cyclic garbage collector is off while a run signature compiles, and as it was afterwards.

Reference: CPython's ``gc.isenabled``; the pause exists because a big graph's first run spent about half
its time in full collections (tests/benchmarks/bench_first_run.py). Nothing here is timed.
"""

import gc
import weakref

import numpy as np

import dfcore as tf
from dfcore.runtime import step_plan
from dfcore.runtime.gc_pause import gc_paused


def test_pause_nests_and_restores_the_collector():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_a_collector_the_program_switched_off_stays_off():
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_collector_comes_back_when_the_compile_raises():
    try:
        with gc_paused():
            raise ValueError("compile failed")
    except ValueError:
        pass
    assert gc.isenabled()


def test_session_compiles_with_the_collector_off(monkeypatch):
    seen = []
    build = step_plan.build_step_plan

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return build(*args, **kwargs)

    monkeypatch.setattr(step_plan, "build_step_plan", recording)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2])
        y = x * 2.0 + 1.0
    with tf.Session(graph=graph) as sess:
        for _ in range(2):  # the second run reuses the plan: no compile
            np.testing.assert_array_equal(sess.run(y, {x: np.ones(2, np.float32)}), [3.0, 3.0])
    assert seen == [False]
    assert gc.isenabled()


class _Cell:
    """A container object (tracked by the collector) that can hold a reference cycle."""

    def __init__(self):
        self.other = None


def test_cycles_made_during_the_pause_are_freed_by_the_next_collection_and_none_is_frozen():
    frozen = gc.get_freeze_count()
    with gc_paused():
        a, b = _Cell(), _Cell()
        a.other, b.other = b, a  # a cycle, garbage once dropped
        dropped = weakref.ref(a)
    assert gc.get_freeze_count() == frozen  # nothing is moved out of the collector's reach
    del a, b
    assert dropped() is not None  # refcounting alone never frees a cycle
    gc.collect(generation=0)  # a young collection finds it: it was not promoted past the young generations
    assert dropped() is None



class _Cycle:
    def __init__(self):
        self.me = self


def _young(obj):
    return any(o is obj for generation in (0, 1) for o in gc.get_objects(generation=generation))


def test_a_pause_that_made_many_objects_ends_with_one_sweep_of_the_young_generations():
    gc.collect()  # every generation's count at zero: left alone, the next collection would be a young one
    with gc_paused():
        kept = [[i] for i in range(150_000)]  # live containers: more than a sweep's threshold
        cycle = _Cycle()
        dead = weakref.ref(cycle)
        del cycle
        assert dead() is not None  # the collector is off
    assert dead() is None  # the garbage made in the pause is gone
    # and what lives on was swept into the oldest generation once, not left for two young collections
    assert not _young(kept) and not _young(kept[-1])
