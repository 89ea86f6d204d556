"""Soak rank program: a TF1 between-graph parameter-server job (1 ps + 2 workers) that resumes from checkpoints.

Run by the soak driver as ``run_job("ps_job.py", ps=1, workers=2, args=[JOB_DIR])``; ``JOB_DIR/plan.json``
(:mod:`jobfiles`) gives ``state_dir`` (the checkpoints, kept across jobs), ``rounds``, ``round_steps``
and the fault. The variables live on the ps (``replica_device_setter``): a linear model ``w``, ``b``,
``global_step`` and ``applied_updates`` (int64). One training step applies the gradients on the ps,
then — only after the apply — increments ``global_step`` and ``applied_updates`` together, so at every
quiet moment ``applied_updates == global_step``. Each worker runs ``round_steps`` steps a round,
asynchronously; after each round the workers meet (a barrier), the chief saves a checkpoint
(``tf.train.Saver``, every ``2 * round_steps`` global steps) and they meet again. On start the chief
restores ``tf.train.latest_checkpoint(state_dir)`` (or initializes) and writes what it restored.

Faults on a worker's ``step`` (1-based, this job): ``ps_mid_apply`` — the ps SIGKILLs itself between the
apply and the counter increments; ``worker_mid_push`` — the worker SIGKILLs itself after computing its
gradients, before they reach the ps; ``op_exception`` — an op on the ps or on the worker raises.
"""

import os
import sys

import numpy as np
from fault_op import KILL, PASS, RAISE, soak_fault
from jobfiles import RankFiles

import dfcore as tf
from dfcore.mpi import MPIClusterResolver
from dfcore.mpi.report import current_rank
from dfcore.mpi.world import job_communicator

FEATURES = 4
TRUE_W = np.arange(1.0, FEATURES + 1.0, dtype=np.float32).reshape(FEATURES, 1)
BATCH = 16
PS_FAULTS = ("sigkill", "sigterm", "op_exception", "ps_mid_apply", "worker_mid_push")


def model_variables():
    """``{name: Variable}`` of what the checkpoints hold (also used by the driver to restore them)."""
    return {"w": tf.Variable(tf.zeros([FEATURES, 1]), name="w"),
            "b": tf.Variable(tf.zeros([1]), name="b"),
            "global_step": tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False),
            "applied_updates": tf.Variable(0, dtype=tf.int64, name="applied_updates", trainable=False)}


def checkpoint_values(path: str) -> dict:
    """``{name: numpy value}`` restored from the checkpoint ``path`` in a fresh graph and session."""
    with tf.Graph().as_default():
        variables = model_variables()
        saver = tf.train.Saver(list(variables.values()))
        with tf.Session() as sess:
            saver.restore(sess, path)
            return dict(zip(variables, sess.run(list(variables.values()))))


def _build(cluster, task_id, job_dir):
    """The worker's graph: ``(variables, placeholders, fetches of one step)``."""
    worker_device = f"/job:worker/task:{task_id}"
    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=worker_device)):
        variables = model_variables()
        x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        push_trigger = tf.placeholder(tf.int32, [], name="push_trigger")
        apply_trigger = tf.placeholder(tf.int32, [], name="apply_trigger")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, variables["w"]) + variables["b"] - y))
        optimizer = tf.train.GradientDescentOptimizer(0.05)
        grads_and_vars = optimizer.compute_gradients(loss, var_list=[variables["w"], variables["b"]])
    with tf.device(worker_device):
        push_fault = soak_fault(push_trigger, job_dir, name="PushFault")
        with tf.control_dependencies([push_fault]):
            grads_and_vars = [(tf.identity(g), v) for g, v in grads_and_vars]
    apply = optimizer.apply_gradients(grads_and_vars)
    with tf.device("/job:ps/task:0"):
        with tf.control_dependencies([apply]):
            apply_fault = soak_fault(apply_trigger, job_dir, name="ApplyFault")
        with tf.control_dependencies([apply_fault]):
            step = [tf.assign_add(variables["global_step"], 1), tf.assign_add(variables["applied_updates"], 1)]
    return variables, (x, y, push_trigger, apply_trigger), step


def _triggers(files, step):
    """``(push trigger, apply trigger)`` of this worker's ``step`` per the plan."""
    plan = files.plan
    if files.fault_here(step, ("worker_mid_push",)):
        return KILL, PASS
    if files.fault_here(step, ("ps_mid_apply",)):
        return PASS, KILL
    if files.fault_here(step, ("op_exception",)):
        return (RAISE, PASS) if plan["where"] == "worker" else (PASS, RAISE)
    return PASS, PASS


def _train(resolver, server, files):
    plan, task_id = files.plan, resolver.task_id
    variables, (x, y, push_trigger, apply_trigger), step_fetches = _build(
        resolver.cluster_spec(), task_id, files.job_dir)
    saver = tf.train.Saver(list(variables.values()), max_to_keep=5)
    workers = job_communicator("worker")
    prefix = os.path.join(plan["state_dir"], "model.ckpt")
    with tf.Session(server.target) as sess:
        if task_id == 0:
            path = tf.train.latest_checkpoint(plan["state_dir"])
            sess.run(tf.variables_initializer(list(variables.values())))
            if path is not None:
                saver.restore(sess, path)
                saver.recover_last_checkpoints(tf.train.get_checkpoint_state(plan["state_dir"]).all_model_checkpoint_paths)
            restored = sess.run([variables["global_step"], variables["applied_updates"]])
            files.restored(step=int(restored[0]), applied_updates=int(restored[1]), checkpoint=path)
        workers.Barrier()
        rng = np.random.default_rng([plan["seed"], task_id])
        step = 0
        for _ in range(plan["rounds"]):
            for _ in range(plan["round_steps"]):
                step += 1
                features = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
                push, apply = _triggers(files, step)
                values = sess.run(step_fetches, {x: features, y: features @ TRUE_W + 0.5,
                                                 push_trigger: push, apply_trigger: apply})
                files.applied(*values)
                files.step_done(step)
            workers.Barrier()
            if task_id == 0:
                saver.save(sess, prefix, global_step=int(sess.run(variables["global_step"])))
            workers.Barrier()


def main(job_dir):
    files = RankFiles(job_dir, current_rank())
    resolver = MPIClusterResolver()
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
    server = tf.train.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                             config=config)
    if resolver.task_type == "ps":
        server.join(timeout_s=files.plan["timeout_s"])
    else:
        _train(resolver, server, files)


if __name__ == "__main__":
    main(sys.argv[1])
