"""The seam between the multi-process runtime and the wire it runs over.

Source: TF's ``WorkerInterface``/``WorkerCacheInterface``
(``core/distributed_runtime/worker_interface.h``): the master and the rendezvous call a peer's
worker service through one interface, whatever carries the calls (gRPC in TF). Here every task of
the cluster is numbered by its *rank* (jobs in the ``ClusterSpec``'s order, tasks by index) and a
transport offers:

* ``post(dst, kind, *payload)``: a one-way message, handled on ``dst`` by its ``on_message`` handler;
* ``request(dst, kind, *payload)``: a ``concurrent.futures.Future`` of the peer's reply, served on
  ``dst`` by its ``on_request`` handler ``handler(source, reply, *payload)``, which calls
  ``reply(value)`` or ``reply(error=exception)`` exactly once (maybe later, from another thread).

The kinds the runtime uses: requests ``get_status``, ``register_graph``, ``run_graph``, ``end_step``,
``recv_tensor`` (TF's pull of a tensor from its sender); the message ``abort_step``. Messages between two
ranks arrive in the order they were sent. A tensor waiting for its pull is held as ``wire_tensor(value)``
(a snapshot in the transport's encoding, with its send time), and ``unwire_tensor`` of the reply gives
``(value, send time)``. MPI (:mod:`dfcore.mpi.transport`) pickles the payloads inside one trusted job; gRPC
(:mod:`dfcore.transport.grpc_transport`) encodes each kind as TF's protobuf messages (no pickle on the wire).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, Protocol

from .. import errors


class Transport(Protocol):
    """What :mod:`dfcore.transport` needs of a transport (see the module docstring)."""

    rank: int
    layout: Any  # task_name(rank), rank_of(job, task), task_of_rank(rank), size, address(rank)

    def on_message(self, kind: str, handler: Callable[..., None]) -> None: ...

    def on_request(self, kind: str, handler: Callable[..., None]) -> None: ...

    def post(self, dst: int, kind: str, *payload: Any) -> None: ...

    def request(self, dst: int, kind: str, *payload: Any) -> concurrent.futures.Future: ...

    def wait(self, future: concurrent.futures.Future, timeout_s: float, what: str) -> Any: ...

    def progress_until(self, done: Callable[[], bool], timeout_s: float | None = None) -> bool: ...

    def wait_settled(self, settled: threading.Event, timeout_s: float | None) -> bool: ...

    def busy_while(self, probe: Callable[[], bool]) -> None: ...

    def rank_of_device(self, device: str) -> int: ...

    def gone(self, rank: int) -> bool: ...

    def wire_tensor(self, value: Any) -> Any: ...

    def unwire_tensor(self, wire: Any) -> Any: ...

    def start(self) -> None: ...

    def close(self) -> None: ...


def error_to_wire(error: BaseException) -> tuple[str, str]:
    """``(class name, message)`` of an exception, for a message."""
    message = error.message if isinstance(error, errors.OpError) else f"{type(error).__name__}: {error}"
    return type(error).__name__, message


def error_from_wire(wire: tuple[str, str] | None) -> errors.OpError | None:
    """The ``dfcore.errors`` exception a :func:`error_to_wire` pair names (``UnknownError`` for non-TF errors)."""
    if wire is None:
        return None
    name, message = wire
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.OpError)):
        cls = errors.UnknownError
    return cls(None, None, message)


def wait(future: concurrent.futures.Future, timeout_s: float, what: str) -> Any:
    """The value of a request's Future, waiting at most ``timeout_s``.

    Raises:
        DeadlineExceededError: no reply in time (names ``what``).
        OpError: the peer replied with an error.
    """
    try:
        return future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        raise no_reply_error(what, timeout_s) from None


def no_reply_error(what: str, timeout_s: float) -> errors.DeadlineExceededError:
    """The error of a request ``what`` that got no reply within ``timeout_s``."""
    return errors.DeadlineExceededError(None, None, f"No reply to {what} within {timeout_s} s; is that task's "
                                        "process running its tf.train.Server?")
