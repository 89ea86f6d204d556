"""Feed keys and values of ``Session.run`` / ``partial_run``, and fetched values as the client sees them.

Source: TF's ``python/client/session.py`` (``BaseSession._run``, ``partial_run_setup``):
a feed key is a Tensor or a tensor name; a feed value is converted to the tensor's
dtype and checked against its static shape, with TF's messages.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import dtypes
from ..framework.graph import Graph
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape


def feed_tensor(graph: Graph, key: Any, what: str = "feed_dict") -> Tensor:
    """The Tensor of ``graph`` a feed key names (``what``: ``feed_dict`` or ``feed_list`` in the message).

    Raises:
        TypeError: ``Cannot interpret <what> key as Tensor: ...`` (TF's wording).
    """
    try:
        element = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (TypeError, ValueError, KeyError) as error:
        message = error.args[0] if error.args else str(error)
        raise TypeError(f"Cannot interpret {what} key as Tensor: {message}") from None
    if not isinstance(element, Tensor):
        raise TypeError(f"Cannot interpret {what} key as Tensor: {key!r}")
    return element


def feed_list_tensors(graph: Graph, feeds: Any) -> list[Tensor]:
    """The Tensors ``partial_run_setup``'s ``feeds`` (None, a key, or a list or tuple of keys) name, sorted by
    name. Raises TypeError as :func:`feed_tensor` (``feed_list`` in the message)."""
    feeds = [] if feeds is None else list(feeds) if isinstance(feeds, (list, tuple)) else [feeds]
    return sorted((feed_tensor(graph, f, "feed_list") for f in feeds), key=lambda t: t.name)


def client_value(value: Any) -> Any:
    """A fetched value as the client sees it: 0-d arrays become numpy scalars, as in TF."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def feed_value(tensor: Tensor, value: Any) -> Any:
    """Convert a fed value to the tensor's dtype and check its shape (TF's messages, ``client/session.py``).

    Raises:
        TypeError: a Tensor, a dtype that cannot be cast safely, or an integer the dtype cannot hold
            (TF's ``Type of feed value ... is not compatible with Tensor type ...``; TF checks Python ints,
            dfcore numpy values too, as numpy would wrap them silently).
        ValueError: a shape the tensor's static shape does not allow.
    """
    if isinstance(value, Tensor):
        raise TypeError(
            "The value of a feed cannot be a tf.Tensor object. Acceptable feed values include Python scalars, "
            "strings, lists, numpy ndarrays, or TensorHandles."
        )
    dtype = tensor.dtype.base_dtype
    target = np.dtype(dtype.as_numpy_dtype)
    # strings straight to objects: numpy's fixed-width bytes would drop trailing NULs of binary records
    array = np.asarray(value, dtype=object) if target.kind == "O" and not isinstance(value, np.ndarray) else \
        np.asarray(value)
    if array.dtype != target:
        safe = np.can_cast(array.dtype, target, casting="same_kind") or (
            array.dtype.kind in "iub" and target.kind in "iuf"
        )
        if not safe:
            raise TypeError(
                f"Cannot feed value of dtype {array.dtype} for Tensor '{tensor.name}', which has dtype {dtype.name}"
            )
        outside = dtypes.first_value_outside(value, array, dtype)
        if outside is not None:
            raise TypeError(
                f"Type of feed value {outside} with type {type(outside)} is not compatible with Tensor type "
                f"{dtype.as_numpy_dtype}. Try explicitly setting the type of the feed tensor to a larger type (e.g. "
                f"int64). (Tensor '{tensor.name}' holds {dtype.name} values in [{dtype.min}, {dtype.max}].)"
            )
        array = array.astype(target)
    if not _shape_allows(tensor.shape, array.shape):
        raise ValueError(
            f"Cannot feed value of shape {array.shape!r} for Tensor '{tensor.name}', which has shape '{tensor.shape}'"
        )
    return array


def _shape_allows(static: TensorShape, shape: tuple[int, ...]) -> bool:
    """``static.is_compatible_with(shape)`` for a concrete ``shape``, without building a TensorShape of it
    (~1.5 us a feed, measured)."""
    dims = static.as_tuple()
    return dims is None or (len(dims) == len(shape) and all(d is None or d == n for d, n in zip(dims, shape)))
