"""Rank program: 1 ps + 1 worker; a step of 20 slow ops (0.1 s each) on ``argv[1]`` ("ps" or "worker")
under a 500 ms deadline, then the variable it would have set and a normal step.

The worker reports ``error`` (class), ``message``, ``elapsed_s``, ``flag`` after the failed step (the
step's ``assign`` on the ps must not be committed) and ``next`` (a following step's result); every rank
reports ``slow_ops_run``: how many slow ops its process ran (a partition that stops between ops runs
about deadline / 0.1 s of them, not all 20).
"""

import sys
import time

import numpy as np

import dfcore as tf
from dfcore.framework import registry
from dfcore.mpi import MPIClusterResolver
from dfcore.mpi.report import report

SLOW_S, SLOW_OPS = 0.1, 20
_runs = []


@registry.RegisterShape("DeadlineTestSlow")
def _slow_shape(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


@registry.RegisterKernel("DeadlineTestSlow")
def _slow_kernel(op):
    def compute(x):
        time.sleep(SLOW_S)
        _runs.append(1)
        return x + 1.0

    return compute


registry.mark_stateful("DeadlineTestSlow")

resolver = MPIClusterResolver()
cluster = resolver.cluster_spec()
server = tf.train.Server(cluster, job_name=resolver.task_type, task_index=resolver.task_id,
                         config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 0}))
if resolver.task_type == "ps":
    server.join(timeout_s=60)
    report(slow_ops_run=len(_runs))
    raise SystemExit

graph = tf.get_default_graph()
with tf.device("/job:ps/task:0"):
    flag = tf.Variable(0.0, name="flag")
with tf.device(f"/job:{sys.argv[1]}/task:0"):
    value = tf.constant(0.0)
    for i in range(SLOW_OPS):
        value = graph.create_op("DeadlineTestSlow", [value], name=f"slow{i}").outputs[0]
with tf.device("/job:ps/task:0"):
    set_flag = tf.assign(flag, value)
with tf.Session(server.target) as sess:
    sess.run(flag.initializer)
    started = time.monotonic()
    try:
        sess.run(set_flag, options=tf.RunOptions(timeout_in_ms=500))
        outcome = {"error": None, "message": ""}
    except tf.errors.OpError as error:
        outcome = {"error": type(error).__name__, "message": str(error)}
    outcome["elapsed_s"] = time.monotonic() - started
    report(**outcome, flag=float(sess.run(flag)), next=float(np.asarray(sess.run(flag + 1.0))),
           slow_ops_run=len(_runs))
