"""The per-device allocator and the out= kernels (:mod:`dfcore.runtime.allocator`, :mod:`dfcore.ops.out_kernels`):
buffers are reused once their last consumer ran and no reader holds them, results are bit for bit those of
the plain kernels, and a training step allocates nothing new after warm-up (TF's executor and allocator:
``executor.cc``, ``allocator.h``)."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework import registry
from dfcore.runtime import allocator
from dfcore.runtime.allocator import Allocator

BATCH, N_IN, N_HIDDEN, N_OUT = 16, 20, 12, 5


@pytest.fixture(autouse=True)
def pool_every_size(monkeypatch):
    """These tests' buffers are tiny: pool them all, as large ones are (the size rule has its own tests)."""
    monkeypatch.setattr(allocator, "POOL_MIN_BYTES", 0)


def test_small_allocations_are_not_pooled_but_counted(monkeypatch):
    monkeypatch.setattr(allocator, "POOL_MIN_BYTES", 64)
    alloc = Allocator("cpu")
    f32 = np.dtype(np.float32)
    small = alloc.allocate((15,), f32)  # 60 bytes < 64
    assert not alloc.deallocate(small)
    large = alloc.allocate((16,), f32)  # 64 bytes: pooled
    assert alloc.deallocate(large)
    stats = alloc.stats()
    assert (stats.num_allocs, stats.small_allocs, stats.new_buffers) == (2, 1, 1)
    assert stats.bytes_in_use == 0 and stats.bytes_reserved == 64 and small.shape == (15,)


def test_a_node_with_statically_small_outputs_runs_its_plain_kernel(monkeypatch):
    monkeypatch.setattr(allocator, "POOL_MIN_BYTES", 4 * 8)
    graph = tf.Graph()
    with graph.as_default():
        small = tf.constant(np.ones(7, np.float32)) + tf.constant(np.ones(7, np.float32))  # 28 bytes
        large = tf.constant(np.ones(8, np.float32)) + tf.constant(np.ones(8, np.float32))  # 32 bytes
    counts = []
    for fetch in (small, large):
        with tf.Session(graph=graph) as sess:
            assert sess.run(fetch).tolist() == [2.0] * fetch.shape.as_list()[0]
            stats = [a.stats() for a in sess._resources.allocators().values()]
            counts.append(tuple(sum(getattr(s, f) for s in stats) for f in ("num_allocs", "small_allocs",
                                                                              "new_buffers")))
    # the small Add does not ask the allocator (only the fetch's copy to the client does); the large one does
    assert counts == [(1, 1, 0), (2, 0, 2)]


# -- the allocator alone ----------------------------------------------------------------------------------------
def test_a_buffer_nobody_holds_goes_back_to_its_pool_and_is_handed_out_again():
    alloc = Allocator("cpu")
    f32 = np.dtype(np.float32)
    first = alloc.allocate((3, 4), f32)
    first_id = id(first)
    assert alloc.deallocate(first)
    del first
    again = alloc.allocate((3, 4), f32)
    assert id(again) == first_id
    stats = alloc.stats()
    assert (stats.num_allocs, stats.new_buffers, stats.reuse_hits) == (2, 1, 1)
    assert stats.bytes_in_use == 48 and stats.peak_bytes_in_use == 48 and stats.bytes_reserved == 0


def test_a_buffer_someone_else_holds_is_never_pooled():
    alloc = Allocator("cpu")
    f32 = np.dtype(np.float32)
    held = alloc.allocate((4,), f32)
    reader = [held]  # a fetch, a variable, a queue …
    assert not alloc.deallocate(held)
    view = alloc.allocate((2, 2), f32)
    flat = view.reshape(-1)
    assert not alloc.deallocate(view)  # the view still sees it
    foreign = np.zeros(4, np.float32)
    assert not alloc.deallocate(foreign)  # not one of the allocator's buffers
    assert alloc.stats().bytes_reserved == 0 and reader and flat.base is view


def test_an_unheld_view_gives_back_its_base():
    alloc = Allocator("cpu")
    f32 = np.dtype(np.float32)
    flat = alloc.allocate((6,), f32).reshape(2, 3)  # only the view holds the buffer (a Reshape's output)
    assert alloc.deallocate(flat)
    assert alloc.stats().bytes_reserved == 24


def test_a_dropped_buffer_is_no_longer_in_use():
    alloc = Allocator("cpu")
    buf = alloc.allocate((8,), np.dtype(np.float64))
    assert alloc.stats().bytes_in_use == 64
    del buf
    assert alloc.stats().bytes_in_use == 0


