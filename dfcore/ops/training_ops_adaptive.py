"""Update ops of the adaptive optimizers: ``ApplyAdagrad``, ``ApplyRMSProp``, ``ApplyCenteredRMSProp``,
``ApplyAdadelta``, ``ApplyFtrl`` and ``ApplyFtrlV2``.

Source: ``tensorflow/core/ops/training_ops.cc`` (input order, shape rules) and
``core/kernels/training_ops.cc`` (the CPU functors, whose formulas the kernels below
follow term by term). They register through :func:`dfcore.ops.training_ops.register_update`,
so shapes, dtypes, refs, redo on concurrent commits and errors are those of every ``Apply*`` op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework.tensor import Tensor
from .training_ops import apply_update, register_update

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = []


def _adagrad(attrs, backend, var, accum, lr, grad):
    if attrs["update_slots"]:
        accum = accum + grad * grad
    return var - grad * lr * (1 / backend.xp.sqrt(accum)), accum


def _rms_prop(attrs, backend, var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + grad * lr / backend.xp.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _centered_rms_prop(attrs, backend, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mg = mg + (grad - mg) * (1 - rho)
    mom = mom * momentum + grad * lr / backend.xp.sqrt(ms - mg * mg + epsilon)
    return var - mom, mg, ms, mom


def _adadelta(attrs, backend, var, accum, accum_update, lr, rho, epsilon, grad):
    accum = accum * rho + grad * grad * (1 - rho)
    update = backend.xp.sqrt(accum_update + epsilon) * (1 / backend.xp.sqrt(accum + epsilon)) * grad
    accum_update = accum_update * rho + update * update * (1 - rho)
    return var - update * lr, accum, accum_update


def _ftrl_step(backend, var, accum, linear, grad, linear_grad, lr, l1, l2, lr_power):
    """The shared FTRL-proximal step; ``linear_grad`` is ``grad`` (V1) or ``grad`` plus shrinkage (V2)."""
    new_accum = accum + grad * grad
    if lr_power == -0.5:  # TF's special case: sqrt instead of pow
        new_root, old_root = backend.xp.sqrt(new_accum), backend.xp.sqrt(accum)
    else:
        new_root, old_root = backend.xp.pow(new_accum, -lr_power), backend.xp.pow(accum, -lr_power)
    linear = linear + linear_grad - (new_root - old_root) / lr * var
    with backend.quiet():  # 0/0 only where the select below picks 0
        pre_shrink = (l1 * backend.xp.sign(linear) - linear) / (new_root / lr + 2 * l2)
    var = backend.xp.where(backend.xp.abs(linear) > l1, pre_shrink, backend.xp.zeros_like(var))
    return var, new_accum, linear


def _ftrl(attrs, backend, var, accum, linear, grad, lr, l1, l2, lr_power):
    return _ftrl_step(backend, var, accum, linear, grad, grad, lr, l1, l2, lr_power)


def _ftrl_v2(attrs, backend, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    return _ftrl_step(backend, var, accum, linear, grad, grad + 2 * l2_shrinkage * var, lr, l1, l2, lr_power)


def _attrs(use_locking, **extra):
    return {"use_locking": bool(use_locking), **extra}


def apply_adagrad(var: TensorLike, accum: TensorLike, lr: TensorLike, grad: TensorLike, use_locking: bool = False,
                  update_slots: bool = True, name: str | None = None) -> Tensor:
    """Adagrad: ``accum += grad²`` (if ``update_slots``); ``var -= lr * grad / sqrt(accum)``.

    Args:
        var, accum: variable references of one shape and float dtype; ``lr`` a scalar; ``grad`` var's shape.
    Returns:
        The new ``var`` (its shape and dtype).
    Raises:
        TypeError: ``var`` or ``accum`` is not a reference, or the dtypes differ.
        InvalidArgumentError: ``lr`` is not a scalar, or a shape differs from ``var``'s (names the op).
    Source: TF ``core/kernels/training_ops.cc`` (ApplyAdagrad).
    """
    return apply_update("ApplyAdagrad", [var, accum, lr, grad], _attrs(use_locking, update_slots=bool(update_slots)),
                        name)


def apply_rms_prop(var: TensorLike, ms: TensorLike, mom: TensorLike, lr: TensorLike, rho: TensorLike,
                   momentum: TensorLike, epsilon: TensorLike, grad: TensorLike, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """RMSProp: ``ms += (grad² - ms) * (1 - rho)``; ``mom = mom * momentum + lr * grad / sqrt(ms + epsilon)``;
    ``var -= mom``. Returns the new ``var``; errors as :func:`apply_adagrad`.

    Source: TF ``core/kernels/training_ops.cc`` (ApplyRMSProp).
    """
    return apply_update("ApplyRMSProp", [var, ms, mom, lr, rho, momentum, epsilon, grad], _attrs(use_locking), name)


def apply_centered_rms_prop(var: TensorLike, mg: TensorLike, ms: TensorLike, mom: TensorLike, lr: TensorLike,
                            rho: TensorLike, momentum: TensorLike, epsilon: TensorLike, grad: TensorLike,
                            use_locking: bool = False, name: str | None = None) -> Tensor:
    """Centered RMSProp: as :func:`apply_rms_prop` with ``mg += (grad - mg) * (1 - rho)`` and the denominator
    ``sqrt(ms - mg² + epsilon)``. Returns the new ``var``; errors as :func:`apply_adagrad`.

    Source: TF ``core/kernels/training_ops.cc`` (ApplyCenteredRMSProp).
    """
    return apply_update("ApplyCenteredRMSProp", [var, mg, ms, mom, lr, rho, momentum, epsilon, grad],
                        _attrs(use_locking), name)


def apply_adadelta(var: TensorLike, accum: TensorLike, accum_update: TensorLike, lr: TensorLike, rho: TensorLike,
                   epsilon: TensorLike, grad: TensorLike, use_locking: bool = False, name: str | None = None) -> Tensor:
    """Adadelta: ``accum = rho * accum + (1 - rho) * grad²``;
    ``update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad``; ``var -= lr * update``;
    ``accum_update = rho * accum_update + (1 - rho) * update²``. Returns the new ``var``; errors as
    :func:`apply_adagrad`.

    Source: TF ``core/kernels/training_ops.cc`` (ApplyAdadelta).
    """
    return apply_update("ApplyAdadelta", [var, accum, accum_update, lr, rho, epsilon, grad], _attrs(use_locking),
                        name)


def apply_ftrl(var: TensorLike, accum: TensorLike, linear: TensorLike, grad: TensorLike, lr: TensorLike, l1: TensorLike,
               l2: TensorLike, lr_power: TensorLike, use_locking: bool = False, name: str | None = None) -> Tensor:
    """FTRL-proximal: ``new = accum + grad²``; ``linear += grad - (new^-p - accum^-p) / lr * var``;
    ``var = (l1 * sign(linear) - linear) / (new^-p / lr + 2 * l2)`` where ``|linear| > l1``, else 0;
    ``accum = new`` (``p`` = ``lr_power``). Returns the new ``var``; errors as :func:`apply_adagrad`.

    Source: TF ``core/kernels/training_ops.cc`` (ApplyFtrl).
    """
    return apply_update("ApplyFtrl", [var, accum, linear, grad, lr, l1, l2, lr_power], _attrs(use_locking), name)


def apply_ftrl_v2(var: TensorLike, accum: TensorLike, linear: TensorLike, grad: TensorLike, lr: TensorLike,
                  l1: TensorLike, l2: TensorLike, l2_shrinkage: TensorLike, lr_power: TensorLike,
                  use_locking: bool = False, name: str | None = None) -> Tensor:
    """FTRL-proximal with L2 shrinkage: as :func:`apply_ftrl`, with ``grad + 2 * l2_shrinkage * var`` in
    place of ``grad`` in the ``linear`` update (the accumulator still adds ``grad²``).

    Source: TF ``core/kernels/training_ops.cc`` (ApplyFtrlV2).
    """
    return apply_update("ApplyFtrlV2", [var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power],
                        _attrs(use_locking), name)


register_update("ApplyAdagrad", ("var", "accum", "lr", "grad"), 2, ("lr",), _adagrad)
register_update("ApplyRMSProp", ("var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"), 3,
                ("lr", "rho", "momentum", "epsilon"), _rms_prop)
register_update("ApplyCenteredRMSProp", ("var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"), 4,
                ("lr", "rho", "momentum", "epsilon"), _centered_rms_prop)
register_update("ApplyAdadelta", ("var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"), 3,
                ("lr", "rho", "epsilon"), _adadelta)
register_update("ApplyFtrl", ("var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"), 3,
                ("lr", "l1", "l2", "lr_power"), _ftrl)
register_update("ApplyFtrlV2", ("var", "accum", "linear", "grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"), 3,
                ("lr", "l1", "l2", "l2_shrinkage", "lr_power"), _ftrl_v2)
