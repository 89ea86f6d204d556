"""Rank program: rank 0 checkpoints a variable every step and is SIGKILLed at a random moment.

Usage: ``jobs_checkpoint.py DIRECTORY`` (absolute). Step ``s`` assigns ``s`` to every element of ``v``
(256 float32) and saves ``DIRECTORY/model-<s>`` with ``tf.train.Saver``. After the third save a
thread kills the rank within 20 ms — during a save or between two. The other ranks block in a barrier.
"""

import os
import random
import signal
import sys
import threading
import time

from mpi4py import MPI

import dfcore as tf


def kill_soon():
    time.sleep(random.uniform(0.0, 0.02))
    os.kill(os.getpid(), signal.SIGKILL)


if len(sys.argv) != 2 or not os.path.isabs(sys.argv[1]) or not os.path.isdir(sys.argv[1]):
    raise SystemExit(f"usage: jobs_checkpoint.py DIRECTORY (an existing absolute path), got {sys.argv[1:]}")
comm = MPI.COMM_WORLD
if comm.Get_rank() == 0:
    v = tf.Variable(tf.zeros([256]), name="v")
    value = tf.placeholder(tf.float32, [])
    assign = tf.assign(v, tf.fill([256], value))
    saver = tf.train.Saver(max_to_keep=3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 100000):
            sess.run(assign, {value: float(step)})
            saver.save(sess, os.path.join(sys.argv[1], "model"), global_step=step)
            if step == 3:
                threading.Thread(target=kill_soon, daemon=True).start()
comm.Barrier()
