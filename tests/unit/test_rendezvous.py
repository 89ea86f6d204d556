"""Rendezvous: TF's key format, send/recv matching in any order, deadlines, abort, copies, records."""

import itertools
import random
import threading
import time
import types

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dfcore import errors
from dfcore.framework.rendezvous_key import ParsedKey, create_key, parse_key
from dfcore.runtime import rendezvous
from dfcore.runtime.rendezvous import Rendezvous, TransferRecord

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
TIMEOUT_S = 0.2
JOIN_S = 5.0


def key(name="edge_5_Const", src=GPU0, dst=GPU1, incarnation=1):
    return create_key(src, incarnation, dst, name)


def start(fn, *args):
    thread = threading.Thread(target=fn, args=args, daemon=True)
    thread.start()
    return thread


def join_all(threads):
    for thread in threads:
        thread.join(JOIN_S)
    assert not any(t.is_alive() for t in threads), "a thread is still blocked"


class FakeClock:
    """Returns 1.0, 2.0, 3.0, ... on successive calls."""

    def __init__(self):
        self._ticks = itertools.count(1)

    def __call__(self):
        return float(next(self._ticks))


# -- keys ---------------------------------------------------------------------


def test_create_key_matches_tf_example():
    assert (
        create_key(GPU0, 1, CPU0, "edge_5_Const")
        == "/job:localhost/replica:0/task:0/device:GPU:0;0000000000000001;"
        "/job:localhost/replica:0/task:0/device:CPU:0;edge_5_Const;0:0"
    )
    assert create_key(GPU0, 0xABCDEF, GPU1, "x", (7, 3)).endswith(";0000000000abcdef;" + GPU1 + ";x;7:3")


_names = st.from_regex(r"[A-Za-z0-9_.][A-Za-z0-9_.\-/]{0,20}", fullmatch=True)
_devices = st.builds(
    "/job:{}/replica:{}/task:{}/device:{}:{}".format,
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
    st.integers(0, 9),
    st.integers(0, 99),
    st.sampled_from(["CPU", "GPU"]),
    st.integers(0, 15),
)


@given(_devices, st.integers(0, 2**64 - 1), _devices, _names, st.integers(0, 2**40), st.integers(0, 2**31))
def test_key_round_trip(src, incarnation, dst, name, frame_id, iter_id):
    k = create_key(src, incarnation, dst, name, (frame_id, iter_id))
    assert k.split(";")[1] == f"{incarnation:016x}"
    parsed = parse_key(k)
    assert parsed == ParsedKey(src, incarnation, dst, name, frame_id, iter_id)
    assert create_key(parsed.src_device, parsed.src_incarnation, parsed.dst_device, parsed.edge_name,
                      (parsed.frame_id, parsed.iter_id)) == k


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "a;b;c",
        f"{GPU0};0000000000000001;{GPU1};edge;0:0;extra",
        f"{GPU0};000000000000000g;{GPU1};edge;0:0",
        f"{GPU0};00000000000000001;{GPU1};edge;0:0",  # 17 hex digits
        f"{GPU0};;{GPU1};edge;0:0",
        f"{GPU0};0000000000000001;{GPU1};;0:0",
        f"{GPU0};0000000000000001;{GPU1};edge;0",
        f"{GPU0};0000000000000001;{GPU1};edge;a:0",
        f"{GPU0};0000000000000001;{GPU1};edge;",
        f";0000000000000001;{GPU1};edge;0:0",
        f"{GPU0};0000000000000001;not a device;edge;0:0",
    ],
)
def test_malformed_key_raises_tf_message(bad):
    with pytest.raises(errors.InvalidArgumentError) as info:
        parse_key(bad)
    assert str(info.value) == f"Invalid rendezvous key: {bad}"


def test_create_key_rejects_parts_that_would_not_parse():
    with pytest.raises(errors.InvalidArgumentError, match="Invalid rendezvous key"):
        create_key(GPU0, 2**64, GPU1, "edge")
    with pytest.raises(errors.InvalidArgumentError):
        create_key(GPU0, 1, GPU1, "a;b")


