"""Gradients of the nn ops, and the ``*Grad`` ops they build (``ReluGrad``, ``BiasAddGrad`` ...).

Source: ``tensorflow/python/ops/nn_grad.py`` and ``core/ops/nn_ops.cc``. The
cross-entropy gradients reuse the ``backprop`` output the forward op computed.
"""


from ..framework import registry
from ..framework.tensor_shape import TensorShape
from . import array_ops, common_shapes, math_ops, nn_ops
from .op_util import apply_op1


# -- activation gradient ops: array kernels compute(gradients, x) ---------------------
def _relu_grad_kernel(op, backend):
    """``g * (y > 0)``: a product, as TF's ``ReluGrad`` functor (``relu_op_functor.h``), so an infinite
    gradient at ``y <= 0`` gives NaN there (and it is several times faster than a select in numpy)."""
    multiply_mask, quiet = backend.multiply_mask, backend.quiet

    def compute(g, y):
        with quiet():  # inf * 0 is NaN, as in TF, without numpy's warning
            return multiply_mask(g, y > 0)

    return compute


def _relu6_grad_kernel(op, backend):
    xp = backend.xp
    return lambda g, x: xp.where((x > 0) & (x < 6), g, xp.zeros((), dtype=g.dtype))


def _leaky_relu_grad_kernel(op, backend):
    alpha, xp = op.get_attr("alpha"), backend.xp
    return lambda g, x: xp.where(x > 0, g, g * xp.asarray(alpha, dtype=g.dtype))


def _elu_grad_kernel(op, backend):
    xp = backend.xp
    return lambda g, y: xp.where(y > 0, g, g * (y + 1))


def _softplus_grad_kernel(op, backend):
    xp = backend.xp
    return lambda g, x: xp.astype(g * xp.exp(-xp.logaddexp(xp.zeros((), dtype=x.dtype), -x)), g.dtype, copy=False)


ACTIVATION_GRADS = {"ReluGrad": _relu_grad_kernel, "Relu6Grad": _relu6_grad_kernel,
                    "LeakyReluGrad": _leaky_relu_grad_kernel, "EluGrad": _elu_grad_kernel,
                    "SoftplusGrad": _softplus_grad_kernel}


def _two_inputs_same_shape(op):
    common_shapes.require_same_dtype(op)
    g, x = op.inputs
    if not g.shape.is_compatible_with(x.shape):
        raise common_shapes.shape_error(op, "Incompatible shapes")
    return [(g.dtype.base_dtype, g.shape.merge_with(x.shape))]


for _op_type, _factory in ACTIVATION_GRADS.items():
    registry.RegisterShape(_op_type)(_two_inputs_same_shape)
    registry.RegisterArrayKernel(_op_type)(_factory)


def _grad_op(op_type, grad, x, attrs=None):
    return apply_op1(op_type, [grad, x], attrs or {}, op_type)


@registry.RegisterGradient("Relu")
def _relu_grad(op, grad):
    return _grad_op("ReluGrad", grad, op.outputs[0])


@registry.RegisterGradient("ReluGrad")
def _relu_grad_grad(op, grad):
    return _grad_op("ReluGrad", grad, op.inputs[1]), array_ops.zeros_like(op.inputs[1])


@registry.RegisterGradient("Relu6")
def _relu6_grad(op, grad):
    return _grad_op("Relu6Grad", grad, op.inputs[0])


@registry.RegisterGradient("LeakyRelu")
def _leaky_relu_grad(op, grad):
    return _grad_op("LeakyReluGrad", grad, op.inputs[0], {"alpha": op.get_attr("alpha")})


@registry.RegisterGradient("Elu")
def _elu_grad_fn(op, grad):
    return _grad_op("EluGrad", grad, op.outputs[0])


@registry.RegisterGradient("Softplus")
def _softplus_grad_fn(op, grad):
    return _grad_op("SoftplusGrad", grad, op.inputs[0])


# -- softmax -------------------------------------------------------------------------
@registry.RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    softmax = op.outputs[0]
    sum_channels = math_ops.reduce_sum(math_ops.multiply(grad, softmax), -1, keepdims=True)
    return math_ops.multiply(math_ops.subtract(grad, sum_channels), softmax)


