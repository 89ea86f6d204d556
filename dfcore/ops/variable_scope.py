"""``tf.get_variable`` and ``tf.variable_scope``: variables named by scope, created once, shared on reuse.

Source: ``tensorflow/python/ops/variable_scope.py`` (TF 1.x). A graph keeps one store of the
variables ``get_variable`` made, by full name (``"scope/inner/w"``), and a stack of
:class:`VariableScope` objects. ``get_variable`` ignores the name scope (only variable scopes
name variables); it creates the variable when the scope does not reuse, returns the stored one
when it does (``reuse=True``), and either with ``reuse=AUTO_REUSE``. A scope's initializer,
regularizer, dtype and custom getter are defaults for the variables made in it and in the scopes
inside it; ``reuse`` is inherited (a scope inside a reusing scope reuses). Regularization losses go
to ``GraphKeys.REGULARIZATION_LOSSES``, as in TF. With a partitioner, the variable is made of shards
(:mod:`dfcore.ops.partitioned_variables`).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..framework import dtypes, graph as graph_lib
from ..framework.graph import GraphKeys
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape
from . import init_ops
from .partitioned_variables import (
    PartitionedVariable,
    PartitionInfo,
    SaveSliceInfo,
    shard_slices,
)
from .variables import Variable

if TYPE_CHECKING:
    from ..framework.tensor_like import DTypeLike, TensorLike

_STORE_KEY = ("__variable_store",)
_SCOPE_KEY = ("__varscope",)


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


#: ``reuse=tf.AUTO_REUSE``: create the variable if it does not exist, else return it.
AUTO_REUSE = _ReuseMode.AUTO_REUSE


class VariableScope:
    """The defaults of one variable scope: ``name`` (``"outer/inner"``), ``reuse`` (False, True or
    :data:`AUTO_REUSE`), ``initializer``, ``regularizer``, ``dtype``, ``custom_getter``, and
    ``partitioner`` and ``original_name_scope`` (the name scope its ops went into)."""

    def __init__(self, reuse: bool | None, name: str = "", initializer: Any = None, regularizer: Any = None,
                 dtype: DTypeLike = dtypes.float32, custom_getter: Any = None, original_name_scope: str = "",
                 partitioner: Any = None):
        self.name, self._reuse = name, reuse
        self.initializer, self.regularizer, self.custom_getter = initializer, regularizer, custom_getter
        self.dtype, self.original_name_scope = dtypes.as_dtype(dtype).base_dtype, original_name_scope
        self.partitioner = partitioner

    @property
    def reuse(self) -> bool | None:
        return self._reuse

    def reuse_variables(self) -> None:
        """Make this scope reuse variables from now on (``tf.get_variable_scope().reuse_variables()``)."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self.initializer = initializer

    def set_regularizer(self, regularizer: Any) -> None:
        self.regularizer = regularizer

    def get_variable(self, name: str, shape: TensorLike = None, dtype: DTypeLike | None = None, initializer: Any = None,
                     regularizer: Any = None, trainable: bool = True, collections: Sequence[str] | None = None,
                     custom_getter: Any = None, validate_shape: bool = True, **kwargs: Any) -> Any:
        """:func:`get_variable` in this scope."""
        full_name = f"{self.name}/{name}" if self.name else name
        dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else self.dtype
        initializer = self.initializer if initializer is None else initializer
        regularizer = self.regularizer if regularizer is None else regularizer
        if kwargs.get("partitioner") is None:
            kwargs["partitioner"] = self.partitioner
        getter = _store().get_variable
        for outer in (self.custom_getter, custom_getter):  # the scope's getter, then the call's, innermost last
            if outer is not None:
                getter = _wrap_getter(outer, getter)
        graph = graph_lib.get_default_graph()
        with graph.name_scope(""):  # variable names depend on variable scopes only, not on name scopes
            return getter(full_name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                          reuse=self.reuse, trainable=trainable, collections=collections,
                          validate_shape=validate_shape, **kwargs)


def _wrap_getter(custom_getter, getter):
    def wrapped(name, *args, **kwargs):
        return custom_getter(getter, name, *args, **kwargs)

    return wrapped