def test_send_and_recv_reject_malformed_key():
    rv = Rendezvous()
    with pytest.raises(errors.InvalidArgumentError):
        rv.send("nope", np.zeros(1))
    with pytest.raises(errors.InvalidArgumentError):
        rv.recv("nope", timeout_s=TIMEOUT_S)


# -- matching -----------------------------------------------------------------


def test_recv_after_send_returns_value_without_blocking():
    rv = Rendezvous()
    rv.send(key(), np.arange(3.0))
    np.testing.assert_array_equal(rv.recv(key(), timeout_s=TIMEOUT_S), [0.0, 1.0, 2.0])


def test_recv_before_send_blocks_until_the_send(no_thread_leak):
    rv = Rendezvous()
    got = []
    waiting = start(lambda: got.append(rv.recv(key(), timeout_s=JOIN_S)))
    time.sleep(0.05)
    assert waiting.is_alive() and not got
    rv.send(key(), np.float32(4.0))
    join_all([waiting])
    assert got == [np.float32(4.0)]


def test_keys_are_independent():
    rv = Rendezvous()
    rv.send(key("a"), np.array(1))
    rv.send(key("b"), np.array(2))
    assert rv.recv(key("b")) == 2 and rv.recv(key("a")) == 1


def test_many_threads_deliver_every_value_exactly_once(no_thread_leak):
    rv = Rendezvous()
    names = [f"edge_{i}_op" for i in range(200)]
    got = {}
    lock = threading.Lock()

    def producer(part):
        for name in part:
            rv.send(key(name), np.full(4, int(name.split("_")[1])))

    def consumer(part):
        for name in part:
            value = rv.recv(key(name), timeout_s=JOIN_S)
            with lock:
                got[name] = value

    order = names[:]
    random.Random(0).shuffle(order)
    threads = [start(producer, names[i::8]) for i in range(8)] + [start(consumer, order[i::8]) for i in range(8)]
    join_all(threads)
    assert sorted(got) == sorted(names)
    for name, value in got.items():
        np.testing.assert_array_equal(value, np.full(4, int(name.split("_")[1])))
    records = rv.transfers()
    assert sorted(r.tensor_name for r in records) == sorted(names)
    match_times = [r.match_time_s for r in records]
    assert match_times == sorted(match_times)


def test_duplicated_send_is_aborted_as_in_tf():
    rv = Rendezvous()
    rv.send(key(), np.zeros(1))
    with pytest.raises(errors.AbortedError, match=f"^Duplicated send: {key()}$"):
        rv.send(key(), np.zeros(1))
    rv.recv(key())
    with pytest.raises(errors.AbortedError, match="Duplicated send"):
        rv.send(key(), np.zeros(1))


def test_duplicated_recv_is_aborted_as_in_tf(no_thread_leak):
    rv = Rendezvous()
    rv.send(key(), np.zeros(1))
    rv.recv(key())
    with pytest.raises(errors.AbortedError, match=f"^Duplicated recv: {key()}$"):
        rv.recv(key(), timeout_s=TIMEOUT_S)
    first = start(rv.recv, key("other"), JOIN_S)
    time.sleep(0.05)
    with pytest.raises(errors.AbortedError, match="Duplicated recv"):
        rv.recv(key("other"), timeout_s=TIMEOUT_S)
    rv.send(key("other"), np.zeros(1))
    join_all([first])


# -- copies -------------------------------------------------------------------


def test_cross_device_send_copies_the_value():
    rv = Rendezvous()
    source = np.arange(4.0)
    rv.send(key(src=GPU0, dst=GPU1), source)
    source[0] = 99.0
    got = rv.recv(key(src=GPU0, dst=GPU1))
    np.testing.assert_array_equal(got, [0.0, 1.0, 2.0, 3.0])
    assert not np.shares_memory(got, source)


