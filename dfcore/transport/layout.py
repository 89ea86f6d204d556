"""The tasks of a ``ClusterSpec`` numbered by rank, as the runtime of :mod:`dfcore.transport` names them.

Source: TF's ``ClusterSpec`` (``python/training/server_lib.py``): jobs and their task indices. A transport whose
tasks are found by address (gRPC) numbers them here: jobs in the spec's order, tasks by index — as
``dfcore.mpi.world.Layout`` numbers the ranks of an MPI job.
"""

from __future__ import annotations

from ..framework.device import DeviceSpec
from ..train.cluster_spec import ClusterSpec


class ClusterLayout:
    """The tasks of a ``ClusterSpec`` numbered by rank: jobs in the spec's order, tasks by index."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self._tasks = [(job, index) for job in spec.jobs for index in spec.task_indices(job)]
        self._ranks = {task: rank for rank, task in enumerate(self._tasks)}

    @property
    def size(self) -> int:
        return len(self._tasks)

    def task_of_rank(self, rank: int) -> tuple[str, int]:
        return self._tasks[rank]

    def rank_of(self, job: str, task_index: int) -> int:
        """The rank of ``/job:<job>/task:<task_index>`` (ValueError: not a task of the cluster)."""
        try:
            return self._ranks[(job, int(task_index))]
        except KeyError:
            raise ValueError(f"/job:{job}/task:{task_index} is not a task of the ClusterSpec "
                             f"{self.spec.as_dict()}") from None

    def task_name(self, rank: int) -> str:
        job, task = self._tasks[rank]
        return f"/job:{job}/replica:0/task:{task}"

    def rank_of_name(self, name: str) -> int | None:
        """The rank of a task name (``/job:ps/replica:0/task:0``), None if it is no task of the cluster."""
        try:
            spec = DeviceSpec.from_string(name)
        except (ValueError, TypeError):
            return None
        return self._ranks.get((spec.job, spec.task or 0))

    def address(self, rank: int) -> str:
        return self.spec.task_address(*self._tasks[rank])
