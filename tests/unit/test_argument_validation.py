"""Nonsense in, clear error out: every public entry point checks its arguments before any work.

References: TF's argument errors (``TypeError`` for a wrong type, ``ValueError`` naming the
argument and its allowed range); argparse's usage errors (exit status 2) for the command lines.
"""

import re

import numpy as np
import pytest
from _requirements import require_module

import dfcore as tf
from dfcore import errors
from dfcore.bench import all_reduce as bench
from dfcore.distribute import (
    MirroredStrategy,
    all_reduce,
    batch_all_reduce,
    collective_all_reduce,
    parameter_server,
)
from dfcore.distribute.all_reduce_graph import build_ring_all_reduce
from dfcore.distribute.arguments import ArgumentRangeError
from dfcore.distribute.schedules import max_subchunks
from dfcore.examples import parameter_server as ps_example


def _ones(n, size):
    return [np.ones(size) for _ in range(n)]


# -- all-reduce: num_subchunks and the other counts, one rule for every path ----------------------------------

@pytest.mark.parametrize("algorithm,n,size,most", [("ring", 4, 10, 3), ("recursive_halving_doubling", 6, 10, 3),
                                                   ("tree", 3, 10, 10), ("reduce_to_one", 2, 0, 1)])
def test_num_subchunks_is_bounded_by_the_elements_of_a_chunk(algorithm, n, size, most):
    assert max_subchunks(algorithm, n, size) == most
    all_reduce(_ones(n, size), algorithm=algorithm, num_subchunks=most)  # the bound itself is allowed
    with pytest.raises(ValueError, match=rf"num_subchunks must be an integer in \[1, {most}\] .*got {most + 1}"):
        all_reduce(_ones(n, size), algorithm=algorithm, num_subchunks=most + 1)


@pytest.mark.parametrize("kwargs,error,match", [
    ({"num_subchunks": 2.5}, TypeError, "num_subchunks must be an integer, got float"),
    ({"num_subchunks": -1}, ValueError, r"num_subchunks must be an integer in \[1, 3\]"),
    ({"algorithm": "reduce_to_one", "root": 4}, ValueError, r"root must be an integer in \[0, 3\] \(one of 4"),
    ({"algorithm": "reduce_to_one", "root": -1}, ValueError, r"root must be an integer in \[0, 3\]"),
])
def test_counts_are_checked_before_the_inputs_are_read(kwargs, error, match):
    values = _ones(4, 9)
    values[2] = np.full(9, np.nan)  # check_numerics would raise first if the check came later
    with pytest.raises(error, match=match):
        all_reduce(values, check_numerics=True, **kwargs)


def test_graph_builders_reject_too_many_subchunks_before_building_any_op():
    graph = tf.Graph()
    with graph.as_default():
        tensors = []
        for i in range(4):
            with tf.device(f"/gpu:{i}"):
                tensors.append(tf.constant(np.ones(6)))
        before = len(graph.get_operations())
        with pytest.raises(ValueError, match=r"num_subchunks must be an integer in \[1, 2\]"):
            build_ring_all_reduce(tensors, 1, 3, [0, 1, 2, 3], tf.add)
        assert len(graph.get_operations()) == before


def test_collective_op_checks_num_subchunks_at_construction_or_at_run_time():
    graph = tf.Graph()
    with graph.as_default():
        known = [tf.constant(np.ones(6)) for _ in range(2)]
        with pytest.raises(ValueError, match=r"num_subchunks must be an integer in \[1, 3\]"):
            collective_all_reduce(known, num_subchunks=4)
        with pytest.raises(ValueError, match=r"num_subchunks must be an integer in \[1, 3\] .*got 0"):
            collective_all_reduce(known, num_subchunks=0)
        x = tf.placeholder(tf.float64, [None])
        unknown = []
        for i in range(2):
            with tf.device(f"/gpu:{i}"):
                unknown.append(tf.identity(x))
        outs = collective_all_reduce(unknown, num_subchunks=4)  # the length is known only when fed
    with tf.Session(graph=graph, config=tf.ConfigProto(device_count={"GPU": 2})) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"num_subchunks must be an integer in \[1, 3\]"):
            sess.run(outs, {x: np.ones(6)})
        np.testing.assert_array_equal(sess.run(outs, {x: np.ones(8)})[0], np.full(8, 2.0))


