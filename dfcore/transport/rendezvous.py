"""The rendezvous of a step that spans processes: local keys meet locally, remote ones go to their task.

Source: TF's ``BaseRemoteRendezvous`` / ``RpcRemoteRendezvous``
(``core/distributed_runtime/base_rendezvous_mgr.cc``): each task keeps one rendezvous per
step id; a ``_Send`` whose receiving device lives in another task hands the tensor to that
task, where it waits in that task's rendezvous for the ``_Recv`` — with the same key
(``<src>;<incarnation>;<dst>;<edge>;0:0``). TF's receiver pulls (``RecvTensor`` RPC);
dfcore's sender pushes (one message, no round trip), which changes no result.

A step is named by its *handle* ``(master rank, step id)``. Tensors that arrive before the
step's partition starts on this process wait in a rendezvous created on demand; tensors
that arrive after the step ended there are dropped.
"""

import collections
import threading
import time

from .. import errors
from ..runtime.rendezvous import Rendezvous, TransferRecord, parse_key
from .seam import error_from_wire, error_to_wire


class RemoteRendezvous(Rendezvous):
    """One step's rendezvous on one process.

    Args:
        transport: the process's :class:`~dfcore.transport.seam.Transport`.
        handle: the step's ``(master rank, step id)``.
        peers: ranks to tell when this rendezvous is aborted (the master tells the tasks running
            the step's other partitions; a task tells nobody: its reply carries the error).
    """

    def __init__(self, transport, handle, peers=()):
        super().__init__()
        self._transport = transport
        self._handle = handle
        self._peers = tuple(peers)
        self._remote_transfers = []
        self._remote_sent = {}

    def send(self, key, value, nbytes=None):
        """As :meth:`Rendezvous.send`; a key whose receiving device is in another process is sent there."""
        parsed = parse_key(key)
        dst = self._transport.rank_of_device(parsed.dst_device)
        if dst == self._transport.rank:
            return super().send(key, value, nbytes)
        self._raise_if_aborted_locked()
        sent = time.perf_counter()
        self._transport.post(dst, "tensor", self._handle, key, self._transport.wire_tensor(value), sent)
        return None

    def _wait(self, settled, timeout_s):
        return self._transport.wait_settled(settled, timeout_s)

    def receive_remote(self, key, value, sent_s):
        """A tensor from another process: post it for the local ``_Recv`` (no copy)."""
        self.deliver(key, value)
        with self._lock:
            self._remote_sent[key] = sent_s

    def add_remote_transfers(self, records):
        """Add another task's :class:`TransferRecord` s of this step (for ``RunMetadata.transfers``)."""
        with self._lock:
            self._remote_transfers.extend(records)

    def transfers(self):
        """Every matched transfer of the step known here: local ones (with cross-process send times) and the
        other tasks' ones reported back to the master."""
        local = super().transfers()
        with self._lock:
            sent = dict(self._remote_sent)
            remote = list(self._remote_transfers)
        local = [TransferRecord(t.key, t.tensor_name, t.src_device, t.dst_device, t.nbytes,
                                sent.get(t.key, t.send_time_s), t.recv_request_time_s, t.match_time_s)
                 for t in local]
        return sorted(local + remote, key=lambda t: t.match_time_s)

    def start_abort(self, status):
        """Abort here and tell the peers (once)."""
        if self.is_aborted:
            return
        super().start_abort(status)
        for peer in self._peers:
            self._transport.post(peer, "abort_step", self._handle, error_to_wire(status))

    def _raise_if_aborted_locked(self):
        with self._lock:
            self._raise_if_aborted()


class StepTable:
    """The process's rendezvous per live step handle (TF's ``RendezvousMgr``)."""

    def __init__(self, transport):
        self._transport = transport
        self._lock = threading.Lock()
        self._steps = {}
        self._finished = collections.deque(maxlen=4096)
        self._finished_set = set()
        transport.on_message("tensor", self._on_tensor)
        transport.on_message("abort_step", self._on_abort)
        transport.busy_while(lambda: bool(self._steps))

    def find_or_create(self, handle, peers=()):
        """The rendezvous of ``handle``, created if new (the master creates its step's before asking any
        other task to run a partition of it, so ``peers`` is always given to a new one)."""
        with self._lock:
            return self._live(handle, peers)

    def _live(self, handle, peers=()):
        found = self._steps.get(handle)
        if found is None:
            found = self._steps[handle] = RemoteRendezvous(self._transport, handle, peers)
        return found

    def release(self, handle):
        """Forget ``handle``'s rendezvous (late tensors for it are dropped)."""
        with self._lock:
            self._steps.pop(handle, None)
            if len(self._finished) == self._finished.maxlen:
                self._finished_set.discard(self._finished[0])
            self._finished.append(handle)
            self._finished_set.add(handle)

    def _on_tensor(self, source, handle, key, value, sent_s):
        with self._lock:
            if handle in self._finished_set:
                return
            rendezvous = self._live(handle)
        try:
            rendezvous.receive_remote(key, self._transport.unwire_tensor(value), sent_s)
        except errors.AbortedError:
            pass  # the step was aborted here already; the value is not needed

    def _on_abort(self, source, handle, wire):
        with self._lock:
            rendezvous = self._steps.get(handle)
        if rendezvous is not None:
            rendezvous.start_abort(error_from_wire(wire))
