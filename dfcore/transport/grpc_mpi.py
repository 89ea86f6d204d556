"""``protocol="grpc+mpi"``: gRPC for control, MPI for the tensors between the tasks of one MPI job.

Source: TF's ``grpc+mpi`` server protocol (``contrib/mpi``: ``MPIRendezvousMgr`` under a ``GrpcServer``):
sessions, graphs and steps (``GetStatus``, ``RegisterGraph``, ``RunGraph``, ``CleanupGraph``, the master
service) travel over the task's gRPC server as with ``"grpc"``, while a ``_Recv`` pulls its tensor from the
sending task over MPI. Here that is one :class:`~dfcore.transport.seam.Transport` made of two: the kinds in
:data:`TENSOR_KINDS` go to the MPI job's transport (:mod:`dfcore.mpi.transport`), every other kind to the
gRPC one (:mod:`dfcore.transport.grpc_transport`). Both number the tasks alike (checked).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .. import errors
from . import seam
from .grpc_transport import GrpcTransport

#: The runtime kinds that travel over MPI: a receiver's pull of a tensor (TF's ``RecvTensor``).
TENSOR_KINDS = frozenset({"recv_tensor"})


class GrpcMpiTransport:
    """A task's transport under ``"grpc+mpi"``.

    Args:
        control: this task's :class:`GrpcTransport` (not yet started).
        tensors: the MPI job's transport (:class:`dfcore.mpi.transport.Transport`), same rank.
    Raises:
        InvalidArgumentError: the two number the tasks differently (the ClusterSpec lists its jobs in
            another order than the MPI job's layout).
    """

    def __init__(self, control: GrpcTransport, tensors: Any) -> None:
        names = [control.layout.task_name(r) for r in range(control.layout.size)]
        mpi_names = [tensors.layout.task_name(r) for r in range(tensors.layout.size)]
        if names != mpi_names or control.rank != tensors.rank:
            raise errors.InvalidArgumentError(
                None, None, f'protocol="grpc+mpi": the ClusterSpec numbers its tasks {names}, but the MPI job\'s ranks '
                f"are {mpi_names}; list the jobs in the ClusterSpec in the MPI job's order")
        self.control, self.tensors = control, tensors
        self.rank, self.layout = control.rank, control.layout
        self.address, self.incarnation = control.address, control.incarnation

    def _for(self, kind: str) -> Any:
        return self.tensors if kind in TENSOR_KINDS else self.control

    def on_message(self, kind: str, handler: Callable[..., None]) -> None:
        self._for(kind).on_message(kind, handler)

    def on_request(self, kind: str, handler: Callable[..., None]) -> None:
        self._for(kind).on_request(kind, handler)

    def post(self, dst: int, kind: str, *payload: Any) -> None:
        self._for(kind).post(dst, kind, *payload)

    def request(self, dst: int, kind: str, *payload: Any) -> concurrent.futures.Future:
        return self._for(kind).request(dst, kind, *payload)

    wait = staticmethod(seam.wait)

    def progress_until(self, done: Callable[[], bool], timeout_s: float | None = None) -> bool:
        """Receive MPI's messages on this thread until ``done()`` (gRPC's replies arrive on gRPC's threads and
        are seen at the next check, within a millisecond)."""
        return self.tensors.progress_until(done, timeout_s)

    def wait_settled(self, settled: threading.Event, timeout_s: float | None) -> bool:
        return self.tensors.wait_settled(settled, timeout_s)

    def busy_while(self, probe: Callable[[], bool]) -> None:
        self.tensors.busy_while(probe)

    def rank_of_device(self, device: str) -> int:
        return self.control.rank_of_device(device)

    def gone(self, rank: int) -> bool:
        """True once ``rank``'s process said goodbye over MPI (it is exiting and cannot come back)."""
        return self.tensors.gone(rank)

    def wire_tensor(self, value: Any) -> Any:
        return self.tensors.wire_tensor(value)

    def unwire_tensor(self, wire: Any) -> Any:
        return self.tensors.unwire_tensor(wire)

    def wait_for_goodbyes(self, ranks: Iterable[int], timeout_s: float | None = None) -> bool:
        return self.tensors.wait_for_goodbyes(ranks, timeout_s)

    # -- the gRPC server's own -----------------------------------------------------------------------------
    def add_service(self, service: str, methods: dict) -> None:
        self.control.add_service(service, methods)

    def caller_rank(self, context: Any) -> int:
        return self.control.caller_rank(context)

    def start(self) -> None:
        self.control.start()
        self.tensors.start()

    def close(self) -> None:
        self.control.close()

    def wait_closed(self, timeout_s: float | None = None) -> bool:
        return self.control.wait_closed(timeout_s)
