"""Rank program: 1 ps + 2 workers with ``tf.train.Server``s whose workers end SECONDS apart (default 5).

The ps serves until both workers are gone (``server.join``); worker 0 runs one step on the ps's variable
and ends at once, worker 1 runs one step, works SECONDS longer and ends. Every rank reports ``pid``.
Nothing waits for worker 0 after it left, so the job must succeed however far apart the workers end.
"""

import os
import sys
import time

import dfcore as tf
from dfcore.mpi import MPIClusterResolver
from dfcore.mpi.report import report

resolver = MPIClusterResolver()
cluster = resolver.cluster_spec()
config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
server = tf.train.Server(cluster, job_name=resolver.task_type, task_index=resolver.task_id, config=config)
report(pid=os.getpid())
if resolver.task_type == "ps":
    server.join(timeout_s=60)
else:
    with tf.device(tf.train.replica_device_setter(cluster=cluster,
                                                  worker_device=f"/job:worker/task:{resolver.task_id}")):
        counter = tf.Variable(0.0, name=f"counter{resolver.task_id}")
        increment = tf.assign_add(counter, 1.0)
    with tf.Session(server.target, config=config) as sess:
        sess.run(counter.initializer)
        sess.run(increment)
    if resolver.task_id == 1:
        time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
