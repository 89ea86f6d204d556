"""Many devices in one process: the Session's placement log, partitions, executors, step stats.

Every multi-device result is checked with the inline runner and with the thread pool
(``executor_runner``): the two must agree exactly.
"""

import json
import re
import threading

import numpy as np
import pytest
from seed_programs import placement_program

import dfcore as tf
from dfcore.runtime.grappler import no_rewrite_session_config
from dfcore.timeline import Timeline

RUNNERS = ["inline", "pool"]
_P = "/job:localhost/replica:0/task:0/device:"


@pytest.mark.parametrize("runner", RUNNERS)
def test_seeds_placement_program_prints_tfs_log_and_the_product(runner, capsys):
    total = placement_program()
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True), executor_runner=runner)
    np.testing.assert_array_equal(sess.run(total), [[44, 56], [98, 128]])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Device mapping:"
    assert lines[1] == (f"{_P}GPU:0 -> device: 0, name: Tesla K20m, pci bus id: 0000:02:00.0, "
                        "compute capability: 3.5")
    assert lines[5:] == [
        f"Const: (Const): {_P}GPU:2", f"Const_1: (Const): {_P}GPU:2", f"MatMul: (MatMul): {_P}GPU:2",
        f"Const_2: (Const): {_P}GPU:3", f"Const_3: (Const): {_P}GPU:3", f"MatMul_1: (MatMul): {_P}GPU:3",
        f"AddN: (AddN): {_P}CPU:0",
    ]
    sess.run(total)
    assert capsys.readouterr().out == ""  # placed once, logged once
    assert [r.node_name for r in sess.placement_records()] == ["Const", "Const_1", "MatMul", "Const_2", "Const_3",
                                                                "MatMul_1", "AddN"]
    sess.close()


def test_partition_graphs_have_one_send_recv_pair_per_cross_device_edge():
    total = placement_program()
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(total, options=tf.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    graphs = {g.node[0].device: g.node for g in metadata.partition_graphs}
    assert set(graphs) == {_P + "CPU:0", _P + "GPU:2", _P + "GPU:3"}
    sends = [n for nodes in graphs.values() for n in nodes if n.op == "_Send"]
    recvs = [n for nodes in graphs.values() for n in nodes if n.op == "_Recv"]
    assert len(sends) == 2 and len(recvs) == 2  # no client-terminated _Send: the fetch leaves by the call frame
    for send in sends:
        assert not send.attr["client_terminated"].b
        assert re.fullmatch(r"edge_\d+_MatMul(_1)?", send.attr["tensor_name"].s.decode())
        match = [r for r in recvs if r.attr["tensor_name"] == send.attr["tensor_name"]]
        assert len(match) == 1 and match[0].device == send.attr["recv_device"].s.decode() == _P + "CPU:0"
    (retval,) = [n for nodes in graphs.values() for n in nodes if n.op == "_Retval"]
    assert (retval.name, list(retval.input), retval.device) == ("_retval_AddN_0_0", ["AddN"], _P + "CPU:0")
    assert retval.attr["index"].i == 0 and retval.attr["T"].type == tf.float32.as_datatype_enum


def _two_tower_graph(n=64):
    rng = np.random.default_rng(0)
    outs = []
    for i in range(2):
        with tf.device(f"/gpu:{i}"):
            a = tf.constant(rng.standard_normal((n, n)).astype(np.float32))
            outs.append(tf.matmul(a, a, name=f"mm{i}"))
    with tf.device("/cpu:0"):
        return tf.add(outs[0], outs[1], name="sum")


def _traced_run(fetch, runner, config=None):
    """Run the graph as built (TF's no-rewrite test config), else constant folding computes the matmuls
    of these constant towers before the step."""
    metadata = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session(config=no_rewrite_session_config(config), executor_runner=runner) as sess:
        value = sess.run(fetch, options=options, run_metadata=metadata)
    return value, tf.step_records(metadata).step_stats


def _sim_intervals(step_stats):
    return {(d.device, n.node_name): (n.sim_start_micros, n.sim_end_micros)
            for d in step_stats.dev_stats for n in d.node_stats}


def test_step_stats_have_tfs_shape_and_a_deterministic_simulated_timeline():
    total = _two_tower_graph()
    results = [_traced_run(total, runner) for runner in RUNNERS + RUNNERS]
    for value, _ in results[1:]:
        np.testing.assert_array_equal(value, results[0][0])
    timelines = [_sim_intervals(stats) for _, stats in results]
    assert all(t == timelines[0] for t in timelines)  # same graph and config: same simulated timeline
    stats = results[0][1]
    devices = [d.device for d in stats.dev_stats]
    assert devices == sorted([_P + "CPU:0", _P + "GPU:0", _P + "GPU:1"])
    node = next(n for d in stats.dev_stats for n in d.node_stats if n.node_name == "mm0")
    assert node.op_type == "MatMul" and node.output_bytes == (64 * 64 * 4,)
    assert node.all_end_rel_micros >= node.op_end_rel_micros >= node.op_start_rel_micros >= 0
    assert node.timeline_label.startswith("mm0 = MatMul(")


def test_independent_matmuls_on_two_devices_overlap_in_simulated_time():
    _, stats = _traced_run(_two_tower_graph(), "inline")
    sim = _sim_intervals(stats)
    (s0, e0), (s1, e1) = sim[(_P + "GPU:0", "mm0")], sim[(_P + "GPU:1", "mm1")]
    assert s0 < e1 and s1 < e0  # the intervals intersect
    add_start = sim[(_P + "CPU:0", "sum")][0]
    assert add_start >= max(e0, e1)  # the add waits for both transfers


def test_independent_matmuls_overlap_in_wall_time_on_the_pool():
    total = _two_tower_graph(n=600)
    config = tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)  # not the global pool
    for _ in range(5):  # on a loaded machine one try may not overlap; five must
        _, stats = _traced_run(total, "pool", config)
        wall = {n.node_name: (n.all_start_micros, n.all_end_micros) for d in stats.dev_stats for n in d.node_stats}
        (s0, e0), (s1, e1) = wall["mm0"], wall["mm1"]
        if s0 < e1 and s1 < e0:
            return
    pytest.fail("the two matmuls never ran at the same time on a 2-thread pool")


