"""``CollectiveAllReduce``: an all-reduce inside ``Session.run``, one op per device.

Source: TF's ``python/ops/collective_ops.py`` (``all_reduce``: one ``CollectiveReduce``
op per participant with ``group_size``, ``group_key``, ``instance_key``) and
``core/common_runtime/collective_executor`` (participants of one instance meet, then
the algorithm runs). Here every participant's op is an *asynchronous* kernel: it hands
its input to the step's instance (``StepContext.collectives``) and returns; when the
last participant arrives, the instance runs :func:`dfcore.distribute.all_reduce`'s
schedule through the step's rendezvous on that (last) thread — the messages go through
the same rendezvous as ``_Send``/``_Recv``, so they show in ``RunMetadata.transfers`` —
then completes every participant in rank order.

Differences from TF: the rank of a participant is its position in ``tensors`` (NCCL's
communicator order), not the sorted device order; ``algorithm``, ``num_subchunks`` and
``convention`` choose what :mod:`dfcore.distribute.schedules` documents.

Faults: an error in the collective (tensors of different shapes at run time, say)
completes every participant with it, so the step fails with that first error. A
participant that never arrives (its input failed, or it was not fetched) cannot hang
the step: the first arriver watches the rendezvous, and the step's abort (another
partition's error, or the step deadline) fails every waiting participant.
With ``FULL_TRACE`` each instance's :class:`~dfcore.distribute.trace.CollectiveTrace`
goes to ``RunMetadata.collective_traces``.

Simulated clock: the op computes nothing of its own (cost 0); a traced step replays the instance's
schedule (:meth:`CollectiveInstance.replay`, :func:`~dfcore.distribute.collective_cost.build_sim_tasks`) on
the session's machine as part of the step, every first message waiting for every participant's input
(:mod:`dfcore.runtime.step_collectives`).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import backends, errors
from ..framework import registry
from ..framework.device import DeviceSpec
from ..framework.graph import graph_of
from ..framework.rendezvous_key import create_key
from ..framework.tensor import Tensor
from ..ops import common_shapes, math_dtypes
from ..ops.op_util import apply_op
from ..runtime import cost_model, sim_clock
from . import collective_cost, schedules
from .all_reduce import all_reduce, canonical_devices
from .all_reduce_arrays import is_device_array
from .trace import CollectiveTrace

if TYPE_CHECKING:
    from ..runtime.executor import StepContext

_INSTANCE_KEYS = itertools.count(1)


def collective_all_reduce(tensors: Sequence[Any], algorithm: str = "ring", reduction: str = "sum",
                          num_subchunks: int = 1, convention: str = "textbook", group_key: int = 1,
                          instance_key: int | None = None, name: str = "CollectiveAllReduce") -> list[Tensor]:
    """All-reduce ``tensors`` (one per device) in the graph; returns one output per input.

    Each output has its input's shape and dtype and is produced on its input's device
    (the op is colocated with the input). See the module doc for how the ops meet.

    Args:
        tensors: N Tensors (or convertibles) of one dtype (float16/32/64) and compatible shapes.
        algorithm, reduction, num_subchunks, convention: as :func:`dfcore.distribute.all_reduce`.
        group_key: the group's key (attr ``group_key``).
        instance_key: distinguishes collectives run in one step; default: a new one.
        name: base name of the N ops.

    Raises:
        ValueError: an empty list, incompatible static shapes, two inputs explicitly on one
            device, an unknown algorithm, reduction or convention, or ``num_subchunks`` out of
            range (:func:`~dfcore.distribute.schedules.check_arguments`; its upper bound once the
            static shape is fully known, else at run time as ``InvalidArgumentError``).
        TypeError: different dtypes, a dtype other than float16/32/64, or a non-integer count.
    """
    from ..framework.tensor_conversion import convert_to_tensor

    if not tensors:
        raise ValueError("collective_all_reduce needs at least one tensor, got an empty list")
    graph = graph_of(tensors)
    instance_key = next(_INSTANCE_KEYS) if instance_key is None else int(instance_key)
    with graph.as_default():
        tensors = [convert_to_tensor(t) for t in tensors]
        _check_group(tensors)
        schedules.check_arguments(algorithm, len(tensors), tensors[0].shape.num_elements(), num_subchunks,
                                  convention, reduction=reduction)
        attrs = {"T": tensors[0].dtype.base_dtype, "group_size": len(tensors), "group_key": int(group_key),
                 "instance_key": instance_key, "algorithm": algorithm, "reduction": reduction,
                 "num_subchunks": int(num_subchunks), "convention": convention}
        outputs = []
        for rank, tensor in enumerate(tensors):
            with graph.colocate_with(tensor.op):
                op = apply_op("CollectiveAllReduce", [tensor], dict(attrs, rank=rank), name)
            outputs.append(op.outputs[0])
    return outputs


def _check_group(tensors):
    first = tensors[0]
    explicit: dict[str, int] = {}
    for i, t in enumerate(tensors):
        if t.dtype.base_dtype != first.dtype.base_dtype:
            raise TypeError(f"All inputs of collective_all_reduce must have one dtype: input 0 is "
                            f"{first.dtype.base_dtype.name}, input {i} is {t.dtype.base_dtype.name}")
        if not t.shape.is_compatible_with(first.shape):
            raise ValueError(f"All inputs of collective_all_reduce must have one shape: input 0 is {first.shape}, "
                             f"input {i} is {t.shape}")
        spec = DeviceSpec.from_string(t.device or "")
        if spec.device_type is not None and spec.device_index is not None:
            where = spec.to_string()
            if where in explicit:
                raise ValueError(f"Inputs {explicit[where]} and {i} of collective_all_reduce are both on {where}; "
                                 "an all-reduce needs one tensor per distinct device")
            explicit[where] = i


@registry.RegisterCost("CollectiveAllReduce")
def _cost(input_shapes, output_shapes, attrs):
    """No compute of its own: the collective's messages and reductions are replayed on the step's clock."""
    return 0, 0


@registry.RegisterShape("CollectiveAllReduce")
def _shape(op):
    math_dtypes.check_input(op, 0, math_dtypes.FLOAT, "input")
    return common_shapes.unchanged(op)


@registry.RegisterArrayKernel("CollectiveAllReduce", is_async=True)
def _kernel(op, backend):
    """Any backend: each participant's value joins as it is; the schedule runs on the participants' own arrays
    when they are all of one device library (cupy on real GPUs: chunks move device to device), else on host
    (numpy) copies, and a host result comes back into the participant's backend."""
    key = (op.get_attr("group_key"), op.get_attr("instance_key"))
    size = op.get_attr("group_size")
    rank = op.get_attr("rank")
    settings = {k: op.get_attr(k) for k in ("algorithm", "reduction", "num_subchunks", "convention")}
    from_host, is_native = backend.from_host, backend.is_native

    def compute(ctx, done, value):
        instance = ctx.collectives.get(key)
        if instance is None:
            instance = ctx.collectives.setdefault(key, CollectiveInstance(key, size, settings))

        def reduced(error, output):
            done(error, output if error is not None or is_native(output) else from_host(output))

        instance.join(ctx, rank, value, reduced)

    return compute


