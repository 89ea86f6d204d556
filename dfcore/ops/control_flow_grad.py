"""Gradients of the ``cond`` primitives: ``Switch`` ↔ ``Merge``.

Source: ``tensorflow/python/ops/control_flow_grad.py`` (``_SwitchGrad``, ``_MergeGrad`` for a
``CondContext``). The gradient of a cond's ``Merge`` is a ``Switch`` of the incoming gradient on
the cond's predicate (so only the taken branch's backward ops run live); the gradient of a
``Switch`` is a ``Merge`` of its two outputs' gradients (the dead one is ignored), with zeros
standing in for a branch that had no gradient. Loop gradients live in
:mod:`dfcore.ops.while_grad`.
"""

from ..framework import registry
from . import array_ops, control_flow_prims, gradients_impl


@registry.RegisterGradient("Merge")
def _merge_grad(op, grad, _):
    """``Switch(grad, pred)``: the branch that ran gets the gradient, the other a dead one."""
    pred = getattr(op, "_cond_pred", None)  # set by tf.cond on the Merges it builds
    if pred is None:
        raise LookupError(f"No gradient defined for Merge '{op.name}' outside a tf.cond")
    false_grad, true_grad = control_flow_prims.switch(grad, pred, name="cond_grad")
    return [false_grad, true_grad]


@gradients_impl.register_zeros_for_output("Switch")
def _switch_zeros(op, index):
    """Zeros that are dead exactly when output ``index`` was: of a new Switch of the same data on the same
    predicate (TF's ``ZerosLikeOutsideLoop``), so no gradient needs the untaken branch's dead value."""
    return array_ops.zeros_like(control_flow_prims.switch(op.inputs[0], op.inputs[1])[index])


@registry.RegisterGradient("Switch")
def _switch_grad(op, false_grad, true_grad):
    """``Merge`` of the two outputs' gradients (zeros for a branch with none); no gradient for ``pred``."""
    if false_grad is None and true_grad is None:
        return [None, None]
    if false_grad is None:
        false_grad = _switch_zeros(op, 0)
    if true_grad is None:
        true_grad = _switch_zeros(op, 1)
    return [control_flow_prims.merge([false_grad, true_grad], name="cond_grad")[0], None]


registry.RegisterGradient("RefSwitch")(_switch_grad)
gradients_impl.register_zeros_for_output("RefSwitch")(_switch_zeros)