def test_cross_device_recv_first_also_gets_a_copy(no_thread_leak):
    rv = Rendezvous()
    source = np.arange(4.0)
    got = []
    waiting = start(lambda: got.append(rv.recv(key(src=CPU0, dst=GPU0), timeout_s=JOIN_S)))
    time.sleep(0.02)
    rv.send(key(src=CPU0, dst=GPU0), source)
    join_all([waiting])
    assert not np.shares_memory(got[0], source)
    np.testing.assert_array_equal(got[0], source)


def test_a_numpy_value_between_cpus_of_one_task_is_handed_over_and_larger_or_remote_ones_are_copied(monkeypatch):
    """TF's SameWorkerRecvDone: host memory of one worker crosses as is; another task's CPU gets a copy, and so
    does a value as large as the allocator's pooled buffers (copied into the receiver's pool)."""
    cpu1 = "/job:localhost/replica:0/task:0/device:CPU:1"
    other_task = "/job:worker/replica:0/task:1/device:CPU:0"
    rv = Rendezvous()
    source = np.arange(4.0)
    rv.send(key(src=CPU0, dst=cpu1), source)
    assert rv.recv(key(src=CPU0, dst=cpu1)) is source
    rv.send(key("remote", src=CPU0, dst=other_task), source)
    assert not np.shares_memory(rv.recv(key("remote", src=CPU0, dst=other_task)), source)
    monkeypatch.setattr(rendezvous.allocator_lib, "POOL_MIN_BYTES", source.nbytes)
    rv.send(key("large", src=CPU0, dst=cpu1), source)
    assert not np.shares_memory(rv.recv(key("large", src=CPU0, dst=cpu1)), source)


def test_same_device_send_passes_the_object_through():
    rv = Rendezvous()
    source = np.arange(4.0)
    rv.send(key(src=GPU1, dst=GPU1), source)
    assert rv.recv(key(src=GPU1, dst=GPU1)) is source


# -- deadlines ----------------------------------------------------------------


def test_recv_without_send_raises_deadline_exceeded_in_time():
    rv = Rendezvous()
    began = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError) as info:
        rv.recv(key(), timeout_s=TIMEOUT_S)
    elapsed = time.monotonic() - began
    assert TIMEOUT_S * 0.9 <= elapsed < TIMEOUT_S + 1.0
    assert key() in str(info.value)


def test_timed_out_recv_frees_the_key():
    rv = Rendezvous()
    with pytest.raises(errors.DeadlineExceededError):
        rv.recv(key(), timeout_s=0.01)
    rv.send(key(), np.ones(2))
    np.testing.assert_array_equal(rv.recv(key(), timeout_s=TIMEOUT_S), [1.0, 1.0])


def test_deadline_racing_a_send_never_loses_the_value(no_thread_leak):
    rng = random.Random(1)
    for i in range(60):
        rv = Rendezvous()
        delay = rng.uniform(0.0, 0.004)
        sender = start(lambda delay=delay, rv=rv, i=i: (time.sleep(delay), rv.send(key(), np.array(i))))
        try:
            value = rv.recv(key(), timeout_s=0.002)
        except errors.DeadlineExceededError:
            value = rv.recv(key(), timeout_s=JOIN_S)
        join_all([sender])
        assert value == i
        assert len(rv.transfers()) == 1


def test_send_landing_between_deadline_and_cancel_is_delivered(monkeypatch):
    """The deadline passes, then the send matches the waiter before recv can withdraw it."""
    rv = Rendezvous()

    class SendJustAfterDeadline(threading.Event):
        def wait(self, timeout=None):
            if timeout is None:
                return super().wait()
            rv.send(key(), np.array(7))
            return False

    monkeypatch.setattr(rendezvous, "threading", types.SimpleNamespace(Event=SendJustAfterDeadline))
    assert rv.recv(key(), timeout_s=TIMEOUT_S) == 7
    assert len(rv.transfers()) == 1


