"""ClusterSpec and Server (TF's server_lib API and errors), and sessions on an in-process cluster."""

import threading

import numpy as np
import pytest

import dfcore as tf
from dfcore.distribute import cluster_runtime
from dfcore.distribute.cluster import ServerDef
from dfcore.framework.protos import ClusterDef

CPU_ONLY = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})


@pytest.fixture
def cluster():
    """A 1 ps + 2 worker cluster whose servers are all stopped afterwards (and no thread is left)."""
    before = set(threading.enumerate())
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]})
    servers = {("ps", 0): tf.train.Server(spec, "ps", 0, config=CPU_ONLY),
               ("worker", 0): tf.train.Server(spec, "worker", 0, config=CPU_ONLY),
               ("worker", 1): tf.train.Server(spec, "worker", 1, config=CPU_ONLY)}
    yield spec, servers
    for server in servers.values():
        server.stop()
    assert set(threading.enumerate()) <= before


# -- ClusterSpec -----------------------------------------------------------------
def test_cluster_spec_dense_and_sparse_forms():
    spec = tf.train.ClusterSpec({"worker": ["w0:1", "w1:1"], "ps": {1: "p1:1", 3: "p3:1"}})
    assert spec.jobs == ["worker", "ps"]
    assert spec.num_tasks("worker") == 2 and spec.num_tasks("ps") == 2
    assert spec.task_indices("ps") == [1, 3]
    assert spec.task_address("ps", 3) == "p3:1"
    assert spec.job_tasks("ps") == [None, "p1:1", None, "p3:1"]
    assert spec.as_dict() == {"worker": ["w0:1", "w1:1"], "ps": {1: "p1:1", 3: "p3:1"}}
    assert bool(spec) and not bool(tf.train.ClusterSpec({}))


def test_cluster_spec_round_trips_through_cluster_def_and_copies():
    spec = tf.train.ClusterSpec({"worker": ["w0:1"], "ps": ["p0:1", "p1:1"]})
    cluster_def = spec.as_cluster_def()
    assert isinstance(cluster_def, ClusterDef)
    assert [job.name for job in cluster_def.job] == ["ps", "worker"]
    assert dict(cluster_def.job[0].tasks) == {0: "p0:1", 1: "p1:1"}
    assert tf.train.ClusterSpec(cluster_def) == spec
    assert ClusterDef.FromString(cluster_def.SerializeToString()) == cluster_def
    assert tf.train.ClusterSpec(tf.train.ClusterDef(job=[tf.train.JobDef(name="w", tasks={3: "h:3"})])).job_tasks(
        "w") == [None, None, None, "h:3"]
    assert tf.train.ClusterSpec(spec) == spec
    assert spec != tf.train.ClusterSpec({"worker": ["w0:1"]})


def test_cluster_spec_errors_use_tf_wording():
    spec = tf.train.ClusterSpec({"worker": ["w0:1"]})
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        spec.num_tasks("ps")
    with pytest.raises(ValueError, match="No task with index 5 in job 'worker'"):
        spec.task_address("worker", 5)
    with pytest.raises(TypeError, match="must be a dictionary mapping one or more job names"):
        tf.train.ClusterSpec(["w0:1"])
    with pytest.raises(TypeError, match="must be a list or a dictionary"):
        tf.train.ClusterSpec({"worker": "w0:1"})
    with pytest.raises(TypeError, match="Task address 7 must be bytes or unicode"):
        tf.train.ClusterSpec({"worker": [7]})


# -- Server -----------------------------------------------------------------------
def test_server_target_and_inferred_job_and_task():
    server = tf.train.Server({"local": ["local.example.com:7001"]}, config=CPU_ONLY)  # nothing listens for it
    try:
        assert server.target == "grpc://local.example.com:7001"
        assert isinstance(server.server_def, ServerDef)
        assert (server.server_def.job_name, server.server_def.task_index) == ("local", 0)
        assert server.is_running
    finally:
        server.stop()
    assert not server.is_running


def test_server_argument_errors():
    spec = {"ps": ["p0:1"], "worker": ["w0:1", "w1:1"]}
    with pytest.raises(ValueError, match="Must specify an explicit `job_name`"):
        tf.train.Server(spec, start=False)
    with pytest.raises(ValueError, match="Must specify an explicit `task_index`"):
        tf.train.Server(spec, job_name="worker", start=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match='Task 5 was not defined in job "worker"'):
        tf.train.Server(spec, "worker", 5, start=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match='Job "chief" was not defined'):
        tf.train.Server(spec, "chief", 0, start=False)


def test_an_address_is_held_by_one_running_server():
    first = tf.train.Server({"a": ["shared:1"]}, config=CPU_ONLY)
    try:
        with pytest.raises(tf.errors.UnknownError, match="Could not start gRPC server"):
            tf.train.Server({"b": ["shared:1"]}, config=CPU_ONLY)
    finally:
        first.stop()
    again = tf.train.Server({"b": ["shared:1"]}, config=CPU_ONLY)
    again.stop()


def test_join_blocks_until_stop_and_has_a_deadline():
    server = tf.train.Server.create_local_server(config=CPU_ONLY)
    with pytest.raises(tf.errors.DeadlineExceededError):
        server.join(timeout_s=0.05)
    stopper = threading.Timer(0.05, server.stop)
    stopper.start()
    server.join(timeout_s=5)
    stopper.join()


def test_session_targets_unknown_and_not_grpc():
    with pytest.raises(tf.errors.UnavailableError, match="No in-process server is running at grpc://nowhere:1"):
        tf.Session("grpc://nowhere:1")
    with pytest.raises(tf.errors.NotFoundError, match="No session factory registered"):
        tf.Session("foo://bar")


