"""Rank program: 1 ps + 2 workers; worker 0 runs one step and exits before worker 1 opens its session.

Worker 1 waits until worker 0 has said goodbye, then opens ``tf.Session(server.target)`` with the
``device_filters`` given as arguments (none: every task). It reports ``outcome``: ``"ran"`` with the
devices its session sees, or the class of the error and the seconds it took to come.
"""

import sys
import time

import dfcore as tf
from dfcore.mpi import MPIClusterResolver, transport as transport_lib
from dfcore.mpi.report import report

resolver = MPIClusterResolver()
cluster = resolver.cluster_spec()
server = tf.train.Server(cluster, job_name=resolver.task_type, task_index=resolver.task_id,
                         config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 0}))
if resolver.task_type == "ps":
    server.join(timeout_s=60)
    raise SystemExit
index = resolver.task_id
with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{index}")):
    counter = tf.Variable(0.0, name=f"counter{index}")
    increment = tf.assign_add(counter, 1.0)
if index == 1:
    worker0 = transport_lib.current().layout.rank_of("worker", 0)
    assert transport_lib.current().wait_for_goodbyes([worker0], timeout_s=30), "worker 0 never left"
started = time.monotonic()
try:
    with tf.Session(server.target, config=tf.ConfigProto(device_filters=sys.argv[1:])) as sess:
        sess.run(counter.initializer)
        sess.run(increment)
        report(outcome="ran", devices=[d.name for d in sess.list_devices()])
except tf.errors.OpError as error:
    report(outcome=type(error).__name__, message=str(error), after_s=time.monotonic() - started)
