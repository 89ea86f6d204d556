"""Where a parameter-server run executes, by name: each driver registers its runner here.

Source: dfcore's layering (docs/architecture.md#layers): ``distribute/`` registers ``"simulated"`` and ``"threads"``
(:mod:`dfcore.distribute.parameter_server`); ``dfcore.mpi`` registers ``"mpi"`` when it is
imported (``import dfcore`` does), so ``distribute/`` never imports ``mpi/``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ps_arguments import TrainConfig
    from .staleness import RunRecord

Runner = Callable[["TrainConfig"], "RunRecord | None"]
_RUNNERS: dict[str, Runner] = {}


def register_execution(name: str, runner: Runner) -> None:
    """Make ``execution=name`` run ``runner(config)`` (which returns the run's record, or None on ranks without it)."""
    _RUNNERS[name] = runner


def runner_of(name: str) -> Runner:
    """The runner registered for ``name``.

    Raises:
        ValueError: none is (e.g. ``"mpi"`` before ``dfcore.mpi`` was imported).
    """
    if name not in _RUNNERS:
        raise ValueError(f"No parameter-server driver is registered for execution={name!r} "
                         f"(registered: {', '.join(sorted(_RUNNERS))})")
    return _RUNNERS[name]
