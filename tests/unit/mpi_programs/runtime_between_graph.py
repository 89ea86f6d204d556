"""Rank program of tests/unit/test_mpi_runtime.py: 1 ps + 2 workers, between-graph replication over MPI.

Each worker writes ``worker<i>.json`` into the directory given as argv[1]; the ps writes ``ps0.json``.
With a ClusterSpec as JSON in argv[2] (loopback addresses), the servers use ``protocol="grpc+mpi"`` on those
addresses (gRPC for control, MPI for tensors; tests/unit/test_mpi_grpc_protocol.py).
"""

import json
import os
import sys
import time

import numpy as np

import dfcore as tf
from dfcore.mpi import MPIClusterResolver, runtime as mpi_runtime
from dfcore.mpi.world import job_communicator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fused_model import X, build_fused, partition_summary

OUT = sys.argv[1]
resolver = MPIClusterResolver()
cluster = tf.train.ClusterSpec(json.loads(sys.argv[2])) if len(sys.argv) > 2 else resolver.cluster_spec()
protocol = "grpc+mpi" if len(sys.argv) > 2 else "grpc"
config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
server = tf.train.Server(cluster, job_name=resolver.task_type, task_index=resolver.task_id, protocol=protocol,
                         config=config)


def write(name, data):
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(data, f)


if resolver.task_type == "ps":
    started = time.monotonic()
    server.join(timeout_s=60)
    write("ps0", {"joined_after_s": time.monotonic() - started})
    sys.exit(0)

w = resolver.task_id
out = {"transport": type(mpi_runtime.current().transport).__name__}
with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{w}")):
    counter = tf.Variable(tf.zeros([4]), name="counter")
    increment = tf.assign_add(counter, tf.ones([4]))
    x = tf.placeholder(tf.float32, [3, 4], name="x")
    y = tf.matmul(x, tf.reshape(counter, [4, 1]))
    bad = tf.assign_add(counter, tf.ones([4]) * 100.0)
with tf.device("/job:ps/task:0"):
    poisoned = tf.check_numerics(tf.log(counter - 1000.0), "poisoned read")


def loop_body(i, v):
    with tf.device("/job:ps/task:0"):  # half of every iteration runs on the ps: transfers keyed frame:iter
        v = v * 2.0
    return i + 1, v + 1.0


with tf.device(f"/job:worker/task:{w}"):
    _, looped = tf.while_loop(lambda i, v: i < 3, loop_body, (tf.constant(0), tf.ones([2])))

fused_x, fused_hidden, fused_init = build_fused(w)  # the optimizer fuses it: see fused_model

workers = job_communicator("worker")
with tf.Session(server.target, config=config) as sess:
    out["devices"] = [d.name for d in sess.list_devices()]
    if w == 0:
        sess.run(counter.initializer)
    workers.Barrier()
    for _ in range(5):
        sess.run(increment)
    workers.Barrier()
    out["counter_after_both"] = sess.run(counter).tolist()
    feed = np.arange(12, dtype=np.float32).reshape(3, 4)
    meta = tf.RunMetadata()
    out["y"] = sess.run(y, {x: feed}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                        run_metadata=meta).ravel().tolist()
    out["expected_y"] = (feed @ np.full([4, 1], 10.0, np.float32)).ravel().tolist()
    out["stat_devices"] = sorted(d.device for d in meta.step_stats.dev_stats)
    out["transfers"] = [[t.tensor_name, t.src_device, t.dst_device, t.nbytes] for t in tf.step_records(meta).transfers]
    out["endpoints"] = sorted([n.node_name, d.device] for d in meta.step_stats.dev_stats for n in d.node_stats
                              if n.node_name.startswith(("_arg_", "_retval_")))
    workers.Barrier()
    if w == 0:  # one op fails on the ps: the step's update of counter on the ps must not land
        try:
            sess.run([bad, poisoned])
            out["error"] = None
        except tf.errors.InvalidArgumentError as error:
            out["error"] = [type(error).__name__, error.message]
    workers.Barrier()
    out["counter_after_failed_step"] = sess.run(counter).tolist()
    out["looped"] = sess.run(looped).tolist()
    sess.run(fused_init)  # each worker's own copy (the same values)
    meta = tf.RunMetadata()
    out["hidden"] = sess.run(fused_hidden, {fused_x: X}, run_metadata=meta, options=tf.RunOptions(
        trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)).tolist()
    out["fused_partitions"], out["fused_stats"] = partition_summary(meta)
write(f"worker{w}", out)
