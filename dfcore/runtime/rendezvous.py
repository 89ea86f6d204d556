"""The in-process rendezvous: where a ``_Send`` hands a tensor to its ``_Recv``.

Source: TF ``core/framework/rendezvous.cc`` (the 1.x ``LocalRendezvousImpl``; its keys' ``CreateKey``/
``ParseKey`` are :mod:`dfcore.framework.rendezvous_key`) and ``common_runtime/intra_process_rendezvous.cc``.

Semantics, as in TF 1.x:

- A producer never blocks. A consumer asks for a key before or after it is
  produced; it blocks (:meth:`Rendezvous.recv`) or registers a callback
  (:meth:`Rendezvous.recv_async`).
- Each key is delivered once per rendezvous (one rendezvous per step): a
  second send to a key is ``AbortedError("Duplicated send: <key>")``, a second
  recv ``AbortedError("Duplicated recv: <key>")``.
- :meth:`Rendezvous.start_abort` is idempotent (the first status wins); it
  wakes every waiter and fails every later send and recv with an
  ``AbortedError`` carrying the first status's message.
- A value crossing devices (source device != destination device in the key)
  is copied to a host (numpy) array at send time (:func:`dfcore.backends.to_numpy`;
  the ``_Recv`` takes it into its device's backend), so the two devices never alias
  one buffer, as a device-to-device copy would not; a same-device value passes through.
  So does a numpy value between two CPU devices of one task (TF's ``SameWorkerRecvDone``
  hands host memory over without a copy; kernels never write into their inputs), unless it is
  as large as the allocator's pooled buffers (:data:`~dfcore.runtime.allocator.POOL_MIN_BYTES`),
  which are copied into the receiver's pool as before.

Every match is logged as a :class:`TransferRecord` so widgets can show how long
each receiver waited.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import backends, errors
from ..framework.device import DeviceSpec
from ..framework.registry import DEAD
from ..framework.rendezvous_key import ParsedKey, create_key, parse_key
from . import allocator as allocator_lib

# The key's format lives in framework/ (TF's Rendezvous::CreateKey); a rendezvous user finds it here too.
__all__ = ["ParsedKey", "Rendezvous", "TransferRecord", "create_key", "parse_key"]


@dataclasses.dataclass(frozen=True)
class TransferRecord:
    """One matched send/recv pair; times in seconds from the rendezvous' clock.

    ``send_time_s`` is when the value was sent, ``recv_request_time_s`` when the
    consumer asked for it, ``match_time_s`` when both had happened (the later
    of the two events, read under the rendezvous lock, so records are in match
    order).
    """

    key: str
    tensor_name: str
    src_device: str
    dst_device: str
    nbytes: int
    send_time_s: float
    recv_request_time_s: float
    match_time_s: float

    @property
    def recv_wait_s(self) -> float:
        """How long the consumer waited for the producer (0 if the value was already there)."""
        return max(0.0, self.match_time_s - self.recv_request_time_s)


@functools.lru_cache(maxsize=4096)
def _host_to_host(src_device: str, dst_device: str) -> bool:
    """Whether the two device names are CPU devices of one task (one process's host memory, as TF's
    ``SameWorkerRecvDone`` sees it): a value may cross without a copy (cached by the names, whose hashes
    the strings keep)."""
    src, dst = DeviceSpec.from_string(src_device), DeviceSpec.from_string(dst_device)
    return (src.device_type == dst.device_type == "CPU"
            and (src.job, src.replica, src.task) == (dst.job, dst.replica, dst.task))


def _device_owner(value: Any) -> Any:
    """The backend of a tensor that copies on its own device (cupy: it crosses without the host), else None."""
    if isinstance(value, np.ndarray | np.generic) or value is None:
        return None
    owner = backends.backend_of(value)
    return owner if hasattr(owner, "copy_on_device") else None


class _Item:
    """The table entry of one key: a sent value waiting, or a receiver waiting."""

    __slots__ = ("has_value", "value", "nbytes", "send_time_s", "waiter", "recv_request_time_s", "delivered")

    def __init__(self):
        self.has_value = False
        self.value = None
        self.nbytes = 0
        self.send_time_s = None
        self.waiter = None
        self.recv_request_time_s = None
        self.delivered = False


class Rendezvous:
    """A table of keys between the per-device executors of one step (TF ``IntraProcessRendezvous``).

    Thread-safe: one lock guards the table; callbacks run outside it. Nothing
    busy-waits and the rendezvous starts no thread.

    Args:
        clock: a callable returning seconds (default ``time.perf_counter``); inject a fake
            one for deterministic :class:`TransferRecord` times.
        allocator_for: ``allocator_for(device)`` gives the receiving device's
            :class:`~dfcore.runtime.allocator.Allocator`: a value crossing devices is copied into one of
            its buffers (which the receiver's executor gives back once read), or None: a fresh array.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter,
                 allocator_for: Callable[[str], Any] | None = None) -> None:
        self._clock = clock
        self._allocator_for = allocator_for
        self._lock = threading.Lock()
        self._table: dict[str, _Item] = {}
        #: The ``OpError`` :meth:`start_abort` was first called with, else None (read-only). A plain
        #: attribute, read without the lock, so executors can test it before every op.
        self.abort_status: errors.OpError | None = None
        # (key, parsed key, nbytes, send time, request time, match time) per match
        self._transfers: list[tuple[str, ParsedKey, int, float, float, float]] = []

    @property
    def is_aborted(self) -> bool:
        """True once :meth:`start_abort` has been called."""
        with self._lock:
            return self.abort_status is not None

    def transfers(self) -> list[TransferRecord]:
        """The :class:`TransferRecord` of every match so far, in match order (built on demand:
        a match only stores a tuple, keeping the per-transfer cost low)."""
        with self._lock:
            raw = list(self._transfers)
        return [TransferRecord(key, parsed.edge_name, parsed.src_device, parsed.dst_device, nbytes, sent, requested,
                               matched) for key, parsed, nbytes, sent, requested, matched in raw]

    def num_local_transfers(self) -> int:
        """How many matches this rendezvous has made itself (a mark for :meth:`local_transfers_since`)."""
        return len(self._transfers)

    def local_transfers_since(self, mark: int) -> list[TransferRecord]:
        """The :class:`TransferRecord` of the matches made here after ``mark`` (:meth:`num_local_transfers`),
        in match order: what one in-process collective moved, without building the step's other records."""
        with self._lock:
            raw = self._transfers[mark:]
        return [TransferRecord(key, parsed.edge_name, parsed.src_device, parsed.dst_device, nbytes, sent, requested,
                               matched) for key, parsed, nbytes, sent, requested, matched in raw]

    def send(self, key: str, value: Any, nbytes: int | None = None, copy: bool = True) -> None:
        """Post ``value`` under ``key``; never blocks.

        Args:
            key: a rendezvous key (see :func:`~dfcore.framework.rendezvous_key.create_key`).
            value: the tensor (numpy array or scalar); copied if the key crosses devices.
            nbytes: bytes to record for the transfer; default ``value.nbytes``.
            copy: False (dfcore, for a collective's messages): post ``value`` itself; the caller guarantees
                the receiver reads it into its own buffer (a reduction or a copy into its output) before the
                sender's buffer changes, so the transfer copies once, on the receiver's side.

        Raises:
            InvalidArgumentError: on a malformed key.
            AbortedError: after :meth:`start_abort`, or ``Duplicated send: <key>`` if the key was
                already sent in this rendezvous.
        """
        parsed = parse_key(key)
        if value is DEAD:  # a dead tensor (an untaken branch) crosses as the marker itself, 0 bytes
            nbytes = 0
        elif type(value) is np.ndarray and value.nbytes < allocator_lib.POOL_MIN_BYTES and _host_to_host(
                parsed.src_device, parsed.dst_device):
            pass  # one task's host memory: handed over as it is
        elif copy and parsed.src_device != parsed.dst_device and (owner := _device_owner(value)) is not None:
            value = owner.copy_on_device(value)  # a GPU's tensor stays on a GPU
        elif copy and parsed.src_device != parsed.dst_device:
            value = np.asarray(backends.to_numpy(value))  # through the host; the receiver's _Recv takes it in
            if self._allocator_for is not None and value.dtype.kind in "biuf" and value.ndim:
                buf = self._allocator_for(parsed.dst_device).allocate(value.shape, value.dtype)
                np.copyto(buf, value)
                value = buf
            else:
                value = value.copy()  # ndarray.copy: np.array(copy=True) is ~20x slower
        self._post(key, parsed, value, nbytes)

    def deliver(self, key: str, value: Any, nbytes: int | None = None) -> None:
        """Post a value that arrived from another process: as :meth:`send`, without the copy
        (the buffer is already the receiver's own)."""
        self._post(key, parse_key(key), value, nbytes)

    def _post(self, key, parsed, value, nbytes):
        if nbytes is not None:
            nbytes = int(nbytes)
        elif type(value) is np.ndarray:  # the common case, without a call
            nbytes = value.nbytes
        else:
            nbytes = backends.nbytes_of(value)
        with self._lock:
            if self.abort_status is not None:  # (the checks of this path are inline: it runs per tensor)
                raise self._abort_error()
            item = self._table.get(key)
            if item is None:
                item = self._table[key] = _Item()
            elif item.has_value or item.delivered:
                raise errors.AbortedError(None, None, f"Duplicated send: {key}")
            item.send_time_s = self._clock()
            item.nbytes = nbytes
            waiter = item.waiter
            if waiter is None:
                item.has_value = True
                item.value = value
                return
            item.waiter = None
            self._match(key, parsed, item)
        waiter(None, value)

    def recv_async(self, key: str, done: Callable[[errors.OpError | None, Any], None]) -> None:
        """Ask for ``key``; call ``done(error, value)`` exactly once when it is settled.

        ``done`` runs on this thread if the value is already there (or the rendezvous is
        aborted), else on the thread that sends it or aborts the rendezvous. ``error`` is
        None on success, else an ``OpError`` (``AbortedError``) and ``value`` is None.

        Raises:
            InvalidArgumentError: on a malformed key (before ``done`` is registered).
        """
        parsed = parse_key(key)
        with self._lock:
            error = None if self.abort_status is None else self._abort_error()
            if error is None:
                item = self._table.get(key)
                if item is None:
                    item = self._table[key] = _Item()
                if item.delivered or item.waiter is not None:
                    error = errors.AbortedError(None, None, f"Duplicated recv: {key}")
                else:
                    item.recv_request_time_s = self._clock()
                    if not item.has_value:
                        item.waiter = done
                        return
                    value = item.value
                    item.value, item.has_value = None, False
                    self._match(key, parsed, item)
        if error is not None:
            done(error, None)
        else:
            done(None, value)

    def recv(self, key: str, timeout_s: float | None = None) -> Any:
        """Return the value sent under ``key``, blocking until it arrives.

        Args:
            key: a rendezvous key.
            timeout_s: seconds to wait at most; None waits until a send or an abort.

        Raises:
            InvalidArgumentError: on a malformed key.
            DeadlineExceededError: if nothing arrived within ``timeout_s`` (names the key);
                the key is then free again, as if this recv had not been made.
            AbortedError: if the rendezvous is or gets aborted, or on a duplicated recv.
        """
        settled = threading.Event()
        result = []

        def done(error, value):
            result.append((error, value))
            settled.set()

        self.recv_async(key, done)
        if not self._wait(settled, timeout_s) and self._cancel(key, done):
            raise errors.DeadlineExceededError(
                None,
                None,
                f"Timed out waiting for notification: no value was sent under rendezvous key {key} "
                f"within {timeout_s} s. Check that the partition holding its _Send runs in this step, "
                "or raise the timeout.",
            )
        settled.wait()
        error, value = result[0]
        if error is not None:
            raise error
        return value

    def _wait(self, settled, timeout_s):
        """Wait for ``settled`` (a ``threading.Event``) at most ``timeout_s``; True if it was set.
        A rendezvous fed from another process overrides this to receive while it waits."""
        return settled.wait(timeout_s)

    def start_abort(self, status: errors.OpError) -> None:
        """Abort: every pending and later send/recv fails with ``AbortedError(status.message)``.

        Idempotent: only the first status is kept. Waiting receivers are woken (their
        callbacks run on this thread, outside the lock).

        Args:
            status: the ``OpError`` that caused the abort.
        """
        if not isinstance(status, errors.OpError):
            raise TypeError(f"start_abort needs an OpError, got {type(status).__name__}")
        with self._lock:
            if self.abort_status is not None:
                return
            self.abort_status = status
            waiters = [item.waiter for item in self._table.values() if item.waiter is not None]
            self._table.clear()
            error = self._abort_error()
        for waiter in waiters:
            waiter(error, None)

    def _cancel(self, key, done):
        """Withdraw a timed-out waiter; False if a send or abort already took it."""
        with self._lock:
            item = self._table.get(key)
            if item is None or item.waiter is not done:
                return False
            del self._table[key]
            return True

    def _match(self, key, parsed, item):
        """Record the match of ``item`` (lock held) and mark it delivered."""
        item.delivered = True
        self._transfers.append((key, parsed, item.nbytes, item.send_time_s, item.recv_request_time_s, self._clock()))

    def _abort_error(self):
        if self.abort_status is None:
            return None
        return errors.AbortedError(None, None, self.abort_status.message)

    def _raise_if_aborted(self):
        error = self._abort_error()
        if error is not None:
            raise error

    def __repr__(self):
        with self._lock:
            state = "aborted" if self.abort_status is not None else f"{len(self._table)} keys"
            return f"<Rendezvous {state}, {len(self._transfers)} transfers>"