def test_apis_reducing_many_tensors_take_num_subchunks_as_an_upper_bound():
    small, large = np.ones(3), np.arange(40.0)
    batch = batch_all_reduce([[small, large]] * 4, fusion_threshold_bytes=0, num_subchunks=8)
    assert [r.trace.num_subchunks for r in batch.results] == [1, 8]  # a 3-element tensor cannot be cut 8 ways
    np.testing.assert_array_equal(batch.outputs[2][1], 4 * large)
    with pytest.raises(ValueError, match="num_subchunks must be an integer >= 1, got 0"):
        batch_all_reduce([[small]] * 2, num_subchunks=0)
    with pytest.raises(ValueError, match="num_subchunks must be an integer >= 1, got 0"):
        MirroredStrategy(["/gpu:0", "/gpu:1"], num_subchunks=0)


# -- the all-reduce benchmark ---------------------------------------------------------------------------------

_SMALL = ["-b", "1K", "-e", "1K", "--time", "simulated"]


@pytest.mark.parametrize("argv,message", [
    (["-n", "0"], r"-n/--devices must be an integer >= 1, got 0"),
    (["-b", "-8"], r"-b/--minbytes must be an integer >= 1, got -8"),
    (["-b", "0"], r"-b/--minbytes must be an integer >= 1, got 0"),
    (["-b", "8K", "-e", "1K"], r"-e/--maxbytes must be an integer >= 8192 \(the largest size"),
    (["-f", "0"], r"-f/--stepfactor must be an integer >= 1 \(1 gives one row\)"),
    (["--iters", "0"], r"--iters must be an integer >= 1, got 0"),
    (["--iters", "-2"], r"--iters must be an integer >= 1, got -2"),
    (["-w", "-1"], r"-w/--warmup_iters must be an integer >= 0, got -1"),
    (["--num-subchunks", "0"], r"--num-subchunks must be an integer in \[1, 64\]"),
    (["-b", "64", "-e", "64", "--num-subchunks", "5"],
     r"--num-subchunks must be an integer in \[1, 4\] for the smallest size \(16 elements\) on 4 ranks"),
    (["-b", "twelve"], r"argument -b/--minbytes: expected a size in bytes"),
])
def test_bench_cli_rejects_nonsense_with_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(_SMALL + argv)
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""  # no table, not even its header
    assert re.search(message, err), err


def test_bench_api_checks_like_the_cli():
    lines = []
    with pytest.raises(ValueError, match="min_bytes must be an integer >= 1, got 0"):
        bench.run(0, 8, 2, 4, "ring", out=lines.append)  # a size of 0 times 2 used to loop forever
    with pytest.raises(ValueError, match="factor must be an integer >= 1"):
        bench.run(8, 64, 0, 4, "ring", out=lines.append)
    with pytest.raises(ValueError, match="max_bytes must be an integer >= 4096"):
        bench.run(4096, 1024, 2, 4, "ring", out=lines.append)
    with pytest.raises(ValueError, match="iters must be an integer >= 1"):
        bench.compare(1024, 4, iters=0, out=lines.append)
    assert lines == []
    bench.main(_SMALL + ["-n", "2", "--iters", "1", "-w", "0", "--num-subchunks", "128"])  # the bound itself runs


# -- parameter-server training: one check for the API and the CLI ---------------------------------------------

@pytest.fixture
def no_cluster(monkeypatch):
    """Fail if training gets as far as starting its cluster: the checks must come first."""
    def refuse(config):
        raise AssertionError("train() started a cluster before rejecting its arguments")

    monkeypatch.setattr(parameter_server, "start_cluster", refuse)


