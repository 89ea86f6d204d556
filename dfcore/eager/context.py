"""The eager context: whether ops run at once, on which devices, and where eager variables live.

Source: ``tensorflow/python/eager/context.py`` (``Context``, ``eager_mode``, ``executing_eagerly``) and
TF 1.x ``tf.enable_eager_execution`` (``python/framework/ops.py``). While eager execution is on, the
default graph is an :class:`~dfcore.eager.execute.EagerGraph` whose ``create_op`` runs each op
immediately; a ``with graph.as_default()`` block (a ``tf.function`` being traced) builds a graph as
usual. The context owns what a Session owns for a graph: a DeviceSet (from ``config.device_count``),
a VariableStore and the session resources (random generators), so eager ops and the
``tf.function`` graphs run in it share variables.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from typing import Any

from ..framework import graph as graph_lib
from ..runtime import placer
from ..runtime.config import ConfigProto
from ..runtime.device_set import DeviceSet
from ..runtime.session_resources import SessionResources
from ..runtime.variable_store import VariableStore

#: TF's ``device_policy`` values (``tf.contrib.eager.DEVICE_PLACEMENT_*``); dfcore's tensors are host arrays,
#: so every policy copies silently.
DEVICE_PLACEMENT_EXPLICIT, DEVICE_PLACEMENT_WARN, DEVICE_PLACEMENT_SILENT, DEVICE_PLACEMENT_SILENT_FOR_INT32 = (
    0, 1, 2, 3)
#: TF's ``execution_mode`` values; dfcore runs every eager op synchronously.
SYNC, ASYNC = 0, 1


class EagerContext:
    """What eager ops run in: devices, variables, resources, a placement cache, and how many ops ran.

    Args:
        config: a ``ConfigProto``; its ``device_count`` and ``allow_soft_placement`` apply, as in a Session, and
            ``log_device_placement`` prints TF's eager line ``Executing op <type> in device <device>`` per op.
    """

    def __init__(self, config: ConfigProto | None = None) -> None:
        self.config = config if config is not None else ConfigProto()
        self.device_set = DeviceSet.from_config(self.config)
        self.variables = VariableStore()
        self.resources = SessionResources()
        self.step_ids = itertools.count(1)
        self.tensor_ids = itertools.count(1)
        self.ops_executed = 0  # eager ops run so far (what per-op dispatch costs are divided by)
        self._placements: dict[tuple[Any, ...], str] = {}
        self._variable_names: dict[str, int] = {}
        self._lock = threading.Lock()

    def place(self, op: Any) -> str:
        """The device ``op`` runs on: TF's placer rules (:func:`dfcore.runtime.placer.place`) for the op alone,
        remembered per (op type, requested device, devices of its reference inputs).

        Raises:
            InvalidArgumentError: an impossible request (TF's ``Cannot assign a device for operation``).
        """
        refs = tuple(t.device for t in op.inputs if t.dtype.is_ref)
        key = (op.type, op.device, refs)
        device = self._placements.get(key)
        if device is None:
            if refs and not op.device:  # an op on a variable runs where the variable lives (TF's ref edge rule)
                op._set_device(refs[0])
            device = placer.place([op], self.device_set, self.config.allow_soft_placement)[op]
            self._placements[key] = device
        if self.config.log_device_placement:  # TF's eager placement log line
            print(f"Executing op {op.type} in device {device}", flush=True)
        return device

    def variable_key(self, name: str) -> str:
        """A store key for a new eager variable called ``name``: the name, then ``name_1``, ``name_2`` … (eager
        variables may share a name, as in TF; their storage may not)."""
        with self._lock:
            count = self._variable_names.get(name, 0)
            self._variable_names[name] = count + 1
        return name if count == 0 else f"{name}_{count}"

    def close(self) -> None:
        self.variables.clear()
        self.resources.close()


_context: EagerContext | None = None
_startup_lock = threading.Lock()


def context() -> EagerContext | None:
    """The active eager context, or None in graph mode."""
    return _context


def executing_eagerly() -> bool:
    """True while ops run immediately: eager execution is on and no graph is being built on this thread.

    Source: ``tf.executing_eagerly`` (``python/eager/context.py``).
    """
    return graph_lib.executing_eagerly()


def enable_eager_execution(config: ConfigProto | None = None, device_policy: int | None = None,
                           execution_mode: int | None = None) -> None:
    """Turn eager execution on for the rest of the program (TF 1.x ``tf.enable_eager_execution``).

    Ops then run as they are called and return :class:`~dfcore.eager.eager_tensor.EagerTensor` s. TF 1.x
    has no public way back to graph mode; dfcore's :func:`eager_mode` enters and leaves it (tests, lessons).

    Args:
        config: a ``ConfigProto`` (``device_count``, ``allow_soft_placement``).
        device_policy: one of the ``DEVICE_PLACEMENT_*`` values (accepted; every policy copies silently).
        execution_mode: ``SYNC`` or ``ASYNC`` (accepted; ops run synchronously).
    Raises:
        TypeError: ``config`` is not a ConfigProto (TF's wording).
        ValueError: graph mode was used first: the default graph has ops (TF: "must be called at program
            startup"), or eager execution is on already with another config.
    """
    global _context
    if config is not None and not isinstance(config, ConfigProto):
        raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
    if device_policy not in (None, DEVICE_PLACEMENT_EXPLICIT, DEVICE_PLACEMENT_WARN, DEVICE_PLACEMENT_SILENT,
                             DEVICE_PLACEMENT_SILENT_FOR_INT32):
        raise ValueError("device_policy must be one of None, tf.contrib.eager.DEVICE_PLACEMENT_*")
    if execution_mode not in (None, SYNC, ASYNC):
        raise ValueError("execution_mode must be one of None, tf.contrib.eager.SYNC, tf.contrib.eager.ASYNC")
    with _startup_lock:
        if _context is not None:
            if config is not None and config != _context.config:
                raise ValueError("Trying to change the options of an active eager execution. Context config: "
                                 f"{_context.config}, specified config: {config}.")
            return
        if graph_lib.get_default_graph().get_operations():
            raise ValueError("tf.enable_eager_execution must be called at program startup.")
        _activate(EagerContext(config))


def _activate(ctx: EagerContext | None) -> None:
    global _context
    from .execute import EagerGraph  # the graph that executes: it imports this module

    _context = ctx
    graph_lib.set_eager_graph(None if ctx is None else EagerGraph(ctx))


@contextlib.contextmanager
def eager_mode(config: ConfigProto | None = None) -> Iterator[EagerContext]:
    """Run ops eagerly inside the block, in a fresh context (fresh variables), then return to graph mode.

    A dfcore addition for tests and lessons that need both modes in one process, like TF's internal
    ``context.eager_mode()``; TF 1.x has no public switch back once :func:`enable_eager_execution` ran.
    Blocks do not nest with each other or with :func:`enable_eager_execution`.

    Raises:
        ValueError: eager execution is already on.
    """
    with _startup_lock:
        if _context is not None:
            raise ValueError("eager_mode() cannot be entered while eager execution is already on.")
        ctx = EagerContext(config)
        _activate(ctx)
    try:
        yield ctx
    finally:
        with _startup_lock:
            _activate(None)
        ctx.close()


def _reset_for_tests() -> None:
    """Leave eager mode whatever turned it on (the test suite's fixture calls this after each test)."""
    with _startup_lock:
        if _context is not None:
            ctx = _context
            _activate(None)
            ctx.close()
