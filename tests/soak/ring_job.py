"""Soak rank program: ring all-reduce steps over every rank, checked against the numpy sum, resumed from checkpoints.

Run by the soak driver as ``run_job("ring_job.py", ranks=N, args=[JOB_DIR])``; ``JOB_DIR/plan.json``
(:mod:`jobfiles`) gives ``state_dir``, ``steps``, ``checkpoint_every`` and the fault. Step ``s`` (global,
1-based) all-reduces :func:`contribution` of every rank with ``dfcore.mpi.all_reduce`` (ring) and checks
the result against ``np.sum`` of the same contributions; a mismatch raises :class:`ReductionMismatch`
(the driver counts it as an invariant violation). Rank 0 keeps the state in variables — ``step`` and
``acc``, the sum of every step's result — saves it every ``checkpoint_every`` steps with
``tf.train.Saver`` and restores the latest checkpoint on start (then broadcasts the step to the
others), so that ``acc`` at step ``s`` is :func:`expected_acc` (s): no step counted twice or skipped.
Each rank computes its contribution through a small graph with a ``SoakFault`` op, where
``op_exception`` raises on the rank and local step the plan names.
"""

import os
import sys

import numpy as np
from fault_op import PASS, RAISE, soak_fault
from jobfiles import RankFiles

import dfcore as tf
from dfcore.mpi import all_reduce
from dfcore.mpi.report import current_rank

ELEMENTS = 1000
RING_FAULTS = ("sigkill", "sigterm", "op_exception")


class ReductionMismatch(AssertionError):
    """The all-reduce result differs from the numpy reference (a soak invariant violation)."""


def contribution(seed: int, rank: int, step: int) -> np.ndarray:
    """Rank ``rank``'s float64 ``[ELEMENTS]`` input of global step ``step`` (deterministic)."""
    return np.random.default_rng([seed, rank, step]).standard_normal(ELEMENTS)


def reference(seed: int, ranks: int, step: int) -> np.ndarray:
    """``np.sum`` of every rank's contribution of ``step``."""
    return np.sum([contribution(seed, r, step) for r in range(ranks)], axis=0)


def state_variables():
    """``{name: Variable}`` of what the checkpoints hold (also used by the driver to restore them)."""
    return {"step": tf.Variable(0, dtype=tf.int64, name="step", trainable=False),
            "acc": tf.Variable(tf.zeros([ELEMENTS], dtype=tf.float64), name="acc", trainable=False)}


def checkpoint_values(path: str) -> dict:
    """``{name: numpy value}`` restored from the checkpoint ``path`` in a fresh graph and session."""
    with tf.Graph().as_default():
        variables = state_variables()
        saver = tf.train.Saver(list(variables.values()))
        with tf.Session() as sess:
            saver.restore(sess, path)
            return dict(zip(variables, sess.run(list(variables.values()))))


class _Chief:
    """Rank 0's state: restore, apply one step's result, save."""

    def __init__(self, sess, state_dir, files):
        self.sess, self.state_dir = sess, state_dir
        self.variables = state_variables()
        self.total = tf.placeholder(tf.float64, [ELEMENTS], name="total")
        self.new_step = tf.placeholder(tf.int64, [], name="new_step")
        self.apply = tf.group(tf.assign_add(self.variables["acc"], self.total),
                              tf.assign(self.variables["step"], self.new_step))
        self.saver = tf.train.Saver(list(self.variables.values()), max_to_keep=5)
        sess.run(tf.variables_initializer(list(self.variables.values())))
        path = tf.train.latest_checkpoint(state_dir)
        if path is not None:
            self.saver.restore(sess, path)
            self.saver.recover_last_checkpoints(tf.train.get_checkpoint_state(state_dir).all_model_checkpoint_paths)
        self.step = int(sess.run(self.variables["step"]))
        files.restored(step=self.step, checkpoint=path)

    def apply_step(self, step, total):
        self.sess.run(self.apply, {self.total: total, self.new_step: step})

    def save(self, step):
        self.saver.save(self.sess, os.path.join(self.state_dir, "model.ckpt"), global_step=step)


def main(job_dir):
    from mpi4py import MPI

    rank = current_rank()
    files = RankFiles(job_dir, rank)
    plan, comm = files.plan, MPI.COMM_WORLD
    size = comm.Get_size()
    value = tf.placeholder(tf.float64, [ELEMENTS], name="value")
    trigger = tf.placeholder(tf.int32, [], name="trigger")
    with tf.control_dependencies([soak_fault(trigger, job_dir, name="ContributionFault")]):
        checked_value = tf.identity(value)
    with tf.Session() as sess:
        chief = _Chief(sess, plan["state_dir"], files) if rank == 0 else None
        first = comm.bcast(chief.step if chief is not None else None, root=0) + 1
        for local, step in enumerate(range(first, first + plan["steps"]), start=1):
            code = RAISE if files.fault_here(local, ("op_exception",)) else PASS
            mine = sess.run(checked_value, {value: contribution(plan["seed"], rank, step), trigger: code})
            total = all_reduce(mine, algorithm="ring", trace=False)
            expected = reference(plan["seed"], size, step)
            if not np.allclose(total, expected, rtol=1e-12, atol=1e-12):
                raise ReductionMismatch(f"step {step}: all_reduce gave {total[:3]}..., np.sum gave {expected[:3]}... "
                                        f"(max difference {np.max(np.abs(total - expected))})")
            if chief is not None:
                chief.apply_step(step, total)
                files.applied(step)
                if step % plan["checkpoint_every"] == 0:
                    chief.save(step)
            files.step_done(local)
    comm.Barrier()


if __name__ == "__main__":
    main(sys.argv[1])