@pytest.mark.parametrize("kwargs,argument,match", [
    ({"steps": 0}, "steps", r"steps must be an integer >= 1 \(parameter updates to run\), got 0"),
    ({"steps": -5}, "steps", "steps must be an integer >= 1"),
    ({"straggler": {4: 2.0}}, "straggler", r"straggler worker must be an integer in \[0, 3\] \(one of 4"),
    ({"straggler": {1: 0.0}}, "straggler", "the speed factor of straggler worker 1 must be a finite number > 0"),
    ({"straggler": {1: float("nan")}}, "straggler", "straggler worker 1 must be a finite number > 0"),
    ({"kill_worker": {7: 3}}, "kill_worker", r"kill_worker worker must be an integer in \[0, 3\]"),
    ({"kill_worker": {1: -1}}, "kill_worker", "the step of kill_worker worker 1 must be an integer >= 0"),
    ({"kill_ps": {1: 3}}, "kill_ps", r"kill_ps task must be an integer in \[0, 0\] \(one of 1 ps tasks\)"),
    ({"batch_size": 0}, "batch_size", "batch_size must be an integer >= 1, got 0"),
    ({"batch_size": 360}, "batch_size", r"batch_size must be an integer in \[1, 359\] .*of 4 worker shards\), got 360"),
    ({"mode": "ssp", "staleness": -1}, "staleness", "staleness must be an integer >= 0"),
    ({"mode": "ssp", "staleness": None}, "staleness", "ssp needs a staleness bound"),
    ({"mode": "async", "staleness": -1}, "staleness", "staleness must be an integer >= 0"),
    ({"num_workers": 0}, "num_workers", "num_workers must be an integer >= 1, got 0"),
    ({"num_ps": 0}, "num_ps", "num_ps must be an integer >= 1, got 0"),
    ({"replicas_to_aggregate": 5}, "replicas_to_aggregate", r"replicas_to_aggregate must be an integer in \[1, 4\]"),
    ({"replicas_to_aggregate": 0}, "replicas_to_aggregate", r"replicas_to_aggregate must be an integer in \[1, 4\]"),
    ({"eval_every": -1}, "eval_every", "eval_every must be an integer >= 0"),
    ({"checkpoint_every": -2, "checkpoint_dir": "unused"}, "checkpoint_every", "checkpoint_every must be an integer"),
    ({"learning_rate": 0.0}, "learning_rate", "learning_rate must be a finite number > 0, got 0.0"),
    ({"learning_rate": -0.1}, "learning_rate", "learning_rate must be a finite number > 0"),
    ({"learning_rate": float("nan")}, "learning_rate", "learning_rate must be a finite number > 0, got nan"),
    ({"fault_timeout_s": 0}, "fault_timeout_s", "fault_timeout_s must be a finite number > 0"),
    ({"mode": "bsp"}, "mode", "mode must be one of 'sync', 'async', 'ssp', 'bounded_delay', got 'bsp'"),
    ({"ps_strategy": "random"}, "ps_strategy", "ps_strategy must be one of 'round_robin', 'greedy'"),
    ({"restore": True}, "checkpoint_dir", "need a checkpoint_dir"),
    ({"occasional_straggler": (0.5,)}, "occasional_straggler", r"must be a pair \(probability, speed factor\)"),
    ({"occasional_straggler": (0.5, 0.0)}, "occasional_straggler",
     "the speed factor of occasional_straggler must be a finite number > 0"),
    ({"w1_shards": 0}, "w1_shards", r"w1_shards must be an integer in \[1, 64\]"),
    ({"ema_decay": -0.5}, "ema_decay", "ema_decay must be a finite number > 0"),
])
def test_train_rejects_nonsense_before_starting_anything(kwargs, argument, match, no_cluster):
    with pytest.raises(ArgumentRangeError, match=match) as error:
        parameter_server.train(**{"steps": 2, "eval_every": 0, **kwargs})
    assert error.value.argument == argument


def test_train_rejects_non_integer_counts(no_cluster):
    with pytest.raises(TypeError, match="steps must be an integer, got float 2.5"):
        parameter_server.train(steps=2.5)


@pytest.mark.parametrize("argv,message", [
    (["--steps", "0"], r"argument --steps: steps must be an integer >= 1"),
    (["--steps", "-1"], r"argument --steps: steps must be an integer >= 1"),
    (["--straggler", "9:2"], r"argument --straggler: straggler worker must be an integer in \[0, 3\]"),
    (["--straggler", "1:0"], r"argument --straggler: the speed factor of straggler worker 1 must be"),
    (["--workers", "0"], r"argument --workers: num_workers must be an integer >= 1"),
    (["--replicas", "9"], r"argument --replicas: replicas_to_aggregate must be an integer in \[1, 4\]"),
    (["--lr", "0"], r"argument --lr: learning_rate must be a finite number > 0"),
    (["--mode", "ssp", "--staleness", "-1"], r"argument --staleness: staleness must be an integer >= 0"),
    (["--checkpoint-every", "5"], r"argument --checkpoint-dir: checkpoint_every and restore need a checkpoint_dir"),
    (["--occasional-straggler", "1.5:2"], r"argument --occasional-straggler: the probability of occasional_straggler "
                                          r"must be in \(0, 1\], got 1.5"),
    (["--w1-shards", "65"], r"argument --w1-shards: w1_shards must be an integer in \[1, 64\]"),
])
def test_parameter_server_cli_turns_the_api_check_into_a_usage_error(argv, message, capsys, no_cluster):
    with pytest.raises(SystemExit) as exit_info:
        ps_example.main(argv)
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and re.search(message, err), err


# -- widgets: None or the wrong record is a TypeError naming what the widget takes ---------------------------

