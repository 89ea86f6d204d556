"""``SoakFault``: an op that passes its int32 trigger through, or fails the process that runs it.

Placed with ``tf.device`` (or colocated), it fails exactly where the soak wants a fault: on the ps
between an apply and the counter increment ("a ps dying mid-apply"), on a worker between its
gradients and their push ("a worker dying mid-push"), or anywhere as "an exception inside an op".
The trigger is fed per step: :data:`PASS` (0) passes it through, :data:`RAISE` raises a
RuntimeError from inside the kernel (a bug in an op, not a typed OpError), :data:`KILL` SIGKILLs
the process running the kernel. Either way the kernel first records the moment in ``<job
dir>/fault_at`` (:func:`jobfiles.note_fault`). Registered on import, on every rank of a job
(each rank runs the same script, so the ps knows the kernel of an op a worker's graph places there).
"""

import os
import signal

import jobfiles

from dfcore.framework import registry
from dfcore.ops import common_shapes
from dfcore.ops.op_util import apply_op1

PASS, RAISE, KILL = 0, 1, 2


def soak_fault(trigger, job_dir: str, name: str = "SoakFault"):
    """``trigger`` (int32 scalar Tensor) unchanged, or a fault (see the module docstring)."""
    return apply_op1("SoakFault", [trigger], {"job_dir": job_dir}, name)


@registry.RegisterShape("SoakFault")
def _soak_fault_shape(op):
    return common_shapes.unchanged(op)


@registry.RegisterKernel("SoakFault")
def _soak_fault_kernel(op):
    job_dir = op.get_attr("job_dir")

    def compute(trigger):
        code = int(trigger)
        if code == RAISE:
            jobfiles.note_fault(job_dir)
            raise RuntimeError(f"soak: fault injected inside op {op.name!r} (pid {os.getpid()})")
        if code == KILL:
            jobfiles.note_fault(job_dir)
            os.kill(os.getpid(), signal.SIGKILL)
        return trigger

    return compute


registry.mark_stateful("SoakFault")
