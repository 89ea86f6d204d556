"""How many times a value is copied on its way between two simulated devices of one process (issue 14):
a ``_Send``/``_Recv`` pair copies once (at the send: the devices never alias one buffer), and an untraced
ring all-reduce copies each message once, into the receiver's output (its reduction or copy reads the
sender's chunk); a traced one keeps the copy the rendezvous made. Source: TF's intra-process rendezvous
(``common_runtime/intra_process_rendezvous.cc``: one device-to-device copy per transfer)."""

import tracemalloc

import numpy as np
import pytest

import dfcore as tf
from dfcore.distribute import all_reduce
from dfcore.framework.rendezvous_key import create_key
from dfcore.runtime import allocator
from dfcore.runtime.rendezvous import Rendezvous

GPU0, GPU1 = "/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"
MIB = 1 << 20


def _received(rendezvous, key):
    box = []
    rendezvous.recv_async(key, lambda error, value: box.append((error, value)))
    (error, value), = box
    assert error is None
    return value


def test_a_transfer_across_devices_copies_once_and_never_aliases_the_sender():
    sent = np.arange(MIB, dtype=np.float32)  # 4 MiB
    key = create_key(GPU0, 1, GPU1, "x", (0, 0))
    rendezvous = Rendezvous()
    tracemalloc.start()
    try:
        rendezvous.send(key, sent)
        received = _received(rendezvous, key)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not np.shares_memory(received, sent)
    np.testing.assert_array_equal(received, sent)
    assert sent.nbytes <= peak < 2 * sent.nbytes  # one copy of 4 MiB, not two


def test_a_transfer_on_one_device_passes_the_value_through():
    value = np.ones(8, np.float32)
    key = create_key(GPU0, 1, GPU0, "x", (0, 0))
    rendezvous = Rendezvous()
    rendezvous.send(key, value)
    assert _received(rendezvous, key) is value


def test_a_send_recv_pair_in_a_session_step_copies_once(monkeypatch):
    monkeypatch.setattr(allocator, "POOL_MIN_BYTES", MIB)  # 4 MiB buffers pooled: only copies are new memory
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [MIB], name="x")
        with tf.device("/gpu:0"):
            doubled = tf.multiply(x, 2.0, name="doubled")
        with tf.device("/gpu:1"):
            total = tf.reduce_sum(doubled, name="total")
    value = np.ones(MIB, np.float32)
    with tf.Session(graph=graph) as sess:
        sess.run(total, {x: value})  # plans built, buffers pooled
        tracemalloc.start()
        try:
            assert sess.run(total, {x: value}) == 2.0 * MIB
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    # x crosses client -> gpu:0 (one copy, dropped once Mul ran), doubled gpu:0 -> gpu:1 (one copy); `doubled`
    # itself comes from the allocator's pool
    assert peak < 2 * value.nbytes, peak  # one transfer's copy alive at a time, never a second one


def test_towers_on_cpus_of_one_task_share_values_and_train_as_on_one_device(monkeypatch):
    """Values handed between CPU devices without a copy (variables read by every tower, gradients back) and
    buffers the allocator pools (monkeypatched down to 64 KiB: they are copied) give the one-device result,
    step after step; what the client fetched is never overwritten."""
    monkeypatch.setattr(allocator, "POOL_MIN_BYTES", 64 << 10)
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((256, 128)).astype(np.float32)  # 128 KiB: pooled, so copied
    v0 = rng.standard_normal((128, 4)).astype(np.float32)  # 2 KiB: handed over
    xs = (0.1 * rng.standard_normal((8, 256))).astype(np.float32)

    def run(towers):
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/cpu:0"):
                w, v = tf.Variable(w0), tf.Variable(v0)
                x = tf.constant(xs)
            losses = []
            for i, part in enumerate(tf.split(x, towers)):
                with tf.device(f"/cpu:{i}"):
                    losses.append(tf.reduce_sum(tf.square(tf.matmul(tf.nn.relu(tf.matmul(part, w)), v))))
            with tf.device("/cpu:0"):
                loss = tf.add_n(losses)
                train = tf.train.GradientDescentOptimizer(1e-4).minimize(loss)
        config = tf.ConfigProto(device_count={"CPU": towers}, inter_op_parallelism_threads=2)
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(tf.global_variables_initializer())
            fetched = [sess.run([train, loss, w, v])[1:] for _ in range(4)]
            kept = [[np.copy(a) for a in f] for f in fetched]
            sess.run(train)
        for got, want in zip(fetched, kept):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
        return kept

    for one, four in zip(run(1), run(4)):
        for a, b in zip(one, four):
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)  # float32 sums in another order


class _SpyRendezvous(Rendezvous):
    """Keeps each posted message (what the receiver reads)."""

    def __init__(self):
        super().__init__()
        self.posted = []

    def _post(self, key, parsed, value, nbytes):
        self.posted.append(value)
        return super()._post(key, parsed, value, nbytes)


def test_an_untraced_ring_reads_each_message_from_the_sender_and_a_traced_one_keeps_a_copy():
    rng = np.random.default_rng(0)
    inputs = [rng.random(64, dtype=np.float32) for _ in range(4)]
    spy = _SpyRendezvous()
    result = all_reduce(inputs, rendezvous=spy, trace=False)
    senders = list(inputs) + list(result.outputs)
    assert len(spy.posted) == 24
    assert all(any(np.shares_memory(m, s) for s in senders) for m in spy.posted)  # no copy at the send
    for out in result.outputs:
        np.testing.assert_allclose(out, np.sum(inputs, axis=0), rtol=1e-6)
        assert not any(np.shares_memory(out, x) for x in inputs)
    traced = _SpyRendezvous()
    all_reduce(inputs, rendezvous=traced)
    assert not any(np.shares_memory(m, s) for m in traced.posted for s in inputs)  # the trace keeps copies


@pytest.mark.parametrize("fetch", ["variable", "identity_same_device", "identity_other_device"])
def test_writing_into_a_fetched_array_leaves_the_variable_as_it_was(fetch):
    # TF's fetch gives the client its own ndarray (TF_TensorToPyArray copies a buffer the runtime still holds):
    # neither the variable fetched as is nor a value handed over between CPU devices without a copy aliases it
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/cpu:1"):
            v = tf.Variable(np.ones(3, np.float32))
            same = tf.identity(v)
        with tf.device("/cpu:0"):
            other = tf.identity(v)
        fetched = {"variable": v, "identity_same_device": same, "identity_other_device": other}[fetch]
    with tf.Session(graph=graph, config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        sess.run(v.initializer)
        value = sess.run(fetched)
        value[0] = 5.0
        np.testing.assert_array_equal(sess.run(v), np.ones(3, np.float32))