class _VariableStore:
    """The variables ``get_variable`` made in one graph, by full name."""

    def __init__(self):
        self.variables = {}

    def get_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None, regularizer=None,
                     reuse=None, trainable=True, collections=None, validate_shape=True, partitioner=None, **_):
        shape = None if shape is None else TensorShape(shape)
        if partitioner is not None:
            return self._partitioned(name, shape, dtype, initializer, regularizer, reuse, partitioner,
                                     trainable=trainable, collections=collections, validate_shape=validate_shape)
        found = self.variables.get(name)
        if found is not None:
            if reuse is None or reuse is False:
                raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set reuse=True or "
                                 "reuse=tf.AUTO_REUSE in VarScope?")
            if shape is not None and not shape.is_compatible_with(found.shape):
                raise ValueError(f"Trying to share variable {name}, but specified shape {shape} and found shape "
                                 f"{found.shape}.")
            if dtype is not None and dtype is not found.dtype.base_dtype:
                raise ValueError(f"Trying to share variable {name}, but specified dtype {dtype.name} and found dtype "
                                 f"{found.dtype.base_dtype.name}.")
            return found
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with tf.get_variable(). Did you "
                             "mean to set reuse=tf.AUTO_REUSE in VarScope?")
        variable = Variable(_initial_value(name, shape, dtype, initializer), name=name, trainable=trainable,
                            collections=collections, validate_shape=validate_shape, dtype=dtype)
        self.variables[name] = variable
        _regularize(variable, regularizer)
        return variable

    def _partitioned(self, name, shape, dtype, initializer, regularizer, reuse, partitioner, **variable_args):
        """The :class:`PartitionedVariable` ``name``: shards ``name/part_<i>`` made by ``partitioner``.

        Raises:
            ValueError: TF's messages, as for one variable; a shape not fully defined; an initializer that
                is a value rather than a callable.
        """
        found = self.variables.get(name)
        if found is not None:
            if reuse is None or reuse is False:
                raise ValueError(f"Partitioned variable with name {name} already exists. Did you mean to set "
                                 "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
            if not isinstance(found, PartitionedVariable):
                raise ValueError(f"Trying to reuse partitioned variable {name}, but an unpartitioned variable of "
                                 "that name exists.")
            if shape is not None and not shape.is_compatible_with(found.shape):
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape {shape} and "
                                 f"found shape {found.shape}.")
            return found
        if reuse is True:
            raise ValueError(f"PartitionedVariable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=False or reuse=tf.AUTO_REUSE in VarScope?")
        if shape is None or not shape.is_fully_defined():
            raise ValueError(f"Shape of a new partitioned variable ({name}) must be fully defined, but instead "
                             f"was {shape}.")
        if initializer is not None and not callable(initializer):
            raise ValueError(f"Partitioned variable {name} needs an initializer it can call per shard, not a value.")
        full = shape.as_list()
        partitions = [int(p) for p in partitioner(full, dtype)]
        initializer = _default_initializer(name, dtype, initializer)
        shards = []
        for i, (offset, shard_shape) in enumerate(shard_slices(full, partitions)):
            info = PartitionInfo(full, offset)
            shard = Variable(lambda s=shard_shape, p=info: initializer(s, dtype=dtype, partition_info=p),
                             name=f"{name}/part_{i}", dtype=dtype, **variable_args)
            shard._save_slice_info = SaveSliceInfo(name, full, offset, shard_shape)
            _regularize(shard, regularizer)
            shards.append(shard)
        self.variables[name] = PartitionedVariable(name, full, dtype, shards, partitions)
        return self.variables[name]


def _regularize(variable, regularizer):
    """Add ``regularizer(variable)`` to ``REGULARIZATION_LOSSES`` (colocated, in ``<name>/Regularizer/``); a
    partitioned variable's shards are regularized one by one, which sums to the whole for the usual L1/L2."""
    if regularizer is None:
        return
    graph = graph_lib.get_default_graph()
    with graph.colocate_with(variable.op), graph.name_scope(variable.op.name + "/Regularizer/"):
        loss = regularizer(variable)
    if loss is not None:
        graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


