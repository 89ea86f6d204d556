"""Device memory as a placement constraint: hand-counted bytes per device, TF's OOM wording when a model is
forced onto one device, and the bad inputs (a limit nothing meets, a colocation group too big, a bad limit)."""

import dataclasses

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime import cost_model, cost_placer
from dfcore.runtime.device_set import DeviceSet, make_device

_P = "/job:localhost/replica:0/task:0/device:"
MIB = 2**20


def _devices(cpu=1, gpu=4):
    return DeviceSet.from_config(tf.ConfigProto(device_count={"CPU": cpu, "GPU": gpu}))


def _ops():
    return tf.get_default_graph().get_operations()


def _mlp(layers=4, width=256, device=None):
    """A ReLU MLP on [8, width] inputs trained by gradient descent; each weight is width² floats."""
    x = tf.placeholder(tf.float32, [8, width], name="x")
    h = x
    with tf.device(device):
        for i in range(layers):
            w = tf.Variable(np.full((width, width), 1e-3, np.float32), name=f"w{i}")
            h = tf.nn.relu(tf.matmul(h, w))
        loss = tf.reduce_sum(h)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, loss, train


def test_bytes_per_device_are_the_hand_counted_ones():
    with tf.device("/gpu:0"):
        a = tf.constant(np.ones((10, 10), np.float32), name="a")
    with tf.device("/gpu:1"):
        y = tf.matmul(a, a, name="y")  # its output, and one copy of a however often it reads it
        tf.identity(y, name="z")  # a view: nothing
    placement = cost_placer.place(_ops(), _devices())
    assert placement.memory_bytes[_P + "GPU:0"] == 400
    assert placement.memory_bytes[_P + "GPU:1"] == 400 + 400
    assert placement.memory_bytes[_P + "CPU:0"] == 0


def test_the_limits_are_the_profiles_memory_unless_set():
    devices = DeviceSet([make_device("localhost", 0, 0, "CPU", 0), make_device("localhost", 0, 0, "GPU", 0),
                         make_device("localhost", 0, 0, "GPU", 1, "Tesla V100-SXM2-32GB"),
                         make_device("localhost", 0, 0, "GPU", 2, "NVIDIA H100 80GB HBM3")])
    tf.constant(1.0)
    limits = cost_placer.place(_ops(), devices).memory_limit_bytes
    assert limits == {_P + "GPU:0": 5 * 10**9, _P + "GPU:1": 32 * 10**9, _P + "GPU:2": 80 * 10**9,
                      _P + "CPU:0": 16 * 10**9}
    assert cost_placer.place(_ops(), devices, memory_limit_bytes={"/gpu:1": 123}).memory_limit_bytes[
        _P + "GPU:1"] == 123
    k20m_1gb = dataclasses.replace(cost_model.TESLA_K20M, memory_bytes=10**9)
    machine = cost_model.MachineProfile({_P + "CPU:0": cost_model.CPU, _P + "GPU:0": k20m_1gb,
                                         _P + "GPU:1": k20m_1gb, _P + "GPU:2": k20m_1gb})
    assert cost_placer.place(_ops(), devices, machine=machine).memory_limit_bytes[_P + "GPU:2"] == 10**9


