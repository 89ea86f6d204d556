"""A cluster of separately started processes over gRPC, against the same cluster as an MPI job.

Two measurements, each on the same machine in one run, over gRPC (``run_job(transport="grpc")``: plain
processes with ``TF_CONFIG``, ``tf.train.Server`` on loopback ports) and over MPI (``run_job``: ranks of
``mpiexec``); every task runs :func:`task_main`:

(a) ``Session(server.target).run`` on a worker fetching a 4-byte float32 variable that lives on the ps
    (1 ps + 1 worker): placement once, then per call a ``RunGraph`` to the ps, its ``_Send``, the reply.
    When TensorFlow is importable (never a dependency), the same fetch from a ``tf.compat.v1.train.Server``
    pair in one process is printed beside it; otherwise a line says it was skipped.
(b) One asynchronous parameter-server step of the digits MLP (64-64-10, batch 32, plain SGD with its
    variables on the ps) with 1 ps + 2 workers: every worker times its own steps, both at once; the step
    time is their mean.

Figures are medians of per-call (a) or per-step (b) times after a warm-up; ratios are gRPC over MPI;
never a pass/fail on time. Run alone: ``python tests/benchmarks/run_all.py grpc_cluster``.
"""

import os
import statistics
import sys
import time

import numpy as np

FETCHES = 200  # Session.run calls of (a)
STEPS = 40  # steps per worker of (b)
WARMUP = 5
JOB_TIMEOUT_S = 240


def _resolver():
    import dfcore as tf
    from dfcore.mpi import MPIClusterResolver

    if os.environ.get("TF_CONFIG"):
        return tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return MPIClusterResolver()


def _wait_for_reports(count, timeout_s=120.0):
    """On the chief: wait until ``count`` tasks have reported (a gRPC job ends with its chief)."""
    from dfcore.mpi.report import RESULTS_ENV

    directory, give_up = os.environ[RESULTS_ENV], time.monotonic() + timeout_s
    while sum(name.endswith(".pkl") for name in os.listdir(directory)) < count and time.monotonic() < give_up:
        time.sleep(0.05)


def task_main(what):
    """One task of a job: ``what`` is ``"fetch"`` (a) or ``"mlp_step"`` (b); workers report their seconds."""
    import dfcore as tf
    from dfcore.examples.digits import build_mlp
    from dfcore.examples.digits_data import load_digits_split
    from dfcore.mpi.report import report

    resolver = _resolver()
    cluster = resolver.cluster_spec()
    server = tf.train.Server(cluster, job_name=resolver.task_type, task_index=resolver.task_id,
                             config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 0}))
    if resolver.task_type == "ps":
        server.join()
        return None
    index = resolver.task_id
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{index}")):
        if what == "fetch":
            v = tf.Variable(np.float32(1.5), name="v")
        else:
            data = load_digits_split(seed=0)
            x = tf.placeholder(tf.float32, [32, data.num_features], name="x")
            y = tf.placeholder(tf.int64, [32], name="y")
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=build_mlp(x, 64, data.num_classes, seed=0)))
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    init = tf.global_variables_initializer()
    ready = tf.reduce_all(tf.stack([tf.is_variable_initialized(var) for var in tf.global_variables()]))
    seconds = []
    with tf.Session(server.target, config=config) as sess:
        if index == 0:
            sess.run(init)
        if what == "fetch":
            for i in range(WARMUP + FETCHES):
                start = time.perf_counter()
                sess.run(v)
                if i >= WARMUP:
                    seconds.append(time.perf_counter() - start)
        else:
            while not sess.run(ready):
                time.sleep(0.05)  # worker 1 waits for the chief's initialisation
            rng = np.random.default_rng(index)
            for i in range(WARMUP + STEPS):
                batch = rng.choice(len(data.x_train), 32, replace=False)
                start = time.perf_counter()
                sess.run(train_op, {x: data.x_train[batch], y: data.y_train[batch]})
                if i >= WARMUP:
                    seconds.append(time.perf_counter() - start)
    report(seconds=seconds)
    if index == 0:
        _wait_for_reports(cluster.num_tasks("worker"))
    return None


def _tensorflow_fetch_s():
    """Median seconds of TF's own ``Session.run`` fetching a 4-byte variable from a ps server, or None."""
    try:
        import tensorflow.compat.v1 as tf1
    except ImportError:
        return None
    from dfcore.task_processes import free_loopback_ports

    tf1.disable_eager_execution()
    ps_port, worker_port = free_loopback_ports(2)
    cluster = tf1.train.ClusterSpec({"ps": [f"localhost:{ps_port}"], "worker": [f"localhost:{worker_port}"]})
    servers = [tf1.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    with tf1.Graph().as_default():
        with tf1.device("/job:ps/task:0"):
            v = tf1.Variable(np.float32(1.5))
        with tf1.Session(servers[1].target) as sess:
            sess.run(v.initializer)
            samples = []
            for i in range(WARMUP + FETCHES):
                start = time.perf_counter()
                sess.run(v)
                if i >= WARMUP:
                    samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _run(what, workers, transport):
    from dfcore.mpi.job import run_job

    job = run_job(task_main, ps=1, workers=workers, args=[what], transport=transport, timeout_s=JOB_TIMEOUT_S,
                  progress=False)
    return [s for w in range(workers) for s in job.ranks[f"/job:worker/replica:0/task:{w}"]["seconds"]]


def main():
    from _timing import report

    try:
        import mpi4py  # noqa: F401 - only to know whether the MPI side can run
        have_mpi = True
    except ImportError:
        have_mpi = False
    rows = []
    fetch = {"grpc": _run("fetch", 1, "grpc")}
    step = {"grpc": _run("mlp_step", 2, "grpc")}
    if have_mpi:
        fetch["mpi"], step["mpi"] = _run("fetch", 1, "mpi"), _run("mlp_step", 2, "mpi")
    print(f"1 ps + 1 or 2 workers on {os.cpu_count()} cores; medians over {FETCHES} fetches / {STEPS} steps per worker")
    for transport in fetch:
        rows.append((f"(a) Session.run fetching a 4-byte variable from the ps, {transport}",
                     statistics.median(fetch[transport]) * 1e6, "us"))
    for transport in step:
        rows.append((f"(b) one async PS step, digits MLP, 1 ps + 2 workers, {transport}",
                     statistics.median(step[transport]) * 1e3, "ms"))
    if have_mpi:
        rows.append(("(a) gRPC vs MPI", statistics.median(fetch["grpc"]) / statistics.median(fetch["mpi"]), "x"))
        rows.append(("(b) gRPC vs MPI", statistics.median(step["grpc"]) / statistics.median(step["mpi"]), "x"))
    report(rows)
    if not have_mpi:
        print(f"MPI side skipped: mpi4py is not installed for {sys.executable} (pip install 'dfcore[mpi]')")
    tf_seconds = _tensorflow_fetch_s()
    if tf_seconds is None:
        print("TensorFlow is not importable here: no comparison with its gRPC server")
    else:
        report([("(a) TensorFlow's own gRPC server, same fetch", tf_seconds * 1e6, "us"),
                ("(a) dfcore gRPC vs TensorFlow", statistics.median(fetch["grpc"]) / tf_seconds, "x")])


if __name__ == "__main__":
    main()
