"""The shared palette and the label formatting of the widgets (pure functions)."""

import numpy as np
import pytest

import dfcore as tf
from widgets import _format, _palette

GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _is_grey(color):
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return r == g == b


def test_device_colour_depends_only_on_the_device_not_on_how_it_is_spelled():
    assert _palette.device_color(GPU.format(2)) == _palette.device_color("/gpu:2")
    assert _palette.device_color(GPU.format(2)) == _palette.device_color("/device:GPU:2")


def test_cpus_are_grey_and_the_first_eight_gpus_have_distinct_non_grey_hues():
    assert _is_grey(_palette.device_color(CPU0))
    hues = [_palette.device_color(GPU.format(i)) for i in range(8)]
    assert len(set(hues)) == 8
    assert not any(_is_grey(h) for h in hues)
    assert _palette.TRANSFER not in hues  # vermillion is reserved for transfers


def test_gpus_of_different_tasks_get_different_colours():
    a = _palette.device_color("/job:worker/replica:0/task:0/device:GPU:0")
    b = _palette.device_color("/job:worker/replica:0/task:1/device:GPU:0")
    assert a != b


def test_unplaced_ops_have_their_own_colour():
    assert _palette.device_color("") == _palette.UNPLACED
    assert _palette.device_color(None) == _palette.UNPLACED


def test_tint_mixes_with_white():
    assert _palette.tint("#0072B2", 0) == "#0072B2"
    assert _palette.tint("#0072B2", 1) == "#FFFFFF"
    assert _palette.tint("#000000", 0.5) == "#808080"
    assert _palette.device_fill(CPU0) == _palette.tint(_palette.device_color(CPU0), 0.72)


@pytest.mark.parametrize("op_type, kind", [
    ("_Send", "send"), ("_Recv", "recv"), ("_Arg", "arg"), ("_Retval", "retval"), ("VariableV2", "variable"),
    ("Const", "const"),
    ("Placeholder", "input"), ("NoOp", "control"), ("Assign", "state"), ("ApplyGradientDescent", "state"),
    ("MatMul", "compute"), ("AddN", "compute"),
])
def test_op_kinds(op_type, kind):
    assert _palette.op_kind(op_type) == kind


def test_send_recv_arg_and_retval_have_shapes_distinct_from_each_other_and_from_compute_and_inputs():
    types = ("_Send", "_Recv", "_Arg", "_Retval", "MatMul", "Placeholder")
    assert len({_palette.dot_shape(t) for t in types}) == len(types)


@pytest.mark.parametrize("device, short", [
    (GPU.format(2), "GPU:2"),
    (CPU0, "CPU:0"),
    ("/job:worker/replica:0/task:1/device:CPU:0", "worker/task:1/CPU:0"),
    ("/device:GPU:3", "GPU:3"),
    ("", "unplaced"),
])
def test_short_device(device, short):
    assert _format.short_device(device) == short


def test_devices_sort_cpu_first_and_gpu_indices_as_numbers():
    devices = [GPU.format(10), GPU.format(2), CPU0, "/job:ps/replica:0/task:0/device:CPU:0"]
    ordered = sorted(devices, key=_format.device_sort_key)
    assert ordered == [CPU0, GPU.format(2), GPU.format(10), "/job:ps/replica:0/task:0/device:CPU:0"]


@pytest.mark.parametrize("nbytes, text", [(0, "0 B"), (999, "999 B"), (1500, "1.5 KB"), (2_000_000, "2.0 MB"),
                                          (5_000_000_000, "5.0 GB")])
def test_format_bytes_uses_decimal_units(nbytes, text):
    assert _format.format_bytes(nbytes) == text


@pytest.mark.parametrize("micros, text", [(0, "0 µs"), (7.5, "7.5 µs"), (850, "850 µs"), (12_340, "12.3 ms"),
                                          (1_250_000, "1.25 s")])
def test_format_us(micros, text):
    assert _format.format_us(micros) == text


def test_format_attr_shows_dtypes_by_name_and_arrays_by_shape():
    assert _format.format_attr(tf.float32) == "float32"
    assert _format.format_attr(np.zeros((2, 3), np.float32)) == "array float32[2, 3]"
    assert _format.format_attr([1, 2]) == "[1, 2]"
    assert _format.format_attr("x" * 100).endswith("...")


def test_count_pluralises():
    assert [_format.count(n, "op") for n in (0, 1, 2)] == ["0 ops", "1 op", "2 ops"]