def _initial_value(name, shape, dtype, initializer):
    """The variable's initial value (a Tensor/array) or a callable making it inside its name scope.

    Raises:
        ValueError: a shape given with a Tensor initializer, or a new variable's shape not fully defined.
    """
    if initializer is not None and not callable(initializer):  # a Tensor or a value: it carries its shape
        if shape is not None and isinstance(initializer, Tensor):
            raise ValueError("If initializer is a constant, do not specify shape.")
        return initializer
    if shape is None or not shape.is_fully_defined():
        raise ValueError(f"Shape of a new variable ({name}) must be fully defined, but instead was {shape}.")
    initializer = _default_initializer(name, dtype, initializer)
    dims = shape.as_list()
    return lambda: initializer(dims, dtype=dtype)


def _default_initializer(name, dtype, initializer):
    """``initializer``, or TF's default: ``glorot_uniform_initializer`` for floats, zeros for ints and bools."""
    if initializer is not None:
        return initializer
    if dtype.is_floating:
        return init_ops.GlorotUniform()
    if dtype.is_integer or dtype.is_bool:
        return init_ops.Zeros()
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


def _store():
    graph = graph_lib.get_default_graph()
    found = graph.get_collection(_STORE_KEY)
    if not found:
        graph.add_to_collection(_STORE_KEY, _VariableStore())
        found = graph.get_collection(_STORE_KEY)
    return found[0]


def get_variable_scope() -> VariableScope:
    """The innermost variable scope of the default graph (the root scope, named ``""``, outside any)."""
    graph = graph_lib.get_default_graph()
    scopes = graph.get_collection_ref(_SCOPE_KEY)
    if not scopes:
        scopes.append(VariableScope(False))
    return scopes[-1]


def get_variable(name: str, shape: TensorLike = None, dtype: DTypeLike | None = None, initializer: Any = None,
                 regularizer: Any = None, trainable: bool = True, collections: Sequence[str] | None = None,
                 caching_device: Any = None, partitioner: Any = None, validate_shape: bool = True,
                 use_resource: bool | None = None, custom_getter: Any = None, constraint: Any = None,
                 **kwargs: Any) -> Any:
    """The variable ``<scope>/<name>``: created in a scope that does not reuse, returned in one that does.

    Args:
        shape: the variable's shape (needed unless ``initializer`` is a value or Tensor).
        dtype: default the scope's (float32). initializer: an initializer, a value or a Tensor; default the
            scope's, else ``glorot_uniform_initializer`` for floats and zeros for integers and bools.
        regularizer: ``f(variable) -> loss`` added to ``GraphKeys.REGULARIZATION_LOSSES``.
    Raises:
        ValueError: TF's messages — the variable exists and the scope does not reuse; it does not exist and
            the scope reuses; shape or dtype differ from the shared variable's; a new variable's shape is
            not fully defined.
    Returns:
        A ``Variable``, or with a ``partitioner`` (``tf.fixed_size_partitioner(n)``; default the scope's) a
        :class:`~dfcore.ops.partitioned_variables.PartitionedVariable` of shards ``<name>/part_<i>``.
    """
    return get_variable_scope().get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer, trainable=trainable,
        collections=collections, custom_getter=custom_getter, validate_shape=validate_shape, partitioner=partitioner)