def test_a_model_too_big_for_one_gpu_is_oom_there_but_trains_under_the_cost_placer():
    # Four 256×256 weights: 256 KiB each, their initial values as much again, and the activations.
    gpus = {f"/gpu:{i}": int(1.5 * MIB) for i in range(4)}
    limits = dict(gpus, **{"/cpu:0": MIB // 2})
    with tf.Graph().as_default() as forced:
        _mlp(device="/gpu:0")
        forced_init = tf.global_variables_initializer()
    oom = (r"^OOM when allocating tensor with shape\[256,256\] and type float on "
           r"/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc: node '\S+' \(\w+\) fits on no "
           r"device it may go to \(/job:localhost/replica:0/task:0/device:GPU:0: needs \d+, \d+ of 1572864 bytes "
           r"free\)")
    for strategy in ("cost_model", "rules"):
        options = tf.PlacementOptions(strategy, memory_limit_bytes=limits, check_memory=True)
        with pytest.raises(tf.errors.ResourceExhaustedError, match=oom), tf.Session(graph=forced,
                                                                                 placement=options) as sess:
            sess.run(forced_init)
    graph = tf.Graph()
    with graph.as_default():
        x, loss, train = _mlp()
        init = tf.global_variables_initializer()
    feed = {x: np.ones((8, 256), np.float32)}
    with tf.Session(graph=graph, placement=tf.PlacementOptions("cost_model", memory_limit_bytes=limits)) as sess:
        sess.run(init)
        before = sess.run(loss, feed)
        sess.run(train, feed)
        assert sess.run(loss, feed) < before
        placement = sess.placement()
    used = placement.memory_bytes
    assert all(used[d] <= placement.memory_limit_bytes[d] for d in used)
    assert len({d for d, n in used.items() if n > 0 and "GPU" in d}) >= 2


def test_a_limit_no_placement_can_meet_names_the_largest_tensor():
    tf.constant(np.ones((4, 4), np.float32), name="small")
    tf.constant(np.ones((512, 512), np.float32), name="big")
    limits = {d: MIB // 2 for d in _devices().names()}
    with pytest.raises(tf.errors.ResourceExhaustedError) as info:
        cost_placer.place(_ops(), _devices(), memory_limit_bytes=limits)
    message = str(info.value)
    assert message.startswith("OOM when allocating tensor with shape[512,512] and type float on "
                              "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc: node 'big' (Const)")
    assert ("The largest tensor of the graph, 'big:0' with shape[512,512] (1048576 bytes), exceeds the memory of "
            "every device it may go to.") in message
    assert info.value.op.name == "big"


def test_a_colocation_group_bigger_than_any_devices_free_memory_is_oom_naming_the_group():
    v = tf.Variable(np.ones((256, 256), np.float32), name="v")
    with tf.colocate_with(v):
        tf.constant(np.ones((256, 256), np.float32), name="c")  # each fits alone; together they do not
    limits = {d: 600_000 for d in _devices().names()}
    with pytest.raises(tf.errors.ResourceExhaustedError,
                       match=r"node 'v' \(VariableV2\) fits on no device it may go to \(.*GPU:0: needs 524288, "
                             r"337856 of 600000 bytes free; .*GPU:1: needs 786432, 600000 of 600000 bytes free.*\)\. "
                             r"Its colocation group \(loc:@v: v, v/Assign, v/read, c\) must share one device"):
        cost_placer.place(_ops(), _devices(), memory_limit_bytes=limits)
    # With room for the group on one device, the whole group goes there.
    roomy = cost_placer.place(_ops(), _devices(), memory_limit_bytes={d: 900_000 for d in limits})
    assert len({roomy[op] for op in _ops() if op.name.startswith("v") or op.name == "c"}) == 1


def test_a_bad_memory_limit_is_a_value_error():
    tf.constant(1.0)
    with pytest.raises(ValueError, match=r"memory limit given for '/gpu:9', which matches 0 devices"):
        cost_placer.place(_ops(), _devices(), memory_limit_bytes={"/gpu:9": 10})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"must be an integer >= 0 \(bytes\), got -1"):
        cost_placer.place(_ops(), _devices(), memory_limit_bytes={"/gpu:0": -1})


@pytest.mark.parametrize("limits,message", [
    ({"/gpu:0": "lots"}, r"memory_limit_bytes\['/gpu:0'\] must be an integer >= 0 \(bytes\), got 'lots'"),
    ({"/gpu:0": -1}, r"memory_limit_bytes\['/gpu:0'\] must be an integer >= 0 \(bytes\), got -1"),
    ({"/gpu:0": 1.5e9}, r"must be an integer >= 0 \(bytes\), got 1500000000.0"),
    ({"/gpu:0": True}, r"must be an integer >= 0 \(bytes\), got True"),
    ({0: 10}, r"a device name must be a string, got 0"),
    ([("/gpu:0", 10)], r"memory_limit_bytes must be a mapping of device name to bytes, got list"),
])
def test_placement_options_reject_malformed_memory_limits_with_a_typed_error(limits, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.PlacementOptions("cost_model", memory_limit_bytes=limits)
