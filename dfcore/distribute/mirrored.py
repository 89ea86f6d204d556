"""A small in-graph ``MirroredStrategy``: one model replica per device, gradients all-reduced.

Source: TF's ``tf.distribute.MirroredStrategy`` (in-graph replication, mirrored
variables kept equal by applying the same all-reduced update on every replica) and the
``all_reduce.py`` builders. Unlike the multi-tower pattern (variables on the CPU,
gradients averaged there), every device holds its own copy of the variables and the
gradients never leave the GPUs except as all-reduce chunks.

Usage::

    strategy = MirroredStrategy(["/gpu:0", "/gpu:1"], all_reduce_alg="ring")
    replica_vars = strategy.create_variables(lambda: mlp_variables(...))
    train_op = strategy.minimize(lambda: tf.train.AdamOptimizer(1e-3), loss_fn, strategy.split(x, y),
                                 replica_vars)

Copies on replicas 1…N−1 are initialised from replica 0's initial values, so they start
equal; the all-reduce (``reduction="mean"``) gives every replica the same gradient, so
they stay equal. With equal batch slices one step equals one full-batch SGD step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..framework.operation import Operation
from ..framework.scopes import device as device_scope, name_scope
from ..framework.tensor import Tensor
from ..ops import array_ops_join, control_flow_ops, variables
from ..ops.variables import Variable
from . import schedules
from .all_reduce import canonical_devices
from .collective_ops import collective_all_reduce


class MirroredStrategy:
    """Replicate a model over ``devices`` and all-reduce its gradients with ``all_reduce_alg``.

    Args:
        devices: distinct device names, one replica each.
        all_reduce_alg: an algorithm of :mod:`dfcore.distribute.schedules`.
        num_subchunks: at most this many segments per gradient all-reduce (fewer for a gradient
            too small to cut, :func:`~dfcore.distribute.schedules.capped_subchunks`); an integer ≥ 1.
    Raises:
        ValueError: no devices, a device listed twice, an unknown algorithm, or ``num_subchunks`` < 1.
        TypeError: a non-integer ``num_subchunks``.
    """

    def __init__(self, devices: Sequence[str], all_reduce_alg: str = "ring", num_subchunks: int = 1) -> None:
        devices = list(devices)
        if not devices:
            raise ValueError("MirroredStrategy needs at least one device")
        canonical_devices(devices, len(devices))
        schedules.check_arguments(all_reduce_alg, len(devices), num_subchunks=num_subchunks)
        self.devices = devices
        self.all_reduce_alg = all_reduce_alg
        self.num_subchunks = num_subchunks

    @property
    def num_replicas_in_sync(self) -> int:
        return len(self.devices)

    def create_variables(self, variable_fn: Callable[[], Sequence[Variable]]) -> list[list[Any]]:
        """Call ``variable_fn()`` (returning a sequence of Variables) on replica 0's device and
        mirror its variables on the others; returns one list of variables per replica."""
        replicas = []
        for i, device in enumerate(self.devices):
            with device_scope(device), name_scope(f"replica_{i}"):
                if i == 0:
                    replicas.append(list(variable_fn()))
                else:
                    replicas.append([variables.Variable(v.initialized_value(), name=v.op.name.split("/")[-1])
                                     for v in replicas[0]])
        return replicas

    def split(self, *batches: Tensor) -> list[tuple[Tensor, ...]]:
        """Cut each full-batch tensor into ``num_replicas_in_sync`` equal slices along axis 0;
        returns one tuple of slices per replica."""
        pieces = [array_ops_join.split(b, self.num_replicas_in_sync) for b in batches]
        return [tuple(p[i] for p in pieces) for i in range(self.num_replicas_in_sync)]

    def reduce_gradients(self, per_replica_grads: Sequence[Sequence[Tensor]]) -> list[list[Tensor]]:
        """All-reduce (mean) the gradients: ``per_replica_grads[i][j]`` is replica i's gradient
        of variable j; returns the same structure, every replica holding the mean."""
        reduced: list[list[Any]] = [[None] * len(per_replica_grads[0]) for _ in per_replica_grads]
        for j, grads in enumerate(zip(*per_replica_grads)):
            outs = collective_all_reduce(list(grads), algorithm=self.all_reduce_alg, reduction="mean",
                                         num_subchunks=self._subchunks(grads[0].shape.num_elements()),
                                         name=f"allreduce_grad_{j}")
            for i, out in enumerate(outs):
                reduced[i][j] = out
        return reduced

    def _subchunks(self, num_elements):
        """The segments for one gradient of ``num_elements`` (None: unknown, not capped)."""
        if num_elements is None:
            return self.num_subchunks
        return schedules.capped_subchunks(self.all_reduce_alg, self.num_replicas_in_sync, num_elements,
                                          self.num_subchunks)

    def minimize(self, optimizer_fn: Callable[[], Any], loss_fn: Callable[..., Tensor],
                 per_replica_inputs: Sequence[Sequence[Tensor]], replica_vars: Sequence[Sequence[Any]]) -> Operation:
        """Build one training step: each replica's loss and gradients on its device, the
        all-reduce, and each replica's optimizer (``optimizer_fn()``, one per replica) applying
        the reduced gradients to its own variables. Returns the grouped train op."""
        grads, optimizers = [], []
        for i, (device, inputs, params) in enumerate(zip(self.devices, per_replica_inputs, replica_vars)):
            with device_scope(device), name_scope(f"replica_{i}"):
                loss = loss_fn(*inputs, params)
                optimizers.append(optimizer_fn())
                grads.append([g for g, _ in optimizers[-1].compute_gradients(loss, var_list=list(params))])
        reduced = self.reduce_gradients(grads)
        updates = []
        for i, (device, opt, params) in enumerate(zip(self.devices, optimizers, replica_vars)):
            with device_scope(device), name_scope(f"replica_{i}"):
                updates.append(opt.apply_gradients(list(zip(reduced[i], params))))
        return control_flow_ops.group(*updates)

    def communication_bytes_per_device(self, replica_vars: Sequence[Sequence[Any]],
                                       itemsize: int = 4) -> dict[str, int]:
        """Bytes each device sends per step in the gradient all-reduces (the schedules' exact rule):
        ``{device: bytes}``."""
        sent = dict.fromkeys(self.devices, 0)
        n = self.num_replicas_in_sync
        for var in replica_vars[0]:
            size = int(var.shape.num_elements())
            schedule = schedules.build_schedule(self.all_reduce_alg, n, size, self._subchunks(size))
            for rank, nbytes in schedules.bytes_sent_per_rank(schedule, itemsize).items():
                sent[self.devices[rank]] += nbytes
        return sent
