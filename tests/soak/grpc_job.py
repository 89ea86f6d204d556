"""Soak task program: TF1 between-graph parameter-server training over gRPC (1 ps + 2 workers, one process each).

Started by :class:`grpc_kind.GrpcPSJob` as a :class:`dfcore.task_processes.TaskJob` (``python grpc_job.py
JOB_DIR``, each task with its ``TF_CONFIG`` and ``DFCORE_TASK_RANK``: ps 0, workers 1 and 2). The model and
its step are :mod:`ps_job`'s (``w``, ``b``, ``global_step`` and ``applied_updates`` on the ps, the counters
incremented after the apply in the same step), with no in-op fault: the driver SIGKILLs or SIGTERMs a
task from outside. The chief (worker 0) restores ``tf.train.latest_checkpoint(state_dir)`` (or
initializes), then opens the ps's ``ready`` flag; worker 1 starts once it is open. Each worker runs
``rounds * round_steps`` asynchronous steps and then adds 1 to the ps's ``done`` counter; the chief
saves one checkpoint once ``done`` is 2 (nothing is in flight then) and ends the job. A worker whose step
fails writes the error's class to ``error.<rank>`` before it exits with it.
"""

import os
import sys
import time

import numpy as np
import ps_job
from jobfiles import RankFiles, write_atomic

import dfcore as tf
from dfcore.distribute.cluster_resolver import TFConfigClusterResolver
from dfcore.mpi.report import current_rank

_POLL_S = 0.02


def _build(cluster, task_id):
    worker_device = f"/job:worker/task:{task_id}"
    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=worker_device)):
        variables = ps_job.model_variables()
        ready = tf.Variable(False, name="ready", trainable=False)
        done = tf.Variable(0, dtype=tf.int64, name="done", trainable=False)
        x = tf.placeholder(tf.float32, [None, ps_job.FEATURES], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, variables["w"]) + variables["b"] - y))
        apply = tf.train.GradientDescentOptimizer(0.05).minimize(loss, var_list=[variables["w"], variables["b"]])
        with tf.control_dependencies([apply]):
            step = [tf.assign_add(variables["global_step"], 1), tf.assign_add(variables["applied_updates"], 1)]
    return variables, ready, done, (x, y), step


def _wait_for(read, timeout_s):
    """Call ``read()`` until it returns a true value (an uninitialized variable reads as not yet)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if read():
                return
        except tf.errors.FailedPreconditionError:
            pass
        time.sleep(_POLL_S)
    raise tf.errors.DeadlineExceededError(None, None, f"grpc_job: still waiting after {timeout_s:g} s")


def _train(resolver, server, files):
    plan, task_id = files.plan, resolver.task_id
    variables, ready, done, (x, y), step_fetches = _build(resolver.cluster_spec(), task_id)
    saver = tf.train.Saver(list(variables.values()), max_to_keep=5)
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{task_id}"])
    with tf.Session(server.target, config=config) as sess:
        if task_id == 0:
            path = tf.train.latest_checkpoint(plan["state_dir"])
            sess.run(tf.variables_initializer([*variables.values(), ready, done]))
            if path is not None:
                saver.restore(sess, path)
                saver.recover_last_checkpoints(tf.train.get_checkpoint_state(plan["state_dir"]).all_model_checkpoint_paths)
            restored = sess.run([variables["global_step"], variables["applied_updates"]])
            files.restored(step=int(restored[0]), applied_updates=int(restored[1]), checkpoint=path)
            sess.run(ready.assign(True))
        else:
            _wait_for(lambda: sess.run(ready), plan["timeout_s"])
        rng = np.random.default_rng([plan["seed"], task_id])
        for step in range(1, plan["rounds"] * plan["round_steps"] + 1):
            features = rng.standard_normal((ps_job.BATCH, ps_job.FEATURES)).astype(np.float32)
            values = sess.run(step_fetches, {x: features, y: features @ ps_job.TRUE_W + 0.5})
            files.applied(*values)
            files.step_done(step)
        sess.run(done.assign_add(1))
        if task_id == 0:
            _wait_for(lambda: sess.run(done) == 2, plan["timeout_s"])
            saver.save(sess, os.path.join(plan["state_dir"], "model.ckpt"),
                       global_step=int(sess.run(variables["global_step"])))


def main(job_dir):
    files = RankFiles(job_dir, current_rank())
    resolver = TFConfigClusterResolver()
    server = tf.train.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                             config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 0}))
    if resolver.task_type == "ps":
        server.join()
        return
    try:
        _train(resolver, server, files)
    except tf.errors.OpError as error:
        write_atomic(os.path.join(job_dir, f"error.{files.rank}"), type(error).__name__)
        raise


if __name__ == "__main__":
    main(sys.argv[1])