# -- sessions on a cluster ------------------------------------------------------------
def test_session_sees_every_task_and_places_unrequested_ops_on_its_own_task(cluster):
    spec, servers = cluster
    graph = tf.Graph()
    with graph.as_default():
        c = tf.constant(1.0) + 1.0
    with tf.Session(servers[("worker", 1)].target, graph=graph) as sess:
        names = [d.name for d in sess.list_devices()]
        assert names == ["/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0",
                         "/job:worker/replica:0/task:1/device:CPU:0"]
        assert sess.run(c) == 2.0
        assert {r.assigned_device for r in sess.placement_records()} == {"/job:worker/replica:0/task:1/device:CPU:0"}


def test_between_graph_sessions_share_ps_variables_but_not_worker_state(cluster):
    spec, servers = cluster
    graphs, handles = [], []
    for w in range(2):
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                shared = tf.Variable(0.0, name="shared")
            with tf.device(f"/job:worker/task:{w}"):
                local = tf.Variable(10.0 * (w + 1), name="local")
                bump = tf.assign_add(shared, 1.0)
            handles.append((shared, local, bump, tf.global_variables_initializer()))
        graphs.append(graph)
    sessions = [tf.Session(servers[("worker", w)].target, graph=graphs[w]) for w in range(2)]
    sessions[0].run(handles[0][3])
    sessions[1].run(handles[1][1].initializer)
    sessions[0].run(handles[0][2])
    sessions[1].run(handles[1][2])
    assert sessions[0].run(handles[0][0]) == 2.0 == sessions[1].run(handles[1][0])
    assert sessions[0].run(handles[0][1]) == 10.0 and sessions[1].run(handles[1][1]) == 20.0
    sessions[0].close()
    assert sessions[1].run(handles[1][0]) == 2.0  # a cluster's state outlives its sessions
    sessions[1].close()


def test_partition_view_has_cross_task_send_recv_pairs(cluster):
    spec, servers = cluster
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.ones(3, np.float32), name="v")
        with tf.device("/job:worker/task:1"):
            y = v * 2.0
    with tf.Session(servers[("worker", 0)].target, graph=graph) as sess:
        sess.run(v.initializer)
        parts = sess.partitions(y)
        assert sorted(parts) == ["/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0",
                                 "/job:worker/replica:0/task:1/device:CPU:0"]
        sends = [n for n in parts["/job:ps/replica:0/task:0/device:CPU:0"].nodes if n.op == "_Send"]
        assert sends and sends[0].get_attr("recv_device") == "/job:worker/replica:0/task:1/device:CPU:0"
        np.testing.assert_array_equal(sess.run(y), [2.0, 2.0, 2.0])


def test_a_stopped_task_makes_steps_that_need_it_unavailable(cluster):
    spec, servers = cluster
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with tf.device("/job:worker/task:0"):
            local = tf.constant(3.0) * 2.0
    with tf.Session(servers[("worker", 0)].target, graph=graph) as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 1.0  # the same plan passed its check before the task stopped: still checked again
        servers[("ps", 0)].stop("test")
        with pytest.raises(tf.errors.UnavailableError, match=r"Task /job:ps/replica:0/task:0 is unavailable \(test\)"):
            sess.run(v)
        assert sess.run(local) == 6.0


def test_cluster_info_describes_tasks_and_devices(cluster):
    spec, servers = cluster
    state, _ = cluster_runtime.cluster_for_target(servers[("ps", 0)].target)
    info = state.task_info()
    assert [(t.job, t.task_index, t.address, t.running) for t in info] == [
        ("ps", 0, "ps0:2222", True), ("worker", 0, "w0:2222", True), ("worker", 1, "w1:2222", True)]
    assert info[2].devices == ("/job:worker/replica:0/task:1/device:CPU:0",)


def test_each_task_contributes_the_devices_of_its_config():
    spec = tf.train.ClusterSpec({"ps": ["gps:1"], "worker": ["gw:1"]})
    servers = [tf.train.Server(spec, "ps", 0, config=CPU_ONLY),
               tf.train.Server(spec, "worker", 0, config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 2}))]
    try:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:worker/task:0/gpu:1"):
                y = tf.constant(2.0) * 3.0
        with tf.Session(servers[1].target, graph=graph) as sess:
            assert [d.name for d in sess.list_devices()] == [
                "/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0",
                "/job:worker/replica:0/task:0/device:GPU:0", "/job:worker/replica:0/task:0/device:GPU:1"]
            assert sess.run(y) == 6.0
            assert "/job:worker/replica:0/task:0/device:GPU:1" in {r.assigned_device for r in sess.placement_records()}
    finally:
        for server in servers:
            server.stop()


def test_device_filters_limit_what_a_session_sees_and_places_on(cluster):
    """TF's ``ConfigProto.device_filters``: worker 1's session sees only the ps and itself (its own task
    always), and placing an op on a filtered-out task fails as on a device that does not exist."""
    spec, servers = cluster
    config = tf.ConfigProto(device_filters=["/job:ps"])
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            c = tf.constant(1.0, name="on_worker0")
        with tf.Session(servers[("worker", 1)].target, config=config) as sess:
            assert [d.name for d in sess.list_devices()] == ["/job:ps/replica:0/task:0/device:CPU:0",
                                                             "/job:worker/replica:0/task:1/device:CPU:0"]
            with pytest.raises(tf.errors.InvalidArgumentError, match="on_worker0"):
                sess.run(c)
        with tf.Session(servers[("worker", 1)].target) as sess:
            assert len(sess.list_devices()) == 3
            assert sess.run(c) == 1.0