class CollectiveInstance:
    """The participants of one collective in one step; ``trace`` is set after a traced run."""

    def __init__(self, key: tuple[int, int], size: int, settings: Any) -> None:
        self.key = key
        self.size = size
        self.settings = settings
        self.name = f"collective/g{key[0]}/i{key[1]}"
        self.trace: CollectiveTrace | None = None
        self.devices: tuple[str, ...] = ()  # by rank, once the collective ran
        self._elements = 0  # per participant, once the collective ran: what replay() builds its schedule for
        self._itemsize = 0
        self._lock = threading.Lock()
        self._arrived: dict[int, tuple[str, Any, Callable[..., None]]] = {}  # rank -> (device, value, done)
        self._error = None
        self._finished = False

    def join(self, ctx: StepContext, rank: int, value: Any, done: Callable[[errors.OpError | None, Any], None]) -> None:
        """Add a participant; the last one runs the collective (see the module doc)."""
        with self._lock:
            error = self._error
            if error is None:
                self._arrived[rank] = (ctx.device or "", value, done)
                first = len(self._arrived) == 1
                last = len(self._arrived) == self.size
        if error is not None:
            done(error, None)
            return
        if first and not last:
            device = ctx.device or ""
            watch = create_key(device, 1, device, f"{self.name}/abort_watch")
            ctx.rendezvous.recv_async(watch, self._on_abort)
        if last:
            self._run(ctx)

    def _on_abort(self, error, _value):
        if error is not None:
            self._fail(error)

    def _fail(self, error):
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self._error = error
            waiting = [self._arrived[r][2] for r in sorted(self._arrived)]
        for done in waiting:
            done(error, None)

    def _run(self, ctx):
        try:
            self._reduce(ctx)
        except Exception as error:  # an unexpected failure ends every participant's wait: never a hang
            self._fail(errors.InternalError(None, None, f"{self.name}: {type(error).__name__}: {error}"))

    def _reduce(self, ctx):
        ranks = sorted(self._arrived)
        devices = [self._arrived[r][0] for r in ranks]
        values = _common_arrays([self._arrived[r][1] for r in ranks])
        try:
            result = all_reduce(values, devices, rendezvous=ctx.rendezvous, trace=ctx.tracing, name=self.name,
                                machine=getattr(ctx.resources, "machine", None), **self.settings)
        except (ValueError, TypeError) as error:
            self._fail(errors.InvalidArgumentError(None, None, f"{self.name}: {error}"))
            return
        except errors.OpError as error:
            self._fail(error)
            return
        # what replay() needs (a traced step's), read before anyone is told the result (an error here fails the
        # participants instead of leaving them waiting); itemsize_of reads any device library's dtype
        replay_devices = canonical_devices(devices, len(devices))
        elements, itemsize = int(values[0].size), backends.itemsize_of(values[0])
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self.trace = result.trace
            self.devices, self._elements, self._itemsize = replay_devices, elements, itemsize
        for r, output in zip(ranks, result.outputs):
            self._arrived[r][2](None, output)


    def replay(self, machine: cost_model.MachineProfile
               ) -> tuple[list[sim_clock.SimTask], list[tuple[str, str, str, int]]]:
        """The collective's schedule on ``machine``'s clock: its tasks
        (:func:`~dfcore.distribute.collective_cost.build_sim_tasks`, names as there) and its messages
        ``(task name, src device, dst device, bytes)``; ``([], [])`` before it ran (or when it failed). The
        schedule is built here, for traced steps only, not in every step that runs the collective."""
        if not self.devices:
            return [], []
        schedule = schedules.build_schedule(self.settings["algorithm"], len(self.devices), self._elements,
                                            self.settings["num_subchunks"], self.settings["convention"])
        reduction = self.settings["reduction"]
        tasks = collective_cost.build_sim_tasks(schedule, self.devices, machine, self._itemsize, reduction)
        messages = [(f"message{k:06d}", self.devices[step.src], self.devices[step.dst],
                     (step.element_range[1] - step.element_range[0]) * self._itemsize)
                    for k, step in enumerate(schedule.steps) if isinstance(step, schedules.Message)]
        return tasks, messages


def _common_arrays(values: list[Any]) -> list[Any]:
    """``values`` themselves when they are arrays of one device library (cupy, array_api_strict: the schedule
    runs on them, :mod:`~dfcore.distribute.all_reduce_arrays`), else host (numpy) copies of them all."""
    if all(is_device_array(v) for v in values) and len({type(v) for v in values}) == 1:
        return values
    return [np.asarray(backends.to_numpy(v)) for v in values]
