"""``tf.train.Server`` over gRPC: tasks as separate processes reached by address, as TensorFlow runs a cluster.

Specification: issue 16 items 1-2 (TF's WorkerService and MasterService over grpcio; ``server.target``;
``tf.Session(server.target)`` in a task process and ``tf.Session("grpc://host:port")`` in any process; results
equal to the in-process run; step stats of every task in ``RunMetadata``; binding to the host the ClusterSpec
names). Task programs: ``tests/unit/grpc_programs/task.py``; every process is killed at the end of its test.
"""

import json
import socket
import threading
import time

import numpy as np
import pytest
from grpc_cluster import Cluster, cluster_dict
from grpc_model import MODELS, build_model, feed_values

import dfcore as tf
from dfcore.distribute import cluster_runtime
from dfcore.transport import SERVERS_ENV, grpc_enabled, listens
from dfcore.transport.grpc_server import free_ports

pytestmark = pytest.mark.timeout(120)


def in_process_reference(name="sgd"):
    """The model ``name``'s losses and final weights run in one process (dfcore's in-process cluster)."""
    cluster = tf.train.ClusterSpec(cluster_dict())
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        with tf.Graph().as_default():
            model = MODELS[name]()
            with tf.Session(servers[1].target) as sess:
                sess.run(model["init"])
                losses = []
                for step in range(3):
                    feed = {model["x"]: feed_values(step, model["shape"])}
                    losses.append(sess.run(model["loss"], feed).item())
                    sess.run(model["train"], feed)
                return losses, sess.run(model["w"])
    finally:
        for server in servers:
            server.stop()


def test_a_worker_process_runs_steps_on_the_ps_process_as_in_one_process():
    with Cluster(cluster_dict()) as cluster:
        cluster.start("ps", 0, "serve").ready()
        result = cluster.start("worker", 0, "model").ready().json_line(60)
    losses, w = in_process_reference()
    np.testing.assert_allclose(result["losses"], losses, rtol=1e-6)
    np.testing.assert_allclose(result["w"], w, rtol=1e-6)
    # step stats of both tasks come back in RunMetadata
    assert {d.split("/device:")[0] for d in result["devices"]} == {"/job:ps/replica:0/task:0",
                                                                  "/job:worker/replica:0/task:0"}


def test_a_between_graph_adam_mlp_of_mnist_size_trains_over_grpc_as_in_one_process():
    # issue 26: the ps rejected the folded Fill (a Const keeping the Fill's name) of a [784,100] Adam slot
    with Cluster(cluster_dict()) as cluster:
        cluster.start("ps", 0, "serve").ready()
        result = cluster.start("worker", 0, "model", "adam").ready().json_line(60)
    losses, w = in_process_reference("adam")
    np.testing.assert_allclose(result["losses"], losses, rtol=1e-5)
    np.testing.assert_allclose(result["w"], w, rtol=1e-5, atol=1e-6)
    assert losses[2] < losses[0]  # it trains


def test_a_session_in_another_process_attaches_by_address(monkeypatch):
    # the client (a notebook, say) sets nothing: an address no in-process server has is a cluster's master
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with Cluster(cluster_dict()) as cluster:
        cluster.start("ps", 0, "serve").ready()
        cluster.start("worker", 0, "serve").ready()
        target = "grpc://" + cluster.address("worker", 0)
        with tf.Graph().as_default():
            model = build_model()
            with tf.Session(target) as sess:
                names = [d.name for d in sess.list_devices()]
                sess.run(model["init"])
                losses = []
                for step in range(3):
                    losses.append(sess.run(model["loss"], {model["x"]: feed_values(step)}).item())
                    sess.run(model["train"], {model["x"]: feed_values(step)})
                metadata = tf.RunMetadata()
                w = sess.run(model["w"], options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                             run_metadata=metadata)
            # the variable lives on the ps task: a second session sees the first one's updates
            with tf.Session(target) as sess:
                np.testing.assert_array_equal(sess.run(model["w"]), w)
    ref_losses, ref_w = in_process_reference()
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6)
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)
    assert "/job:ps/replica:0/task:0/device:CPU:0" in names and any(n.startswith("/job:worker") for n in names)
    assert metadata.step_stats.dev_stats, "the master's RunMetadata comes back to the client"


def test_servers_listen_on_loopback_addresses_as_tfs_do_and_tf_config_makes_them_grpc_only(monkeypatch):
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert not grpc_enabled()  # a lesson's servers share one kernel's in-process cluster...
    port = free_ports(1)[0]
    for address in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        assert listens(tf.train.Server({"worker": [address]}, start=False)), address  # ...and listen
    lesson = tf.train.Server({"ps": ["ps0.example.com:2222"]}, start=False)
    assert not listens(lesson)  # another host's name: nothing to listen on here (the task stays in this process)
    monkeypatch.setenv(SERVERS_ENV, "in_process")
    assert not listens(tf.train.Server({"worker": [f"localhost:{port}"]}, start=False))
    tf_config = json.dumps({"cluster": {"worker": ["localhost:2222"]}, "task": {"type": "worker", "index": 0}})
    monkeypatch.setenv("TF_CONFIG", tf_config)
    assert not grpc_enabled()
    monkeypatch.delenv(SERVERS_ENV)
    assert grpc_enabled()  # a task started as TensorFlow's are: a gRPC server only
    monkeypatch.setenv(SERVERS_ENV, "grpc")
    monkeypatch.setenv("TF_CONFIG", "{not json")
    assert grpc_enabled()


