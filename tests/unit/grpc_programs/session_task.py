"""Task program for the cluster start-up tests: one task of a gRPC cluster, told by ``TF_CONFIG``.

Usage: ``session_task.py FILTERS CONNECT_TIMEOUT_S``. A ps task serves. A worker builds ``v = 41`` on the ps,
opens a session on its own server (``FILTERS`` ``filtered``: ``device_filters`` to the ps and itself;
``all``: none) with the "still waiting" lines every 0.3 s and ``CONNECT_TIMEOUT_S`` to wait for the tasks,
runs ``v + 1`` and prints ``result=42.0``.
"""

import sys

import dfcore as tf
from dfcore.transport import master, task

filters, timeout_s = sys.argv[1], float(sys.argv[2])
task.STILL_WAITING_LOG_S, master.CONNECT_TIMEOUT_S = 0.3, timeout_s
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
server = tf.train.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id)
if resolver.task_type == "ps":
    server.join()
    raise SystemExit
with tf.device("/job:ps/task:0"):
    v = tf.Variable(41.0, name="v")
device_filters = ["/job:ps", f"/job:worker/task:{resolver.task_id}"] if filters == "filtered" else []
with tf.Session(server.target, config=tf.ConfigProto(device_filters=device_filters)) as sess:
    sess.run(v.initializer)
    print(f"result={sess.run(v + 1.0)}", flush=True)
