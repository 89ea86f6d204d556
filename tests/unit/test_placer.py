"""The placer: TF's placer.cc rules, one test per rule and per error, and the placement log."""

import re

import pytest
from seed_programs import placement_program

import dfcore as tf
from dfcore.runtime import placer
from dfcore.runtime.device_set import DeviceSet
from dfcore.runtime.placer import place, placement_log_lines

_P = "/job:localhost/replica:0/task:0/device:"
_LOG_LINE = re.compile(r"^(?P<name>[^:]+): \((?P<op>[A-Za-z0-9_]+)\): "
                       r"(?P<dev>/job:[^/]+/replica:\d+/task:\d+/device:[A-Z_]+:\d+)$")
_ALL = ", ".join(_P + n for n in ("CPU:0", "GPU:0", "GPU:1", "GPU:2", "GPU:3"))


def _devices(cpu=1, gpu=4):
    counts = {"CPU": cpu, "GPU": gpu}
    return DeviceSet.from_config(tf.ConfigProto(device_count=counts))


def _place(allow_soft_placement=False, devices=None):
    ops = tf.get_default_graph().get_operations()
    return place(ops, devices or _devices(), allow_soft_placement)


def _where(placement):
    return {r.node_name: (r.assigned_device[len(_P):], r.reason) for r in placement.records()}


def test_seeds_program_places_and_logs_as_tf():
    placement_program()
    devices = _devices()
    lines = placement_log_lines(devices, _place(devices=devices).records())
    assert lines == [
        "Device mapping:",
        f"{_P}GPU:0 -> device: 0, name: Tesla K20m, pci bus id: 0000:02:00.0, compute capability: 3.5",
        f"{_P}GPU:1 -> device: 1, name: Tesla K20m, pci bus id: 0000:03:00.0, compute capability: 3.5",
        f"{_P}GPU:2 -> device: 2, name: Tesla K20m, pci bus id: 0000:04:00.0, compute capability: 3.5",
        f"{_P}GPU:3 -> device: 3, name: Tesla K20m, pci bus id: 0000:05:00.0, compute capability: 3.5",
        f"Const: (Const): {_P}GPU:2",
        f"Const_1: (Const): {_P}GPU:2",
        f"MatMul: (MatMul): {_P}GPU:2",
        f"Const_2: (Const): {_P}GPU:3",
        f"Const_3: (Const): {_P}GPU:3",
        f"MatMul_1: (MatMul): {_P}GPU:3",
        f"AddN: (AddN): {_P}CPU:0",
    ]
    for line in lines[5:]:
        match = _LOG_LINE.match(line)
        assert match and match["dev"].startswith("/job:localhost/")


def test_log_line_format_round_trips():
    line = placer.placement_log_line("layer1/MatMul_1", "MatMul", _P + "GPU:1")
    assert line == f"layer1/MatMul_1: (MatMul): {_P}GPU:1"
    assert _LOG_LINE.match(line)
    assert placer.parse_placement_log_line(line) == ("layer1/MatMul_1", "MatMul", _P + "GPU:1")
    with pytest.raises(ValueError, match="Not a placement log line"):
        placer.parse_placement_log_line("Device mapping:")


def test_log_without_described_devices_says_no_known_devices():
    tf.constant(1.0)
    devices = _devices(gpu=0)
    assert placement_log_lines(devices, _place(devices=devices).records()) == [
        "Device mapping: no known devices.", f"Const: (Const): {_P}CPU:0"]


def test_records_say_what_was_requested_and_which_rule_decided():
    with tf.device("/gpu:1"):
        x = tf.constant(1.0, name="x")
    y = tf.identity(x, name="y")
    records = {r.node_name: r for r in _place().records()}
    assert records["x"] == placer.PlacementRecord("x", "Const", "/device:GPU:1", _P + "GPU:1", None, "requested")
    assert records["y"] == placer.PlacementRecord("y", "Identity", "", _P + "GPU:0", None, placer.REASON_DEFAULT)
    assert y.op.assigned_device is None  # the graph is not changed


def test_unconstrained_ops_go_to_the_highest_priority_device():
    x = tf.placeholder(tf.float32, [2], name="x")
    tf.add(x, x, name="add")
    assert _where(_place()) == {"x": ("GPU:0", placer.REASON_GENERATOR), "add": ("GPU:0", placer.REASON_DEFAULT)}
    assert _where(_place(devices=_devices(cpu=2, gpu=0)))["add"] == ("CPU:0", placer.REASON_DEFAULT)


def test_partial_request_is_completed_with_the_first_matching_device():
    with tf.device("/job:localhost/device:CPU:*"):
        tf.constant(1.0, name="c")
    with tf.device("/job:localhost"):
        tf.constant(2.0, name="d")
    assert _where(_place(devices=_devices(cpu=2, gpu=2))) == {
        "c": ("CPU:0", "requested"), "d": ("GPU:0", "requested")}


