"""The rendezvous of a step that spans processes: every key meets on the task of its ``_Send``; a receiver
in another task pulls it from there.

Source: TF's ``BaseRemoteRendezvous`` / ``RpcRemoteRendezvous``
(``core/distributed_runtime/base_rendezvous_mgr.cc``, ``rpc/rpc_rendezvous_mgr.cc``): each task keeps one
rendezvous per step id; a ``_Send`` always posts its tensor in its own task's rendezvous, and a ``_Recv``
whose sending device lives in another task asks that task for it (TF's ``RecvTensor`` RPC, the kind
``recv_tensor`` here) with the same key (``<src>;<incarnation>;<dst>;<edge>;0:0``). The sending task
answers once the tensor is there; an aborted or cleaned-up step fails the request (``AbortedError``), and
a failed request aborts the receiver's step. The receiver asks as soon as its ``_Recv`` runs, usually
before the tensor exists, so a transfer costs one message each way, the request's overlapping the step.

A step is named by its *handle* ``(master rank, step id)``. A request that arrives before the step's
partition starts on the sending task waits in a rendezvous created on demand; one that arrives after the
step ended there is refused.
"""

import collections
import threading

from .. import errors
from ..framework.rendezvous_key import parse_key
from ..runtime.rendezvous import Rendezvous, TransferRecord
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

    def send(self, key, value, nbytes=None, copy=True):
        """As :meth:`Rendezvous.send`; a key whose receiving device is in another process waits here, encoded
        for the wire (a snapshot: one copy whatever ``copy`` says), until that process pulls it."""
        parsed = parse_key(key)
        if self._transport.rank_of_device(parsed.dst_device) == self._transport.rank:
            return super().send(key, value, nbytes, copy)
        self._raise_if_aborted_locked()
        return self.deliver(key, self._transport.wire_tensor(value), _wire_nbytes(value) if nbytes is None else nbytes)

    def recv_async(self, key, done):
        """As :meth:`Rendezvous.recv_async`; a key whose sending device is in another process is pulled from
        there (``recv_tensor``), and ``done`` runs on the thread that receives the reply."""
        src = self._transport.rank_of_device(parse_key(key).src_device)
        super().recv_async(key, done)
        if src != self._transport.rank and self.abort_status is None:
            self._transport.request(src, "recv_tensor", self._handle, key).add_done_callback(
                lambda future: self._pulled(key, future))

    def _wait(self, settled, timeout_s):
        return self._transport.wait_settled(settled, timeout_s)

    def _pulled(self, key, future):
        error = future.exception()
        if error is not None:  # the _Recv fails with the pull's status (TF's), then the step aborts
            if not isinstance(error, errors.OpError):
                error = errors.UnknownError(None, None, f"{type(error).__name__}: {error}")
            with self._lock:
                item = self._table.get(key)
                waiter = item.waiter if item is not None else None
                if waiter is not None:
                    del self._table[key]
            if waiter is not None:
                waiter(error, None)
            self.start_abort(error)
            return
        value, sent_s = self._transport.unwire_tensor(future.result())
        with self._lock:
            self._remote_sent[key] = sent_s
        try:
            self.deliver(key, value)
        except errors.AbortedError:
            pass  # the step was aborted here already; the value is not needed

    def add_remote_transfers(self, records):
        """Add another task's :class:`TransferRecord` s of this step (for ``RunMetadata.transfers``)."""
        with self._lock:
            self._remote_transfers.extend(records)

    def transfers(self):
        """Every matched transfer of the step known here: those received here (with the sender's send times),
        and the other tasks' ones reported back to the master (a key sent to another task is that task's)."""
        me = self._transport.rank
        with self._lock:
            sent = dict(self._remote_sent)
            remote = list(self._remote_transfers)
        local = [TransferRecord(t.key, t.tensor_name, t.src_device, t.dst_device, t.nbytes,
                                sent.get(t.key, t.send_time_s), t.recv_request_time_s, t.match_time_s)
                 for t in super().transfers() if self._transport.rank_of_device(t.dst_device) == me]
        return sorted(local + remote, key=lambda t: t.match_time_s)

    def start_abort(self, status):
        """Abort here and tell the peers (once)."""
        if self.is_aborted:
            return
        super().start_abort(status)
        for peer in self._peers:
            self._transport.post(peer, "abort_step", self._handle, error_to_wire(status))

    def serve_pull(self, key, done):
        """Answer another task's pull of ``key``: ``done(error, wire value)`` once this task's ``_Send`` posted it."""
        Rendezvous.recv_async(self, key, done)

    def clean_up(self, step_id):
        """The step ended here: fail the pulls still waiting, if any (TF's ``Cleanup``), telling no peer."""
        with self._lock:
            waiting = any(item.waiter is not None for item in self._table.values())
        if waiting:
            Rendezvous.start_abort(self, errors.AbortedError(None, None, f"Cleanup {step_id}"))

    def _raise_if_aborted_locked(self):
        with self._lock:
            self._raise_if_aborted()


def _wire_nbytes(value):
    nbytes = getattr(value, "nbytes", None)
    return 0 if nbytes is None else int(nbytes)


class StepTable:
    """The process's rendezvous per live step handle (TF's ``RendezvousMgr``)."""

    def __init__(self, transport):
        self._transport = transport
        self._lock = threading.Lock()
        self._steps = {}
        self._finished = collections.deque(maxlen=4096)
        self._finished_set = set()
        transport.on_request("recv_tensor", self._recv_tensor)
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
        """Forget ``handle``'s rendezvous: pulls still waiting there fail, later ones are refused."""
        with self._lock:
            released = self._steps.pop(handle, None)
            if len(self._finished) == self._finished.maxlen:
                self._finished_set.discard(self._finished[0])
            self._finished.append(handle)
            self._finished_set.add(handle)
        if released is not None:
            released.clean_up(handle[1])

    def _recv_tensor(self, source, reply, handle, key):
        """Serve a pull (TF's ``RecvTensor``): reply the key's wire value once this task's ``_Send`` posted it."""
        with self._lock:
            if handle in self._finished_set:
                raise errors.AbortedError(None, None, f"Step {handle[1]} has ended on "
                                          f"{self._transport.layout.task_name(self._transport.rank)}: no value for "
                                          f"rendezvous key {key}")
            rendezvous = self._live(handle)

        def done(error, value):
            if error is not None:
                # a pull failed by this step's abort answers with the abort's cause, as TF's remote rendezvous
                # gives remote receivers the original status: the receiving task's step then reports it
                reply(error=rendezvous.abort_status or error)
            else:
                reply(value)

        rendezvous.serve_pull(key, done)

    def _on_abort(self, source, handle, wire):
        with self._lock:
            rendezvous = self._steps.get(handle)
        if rendezvous is not None:
            rendezvous.start_abort(error_from_wire(wire))
