"""What every update discipline of parameter-server training provides to the drivers.

Source: the disciplines' own modules (:mod:`.sync`, :mod:`.async_`, :mod:`.ssp`,
:mod:`.bounded_delay`). A worker step is, in every driver (simulated clock, threads,
MPI processes): wait until :meth:`Discipline.ready`, :meth:`~Discipline.begin`, pull and
compute the gradient (one ``session.run`` of the loss, ``global_step`` and the gradients),
move it to the ps (the driver's transport), then :meth:`~Discipline.push` it; the chief
calls :meth:`~Discipline.chief_apply` until it returns False after every push it sees (or
in a polling loop). The drivers supply time, transport and process boundaries only; every
rule of a discipline (its gate, where a gradient goes, when it is applied or dropped, at
which version) lives in its module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ... import errors
from ...runtime.config import RunOptions

if TYPE_CHECKING:
    from ..ps_model import ModelConfig, WorkerModel


@dataclasses.dataclass(frozen=True)
class Pushed:
    """The fate of one pushed gradient.

    Attributes:
        applied_at: the global step of the parameters it is (or will be) applied to; for a
            dropped gradient, the global step when it was dropped.
        applied: False when the ps dropped it (a stale gradient in ``sync``).
        immediate: True when the update happened during the push (the global step is now
            ``applied_at + 1``); False when the chief applies it later, at ``applied_at``.
    """

    applied_at: int
    applied: bool
    immediate: bool


class Discipline:
    """The base of the disciplines: no gate, nothing for the chief to do (override what differs).

    ``config`` is the run's :class:`~dfcore.distribute.ps_model.ModelConfig`.
    """

    name: ClassVar[str] = ""
    #: True when updates need the chief (an aggregated update): the drivers then run :meth:`chief_apply`.
    needs_chief: ClassVar[bool] = False
    #: True when :meth:`begin` itself waits at the gate (a blocking op on the ps, with the deadline): the
    #: wall-clock drivers then call it at once instead of polling :meth:`ready`.
    blocking_gate: ClassVar[bool] = False
    #: What a worker waits for at its gate (for the deadline's message).
    waits_for: ClassVar[str] = "nothing"

    def __init__(self, config: ModelConfig) -> None:
        self.config = config

    def build(self, t: dict[str, Any], index: int, opt: Any, grads_and_vars: list[tuple[Any, Any]], gs: Any,
              ema: Any) -> None:
        """Add the discipline's ops to worker ``index``'s graph (under its ``replica_device_setter``) into ``t``."""
        raise NotImplementedError

    def initialize(self, model: WorkerModel, chief: bool) -> None:
        """Per-worker state after the ps variables are initialized (or restored)."""

    def ready(self, model: WorkerModel, clock: int, first: bool) -> bool:
        """May the worker read the parameters for its step ``clock`` now? Never blocks. ``first``: its first
        step of this run."""
        return True

    def begin(self, model: WorkerModel, clock: int, first: bool, options: RunOptions) -> None:
        """Pass the gate :meth:`ready` found open (``sync``: take the token)."""

    def pull_fetches(self, model: WorkerModel) -> list[Any]:
        """Tensors the discipline reads with the parameters (their values go to :meth:`slowest_clock`)."""
        return []

    def slowest_clock(self, values: list[Any]) -> int:
        """The record's ``slowest_clock`` from the values of :meth:`pull_fetches` (-1: not tracked)."""
        return -1

    def feed(self, model: WorkerModel, clock: int) -> Mapping[Any, Any]:
        """Extra feeds of the push of step ``clock`` (besides the gradients)."""
        return {}

    def push(self, model: WorkerModel, feed: dict[Any, Any], clock: int, options: RunOptions) -> Pushed:
        """The gradient (``feed``: gradient tensor → value) of step ``clock`` reaches the ps."""
        raise NotImplementedError

    def chief_apply(self, chief: WorkerModel, version: int, options: RunOptions) -> bool:
        """Apply the aggregated update of ``version`` if its gradients are in; True if it did. Never blocks."""
        return False

    def done(self, clock: int, version: int, steps: int) -> bool:
        """True when a gradient of step ``clock`` computed at ``version`` can no longer be applied within ``steps``
        updates (the worker then stops)."""
        return version >= steps

    def block(self, model: WorkerModel, chief: WorkerModel, version: int, options: RunOptions) -> None:
        """Nothing can make progress: run the op the worker would block on, with the deadline in ``options``,
        so the engine's own error says why (default: a ``DeadlineExceededError`` naming the gate)."""
        raise errors.DeadlineExceededError(
            None, None, f"Timed out after {options.timeout_in_ms / 1000:g} s: worker {model.index} waited for "
                        f"{self.waits_for}; a worker may be down.")
