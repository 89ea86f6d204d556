"""Gradients of the array ops, registered by op type.

Source: ``tensorflow/python/ops/array_grad.py`` (and ``math_grad.py`` for
``UnsortedSegmentSum``). dfcore has no ``IndexedSlices``: gather's gradient is
densified with ``UnsortedSegmentSum`` right away.
"""

from ..framework import dtypes, registry
from . import array_ops, array_ops_gather, array_ops_join, array_ops_layout, array_ops_slice, constant_op, math_ops

registry.NotDifferentiable("ShapeN")


@registry.RegisterGradient("Identity")
def _identity_grad(op, grad):
    return grad


def _reshape_to_input(op, grad):
    x = op.inputs[0]
    if x.shape.is_fully_defined():
        return array_ops.reshape(grad, x.shape.as_list())
    return array_ops.reshape(grad, array_ops.shape(x))


@registry.RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    return _reshape_to_input(op, grad), None


@registry.RegisterGradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return _reshape_to_input(op, grad), None


@registry.RegisterGradient("Squeeze")
def _squeeze_grad(op, grad):
    return _reshape_to_input(op, grad)


@registry.RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    return array_ops_layout.transpose(grad, array_ops_layout.invert_permutation(op.inputs[1])), None


@registry.RegisterGradient("Tile")
def _tile_grad(op, grad):
    """Reshape grad to ``[m0, d0, m1, d1, ...]`` and sum over the even (tiled) axes."""
    x, multiples = op.inputs
    input_shape = array_ops.shape(x, out_type=multiples.dtype.base_dtype)
    split_shape = array_ops.reshape(array_ops_layout.transpose(array_ops_join.stack([multiples, input_shape])), [-1])
    axes = math_ops.range_(0, array_ops.size(split_shape), 2)
    input_grad = math_ops.reduce_sum(array_ops.reshape(grad, split_shape), axes)
    input_grad.set_shape(x.shape)
    return input_grad, None


def _unpad(op, grad):
    """``grad`` cut back to the unpadded input: a Slice starting at the "before" paddings."""
    x, paddings = op.inputs[:2]
    size_tail = array_ops_join.stack([array_ops.rank(x), 1])
    before = array_ops_slice.slice(paddings, [0, 0], math_ops.cast(size_tail, paddings.dtype.base_dtype))
    begin = array_ops.reshape(before, [-1])
    return array_ops_slice.slice(grad, begin, array_ops.shape(x, out_type=paddings.dtype.base_dtype))


@registry.RegisterGradient("Pad")
def _pad_grad(op, grad):
    return _unpad(op, grad), None


@registry.RegisterGradient("PadV2")
def _pad_v2_grad(op, grad):
    return _unpad(op, grad), None, None


@registry.RegisterGradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    return array_ops_layout.mirror_pad_grad(grad, op.inputs[1], op.get_attr("mode")), None


@registry.RegisterGradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    return array_ops_layout.pad(grad, op.inputs[1], mode=op.get_attr("mode")), None


@registry.RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    """Slices of ``grad`` at each input's offset along the axis (``ConcatOffset``)."""
    values, axis = op.inputs[:-1], op.inputs[-1]
    if all(v.shape.is_fully_defined() for v in values):
        sizes = [constant_op.constant(v.shape.as_list(), dtypes.int32) for v in values]
    else:
        sizes = array_ops.shape_n(values)
    offsets = array_ops_join.concat_offset(math_ops.cast(axis, dtypes.int32), sizes)
    return [array_ops_slice.slice(grad, begin, size) for begin, size in zip(offsets, sizes)] + [None]


@registry.RegisterGradient("Split")
def _split_grad(op, *grads):
    return None, array_ops_join.concat(list(grads), op.inputs[0])


@registry.RegisterGradient("SplitV")
def _split_v_grad(op, *grads):
    return array_ops_join.concat(list(grads), op.inputs[2]), None, None


@registry.RegisterGradient("Pack")
def _pack_grad(op, grad):
    return array_ops_join.unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@registry.RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    return array_ops_join.stack(list(grads), axis=op.get_attr("axis"))


@registry.RegisterGradient("Slice")
def _slice_grad(op, grad):
    """``grad`` padded back to the input's shape: ``begin`` before, the rest after."""
    x, begin = op.inputs[:2]
    index_type = begin.dtype.base_dtype
    pad_shape = array_ops_join.stack([math_ops.cast(array_ops.rank(x), index_type),
                                      constant_op.constant(1, index_type)])
    before = array_ops.reshape(begin, pad_shape)
    remaining = math_ops.subtract(math_ops.subtract(array_ops.shape(x, out_type=index_type),
                                                    array_ops.shape(op.outputs[0], out_type=index_type)), begin)
    after = array_ops.reshape(remaining, pad_shape)
    return array_ops_layout.pad(grad, array_ops_join.concat([before, after], 1)), None, None


def _masks(op):
    return {name: op.get_attr(name) for name in array_ops_slice._MASKS}


@registry.RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    shape = array_ops.shape(x, out_type=begin.dtype.base_dtype)
    return (array_ops_slice.strided_slice_grad(shape, begin, end, strides, grad, **_masks(op)),
            None, None, None)


@registry.RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    return None, None, None, None, array_ops_slice.strided_slice(grad, begin, end, strides, **_masks(op))


@registry.RegisterGradient("GatherV2")
def _gather_grad(op, grad):
    """Sum ``grad``'s slices into the gathered rows of params (dense, via UnsortedSegmentSum)."""
    params, indices, axis = op.inputs
    params_shape = array_ops.shape(params)
    indices_size = array_ops_layout.expand_dims(array_ops.size(indices), 0)
    flat_indices = array_ops.reshape(indices, indices_size)
    if array_ops.static_ints(axis) == 0:
        values = array_ops.reshape(grad, array_ops_join.concat([indices_size, params_shape[1:]], 0))
        return array_ops_gather.unsorted_segment_sum(values, flat_indices, params_shape[0]), None, None
    axis = math_ops.cast(axis, dtypes.int32)
    outer_shape = params_shape[:axis]
    outer_dims = array_ops.size(outer_shape)
    inner_shape = params_shape[axis:][1:]
    inner_dims = array_ops.size(inner_shape)
    outer_axes = math_ops.range_(0, outer_dims)
    inner_axes = math_ops.range_(outer_dims + 1, outer_dims + 1 + inner_dims)
    values = array_ops.reshape(grad, array_ops_join.concat([outer_shape, indices_size, inner_shape], 0))
    # Move the gathered axis to the front, sum per index, and move it back.
    values = array_ops_layout.transpose(values, array_ops_join.concat([[outer_dims], outer_axes, inner_axes], 0))
    summed = array_ops_gather.unsorted_segment_sum(values, flat_indices, params_shape[axis])
    return array_ops_layout.transpose(summed, array_ops_join.concat([outer_axes + 1, [0], inner_axes], 0)), None, None


@registry.RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    return array_ops_gather.gather(grad, op.inputs[1]), None, None


@registry.RegisterGradient("OneHot")
def _one_hot_grad(op, grad):
    return None, None, None, None
