"""The threads of one iterator pass: daemon workers that a pass can stop, join for a bounded time, or abandon.

Source: dfcore. TF runs a pipeline's background work on threads owned by the iterator
(``core/kernels/data/``'s ``StartThread``) and cancels them through the iterator's
``CancellationManager``; a thread blocked in user Python code (a ``from_generator`` source that never
returns) cannot be interrupted there either. Here every pipeline thread is a daemon, so a thread stuck in
user code neither blocks :meth:`IterationContext.close <dfcore.data.iteration.IterationContext.close>`
(which joins for at most :data:`CLOSE_TIMEOUT_S` in all) nor interpreter exit; a thread still alive after
that is abandoned and reported once with a ``RuntimeWarning``.
"""

import concurrent.futures
import queue
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

CLOSE_TIMEOUT_S = 0.5  # all of a pass's threads together, so that Session.close() returns within 1 s
_STOP = object()


class WorkerPool:
    """``size`` daemon threads running submitted calls in order of submission; ``wake()`` ends them."""

    def __init__(self, size: int, name: str):
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True) for i in range(size)]
        for thread in self.threads:
            thread.start()

    def submit(self, fn: Callable, *args: Any) -> concurrent.futures.Future:
        """A Future of ``fn(*args)``, run on one of the pool's threads."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._tasks.put((future, fn, args))
        return future

    def wake(self) -> None:
        """Let each thread end once its current call and the calls queued before are done (a call whose
        Future was cancelled is skipped)."""
        for _ in self.threads:
            self._tasks.put(_STOP)

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is _STOP:
                return
            future, fn, args = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as error:  # handed to whoever waits on the future
                future.set_exception(error)


def join_all(threads: list[threading.Thread], timeout_s: float = CLOSE_TIMEOUT_S) -> list[threading.Thread]:
    """Join ``threads`` within ``timeout_s`` seconds in all; the ones still alive are returned (abandoned)
    after one ``RuntimeWarning`` naming them."""
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    alive = [t for t in threads if t.is_alive() and t is not threading.current_thread()]
    if alive:
        warnings.warn(f"tf.data: {len(alive)} pipeline thread(s) did not stop within {timeout_s:g} s of the "
                      f"iterator closing (a user function or generator that does not return) and were abandoned "
                      f"as daemon threads: {', '.join(t.name for t in alive)}", RuntimeWarning, stacklevel=2)
    return alive
