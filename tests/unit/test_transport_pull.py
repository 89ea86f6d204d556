"""A tensor crossing tasks is pulled by its receiver (TF's ``RecvTensor``), whatever the transport.

Specification: issue 16 (TF's pull protocol) and TF's ``BaseRemoteRendezvous`` / ``RpcRemoteRendezvous``
(``core/distributed_runtime/base_rendezvous_mgr.cc``): a ``_Send`` posts in its own task's rendezvous; a ``_Recv``
on another task asks for the key and is answered once the tensor is there; an aborted or cleaned-up step fails
the request, and a failed request fails the ``_Recv`` with its status. Reference: hand-built expectations on two
tasks joined by an in-memory transport that serves each request on a thread of its own, as gRPC and MPI do.
"""

import concurrent.futures
import threading

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework.registry import DEAD
from dfcore.framework.rendezvous_key import create_key
from dfcore.transport.rendezvous import StepTable
from dfcore.transport.seam import wait

A, B = "/job:a/replica:0/task:0/device:CPU:0", "/job:b/replica:0/task:0/device:CPU:0"
HANDLE = (0, 1)


class _Layout:
    size = 2

    @staticmethod
    def task_name(rank):
        return ("/job:a/replica:0/task:0", "/job:b/replica:0/task:0")[rank]


class _Link:
    """One task's end of an in-memory transport: requests are served by the peer's handler, on a new thread."""

    layout = _Layout()

    def __init__(self, rank):
        self.rank, self.peer = rank, None
        self.requests, self.posts = [], []
        self._handlers, self._messages = {}, {}
        self.refuse_with = None  # an error every request fails with (the peer is gone)

    def on_request(self, kind, handler):
        self._handlers[kind] = handler

    def on_message(self, kind, handler):
        self._messages[kind] = handler

    def busy_while(self, probe):
        pass

    def rank_of_device(self, device):
        return 0 if device.startswith("/job:a") else 1

    def request(self, dst, kind, *payload):
        self.requests.append((dst, kind, payload))
        future = concurrent.futures.Future()
        if self.refuse_with is not None:
            future.set_exception(self.refuse_with)
            return future

        def reply(value=None, error=None):
            future.set_exception(error) if error is not None else future.set_result(value)

        def serve():
            try:
                self.peer._handlers[kind](self.rank, reply, *payload)
            except Exception as error:  # as the transports do: a handler's failure is the reply
                reply(error=error)

        threading.Thread(target=serve).start()
        return future

    def post(self, dst, kind, *payload):
        self.posts.append((dst, kind, payload))

    @staticmethod
    def wait_settled(settled, timeout_s):
        return settled.wait(timeout_s)

    @staticmethod
    def wire_tensor(value):
        return (value if value is DEAD else np.array(value, copy=True)), 12.5

    @staticmethod
    def unwire_tensor(wire):
        return wire


@pytest.fixture
def tasks():
    a, b = _Link(0), _Link(1)
    a.peer, b.peer = b, a
    return (a, StepTable(a)), (b, StepTable(b))


def test_a_recv_on_another_task_pulls_and_is_answered_when_the_send_happens(tasks):
    (a, steps_a), (b, steps_b) = tasks
    key = create_key(A, 1, B, "x")
    got = []
    steps_b.find_or_create(HANDLE).recv_async(key, lambda error, value: got.append((error, value)))
    assert b.requests == [(0, "recv_tensor", (HANDLE, key))]  # asked at once, before the tensor exists
    value = np.arange(3.0)
    steps_a.find_or_create(HANDLE).send(key, value)
    value[:] = -1.0  # the sender's buffer changes after the send: the pulled tensor is the value sent
    for _ in range(200):
        if got:
            break
        threading.Event().wait(0.01)
    assert got[0][0] is None
    np.testing.assert_array_equal(got[0][1], [0.0, 1.0, 2.0])
    transfers = steps_b.find_or_create(HANDLE).transfers()
    assert [(t.tensor_name, t.nbytes, t.send_time_s) for t in transfers] == [("x", 24, 12.5)]
    assert steps_a.find_or_create(HANDLE).transfers() == []  # a transfer is the receiver's record, once


def test_a_dead_tensor_is_pulled_as_dead(tasks):
    (a, steps_a), (b, steps_b) = tasks
    key = create_key(A, 1, B, "branch")
    steps_a.find_or_create(HANDLE).send(key, DEAD)
    assert steps_b.find_or_create(HANDLE).recv(key, timeout_s=10) is DEAD


def test_a_step_cleaned_up_on_the_sender_fails_waiting_pulls_and_refuses_later_ones(tasks):
    (a, steps_a), (b, steps_b) = tasks
    waiting = b.request(0, "recv_tensor", HANDLE, create_key(A, 1, B, "never_sent"))
    steps_a.find_or_create(HANDLE)
    for _ in range(200):  # the pull reached the sender's rendezvous
        if b.requests and steps_a.find_or_create(HANDLE)._table:
            break
        threading.Event().wait(0.01)
    steps_a.release(HANDLE)
    with pytest.raises(tf.errors.AbortedError, match="Cleanup 1"):
        wait(waiting, 10, "the pull")
    late = b.request(0, "recv_tensor", HANDLE, create_key(A, 1, B, "late"))
    with pytest.raises(tf.errors.AbortedError, match="Step 1 has ended on /job:a/replica:0/task:0"):
        wait(late, 10, "the late pull")


def test_an_abort_on_the_sender_fails_the_pull_with_its_cause(tasks):
    # TF's BaseRemoteRendezvous gives a remote receiver the abort's original status, so that the receiving
    # task's step reports the root error (here InvalidArgument), not an Aborted copy of it
    (a, steps_a), (b, steps_b) = tasks
    pull = b.request(0, "recv_tensor", HANDLE, create_key(A, 1, B, "x"))
    steps_a.find_or_create(HANDLE)
    for _ in range(200):
        if steps_a.find_or_create(HANDLE)._table:
            break
        threading.Event().wait(0.01)
    steps_a.find_or_create(HANDLE).start_abort(tf.errors.InvalidArgumentError(None, None, "bad input on a"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad input on a"):
        wait(pull, 10, "the pull")


def test_a_failed_pull_fails_the_recv_with_its_status_and_aborts_the_step(tasks):
    (a, steps_a), (b, steps_b) = tasks
    b.refuse_with = tf.errors.UnavailableError(None, None, "RecvTensor on /job:a/replica:0/task:0: Connection reset")
    rendezvous = steps_b.find_or_create(HANDLE, peers=[0])
    with pytest.raises(tf.errors.UnavailableError, match="Connection reset"):
        rendezvous.recv(create_key(A, 1, B, "x"), timeout_s=10)
    assert rendezvous.is_aborted
    assert [(dst, kind) for dst, kind, _ in b.posts] == [(0, "abort_step")]  # the peer is told, once