# -- abort --------------------------------------------------------------------


def test_abort_wakes_every_waiter_and_leaves_no_thread():
    before = set(threading.enumerate())
    rv = Rendezvous()
    outcomes = []
    lock = threading.Lock()

    def wait(name):
        try:
            rv.recv(key(name))  # no deadline: only the abort can wake it
        except errors.OpError as error:
            with lock:
                outcomes.append(error)

    threads = [start(wait, f"edge_{i}_x") for i in range(16)]
    time.sleep(0.05)
    assert all(t.is_alive() for t in threads)
    rv.start_abort(errors.InvalidArgumentError(None, None, "Incompatible shapes: [2] vs. [3]"))
    join_all(threads)
    assert len(outcomes) == 16
    assert all(type(e) is errors.AbortedError and e.message == "Incompatible shapes: [2] vs. [3]" for e in outcomes)
    assert set(threading.enumerate()) == before


def test_after_abort_send_and_recv_fail_with_the_first_message():
    rv = Rendezvous()
    rv.send(key("pending"), np.zeros(1))
    assert not rv.is_aborted
    rv.start_abort(errors.UnavailableError(None, None, "worker lost"))
    rv.start_abort(errors.InternalError(None, None, "second"))  # idempotent: ignored
    assert rv.is_aborted
    for call in (lambda: rv.send(key("new"), np.zeros(1)), lambda: rv.recv(key("pending")), lambda: rv.recv(key("x"))):
        with pytest.raises(errors.AbortedError) as info:
            call()
        assert info.value.message == "worker lost"


def test_start_abort_needs_an_op_error():
    with pytest.raises(TypeError):
        Rendezvous().start_abort("boom")


# -- callbacks ----------------------------------------------------------------


def test_recv_async_before_and_after_send():
    rv = Rendezvous()
    calls = []
    rv.recv_async(key("early"), lambda error, value: calls.append(("early", error, value)))
    assert calls == []
    rv.send(key("early"), np.array(1.0))
    rv.send(key("late"), np.array(2.0))
    rv.recv_async(key("late"), lambda error, value: calls.append(("late", error, value)))
    assert [(n, e, float(v)) for n, e, v in calls] == [("early", None, 1.0), ("late", None, 2.0)]


def test_recv_async_gets_the_abort_error():
    rv = Rendezvous()
    calls = []
    rv.recv_async(key(), lambda error, value: calls.append((error, value)))
    rv.start_abort(errors.CancelledError(None, None, "Session was closed"))
    rv.recv_async(key("later"), lambda error, value: calls.append((error, value)))
    assert [(type(e), e.message, v) for e, v in calls] == [(errors.AbortedError, "Session was closed", None)] * 2


# -- records ------------------------------------------------------------------


def test_transfer_records_with_an_injected_clock():
    rv = Rendezvous(clock=FakeClock())
    rv.send(key("sent_first", src=GPU0, dst=GPU1), np.zeros(3, np.float32))  # t=1
    rv.recv(key("sent_first", src=GPU0, dst=GPU1))  # request t=2, match t=3
    got = []
    rv.recv_async(key("recv_first", src=CPU0, dst=GPU0), lambda e, v: got.append(v))  # request t=4
    rv.send(key("recv_first", src=CPU0, dst=GPU0), np.zeros((2, 2)), nbytes=1000)  # send t=5, match t=6
    assert len(got) == 1
    assert rv.transfers() == [
        TransferRecord(key("sent_first"), "sent_first", GPU0, GPU1, 12, 1.0, 2.0, 3.0),
        TransferRecord(key("recv_first", src=CPU0, dst=GPU0), "recv_first", CPU0, GPU0, 1000, 5.0, 4.0, 6.0),
    ]
    assert [r.recv_wait_s for r in rv.transfers()] == [1.0, 2.0]
    assert repr(rv) == "<Rendezvous 2 keys, 2 transfers>"
