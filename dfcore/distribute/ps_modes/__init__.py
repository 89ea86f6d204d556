"""Update disciplines of parameter-server training, one module each, in one registry keyed by mode name.

* ``sync`` (:mod:`.sync`): ``SyncReplicasOptimizer`` — one averaged update per ``replicas_to_aggregate``
  gradients, backup workers, stale gradients dropped;
* ``async`` (:mod:`.async_`): Downpour — every gradient applied on arrival;
* ``ssp`` (:mod:`.ssp`): Ho et al.'s stale synchronous parallel — applied on arrival, read gate at
  ``c - s - 1``;
* ``bounded_delay`` (:mod:`.bounded_delay`): per-clock averaged updates applied up to ``s`` clocks late.
"""

from __future__ import annotations

from .async_ import Async
from .base import Discipline, Pushed
from .bounded_delay import BoundedDelay
from .ssp import SSP
from .sync import Sync

#: mode name → its :class:`Discipline`.
DISCIPLINES: dict[str, type[Discipline]] = {cls.name: cls for cls in (Sync, Async, SSP, BoundedDelay)}
MODES = tuple(DISCIPLINES)
#: The modes that take a staleness bound ``s``.
STALENESS_MODES = ("ssp", "bounded_delay")

__all__ = ["DISCIPLINES", "MODES", "STALENESS_MODES", "Discipline", "Pushed"]
