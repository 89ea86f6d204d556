"""Rank program: 1 ps + 2 workers; worker 1 increments a ps variable, tells worker 0 over MPI, worker 0 reads it.

Once ``Session.run`` has returned, the step's writes must be visible to every task, as in TF (which
applies them in place). Worker 0 reports ``stale``: the rounds (of ``ROUNDS``) in which it read a value
older than worker 1's last increment.
"""

import dfcore as tf
from dfcore.mpi import MPIClusterResolver
from dfcore.mpi.report import report
from dfcore.mpi.world import job_communicator

ROUNDS = 300
resolver = MPIClusterResolver()
cluster = resolver.cluster_spec()
server = tf.train.Server(cluster, job_name=resolver.task_type, task_index=resolver.task_id,
                         config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 0}))
if resolver.task_type == "ps":
    server.join(timeout_s=120)
    raise SystemExit
with tf.device("/job:ps/task:0"):
    counter = tf.Variable(0, name="counter")
    increment = tf.assign_add(counter, 1)
workers = job_communicator("worker")
with tf.Session(server.target, config=tf.ConfigProto(device_filters=["/job:ps"])) as sess:
    if resolver.task_id == 0:
        sess.run(counter.initializer)
    workers.Barrier()
    stale = []
    for i in range(ROUNDS):
        if resolver.task_id == 1:
            sess.run(increment)
        workers.Barrier()  # worker 1's run has returned
        if resolver.task_id == 0 and int(sess.run(counter)) != i + 1:
            stale.append(i)
        workers.Barrier()
    report(stale=stale)