@registry.RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    softmax = nn_ops.softmax(op.inputs[0])
    return math_ops.subtract(grad, math_ops.multiply(math_ops.reduce_sum(grad, -1, keepdims=True), softmax))


# -- bias_add ------------------------------------------------------------------------
@registry.RegisterShape("BiasAddGrad")
def _bias_add_grad_shape(op):
    g = op.inputs[0]
    if g.shape.ndims is None:
        return [(g.dtype.base_dtype, TensorShape([None]))]
    if g.shape.ndims < 2:
        raise common_shapes.shape_error(op, f"Shape must be at least rank 2 but is rank {g.shape.ndims}")
    axis = nn_ops.channel_axis(op.get_attr("data_format"), g.shape.ndims)
    return [(g.dtype.base_dtype, TensorShape([g.shape.as_list()[axis]]))]


@registry.RegisterArrayKernel("BiasAddGrad")
def _bias_add_grad_kernel(op, backend):
    data_format, xp = op.get_attr("data_format"), backend.xp
    ones_of: dict[tuple[int, object], object] = {}  # the GEMV's ones by (rows, dtype), made once (only read)

    def compute(g):
        axis = nn_ops.channel_axis(data_format, g.ndim)
        if axis == g.ndim - 1 and g.size and xp.isdtype(g.dtype, "real floating"):  # ones @ g as a matrix: GEMV
            rows = g.size // g.shape[-1]
            ones = ones_of.get((rows, g.dtype))
            if ones is None:
                if len(ones_of) >= 4:  # a node sees one shape in a steady step; keep the cache small
                    ones_of.clear()
                ones = ones_of[(rows, g.dtype)] = xp.ones((rows,), dtype=g.dtype)
            return xp.matmul(ones, xp.reshape(g, (rows, g.shape[-1])))
        return xp.astype(xp.sum(g, axis=tuple(i for i in range(g.ndim) if i != axis)), g.dtype, copy=False)

    return compute


@registry.RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    data_format = op.get_attr("data_format")
    return grad, apply_op1("BiasAddGrad", [grad], {"data_format": data_format}, "BiasAddGrad")


@registry.RegisterGradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    """The bias gradient broadcast back along the channel axis (the input's rank must be known)."""
    x = op.inputs[0]
    if x.shape.ndims is None:
        raise ValueError("the gradient of BiasAddGrad needs an input of known rank")
    shape = [1] * x.shape.ndims
    shape[nn_ops.channel_axis(op.get_attr("data_format"), x.shape.ndims)] = -1
    return math_ops.multiply(array_ops.reshape(grad, shape), array_ops.ones_like(x))


# -- l2_loss and cross-entropies -----------------------------------------------------
@registry.RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return math_ops.multiply(op.inputs[0], grad)


def _broadcast_mul(vec, mat):
    """``vec[:, None] * mat`` for a per-row vector and a ``[rows, cols]`` matrix."""
    return math_ops.multiply(array_ops.reshape(vec, [-1, 1]), mat)


def _is_zero(tensor):
    """True where ``gradients`` filled an unused output's gradient with zeros (TF's ``IsZero``)."""
    return tensor.op.type == "ZerosLike"


@registry.RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(op, grad_loss, grad_grad):
    logits = op.inputs[0]
    grad = _broadcast_mul(grad_loss, op.outputs[1])
    if grad_grad is not None and not _is_zero(grad_grad):
        softmax = nn_ops.softmax(logits)
        projected = math_ops.reduce_sum(math_ops.multiply(grad_grad, softmax), -1, keepdims=True)
        grad = math_ops.add(grad, math_ops.multiply(math_ops.subtract(grad_grad, projected), softmax))
    return grad, _broadcast_mul(grad_loss, math_ops.negative(nn_ops.log_softmax(logits)))


@registry.RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent_grad(op, grad_loss, grad_grad):
    if grad_grad is not None and not _is_zero(grad_grad):
        raise LookupError(
            "Gradient explicitly disabled. Reason: Currently there is no way to take the second derivative of "
            "sparse_softmax_cross_entropy_with_logits due to the fused implementation's interaction with "
            "tf.gradients()")
    return _broadcast_mul(grad_loss, op.outputs[1]), None
