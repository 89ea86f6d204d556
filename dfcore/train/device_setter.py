"""``tf.train.replica_device_setter``: variables on the ``ps`` tasks, everything else on the worker.

Source: ``tensorflow/python/training/device_setter.py`` (round-robin default,
``STANDARD_PS_OPS``, merge rules) and ``tensorflow/contrib/training/python/training/
device_setter.py`` (``GreedyLoadBalancingStrategy``, ``byte_size_load_fn``).

:func:`ps_load_table` reports, as data, what each ps task ended up holding (bytes and
variables), whichever strategy placed them.
"""

import dataclasses

from ..framework.device import DeviceSpec
from .cluster_spec import ClusterSpec

#: Op types placed on the ps by default (TF's ``STANDARD_PS_OPS``).
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
                   "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp")


class _RoundRobinStrategy:
    """Ps tasks in turn: 0, 1, …, n−1, 0, … (TF's default)."""

    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op):
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


def byte_size_load_fn(op):
    """The byte size of ``op``'s single output (a variable's contents).

    Raises:
        ValueError: ``op`` has not exactly one output, or its shape is not fully defined (TF's wording).
    """
    if len(op.outputs) != 1:
        raise ValueError(f"Op {op} must have a single output")
    output = op.outputs[0]
    shape = output.shape
    if not shape.is_fully_defined() and "shape" in op.attrs:
        shape = op.get_attr("shape")
    if not shape.is_fully_defined():
        raise ValueError(f"Shape {shape} is not fully defined")
    return shape.num_elements() * output.dtype.base_dtype.size


class GreedyLoadBalancingStrategy:
    """Put each ps op on the ps task with the least load so far (ties: the lowest index).

    Args:
        num_tasks: the number of ps tasks.
        load_fn: ``load_fn(op) -> number`` (default :func:`byte_size_load_fn`).
    Source: TF contrib ``training.GreedyLoadBalancingStrategy``.
    """

    def __init__(self, num_tasks, load_fn=byte_size_load_fn):
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = [0] * num_tasks

    @property
    def loads(self):
        """The load given to each task so far."""
        return list(self._ps_loads)

    def __call__(self, op):
        task = min(range(self._num_tasks), key=lambda t: (self._ps_loads[t], t))
        self._ps_loads[task] += self._load_fn(op)
        return task


class _ReplicaDeviceChooser:
    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op):
        """The device of ``op``: a ps task for ps ops, else ``worker_device``, merged with ``op.device``."""
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._ps_strategy(op))
            return ps_device.make_merged_spec(current).to_string()
        worker_device = DeviceSpec.from_string(self._worker_device or "")
        return worker_device.make_merged_spec(current).to_string()


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker", merge_devices=True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for ``tf.device``: ps ops to the ps tasks, other ops to ``worker_device``.

    Args:
        ps_tasks: the number of ps tasks (ignored when ``cluster`` is given).
        ps_device, worker_device: device specs of the ps job and of this worker.
        merge_devices: merge with devices the ops already request.
        cluster: a ClusterSpec (or its dict); its ps job gives ``ps_tasks``.
        ps_ops: op types for the ps (default :data:`STANDARD_PS_OPS`).
        ps_strategy: ``fn(op) -> ps task index`` (default round-robin).
    Returns:
        The device function, or None when there are no ps tasks (TF's behaviour).
    Raises:
        TypeError: ``ps_strategy`` is not callable (TF's wording).
    """
    if cluster is not None:
        cluster_spec = (cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)).as_dict()
        ps_job_name = DeviceSpec.from_string(ps_device).job
        if ps_job_name not in cluster_spec or cluster_spec[ps_job_name] is None:
            return None
        ps_tasks = len(cluster_spec[ps_job_name])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    return _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops,
                                 ps_strategy).device_function


@dataclasses.dataclass(frozen=True)
class PsLoad:
    """What one ps task holds: its task name, the number of variables, their bytes and names."""

    task: str
    num_variables: int
    nbytes: int
    variables: tuple


def ps_load_table(graph, ps_job="ps", num_tasks=None):
    """One :class:`PsLoad` per ps task, from the requested devices of ``graph``'s variable ops.

    Args:
        graph: a Graph built under :func:`replica_device_setter`.
        ps_job: the ps job's name.
        num_tasks: list tasks ``0 … num_tasks-1`` even when empty (default: the tasks seen).
    """
    loads = {}
    for op in graph.get_operations():
        if op.type not in STANDARD_PS_OPS:
            continue
        spec = DeviceSpec.from_string(op.device or "")
        if spec.job != ps_job:
            continue
        loads.setdefault(spec.task or 0, []).append((op.name, byte_size_load_fn(op)))
    tasks = range(num_tasks) if num_tasks is not None else sorted(loads)
    return tuple(PsLoad(f"/job:{ps_job}/replica:0/task:{t}", len(loads.get(t, ())),
                        sum(b for _, b in loads.get(t, ())), tuple(n for n, _ in loads.get(t, ())))
                 for t in tasks)