@contextlib.contextmanager
def variable_scope(name_or_scope: str | VariableScope | None, default_name: str | None = None,
                   values: TensorLike = None, initializer: Any = None, regularizer: Any = None,
                   caching_device: Any = None, partitioner: Any = None, custom_getter: Any = None, reuse: Any = None,
                   dtype: DTypeLike | None = None, use_resource: bool | None = None, constraint: Any = None,
                   auxiliary_name_scope: bool = True) -> Iterator[VariableScope]:
    """Enter a variable scope (and a name scope of the same name); yields its :class:`VariableScope`.

    ``name_or_scope``: a name (nested under the current scope) or a :class:`VariableScope` to re-enter;
    None with ``default_name``: a fresh name (``default_name``, ``default_name_1``, …). ``reuse``: True or
    :data:`AUTO_REUSE` to share; None inherits the enclosing scope's (``False`` cannot turn reuse off
    inside a reusing scope, as in TF).
    Raises:
        ValueError: neither ``name_or_scope`` nor ``default_name``; ``reuse=True`` with ``default_name`` only.
    """
    if name_or_scope is None and default_name is None:
        raise ValueError("If default_name is None then scope (name_or_scope) is required")
    if name_or_scope is None and reuse is True:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    graph = graph_lib.get_default_graph()
    outer = get_variable_scope()
    if isinstance(name_or_scope, VariableScope):
        name, name_scope = name_or_scope.name, name_or_scope.original_name_scope
        base = name_or_scope
    else:
        relative = name_or_scope if name_or_scope is not None else _unique_scope_name(outer, default_name)
        name = f"{outer.name}/{relative}" if outer.name else relative
        # a default-named scope opens the name scope default_name, made unique by the graph, as TF does
        name_scope, base = (relative if name_or_scope is not None else default_name or ""), outer  # checked above
    inherited = outer.reuse if reuse is None or reuse is False else reuse
    if isinstance(name_or_scope, VariableScope) and reuse is None:
        inherited = outer.reuse or name_or_scope.reuse
    scope = VariableScope(
        inherited, name,
        initializer=initializer if initializer is not None else base.initializer,
        regularizer=regularizer if regularizer is not None else base.regularizer,
        dtype=dtype if dtype is not None else base.dtype,
        custom_getter=_compose(base.custom_getter, custom_getter),
        partitioner=partitioner if partitioner is not None else base.partitioner)
    scopes = graph.get_collection_ref(_SCOPE_KEY)
    counts = _scope_counts()
    saved_counts = dict(counts) if isinstance(name_or_scope, VariableScope) else None
    with (graph.name_scope(name_scope) if auxiliary_name_scope else contextlib.nullcontext(name_scope)) as opened:
        scope.original_name_scope = opened if isinstance(opened, str) else name_scope
        get_variable_scope()  # make sure the root scope is at the bottom of the stack
        scopes.append(scope)
        counts[name] = counts.get(name, 0) + 1
        try:
            yield scope
        finally:
            scopes.pop()
            _close_subscopes(counts, name, saved_counts)


def _compose(outer_getter, inner_getter):
    """The custom getter of a scope inside another: the inner one calls the outer one as its getter."""
    if outer_getter is None or inner_getter is None:
        return inner_getter or outer_getter

    def composed(getter, name, *args, **kwargs):
        return inner_getter(_wrap_getter(outer_getter, getter), name, *args, **kwargs)

    return composed


def _scope_counts():
    """How many times each variable scope (by full name) was opened in the default graph since its parent
    scope was last entered (TF's ``_VariableScopeStore.variable_scopes_count``)."""
    graph = graph_lib.get_default_graph()
    counts = graph.get_collection_ref(("__varscope_counts",))
    if not counts:
        counts.append({})
    return counts[0]


def _close_subscopes(counts, name, saved_counts):
    """On leaving scope ``name``: forget the scopes opened inside it, so re-entering ``name`` later gives
    its default-named sub-scopes the same names again (TF's ``close_variable_subscopes``); a re-entered
    :class:`VariableScope` object restores the counts it found instead, as in TF."""
    if saved_counts is not None:
        counts.clear()
        counts.update(saved_counts)
        return
    for key in counts:
        if key.startswith(name + "/"):
            counts[key] = 0


def _unique_scope_name(outer, default_name):
    """``default_name``, or ``default_name_<n>`` (lowest free n) if a scope of that name is open or was
    opened here since the enclosing scope was entered (TF's ``_get_unique_variable_scope``)."""
    counts = _scope_counts()
    key = f"{outer.name}/{default_name}" if outer.name else default_name
    if not counts.get(key):
        return default_name
    index = 1
    while counts.get(f"{key}_{index}"):
        index += 1
    return f"{default_name}_{index}"


__all__ = ["AUTO_REUSE", "VariableScope", "get_variable", "get_variable_scope", "variable_scope"]
