"""Numerical gradient checking: ``tf.test.compute_gradient`` and ``compute_gradient_error``.

Source: ``tensorflow/python/ops/gradient_checker.py``. The theoretical Jacobian
comes from the graph's ``gradients`` (one backprop per output element); the
numerical one from central differences ``(f(x+δ) − f(x−δ)) / 2δ``. Use float64
for tight tolerances.
"""

import numpy as np

from ..framework.default_session import get_default_session
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops
from .gradients_impl import gradients


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None,
                     extra_feed_dict=None, session=None):
    """The (theoretical, numerical) Jacobians of ``y`` w.r.t. ``x``, each of shape ``[x.size, y.size]``.

    Args:
        x: a Tensor (usually a placeholder or a constant) or a list of them.
        x_shape: its shape (list of shapes for a list of x).
        y: the output Tensor; ``y_shape`` its shape.
        x_init_value: the point to differentiate at (random normal if None).
        delta: the finite-difference step.
    Raises:
        ValueError: no default session and none given.
    """
    if isinstance(x, (list, tuple)):
        x_init_value = x_init_value or [None] * len(x)
        return [compute_gradient(xi, si, y, y_shape, vi, delta, init_targets, extra_feed_dict, session)
                for xi, si, vi in zip(x, x_shape, x_init_value)]
    session = session or get_default_session()
    if session is None:
        raise ValueError("compute_gradient needs a session: pass session= or use `with tf.Session():`")
    if init_targets:
        session.run(init_targets)
    x = convert_to_tensor(x)
    dtype = x.dtype.as_numpy_dtype
    if x_init_value is None:
        x_init_value = np.random.RandomState(0).standard_normal(x_shape)
    x0 = np.asarray(x_init_value, dtype=dtype).reshape(x_shape)
    feeds = dict(extra_feed_dict or {})
    y_size = int(np.prod(y_shape))
    x_size = x0.size
    dy = array_ops.placeholder(y.dtype.base_dtype, y_shape, name="grad_check_dy")
    grad = gradients(y, x, grad_ys=dy)[0]
    theoretical = np.zeros((x_size, y_size), dtype=np.float64)
    for j in range(y_size):
        seed = np.zeros(y_size, dtype=y.dtype.as_numpy_dtype)
        seed[j] = 1
        if grad is not None:
            g = session.run(grad, {**feeds, x: x0, dy: seed.reshape(y_shape)})
            theoretical[:, j] = np.reshape(g, -1)
    numerical = np.zeros((x_size, y_size), dtype=np.float64)
    for i in range(x_size):
        xp, xm = x0.copy(), x0.copy()
        xp.flat[i] += delta
        xm.flat[i] -= delta
        fp = np.asarray(session.run(y, {**feeds, x: xp}), dtype=np.float64).reshape(-1)
        fm = np.asarray(session.run(y, {**feeds, x: xm}), dtype=np.float64).reshape(-1)
        numerical[i, :] = (fp - fm) / (2 * delta)
    return theoretical, numerical


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None,
                           extra_feed_dict=None, session=None):
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    result = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict, session)
    pairs = result if isinstance(result, list) else [result]
    return max(float(np.max(np.abs(t - n))) if t.size else 0.0 for t, n in pairs)