# -- the out= kernels give the plain kernels' bits ----------------------------------------------------------
def _both(build, feeds):
    """Run the graph ``build()`` makes with and without the out= kernels (twice each: the second run takes
    recycled buffers); return the fetched values."""
    results = []
    saved = dict(registry._OUT_KERNELS)
    try:
        for use_out in (True, False):
            if not use_out:
                registry._OUT_KERNELS.clear()
            graph = tf.Graph()
            with graph.as_default():
                fetches, placeholders = build()
            with tf.Session(graph=graph) as sess:
                feed = dict(zip(placeholders, feeds))
                sess.run(fetches, feed)
                results.append(sess.run(fetches, feed))
    finally:
        registry._OUT_KERNELS.update(saved)
    return results


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_kernels_match_the_plain_kernels_bit_for_bit(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((BATCH, N_IN)) * 3).astype(dtype)
    a[0, :3] = [np.inf, -0.0, np.nan]  # the special values go through every kernel alike
    w = rng.standard_normal((N_IN, N_HIDDEN)).astype(dtype)
    b = rng.standard_normal(N_HIDDEN).astype(dtype)
    labels = rng.integers(0, N_HIDDEN, BATCH).astype(np.int32)

    def build():
        x, wp, bp = (tf.placeholder(dtype, v.shape) for v in (a, w, b))
        lp = tf.placeholder(tf.int32, [BATCH])
        h = tf.matmul(x, wp)
        z = tf.nn.bias_add(h, bp)
        r = tf.nn.relu(z)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lp, logits=z))
        grads = tf.gradients(loss, [wp, bp, x])
        fetches = [h, z, r, h + z, h - z, h * z, z / h, tf.maximum(h, z), tf.minimum(h, z),
                   tf.matmul(x, h, transpose_a=True), tf.matmul(h, wp, transpose_b=True),
                   tf.reduce_sum(z, 0), tf.reduce_sum(z, [0, 1]), tf.reduce_mean(z, 1, keepdims=True),
                   tf.ones_like(z), tf.zeros_like(h), loss, h + bp, tf.reduce_sum(z, 1, keepdims=True) + bp[:1],
                   bp + tf.reduce_sum(z, 1, keepdims=True)] + grads
        return fetches, [x, wp, bp, lp]

    with_out, plain = _both(build, [a, w, b, labels])
    for got, want in zip(with_out, plain):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


# -- a training step: bits unchanged, nothing new after warm-up, no reader sees a recycled buffer ------------
def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((BATCH, N_IN), dtype=np.float32)
    labels = rng.integers(0, N_OUT, BATCH).astype(np.int32)
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [BATCH, N_IN])
        lp = tf.placeholder(tf.int32, [BATCH])
        w1 = tf.Variable(rng.standard_normal((N_IN, N_HIDDEN)).astype(np.float32))
        b1 = tf.Variable(np.zeros(N_HIDDEN, np.float32))
        w2 = tf.Variable(rng.standard_normal((N_HIDDEN, N_OUT)).astype(np.float32))
        b2 = tf.Variable(np.zeros(N_OUT, np.float32))
        hidden = tf.nn.relu(tf.matmul(xp, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lp, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    return graph, init, train, loss, [w1, b1, w2, b2], {xp: x, lp: labels}


def _device_allocators(sess):
    return list(sess._resources.allocators().values())


def test_an_sgd_step_allocates_no_new_buffer_after_warm_up_and_keeps_its_bits():
    graph, init, train, loss, variables, feed = _mlp()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):  # warm-up: the pools fill
            sess.run(train, feed)
        before = [a.stats() for a in _device_allocators(sess)]
        for _ in range(5):
            sess.run(train, feed)
        after = [a.stats() for a in _device_allocators(sess)]
        values = sess.run(variables)
    assert sum(a.new_buffers - b.new_buffers for a, b in zip(after, before)) == 0
    # every output reused: 18 per step (the gradients of the biases reduce over static axes: no shape ops)
    assert sum(a.reuse_hits - b.reuse_hits for a, b in zip(after, before)) >= 5 * 18
    saved = dict(registry._OUT_KERNELS)
    registry._OUT_KERNELS.clear()
    try:
        graph, init, train, loss, variables, feed = _mlp()
        with tf.Session(graph=graph) as sess:
            sess.run(init)
            for _ in range(8):
                sess.run(train, feed)
            plain = sess.run(variables)
    finally:
        registry._OUT_KERNELS.update(saved)
    for got, want in zip(values, plain):
        assert got.tobytes() == want.tobytes()


def test_fetched_values_and_old_variable_values_are_never_overwritten():
    graph, init, train, loss, variables, feed = _mlp()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        kept = []
        for _ in range(6):
            fetched = sess.run([loss] + variables, feed)  # readers that keep what they fetched
            kept.append([np.copy(v) for v in fetched] + [fetched])
            sess.run(train, feed)
        for *copies, fetched in kept:
            for copy, value in zip(copies, fetched):
                assert np.asarray(copy).tobytes() == np.asarray(value).tobytes()


def test_a_traced_step_records_the_allocator_in_its_memory_stats():
    graph, init, train, loss, variables, feed = _mlp()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train, feed)
        run_metadata = tf.RunMetadata()
        sess.run(train, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=run_metadata)
    records = [m for d in tf.step_records(run_metadata).step_stats.dev_stats for m in d.memory
               if not m.allocator_name.endswith("reserved")]
    used = max(records, key=lambda m: m.total_bytes)
    weights = 4 * (N_IN * N_HIDDEN + N_HIDDEN + N_HIDDEN * N_OUT + N_OUT)
    assert used.allocator_bytes_in_use >= weights  # the variables' new values came from the allocator
    assert used.reuse_hits > 0 and used.new_buffers >= 0
    assert 0 <= used.live_bytes <= used.peak_bytes <= used.total_bytes  # an update's output aliases its variable


def test_a_traced_step_records_the_small_allocations_it_did_not_pool(monkeypatch):
    monkeypatch.setattr(allocator, "POOL_MIN_BYTES", 1 << 30)  # nothing is pooled
    graph, init, train, loss, variables, feed = _mlp()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        run_metadata = tf.RunMetadata()
        sess.run([train, loss], feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=run_metadata)
        copies = sum(a.stats().small_allocs for a in _device_allocators(sess))
    records = [m for d in tf.step_records(run_metadata).step_stats.dev_stats for m in d.memory]
    assert sum(m.small_allocs for m in records) == copies >= 1  # the loss's copy to the client
    assert sum(m.new_buffers + m.reuse_hits for m in records) == 0
