"""``SlurmClusterResolver``: the cluster and this task from the variables Slurm gives each task of a step.

Source: TF's ``tensorflow/python/distribute/cluster_resolver/slurm_cluster_resolver.py`` (TF 2.x
behaviour, also exported as ``tf.compat.v1``). Read: ``SLURM_PROCID`` (this task's rank),
``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_NODELIST`` (a hostlist such as ``n[01-03],m5``) and
``SLURM_STEP_TASKS_PER_NODE`` (``2(x3),1``: two tasks on each of three nodes, then one). Tasks are
numbered node by node (hosts sorted by name), ports ``port_base``, ``port_base + 1``, ... on each
node, and handed to the jobs in sorted job-name order (so ``ps`` comes before ``worker``).
dfcore has no GPUs to hand out: ``gpus_per_node`` defaults to 0 and ``CUDA_VISIBLE_DEVICES`` is set
only when GPUs are asked for.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...train.cluster_spec import ClusterSpec
from .base import ClusterResolver, format_master_url

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _slurm_variable(name: str) -> str:
    """``SLURM_<name>`` from the environment.

    Raises:
        RuntimeError: it is unset (TF's wording: not running inside a Slurm step).
    """
    key = f"SLURM_{name}"
    if key not in os.environ:
        raise RuntimeError(f"{key} not found in environment. Not running inside a SLURM step?")
    return os.environ[key]


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def expand_hostlist(hostlist: str) -> list[str]:
    """The hosts of a Slurm hostlist, in order, not deduplicated, zero padding kept.

    >>> expand_hostlist("n[01-02],m5,o[3-4,6]")
    ['n01', 'n02', 'm5', 'o3', 'o4', 'o6']

    Raises:
        ValueError: unbalanced brackets or a range that is not ``a`` or ``a-b`` with ``a <= b``.
    """
    hosts = []
    for part in _split_top_level(hostlist):
        match = re.fullmatch(r"([^\[\]]*)\[([^\[\]]+)\]([^\[\]]*)", part)
        if match is None:
            if "[" in part or "]" in part:
                raise ValueError(f"malformed Slurm hostlist {hostlist!r} at {part!r}")
            hosts.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        for item in ranges.split(","):
            bounds = _RANGE.match(item)
            if bounds is None or (bounds.group(2) is not None and int(bounds.group(2)) < int(bounds.group(1))):
                raise ValueError(f"malformed range {item!r} in Slurm hostlist {hostlist!r}")
            first, last = bounds.group(1), bounds.group(2) or bounds.group(1)
            hosts.extend(f"{prefix}{str(n).zfill(len(first))}{suffix}" for n in range(int(first), int(last) + 1))
    return hosts


def expand_tasks_per_node(tasks_per_node: str) -> list[int]:
    """Slurm's compact tasks-per-node list expanded: ``"2(x3),1"`` → ``[2, 2, 2, 1]``.

    Raises:
        ValueError: an item that is not ``n`` or ``n(xk)``.
    """
    counts = []
    for item in tasks_per_node.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", item.strip())
        if match is None:
            raise ValueError(f"malformed SLURM_STEP_TASKS_PER_NODE {tasks_per_node!r} at {item!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


class SlurmClusterResolver(ClusterResolver):
    """The cluster of a Slurm job step (TF's ``SlurmClusterResolver``).

    Args:
        jobs: ``{job name: task count}`` (default ``{"worker": SLURM_STEP_NUM_TASKS}``).
        port_base: the first port on each node.
        gpus_per_node, gpus_per_task: GPUs to hand out (default none).
        tasks_per_node: an int for every node, or ``{host: count}`` (default: Slurm's
            ``SLURM_STEP_TASKS_PER_NODE``).
        auto_set_gpu: with GPUs, set ``CUDA_VISIBLE_DEVICES`` of this task in ``cluster_spec()``.
        rpc_layer: the protocol in ``master()``'s URL.
    Raises:
        RuntimeError: a Slurm variable is missing, or ``jobs`` asks for another number of tasks than the
            step has, or for more GPUs per node than there are (TF's wording).
    """

    def __init__(self, jobs: dict[str, int] | None = None, port_base: int = 8888, gpus_per_node: int = 0,
                 gpus_per_task: int = 0, tasks_per_node: int | dict[str, int] | None = None,
                 auto_set_gpu: bool = True, rpc_layer: str = "grpc") -> None:
        self._rank = int(_slurm_variable("PROCID"))
        self._jobs = dict(jobs) if jobs is not None else {"worker": int(_slurm_variable("STEP_NUM_TASKS"))}
        self._port_base, self._auto_set_gpu, self.rpc_layer = port_base, auto_set_gpu, rpc_layer
        self._gpus_per_node, self._gpus_per_task = gpus_per_node, gpus_per_task
        if isinstance(tasks_per_node, dict):
            self._tasks_by_host = dict(tasks_per_node)
        else:
            hosts = expand_hostlist(_slurm_variable("STEP_NODELIST"))
            counts = [tasks_per_node] * len(hosts) if tasks_per_node is not None else \
                expand_tasks_per_node(_slurm_variable("STEP_TASKS_PER_NODE"))
            self._tasks_by_host = dict(zip(hosts, counts, strict=True))
        most = max(self._tasks_by_host.values(), default=0)
        if gpus_per_task and most * gpus_per_task > gpus_per_node:
            raise RuntimeError("Requested more GPUs per node than available.")
        assigned = sum(self._tasks_by_host.values())
        if sum(self._jobs.values()) != assigned:
            raise RuntimeError(f"Requested {sum(self._jobs.values())} tasks but only {assigned} were assigned.")
        self.task_type, self.task_id = self._own_task()

    def _addresses(self) -> list[tuple[str, int]]:
        """``(address, index of the task on its node)`` in rank order."""
        return [(f"{host}:{self._port_base + offset}", offset)
                for host, count in sorted(self._tasks_by_host.items()) for offset in range(count)]

    def _own_task(self) -> tuple[str | None, int | None]:
        start = 0
        for job, count in sorted(self._jobs.items()):
            if start <= self._rank < start + count:
                return job, self._rank - start
            start += count
        return None, None

    def cluster_spec(self) -> ClusterSpec:
        """The step's ``ClusterSpec``; with GPUs and ``auto_set_gpu``, sets this task's ``CUDA_VISIBLE_DEVICES``."""
        addresses = self._addresses()
        cluster, start = {}, 0
        for job, count in sorted(self._jobs.items()):
            cluster[job] = [address for address, _ in addresses[start:start + count]]
            start += count
        if self._auto_set_gpu and self._gpus_per_task:
            first = addresses[self._rank][1] * self._gpus_per_task
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in range(first, first + self._gpus_per_task))
        return ClusterSpec(cluster)

    def get_task_info(self) -> tuple[str | None, int | None]:
        """``(task_type, task_id)`` of this process."""
        return self.task_type, self.task_id

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The session target of ``task_type``/``task_id`` (default: this task), ``""`` without a task."""
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        if task_type is None or task_id is None:
            return ""
        return format_master_url(self.cluster_spec().task_address(task_type, task_id), rpc_layer or self.rpc_layer)

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: Any = None) -> dict[str, int]:
        """``{"GPU": gpus_per_task}`` when GPUs were asked for, else ``{}``."""
        return {"GPU": self._gpus_per_task} if self._gpus_per_task else {}