def test_assigned_device_is_kept_and_pins_its_colocation_group():
    v = tf.Variable(1.0, name="v")
    v.op._assigned_device = _P + "GPU:3"
    where = _where(_place())
    assert where["v"] == ("GPU:3", placer.REASON_ASSIGNED)
    assert where["v/read"] == ("GPU:3", placer.REASON_COLOCATION)
    assert where["v/Assign"] == ("GPU:3", placer.REASON_COLOCATION)


def test_assigned_device_must_exist():
    c = tf.constant(1.0)
    c.op._assigned_device = _P + "GPU:9"
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"Assigned device '{_P}GPU:9' does not match any device"):
        _place()


def test_variable_and_its_assign_and_read_form_one_group_on_the_requested_device():
    with tf.device("/gpu:1"):
        v = tf.Variable([1.0, 2.0], name="v")
    update = v.assign([3.0, 4.0])  # no device, no _class: the reference edge colocates it
    with tf.device("/cpu:0"):
        bump = v.assign_add([1.0, 1.0])  # its request yields to the variable's (placer.cc step 2)
    records = {r.node_name: r for r in _place().records()}
    for name in ("v", "v/read", "v/Assign", update.op.name, bump.op.name):
        assert records[name].assigned_device == _P + "GPU:1", name
        assert records[name].colocation_group == "loc:@v", name
    assert records["v/read"].reason == placer.REASON_COLOCATION
    assert records["v/initial_value"].colocation_group is None


def test_colocate_with_places_the_op_with_its_target_wherever_that_goes():
    with tf.device("/gpu:2"):
        a = tf.constant(1.0, name="a")
        b = tf.identity(a, name="b")
    with tf.get_default_graph().colocate_with(b.op):
        c = tf.identity(a, name="c")
    assert c.op.get_attr("_class") == ["loc:@b"]
    where = _where(_place())
    assert where["b"] == ("GPU:2", "requested") and where["c"][0] == "GPU:2"


def test_heuristic_a_puts_a_generator_with_its_consumers():
    z = tf.constant(0.0, name="z")
    with tf.device("/gpu:3"):
        tf.identity(z, name="use")
    w = tf.constant(1.0, name="w")
    with tf.device("/gpu:1"):
        tf.identity(w, name="w1")
    with tf.device("/gpu:2"):
        tf.identity(w, name="w2")
    where = _where(_place())
    assert where["z"] == ("GPU:3", placer.REASON_GENERATOR)
    assert where["w"] == ("GPU:0", placer.REASON_DEFAULT)  # consumers on two devices


def test_heuristic_a_counts_control_consumers_and_needs_one_output():
    gate = tf.constant(0.0, name="gate")
    no_output = tf.no_op(name="no_output")
    x = tf.placeholder(tf.float32, [], name="x")
    with tf.device("/gpu:2"):
        with tf.control_dependencies([gate, no_output]):
            tf.identity(x, name="after")
    where = _where(_place())
    assert where["gate"] == ("GPU:2", placer.REASON_GENERATOR)
    assert where["no_output"] == ("GPU:0", placer.REASON_DEFAULT)


def test_heuristic_b_puts_a_metadata_op_with_its_input():
    with tf.device("/gpu:3"):
        x = tf.identity(tf.placeholder(tf.float32, None), name="x")  # unknown shape: no constant folding
    tf.shape(x, name="shape")
    tf.size(x, name="size")
    tf.rank(x, name="rank")
    tf.identity(x, name="not_metadata")
    where = _where(_place())
    for name in ("shape", "size", "rank"):
        assert where[name] == ("GPU:3", placer.REASON_METADATA), name
    assert where["not_metadata"] == ("GPU:0", placer.REASON_DEFAULT)


def test_heuristic_b_waits_for_nothing_a_generator_input_is_placed_after():
    c = tf.constant([1.0, 2.0], name="c")
    tf.shape(c, name="shape")
    where = _where(_place())
    assert where["shape"] == ("GPU:0", placer.REASON_DEFAULT)
    assert where["c"] == ("GPU:0", placer.REASON_GENERATOR)


def test_cpu_only_op_types_go_to_cpu():
    assert placer.supported_device_types("RandomShuffle") == ("CPU",)
    assert placer.supported_device_types("MatMul") == ("GPU", "CPU")
    tf.random_shuffle(tf.constant([1.0, 2.0, 3.0]), name="shuffle")
    assert _where(_place())["shuffle"] == ("CPU:0", placer.REASON_DEFAULT)