def _traced_step():
    graph = tf.Graph()
    with graph.as_default():
        total = tf.constant([1.0, 2.0]) * 2.0
    sess = tf.Session(graph=graph)
    run_metadata = tf.RunMetadata()
    sess.run(total, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=run_metadata)
    return graph, sess, run_metadata


_TIMELINE_NONE = (r"TimelineView expects a RunMetadata or StepStats \(from Session.run\(.*run_metadata=\.\.\.\)\) "
                  "as run_metadata, got NoneType")
_ALL_REDUCE_NONE = (r"AllReduceView expects an AllReduceResult \(from dfcore.distribute.all_reduce\(\.\.\., "
                    r"trace=True\)\) or a CollectiveTrace as result_or_trace, got NoneType")
_PS_NONE = r"ParameterServerView expects a RunRecord \(from dfcore.distribute.parameter_server.train\), a list"
_COMPARE_NONE = r"AllReduceComparison expects a list of arrays \(one per device\) as values, got NoneType"

# (widget, its arguments from (graph, session, run_metadata), the message)
_WIDGET_CASES = [
    ("TimelineView", lambda g, s, md: (None,), _TIMELINE_NONE),
    ("TimelineView", lambda g, s, md: (s,), "TimelineView expects a RunMetadata or StepStats.*got Session"),
    ("DeviceLog", lambda g, s, md: (None,), r"DeviceLog expects a Session \(dfcore.Session\(...\)\) as session"),
    ("DeviceLog", lambda g, s, md: (md,), "DeviceLog expects a Session .*got RunMetadata"),
    ("DeviceLog", lambda g, s, md: (s, g), "DeviceLog expects a RunMetadata .* as run_metadata, got Graph"),
    ("GraphView", lambda g, s, md: (None,), r"GraphView expects a Graph \(tf.Graph\(\).* got NoneType"),
    ("GraphView", lambda g, s, md: (s,), "GraphView expects a Graph .*got Session"),
    ("GraphView", lambda g, s, md: (g, md), "GraphView expects a Session .*as session, got RunMetadata"),
    ("PartitionView", lambda g, s, md: (None, None), "PartitionView expects a Session .*got NoneType"),
    ("ClusterView", lambda g, s, md: (None,), "ClusterView expects a ClusterSpec, a dict .*got NoneType"),
    ("ClusterView", lambda g, s, md: ({"ps": ["a:1"]}, md), "ClusterView expects a Graph .*as graph"),
    ("AllReduceView", lambda g, s, md: (None,), _ALL_REDUCE_NONE),
    ("AllReduceView", lambda g, s, md: (md,), "AllReduceView expects an AllReduceResult .*got RunMetadata"),
    ("AllReduceComparison", lambda g, s, md: (None,), _COMPARE_NONE),
    ("ParameterServerView", lambda g, s, md: (None,), _PS_NONE),
    ("ParameterServerView", lambda g, s, md: ([md],), "ParameterServerView expects a RunRecord .*got RunMetadata"),
    ("ParameterServerView", lambda g, s, md: ({"a": None},), "ParameterServerView expects a RunRecord .*NoneType"),
]


@pytest.mark.parametrize("name,make_args,match", _WIDGET_CASES,
                         ids=[f"{case[0]}-{i}" for i, case in enumerate(_WIDGET_CASES)])
def test_widgets_name_what_they_accept(name, make_args, match):
    widgets = require_module("widgets")
    graph, sess, run_metadata = _traced_step()
    with sess, pytest.raises(TypeError, match=match):
        getattr(widgets, name)(*make_args(graph, sess, run_metadata))


def test_all_reduce_comparison_checks_every_algorithm_before_running_any(monkeypatch):
    compare = require_module("widgets.all_reduce_compare")
    calls = []
    monkeypatch.setattr(compare, "all_reduce", lambda *args, **kwargs: calls.append(kwargs["algorithm"]))
    with pytest.raises(ValueError, match="Unknown all-reduce algorithm 'butterfly'"):
        compare.AllReduceComparison(_ones(4, 8), algorithms=("ring", "butterfly"))
    with pytest.raises(ValueError, match=r"num_subchunks must be an integer in \[1, 2\]"):
        compare.AllReduceComparison(_ones(4, 8), algorithms=("tree", "ring"), num_subchunks=3)
    assert calls == []


def test_timeline_view_also_takes_the_step_stats_alone():
    widgets = require_module("widgets")
    _, sess, run_metadata = _traced_step()
    sess.close()
    whole, alone = widgets.TimelineView(run_metadata), widgets.TimelineView(tf.step_records(run_metadata).step_stats)
    assert alone.spans == whole.spans and repr(alone) == repr(whole)
