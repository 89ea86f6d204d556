"""The one check of parameter-server training's arguments, run by ``train`` before anything starts.

Source: TF's argument checks (``ValueError`` naming the argument and its range, raised
early); the ranges are those of :func:`dfcore.distribute.parameter_server.train`. Its
command line (``python -m dfcore.examples.parameter_server``) reports the same
:class:`~dfcore.distribute.arguments.ArgumentRangeError` as an argparse error naming the
flag, so the API and the CLI share every rule.
"""

from __future__ import annotations

from typing import Any

from .arguments import ArgumentRangeError, check_choice, check_count, check_positive

MODES = ("sync", "async", "ssp")
EXECUTIONS = ("simulated", "threads", "mpi")
PS_STRATEGIES = ("round_robin", "greedy")


def check_train_arguments(*, mode: str, execution: str, num_ps: int, num_workers: int,
                          replicas_to_aggregate: int | None, staleness: int, steps: int | None,
                          learning_rate: float | None, batch_size: int, hidden: int, ps_strategy: str, seed: int,
                          eval_every: int, checkpoint_dir: str | None, checkpoint_every: int, restore: bool,
                          straggler: Any, kill_worker: Any, kill_ps: Any, fault_timeout_s: float) -> None:
    """Check :func:`~dfcore.distribute.parameter_server.train`'s arguments (same names and meanings).

    Ranges: ``num_ps``, ``num_workers``, ``batch_size``, ``hidden`` ≥ 1; ``replicas_to_aggregate``
    None or in ``[1, num_workers]``; ``staleness`` ≥ 0 (None allowed outside ``ssp``); ``steps``
    None or ≥ 1; ``learning_rate`` None or finite > 0; ``seed``, ``eval_every``,
    ``checkpoint_every`` ≥ 0; ``straggler`` ``{worker: speed factor}`` with workers in
    ``[0, num_workers)`` and finite factors > 0; ``kill_worker`` ``{worker: step ≥ 0}``;
    ``kill_ps`` ``{ps task in [0, num_ps): version ≥ 0}``; ``fault_timeout_s`` finite > 0;
    ``checkpoint_every`` and ``restore`` need a ``checkpoint_dir``.

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
    if mode == "ssp" and staleness is None:
        raise ArgumentRangeError("staleness", "ssp needs a staleness bound: an integer >= 0, got None")
    if staleness is not None:
        check_count("staleness", staleness, 0, why="(clocks a worker may run ahead of the slowest)")
    if steps is not None:
        check_count("steps", steps, 1, why="(parameter updates to run)")
    if learning_rate is not None:
        check_positive("learning_rate", learning_rate)
    check_count("batch_size", batch_size, 1)
    check_count("hidden", hidden, 1)
    check_count("seed", seed, 0)
    check_count("eval_every", eval_every, 0, why="(0: only at the end)")
    check_count("checkpoint_every", checkpoint_every, 0, why="(0: no periodic checkpoints)")
    check_positive("fault_timeout_s", fault_timeout_s)
    for worker, factor in dict(straggler or {}).items():
        check_count("straggler worker", worker, 0, num_workers - 1, f"(one of {num_workers} workers)",
                    argument="straggler")
        check_positive(f"the speed factor of straggler worker {worker}", factor,
                       "(its compute takes that many times as long)", argument="straggler")
    for worker, step in dict(kill_worker or {}).items():
        check_count("kill_worker worker", worker, 0, num_workers - 1, f"(one of {num_workers} workers)",
                    argument="kill_worker")
        check_count(f"the step of kill_worker worker {worker}", step, 0, argument="kill_worker")
    for task, version in dict(kill_ps or {}).items():
        check_count("kill_ps task", task, 0, num_ps - 1, f"(one of {num_ps} ps tasks)", argument="kill_ps")
        check_count(f"the global step of kill_ps task {task}", version, 0, argument="kill_ps")
    if (checkpoint_every or restore) and not checkpoint_dir:
        raise ArgumentRangeError("checkpoint_dir", "checkpoint_every and restore need a checkpoint_dir")