def test_memory_stats_per_device_and_allow_growth():
    total = _two_tower_graph()
    _, stats = _traced_run(total, "inline")
    gpu0 = next(d for d in stats.dev_stats if d.device == _P + "GPU:0")
    names = [m.allocator_name for m in gpu0.memory]
    assert names == ["GPU_0_bfc", "GPU_0_bfc reserved"]
    used = gpu0.memory[0]
    assert used.peak_bytes == 64 * 64 * 4 and used.total_bytes >= used.peak_bytes
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    _, grown = _traced_run(total, "inline", config)
    assert [m.allocator_name for m in next(d for d in grown.dev_stats if d.device == _P + "GPU:0").memory] == [
        "GPU_0_bfc"]


def test_timeline_of_a_real_step_is_valid_chrome_trace():
    _, stats = _traced_run(_two_tower_graph(), "inline")
    for time_base in ("wall", "simulated"):
        trace = json.loads(Timeline(stats).generate_chrome_trace_format(show_dataflow=True, time=time_base))
        events = trace["traceEvents"]
        processes = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
        assert f"{_P}GPU:0 Compute" in processes
        assert any("Transfers" in p for p in processes)
        ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "Op"]
        assert {"MatMul", "Add"} <= {e["name"] for e in ops}
        assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in ops)


@pytest.mark.parametrize("runner", RUNNERS)
def test_failing_kernel_aborts_every_partition_and_changes_nothing(runner):
    v = tf.Variable(np.zeros(3, np.float32), name="v")
    x = tf.placeholder(tf.float32, [3], name="x")
    with tf.device("/gpu:0"):
        bad = tf.check_numerics(tf.log(x), "log of a negative")
    with tf.device("/gpu:1"):
        slow = tf.reduce_sum(tf.matmul(tf.ones([300, 300]), tf.ones([300, 300])))
        update = tf.assign_add(v, [1.0, 1.0, 1.0])
    with tf.device("/cpu:0"):
        total = bad + slow + update
    before = set(threading.enumerate())
    with tf.Session(executor_runner=runner) as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="log of a negative : Tensor had NaN values"):
            sess.run(total, {x: [-1.0, 1.0, 2.0]})
        np.testing.assert_array_equal(sess.run(v), [0.0, 0.0, 0.0])
        ok = sess.run(total, {x: [1.0, 1.0, 1.0]})
        np.testing.assert_allclose(ok, [300.0**3 + 1.0] * 3)
    assert set(threading.enumerate()) <= before  # the pool is shut down with the session


def test_step_deadline_from_run_options():
    x = tf.placeholder(tf.float32, [])
    y = x + 1.0
    with tf.Session() as sess:
        assert sess.run(y, {x: 1.0}, options=tf.RunOptions(timeout_in_ms=5000)) == 2.0


def test_feeding_a_tensor_that_lives_on_another_device():
    with tf.device("/gpu:1"):
        a = tf.constant([1.0, 2.0]) * 3.0
    with tf.device("/gpu:2"):
        b = a + 1.0
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(b), [4.0, 7.0])
        np.testing.assert_array_equal(sess.run(b, {a: np.array([10.0, 20.0], np.float32)}), [11.0, 21.0])


def test_device_that_does_not_exist_with_and_without_soft_placement():
    with tf.device("/device:GPU:7"):
        y = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), name="MatMul")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Cannot assign a device for operation 'MatMul'.*"
                                                                 r"explicitly assigned to /device:GPU:7"):
            sess.run(y)
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        np.testing.assert_array_equal(sess.run(y), [[2.0, 2.0], [2.0, 2.0]])
        assert next(r for r in sess.placement_records() if r.node_name == "MatMul").assigned_device.startswith(_P)


def test_malformed_device_string_is_a_clear_error():
    with pytest.raises(ValueError, match="device specification"):
        with tf.device("/gpu:zero"):
            pass


def test_device_count_gives_the_session_its_devices():
    assert [d.name for d in tf.Session().list_devices()] == [_P + "CPU:0"] + [f"{_P}GPU:{i}" for i in range(4)]
    two = tf.Session(config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 2}))
    assert [d.device_type for d in two.list_devices()] == ["CPU", "GPU", "GPU"]


def test_inter_op_threads_do_not_change_results():
    total = _two_tower_graph()
    values = []
    for threads in (1, 2):
        with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=threads)) as sess:
            values.append(sess.run(total))
    np.testing.assert_array_equal(values[0], values[1])
