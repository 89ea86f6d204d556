"""The steps a Session has in flight, so that closing it (or losing a task it runs on) ends each with TF's error.

Source: TF's ``DirectSession::Close`` (it cancels the session's ``CancellationManager``: a step still
running fails with ``CANCELLED: Session has been closed.``; a ``run`` after it raises
``RuntimeError: Attempted to use a closed Session.`` in the Python client) and the distributed
master, whose step fails with ``UNAVAILABLE`` when a worker task it runs on dies.

A step that was running when its session closed, or when a task it used went down, may have
failed on the way in any manner (a variable the close cleared reads as uninitialized, a queue it
waited on was retired); that error is replaced by the one that says why the step ended, and
nothing the step did is committed.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import errors

#: How long ``Session.close()`` waits for its cancelled steps to stop before it releases their state (s).
CLOSE_DRAIN_S = 2.0


def closed_error() -> errors.CancelledError:
    """The error of a step that was running when its session closed (TF's wording)."""
    return errors.CancelledError(None, None, "Session has been closed.")


class StepsInFlight:
    """Counts a session's running steps; :meth:`close` refuses new ones and :meth:`drain` waits for the rest.

    ``with steps.running():`` holds one step in flight for the block (the object is its own context manager:
    a generator-based one cost each ``Session.run`` a few µs).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._count = 0
        self.closed = False

    def running(self) -> StepsInFlight:
        """The context manager holding one step in flight (``with steps.running(): ...``).

        Raises (on entering it):
            RuntimeError: the session is closed (TF's wording).
        """
        return self

    def __enter__(self) -> None:
        with self._lock:
            if self.closed:
                raise RuntimeError("Attempted to use a closed Session.")
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._count -= 1
            if not self._count and self.closed:  # only drain() waits, and only once closed
                self._cv.notify_all()

    def close(self) -> bool:
        """Refuse new steps; True if this call closed it (False: it was closed already)."""
        with self._cv:
            if self.closed:
                return False
            self.closed = True
            return True

    def drain(self, timeout_s: float = CLOSE_DRAIN_S) -> bool:
        """Wait up to ``timeout_s`` seconds until no step is in flight; True if none is."""
        with self._cv:
            return self._cv.wait_for(lambda: self._count == 0, timeout_s)


def interrupted_error(steps: StepsInFlight, binding: Any, plan: Any) -> errors.OpError | None:
    """Why a step of ``plan`` must not stand although it ran: ``CancelledError`` if its session was closed,
    ``UnavailableError`` if a task it runs on went down (``binding.check_step``); None if neither."""
    if steps.closed:
        return closed_error()
    check = getattr(binding, "check_step", None)
    if check is not None:
        try:
            check(plan)
        except errors.UnavailableError as error:
            return error
    return None
