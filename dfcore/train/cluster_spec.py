"""``tf.train.ClusterSpec``: a cluster as jobs, each a set of tasks with network addresses.

Source: ``tensorflow/python/training/server_lib.py`` (``ClusterSpec``: API, argument checks and error wording).
It lives in train/, as in TF, so that ``replica_device_setter`` reads a cluster without importing
distribute/; ``tf.train.Server`` (:mod:`dfcore.distribute.cluster`) builds on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..framework.protos import ClusterDef, JobDef


class ClusterSpec:
    """A cluster as a set of jobs, each a set of tasks with network addresses.

    Args:
        cluster: a dict mapping job names to a list of addresses (dense: task ``i`` is the
            ``i``-th entry) or to a dict ``{task index: address}`` (sparse), a
            :class:`ClusterDef`, or another :class:`ClusterSpec`.
    Raises:
        TypeError: any other argument, or tasks given as neither list nor dict (TF's wording);
            a job name, task index or address of the wrong type.
    """

    _spec: dict[str, dict[int, str]]  # job -> {task index: address}

    def __init__(self, cluster: ClusterSpec | Mapping[str, Any] | ClusterDef | None) -> None:
        spec: dict[str, dict[int, str]]
        if isinstance(cluster, dict):
            spec = {}
            for job_name, tasks in cluster.items():
                if isinstance(tasks, (list, tuple)):
                    spec[job_name] = dict(enumerate(tasks))
                elif isinstance(tasks, dict):
                    spec[job_name] = dict(tasks)
                else:
                    raise TypeError(f"The tasks for job {job_name!r} must be a list or a dictionary "
                                    "from integers to strings.")
        elif isinstance(cluster, ClusterDef):
            spec = {job.name: dict(sorted(job.tasks.items())) for job in cluster.job}
        elif isinstance(cluster, ClusterSpec):
            spec = {job: dict(tasks) for job, tasks in cluster._spec.items()}
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists of network "
                            "addresses, or a `ClusterDef` protocol buffer")
        for job_name, tasks in spec.items():
            if not isinstance(job_name, str):
                raise TypeError(f"Job name {job_name!r} must be bytes or unicode")
            for index, address in tasks.items():
                if not isinstance(index, int) or isinstance(index, bool):
                    raise TypeError(f"Task index for job {job_name!r} must be an integer")
                if not isinstance(address, str):
                    raise TypeError(f"Task address {address!r} must be bytes or unicode")
        self._spec = spec

    @property
    def jobs(self) -> list[str]:
        """The job names, in the order given."""
        return list(self._spec)

    def num_tasks(self, job_name: str) -> int:
        """The number of tasks of ``job_name``.

        Raises:
            ValueError: no such job (TF's wording).
        """
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The sorted task indices of ``job_name`` (raises ValueError for an unknown job)."""
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of task ``task_index`` of ``job_name``.

        Raises:
            ValueError: no such job, or no such task in it (TF's wording).
        """
        tasks = self._job(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The addresses of ``job_name`` by index, ``None`` where a sparse job has no task."""
        tasks = self._job(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]

    def as_dict(self) -> dict[str, list[str | None] | dict[int, str]]:
        """``{job: [addresses]}`` for dense jobs, ``{job: {index: address}}`` for sparse ones."""
        result: dict[str, list[str | None] | dict[int, str]] = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if not indices:
                result[job] = {}
            elif max(indices) + 1 == len(indices):
                result[job] = self.job_tasks(job)
            else:
                result[job] = {i: self.task_address(job, i) for i in indices}
        return result

    def as_cluster_def(self) -> ClusterDef:
        """TF's ``ClusterDef`` message: jobs sorted by name (TF's ``_make_cluster_def``), ``tasks`` a map from
        task index to address."""
        return ClusterDef(job=[JobDef(name=name, tasks=tasks) for name, tasks in sorted(self._spec.items())])

    def _job(self, job_name):
        try:
            return self._spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def __bool__(self):
        return bool(self._spec)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    def __ne__(self, other):
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # a mutable spec, unhashable (as TF's)

    def __str__(self):
        return f"ClusterSpec({self.as_dict()})"

    __repr__ = __str__