def test_summary_ops_have_only_cpu_kernels_so_soft_placement_moves_them_off_a_gpu():
    with tf.device("/gpu:1"):
        loss = tf.reduce_sum(tf.constant([1.0, 2.0]), name="loss")
        tf.summary.merge([tf.summary.scalar("loss", loss), tf.summary.histogram("hist", loss)], name="merged")
    where = _where(_place(allow_soft_placement=True))
    assert where["loss"] == ("GPU:1", "requested")
    assert {where[name] for name in ("loss_1", "hist", "merged/merged")} == {("CPU:0", placer.REASON_SOFT)}
    with pytest.raises(tf.errors.InvalidArgumentError, match="no supported kernel for GPU devices"):
        _place()


def test_request_matching_only_devices_without_a_kernel_is_tfs_error():
    with tf.device("/device:*:1"):  # matches GPU:1 only; RandomShuffle runs on CPU
        tf.random_shuffle(tf.constant([1.0, 2.0]), name="shuffle")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place()
    assert info.value.message == ("Cannot assign a device for operation 'shuffle': Could not satisfy explicit device "
                                  "specification '/device:*:1'")


def test_request_for_a_missing_device_is_tfs_error():
    with tf.device("/device:GPU:7"):
        tf.matmul(tf.constant([[1.0]]), tf.constant([[2.0]]))
    expected = (f"Cannot assign a device for operation 'MatMul': Operation was explicitly assigned to /device:GPU:7 "
                f"but available devices are [ {_ALL} ]. Make sure the device specification refers to a valid device.")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place()
    assert info.value.message == expected
    assert info.value.op.name == "MatMul"


def test_soft_placement_falls_back_from_a_missing_device():
    with tf.device("/device:GPU:7"):
        tf.matmul(tf.constant([[1.0]]), tf.constant([[2.0]]))
    assert _where(_place(allow_soft_placement=True))["MatMul"] == ("GPU:0", placer.REASON_SOFT)
    assert _where(_place(True, _devices(gpu=0)))["MatMul"] == ("CPU:0", placer.REASON_SOFT)


def test_soft_placement_keeps_the_job_so_a_missing_job_still_fails():
    with tf.device("/job:ps/task:0"):
        tf.constant(1.0, name="c")
    with pytest.raises(tf.errors.InvalidArgumentError, match="explicitly assigned to /job:ps/task:0 but available"):
        _place(allow_soft_placement=True)


def test_request_without_a_kernel_for_its_type_is_tfs_error_and_soft_placement_moves_it():
    with tf.device("/gpu:0"):
        tf.random_shuffle(tf.constant([1.0, 2.0]), name="shuffle")
    expected = ("Cannot assign a device for operation 'shuffle': Could not satisfy explicit device specification "
                "'/device:GPU:0' because no supported kernel for GPU devices is available.\n"
                "Registered kernels:\n  device='CPU'\n")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place()
    assert info.value.message == expected
    assert _where(_place(allow_soft_placement=True))["shuffle"] == ("CPU:0", placer.REASON_SOFT)


def test_impossible_request_in_a_colocation_group_lists_the_group(monkeypatch):
    monkeypatch.setitem(placer._DEVICE_TYPES, "VariableV2", ("CPU",))
    with tf.device("/gpu:0"):
        tf.Variable(1.0, name="a_gpu")
    expected = ("Cannot assign a device for operation 'a_gpu': Could not satisfy explicit device specification "
                "'/device:GPU:0' because no supported kernel for GPU devices is available.\n"
                "Colocation Debug Info:\n"
                "Colocation group had the following types and devices: \n"
                "Assign: GPU CPU \n"
                "Identity: GPU CPU \n"
                "VariableV2: CPU \n\n"
                "Colocation members and user-requested devices:\n"
                "  a_gpu (VariableV2) /device:GPU:0\n"
                "  a_gpu/Assign (Assign) /device:GPU:0\n"
                "  a_gpu/read (Identity) /device:GPU:0\n\n"
                "Registered kernels:\n  device='CPU'\n")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place()
    assert info.value.message == expected
    soft = _where(_place(allow_soft_placement=True))
    assert soft["a_gpu"] == ("CPU:0", placer.REASON_SOFT)
    assert soft["a_gpu/read"] == ("CPU:0", placer.REASON_COLOCATION)


def test_missing_device_in_a_colocation_group_appends_the_debug_info():
    with tf.device("/gpu:7"):
        tf.Variable(1.0, name="v")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place()
    message = info.value.message
    assert message.startswith("Cannot assign a device for operation 'v': Operation was explicitly assigned to "
                              "/device:GPU:7 but available devices are [ ")
    assert message.endswith("Colocation members and user-requested devices:\n  v (VariableV2) /device:GPU:7\n"
                            "  v/Assign (Assign) /device:GPU:7\n  v/read (Identity) /device:GPU:7\n")


