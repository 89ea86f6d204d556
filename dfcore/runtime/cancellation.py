"""How a step ends early: its deadline, and its cancellation by an interrupt.

Source: TF's ``DirectSession::WaitForNotification`` (a step still running after
``RunOptions.timeout_in_ms``, else ``ConfigProto.operation_timeout_in_ms``, fails with
``DEADLINE_EXCEEDED: Timed out waiting for notification``) and ``DirectSession::RunInternal``
(a cancelled step fails with ``CANCELLED: Run call was cancelled``).

Either ends the step exactly as a failing op does (:class:`dfcore.runtime.step.Barrier`):
the first error is kept, the step's rendezvous is aborted — which wakes every blocked
``_Recv`` and every queue, accumulator and mutex wait of the step — every executor
stops before its next op, and nothing the step did is committed. Executors test
:meth:`Deadline.expired` between ops, so a deadline holds for ops running on the
calling thread too.
"""

from __future__ import annotations

import time

from .. import errors

#: The deadline of a step that sets none (seconds): no wait is unbounded.
DEFAULT_STEP_TIMEOUT_S = 600.0


class Deadline:
    """The moment a step must have finished by: ``timeout_s`` seconds (> 0) after this object was made."""

    __slots__ = ("expiry_s", "timeout_s")

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        #: ``time.perf_counter()`` value at which the step is out of time.
        self.expiry_s = time.perf_counter() + timeout_s

    def remaining_s(self) -> float:
        """Seconds left (0 once expired)."""
        return max(0.0, self.expiry_s - time.perf_counter())

    def expired(self) -> bool:
        return time.perf_counter() >= self.expiry_s

    def error(self) -> errors.DeadlineExceededError:
        """The step's error once expired (TF's wording, then what happened and what to do)."""
        return errors.DeadlineExceededError(
            None, None, f"Timed out waiting for notification: the step did not finish within {self.timeout_s:g} s; "
            "it was aborted and nothing it did was committed. Raise RunOptions.timeout_in_ms or "
            "ConfigProto.operation_timeout_in_ms if it needs longer.")


def cancelled_error(cause: BaseException) -> errors.CancelledError:
    """The error a step is aborted with when ``cause`` (Ctrl-C's ``KeyboardInterrupt``, say) interrupts a
    thread running or waiting for it (TF's wording, then the cause)."""
    return errors.CancelledError(
        None, None, f"Run call was cancelled: {type(cause).__name__} interrupted the step; it was aborted and "
        "nothing it did was committed.")
