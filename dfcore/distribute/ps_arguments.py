"""What a parameter-server run is asked to do (:class:`TrainConfig`) and its one check, run before anything starts.

Source: TF's argument checks (``ValueError`` naming the argument and its range, raised
early). :func:`dfcore.distribute.parameter_server.train` takes a :class:`TrainConfig`; its
command line (``python -m dfcore.examples.parameter_server``) reports the same
:class:`~dfcore.distribute.arguments.ArgumentRangeError` as an argparse error naming the
flag, so the API and the CLI share every rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .arguments import ArgumentRangeError, check_choice, check_count, check_positive
from .ps_modes import MODES, STALENESS_MODES

if TYPE_CHECKING:
    from ..runtime.cost_model import DeviceProfile

EXECUTIONS = ("simulated", "threads", "mpi")
PS_STRATEGIES = ("round_robin", "greedy")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One parameter-server run of the digits MLP (see :func:`dfcore.distribute.parameter_server.train`).

    Attributes:
        mode: one of :data:`~dfcore.distribute.ps_modes.MODES`: ``"sync"`` (SyncReplicasOptimizer),
            ``"async"``, ``"ssp"`` (Ho et al.) or ``"bounded_delay"``.
        staleness: the bound ``s`` of ``ssp`` and ``bounded_delay`` (clocks), ≥ 0.
        num_ps, num_workers: the cluster's tasks, ≥ 1.
        replicas_to_aggregate: ``sync`` only; fewer than ``num_workers`` adds backup workers (None: all).
        straggler: ``{worker: speed factor}``, e.g. ``{3: 4.0}`` makes worker 3's compute 4× slower.
        occasional_straggler: ``(probability, speed factor)``: each worker step is, with that probability,
            that many times slower (drawn from ``(seed, worker, step)``: the same in every run and driver).
        steps: parameter updates (global steps) to run, ≥ 1 (None: :data:`DEFAULT_STEPS` of the mode).
        execution: ``"simulated"`` (deterministic), ``"threads"`` (free-running) or ``"mpi"`` (this
            process is one rank of ``python -m dfcore.launch --ps P --workers W``).
        seed: data split, batches and initial weights.
        learning_rate: SGD rate per update, > 0 (None: :data:`DEFAULT_LEARNING_RATE` of the mode).
        batch_size, hidden: examples per worker step and hidden units, ≥ 1.
        ps_strategy: ``"round_robin"`` or ``"greedy"`` (by bytes) placement of the variables.
        ema_decay: keep ExponentialMovingAverage shadows (on the ps) with this decay (None: none).
        w1_shards: split the first layer's weights ``w1`` ``[64, hidden]`` into this many row shards
            (``tf.fixed_size_partitioner``), which ``replica_device_setter`` spreads over the ps tasks; 1: one
            variable. In ``[1, 64]``.
        eval_every: evaluate the test set every this many updates (and at the end); 0: only at the end.
        worker_profile: the ``DeviceProfile`` a worker's compute is timed on (None: ``cost_model.NUMPY_CORE``).
        checkpoint_dir, checkpoint_every: the chief saves a checkpoint every this many updates (0: never).
        restore: continue from the latest checkpoint in ``checkpoint_dir``.
        kill_worker: ``{worker: step}``: that worker dies before its step (fault injection).
        kill_ps: ``{ps task: version}``: that ps task dies once the global step reaches it.
        fault_timeout_s: the deadline of the blocking waits that find a peer gone, in seconds.
    """

    mode: str = "sync"
    staleness: int | None = 0
    num_ps: int = 1
    num_workers: int = 4
    replicas_to_aggregate: int | None = None
    straggler: Mapping[int, float] | None = None
    occasional_straggler: tuple[float, float] | None = None
    steps: int | None = None
    execution: str = "simulated"
    seed: int = 0
    learning_rate: float | None = None
    batch_size: int = 32
    hidden: int = 64
    ps_strategy: str = "round_robin"
    ema_decay: float | None = None
    w1_shards: int = 1
    eval_every: int = 25
    worker_profile: DeviceProfile | None = None
    checkpoint_dir: str | None = None
    checkpoint_every: int = 0
    restore: bool = False
    kill_worker: Mapping[int, int] | None = None
    kill_ps: Mapping[int, int] | None = None
    fault_timeout_s: float = 0.5

    def speed(self, worker: int, step: int) -> float:
        """The factor on worker ``worker``'s compute time in its step ``step`` (1.0: normal speed): its
        ``straggler`` factor, times the ``occasional_straggler`` factor when that step is drawn slow."""
        factor = float(dict(self.straggler or {}).get(worker, 1.0))
        if self.occasional_straggler is not None:
            probability, slow = self.occasional_straggler
            if np.random.default_rng([self.seed, worker, step, 1]).random() < probability:
                factor *= float(slow)
        return factor

    def check(self) -> None:
        """Raise unless every field is in its range (see :func:`check_train_arguments`)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del fields["worker_profile"]
        check_train_arguments(**fields)


def check_train_arguments(*, mode: str, execution: str, num_ps: int, num_workers: int,
                          replicas_to_aggregate: int | None, staleness: int | None, steps: int | None,
                          learning_rate: float | None, batch_size: int, hidden: int, ps_strategy: str, seed: int,
                          eval_every: int, checkpoint_dir: str | None, checkpoint_every: int, restore: bool,
                          straggler: Any, kill_worker: Any, kill_ps: Any, fault_timeout_s: float,
                          ema_decay: float | None = None, occasional_straggler: Any = None,
                          w1_shards: int = 1) -> None:
    """Check :class:`TrainConfig`'s fields (same names and meanings).

    Ranges: ``num_ps``, ``num_workers``, ``batch_size``, ``hidden`` ≥ 1; ``replicas_to_aggregate``
    None or in ``[1, num_workers]``; ``staleness`` ≥ 0 (None allowed outside ``ssp`` and
    ``bounded_delay``); ``steps`` None or ≥ 1; ``learning_rate`` None or finite > 0; ``seed``,
    ``eval_every``, ``checkpoint_every`` ≥ 0; ``straggler`` ``{worker: speed factor}`` with workers in
    ``[0, num_workers)`` and finite factors > 0; ``occasional_straggler`` None or ``(probability in
    (0, 1], factor > 0)``; ``kill_worker`` ``{worker: step ≥ 0}``; ``kill_ps`` ``{ps task in
    [0, num_ps): version ≥ 0}``; ``fault_timeout_s`` finite > 0; ``ema_decay`` None or finite > 0;
    ``w1_shards`` in ``[1, 64]``; ``checkpoint_every`` and ``restore`` need a ``checkpoint_dir``.

    Raises:
        ArgumentRangeError (a ValueError): a value out of its range or choices, or
            ``checkpoint_every``/``restore`` without a ``checkpoint_dir``; ``.argument`` names it.
        TypeError: a count that is not an integer, or a rate that is not a number.
    """
    check_choice("mode", mode, MODES)
    check_choice("execution", execution, EXECUTIONS)
    check_choice("ps_strategy", ps_strategy, PS_STRATEGIES)
    check_count("num_ps", num_ps, 1)
    check_count("num_workers", num_workers, 1)
    if replicas_to_aggregate is not None:
        check_count("replicas_to_aggregate", replicas_to_aggregate, 1, num_workers,
                    f"(gradients per update from {num_workers} workers)")
    if mode in STALENESS_MODES and staleness is None:
        raise ArgumentRangeError("staleness", f"{mode} needs a staleness bound: an integer >= 0, got None")
    if staleness is not None:
        check_count("staleness", staleness, 0, why="(clocks a worker may run ahead of the slowest)")
    if steps is not None:
        check_count("steps", steps, 1, why="(parameter updates to run)")
    if learning_rate is not None:
        check_positive("learning_rate", learning_rate)
    check_count("batch_size", batch_size, 1)
    check_count("hidden", hidden, 1)
    check_count("w1_shards", w1_shards, 1, 64, "(row shards of the first layer's 64 x hidden weights)")
    check_count("seed", seed, 0)
    check_count("eval_every", eval_every, 0, why="(0: only at the end)")
    check_count("checkpoint_every", checkpoint_every, 0, why="(0: no periodic checkpoints)")
    check_positive("fault_timeout_s", fault_timeout_s)
    for worker, factor in dict(straggler or {}).items():
        check_count("straggler worker", worker, 0, num_workers - 1, f"(one of {num_workers} workers)",
                    argument="straggler")
        check_positive(f"the speed factor of straggler worker {worker}", factor,
                       "(its compute takes that many times as long)", argument="straggler")
    if occasional_straggler is not None:
        if not isinstance(occasional_straggler, (tuple, list)) or len(occasional_straggler) != 2:
            raise ArgumentRangeError("occasional_straggler", "occasional_straggler must be a pair (probability, "
                                     f"speed factor), got {occasional_straggler!r}")
        probability, factor = occasional_straggler
        check_positive("the probability of occasional_straggler", probability, argument="occasional_straggler")
        if probability > 1:
            raise ArgumentRangeError("occasional_straggler", "the probability of occasional_straggler must be in "
                                     f"(0, 1], got {probability}")
        check_positive("the speed factor of occasional_straggler", factor, argument="occasional_straggler")
    for worker, step in dict(kill_worker or {}).items():
        check_count("kill_worker worker", worker, 0, num_workers - 1, f"(one of {num_workers} workers)",
                    argument="kill_worker")
        check_count(f"the step of kill_worker worker {worker}", step, 0, argument="kill_worker")
    for task, version in dict(kill_ps or {}).items():
        check_count("kill_ps task", task, 0, num_ps - 1, f"(one of {num_ps} ps tasks)", argument="kill_ps")
        check_count(f"the global step of kill_ps task {task}", version, 0, argument="kill_ps")
    if ema_decay is not None:
        check_positive("ema_decay", ema_decay)
    if (checkpoint_every or restore) and not checkpoint_dir:
        raise ArgumentRangeError("checkpoint_dir", "checkpoint_every and restore need a checkpoint_dir")