def test_member_without_the_groups_request_reports_the_incompatible_group_device():
    x = tf.identity(tf.constant(1.0), name="x")
    with tf.device("/gpu:7"):
        y = tf.identity(x, name="y")
    y.op._set_attr("_class", ["loc:@x"])
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place()
    assert info.value.message.startswith(
        "Cannot assign a device for operation 'x': Could not satisfy explicit device specification '' because the "
        "node was colocated with a group of nodes that required incompatible device '/device:GPU:7'\n"
        "Colocation Debug Info:\n")


def test_conflicting_requests_in_one_group_name_both_nodes():
    with tf.device("/gpu:0"):
        a = tf.identity(tf.constant(1.0), name="a")
    with tf.device("/gpu:1"):
        b = tf.identity(a, name="b")
    with tf.device("/cpu:0"):
        c = tf.identity(a, name="c")
    b.op._set_attr("_class", ["loc:@a"])
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place()
    assert info.value.message == ("Cannot colocate nodes 'a' and 'b': Cannot merge devices with incompatible ids: "
                                  "'/device:GPU:0' and '/device:GPU:1'")
    soft = _where(_place(allow_soft_placement=True))
    assert soft["a"] == ("GPU:0", placer.REASON_SOFT) and soft["b"] == ("GPU:0", placer.REASON_COLOCATION)
    b.op._set_attr("_class", ["loc:@b"])
    c.op._set_attr("_class", ["loc:@a"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot colocate nodes 'a' and 'c': Cannot merge "
                       "devices with incompatible types: '/device:GPU:0' and '/device:CPU:0'"):
        _place()


def test_group_with_no_common_device_type_is_an_error(monkeypatch):
    monkeypatch.setitem(placer._DEVICE_TYPES, "VariableV2", ("GPU",))
    monkeypatch.setitem(placer._DEVICE_TYPES, "Assign", ("CPU",))
    tf.Variable(1.0, name="v")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot colocate nodes 'v/Assign' and 'v' because no "
                       "device type supports both of those nodes"):
        _place()


def test_op_with_no_kernel_on_any_device_is_tfs_error(monkeypatch):
    monkeypatch.setitem(placer._DEVICE_TYPES, "MatMul", ("GPU",))
    tf.matmul(tf.constant([[1.0]]), tf.constant([[2.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _place(devices=_devices(gpu=0))
    assert info.value.message == ("No OpKernel was registered to support Op 'MatMul' with these attrs.  Registered "
                                  "devices: [CPU], Registered kernels:\n  device='GPU'\n")


def test_placement_maps_ops_to_devices_and_lists_devices_used():
    total = placement_program()
    placement = _place()
    assert placement[total.op] == _P + "CPU:0"
    assert len(placement) == 7 and total.op in placement
    assert placement.devices_used() == [_P + "GPU:2", _P + "GPU:3", _P + "CPU:0"]
    assert dict(placement.items())[total.op] == _P + "CPU:0"


def test_group_puts_its_noop_on_the_device_its_inputs_share():
    with tf.device("/gpu:1"):
        a, b = tf.constant(1.0, name="a"), tf.constant(2.0, name="b")
    with tf.device("/cpu:0"):
        g = tf.group(a, [b.op])
    assert (g.name, g.type, g.device) == ("group_deps", "NoOp", "/device:GPU:1")
    assert g.control_inputs == [a.op, b.op]
    assert _where(_place())["group_deps"][0] == "GPU:1"


def test_group_over_several_devices_has_one_noop_per_device_then_one_in_the_callers_scope():
    with tf.device("/gpu:1"):
        a = tf.constant(1.0, name="a")
    with tf.device("/gpu:0"):
        b = tf.constant(2.0, name="b")
    c = tf.constant(3.0, name="c")
    with tf.device("/cpu:0"):
        g = tf.group(a, b, c, name="step")
    graph = tf.get_default_graph()
    per_device = [graph.get_operation_by_name(n) for n in ("step/NoOp", "step/NoOp_1", "step/NoOp_2")]
    # TF sorts the devices ("" first) and gives each a NoOp there; the last NoOp waits for them
    assert [(op.device, op.control_inputs) for op in per_device] == [
        ("/device:CPU:0", [c.op]), ("/device:GPU:0", [b.op]), ("/device:GPU:1", [a.op])]
    assert (g.name, g.device, g.control_inputs) == ("step", "/device:CPU:0", per_device)
    where = _where(_place())
    assert [where[n][0] for n in ("step/NoOp", "step/NoOp_1", "step/NoOp_2", "step")] == [
        "CPU:0", "GPU:0", "GPU:1", "CPU:0"]