def test_an_address_nothing_serves_is_unavailable_with_both_reasons(monkeypatch):
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    port = free_ports(1)[0]
    with pytest.raises(tf.errors.UnavailableError, match=f"No in-process server is running at grpc://127.0.0.1:{port}, "
                                                         "and no gRPC server answered there"):
        tf.Session(f"grpc://127.0.0.1:{port}")


def test_server_target_and_local_server_listen_on_loopback(monkeypatch):
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    server = tf.train.Server.create_local_server()
    try:
        host, port = server.target[len("grpc://"):].rsplit(":", 1)
        assert host == "localhost"
        with socket.create_connection(("127.0.0.1", int(port)), timeout=5):
            pass
        with tf.Graph().as_default():
            v = tf.Variable(3.0)
            with tf.Session(server.target) as sess:
                sess.run(v.initializer)
                assert sess.run(v * 2.0) == 6.0
        external = [ip for ip in _host_ips() if not ip.startswith("127.")]
        for ip in external:  # not listening beyond loopback
            with pytest.raises(OSError):
                socket.create_connection((ip, int(port)), timeout=2).close()
    finally:
        server.stop()


def _host_ips():
    try:
        return {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    except OSError:
        return set()


def test_a_taken_address_is_refused_in_tfs_words(monkeypatch):
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    port = free_ports(1)[0]
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen()
    try:
        with pytest.raises(tf.errors.UnknownError, match="Could not start gRPC server"):
            tf.train.Server({"worker": [f"127.0.0.1:{port}"]}, job_name="worker", task_index=0)
        assert not cluster_runtime.serves(f"127.0.0.1:{port}")  # nor is the task left in the in-process cluster
    finally:
        holder.close()


@pytest.mark.parametrize("servers", ["grpc", "in_process"])
def test_grpc_plus_mpi_outside_an_mpi_job_says_what_it_needs(monkeypatch, servers):
    monkeypatch.setenv(SERVERS_ENV, servers)
    port = free_ports(1)[0]
    with pytest.raises(tf.errors.FailedPreconditionError) as refused:
        tf.train.Server({"worker": [f"localhost:{port}"]}, protocol="grpc+mpi")
    assert 'protocol="grpc+mpi"' in refused.value.message and "MPI job" in refused.value.message
    assert "python -m dfcore.launch" in refused.value.message
    with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown server protocol 'grpc\\+verbs'"):
        tf.train.Server({"worker": [f"localhost:{port}"]}, protocol="grpc+verbs")
    with socket.create_server(("127.0.0.1", port)):  # nothing was left listening there: the port is free
        pass


def test_control_flow_and_strings_cross_tasks_as_in_one_process(monkeypatch):
    def build():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.float32(2.0), name="v")
            names = tf.constant([b"ps", b"task"])
        with tf.device("/job:worker/task:0"):
            flag = tf.placeholder(tf.bool, [])
            picked = tf.cond(flag, lambda: v * 3.0, lambda: v - 1.0)  # a dead branch crosses between tasks
            looped = tf.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, x + v), [0, tf.constant(0.0)])[1]
            copied = tf.identity(names)  # a string tensor made on the ps, fetched through the worker
        return v, flag, [picked, looped, copied]

    def run(target):
        with tf.Graph().as_default():
            v, flag, fetches = build()
            with tf.Session(target) as sess:
                sess.run(v.initializer)
                return [sess.run(fetches, {flag: b}) for b in (True, False)]

    cluster = tf.train.ClusterSpec(cluster_dict())
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        expected = run(servers[1].target)
    finally:
        for server in servers:
            server.stop()
    monkeypatch.setenv(SERVERS_ENV, "grpc")
    with Cluster(cluster_dict()) as processes:
        processes.start("ps", 0, "serve").ready()
        processes.start("worker", 0, "serve").ready()
        got = run("grpc://" + processes.address("worker", 0))
    for got_step, expected_step in zip(got, expected, strict=True):
        for a, b in zip(got_step, expected_step, strict=True):
            np.testing.assert_array_equal(a, b)
    assert (got[0][0], got[1][0], got[0][1], list(got[0][2])) == (6.0, 1.0, 8.0, [b"ps", b"task"])


def test_a_stopped_server_leaves_no_thread_of_its_own(monkeypatch):
    monkeypatch.setenv(SERVERS_ENV, "grpc")
    ports = free_ports(2)
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(1.0)
            with tf.Session(servers[1].target) as sess:
                sess.run(v.initializer)
                assert sess.run(v + 1.0) == 2.0  # both tasks in this process, still over gRPC
    finally:
        for server in servers:
            server.stop()
    deadline = time.monotonic() + 5
    while any(t.name.startswith("dfcore-grpc") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.name for t in threading.enumerate() if t.name.startswith("dfcore-grpc")] == []
    with pytest.raises(tf.errors.UnavailableError):  # and nothing answers there any more
        with tf.Session("grpc://" + cluster["worker"][0]):
            pass
