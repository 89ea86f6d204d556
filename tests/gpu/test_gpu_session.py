"""Sessions on the real GPU: an MLP trains there with the losses of the CPU run, its variables live in GPU memory,
the placement log names the board, traced steps carry CUDA-event times, the Saver round-trips, and logical GPUs
carved out of one board exchange tensors device to device."""

import numpy as np

import dfcore as tf
from dfcore.runtime.config import step_records

_GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def _train(gpus, steps=5, log=False):
    """Losses of ``steps`` SGD steps of a 64-32-10 MLP (seeded), its ops on GPU:0 when ``gpus`` > 0, and the
    session's variable store values afterwards."""
    rng = np.random.default_rng(0)
    x_data = rng.random((16, 64), dtype=np.float32)
    y_data = rng.integers(0, 10, 16).astype(np.int32)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0" if gpus else "/cpu:0"):
        x = tf.placeholder(tf.float32, [16, 64], name="x")
        y = tf.placeholder(tf.int32, [16], name="y")
        w1 = tf.Variable(rng.standard_normal((64, 32)).astype(np.float32) * 0.1, name="w1")
        b1 = tf.Variable(np.zeros(32, np.float32), name="b1")
        w2 = tf.Variable(rng.standard_normal((32, 10)).astype(np.float32) * 0.1, name="w2")
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(device_count={"GPU": gpus}, allow_soft_placement=True, log_device_placement=log)
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        losses = [float(sess.run([train, loss], {x: x_data, y: y_data})[1]) for _ in range(steps)]
        stored = {name: sess._variables.value(name) for name in ("w1", "b1", "w2")}
    return losses, stored


def test_mlp_trains_on_the_gpu_with_the_cpu_losses_and_variables_in_gpu_memory(gpus, capsys):
    import cupy

    on_gpu, stored = _train(1, log=True)
    on_cpu, _ = _train(0)
    print("losses GPU", on_gpu, "CPU", on_cpu)
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-4, atol=1e-5)
    assert on_gpu[-1] < on_gpu[0]
    for name, value in stored.items():
        assert isinstance(value, cupy.ndarray), f"{name} is stored as {type(value)}, not in GPU memory"
    log = capsys.readouterr().out
    assert f"{_GPU0} -> device: 0, name: {gpus[0].name}, pci bus id: {gpus[0].pci_bus_id}" in log
    assert "MatMul: (MatMul): " + _GPU0 in log


def test_traced_step_has_cuda_event_times_and_the_simulated_clock(gpus):
    a = tf.Variable(np.ones((1024, 1024), np.float32), name="a")
    with tf.device("/gpu:0"):
        b = tf.matmul(a, a, name="b")
        c = tf.reduce_sum(b, name="c")
    metadata = tf.RunMetadata()
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 1}, allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(c)  # warm-up: cupy compiles its kernels once
        value = sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    assert value == 1024.0 ** 3
    records = step_records(metadata)
    gpu = next(d for d in records.step_stats.dev_stats if d.device == _GPU0)
    matmul = next(n for n in gpu.node_stats if n.node_name == "b")
    print("MatMul 1024^3 on the GPU:", matmul.op_end_rel_micros, "us measured (CUDA events);",
          matmul.sim_end_micros - matmul.sim_start_micros, "us simulated")
    assert 0 <= matmul.op_end_rel_micros < 1_000_000
    assert matmul.sim_end_micros > matmul.sim_start_micros


def test_saver_round_trips_gpu_variables(gpus, tmp_path):
    import cupy

    with tf.device("/gpu:0"):
        v = tf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4), name="v")
        bump = tf.assign_add(v, tf.ones([3, 4]))
    saver = tf.train.Saver()
    config = tf.ConfigProto(device_count={"GPU": 1}, allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(bump)
        path = saver.save(sess, str(tmp_path / "gpu.ckpt"))
    with tf.Session(config=config) as sess:
        saver.restore(sess, path)
        assert isinstance(sess._variables.value("v"), cupy.ndarray)
        np.testing.assert_array_equal(sess.run(v), np.arange(12, dtype=np.float32).reshape(3, 4) + 1)


def test_logical_gpus_on_one_board_exchange_tensors(gpus):
    import cupy

    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.visible_device_list = "0"
    config.gpu_options.experimental.virtual_devices.add().memory_limit_mb.extend([1024, 1024])
    x = tf.placeholder(tf.float32, [64, 64], name="x")
    with tf.device("/gpu:0"):
        a = tf.matmul(x, x, name="a")
    with tf.device("/gpu:1"):
        b = tf.add(a, 1.0, name="b")
    data = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    metadata = tf.RunMetadata()
    with tf.Session(config=config) as sess:
        out = sess.run(b, {x: data}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                       run_metadata=metadata)
    np.testing.assert_allclose(out, data @ data + 1, rtol=1e-5)
    moved = [t for t in step_records(metadata).transfers if "GPU:0" in t.src_device and "GPU:1" in t.dst_device]
    assert len(moved) == 1 and moved[0].nbytes == 64 * 64 * 4
    assert cupy.cuda.runtime.getDeviceCount() >= 1
