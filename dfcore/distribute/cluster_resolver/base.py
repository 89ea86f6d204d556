"""The resolver interface and the resolver given its answers by hand.

Source: TF's ``tensorflow/python/distribute/cluster_resolver/cluster_resolver.py``
(``ClusterResolver``, ``SimpleClusterResolver``, ``format_master_url``).
"""

from __future__ import annotations

import abc
from typing import Any

from ...train.cluster_spec import ClusterSpec


def format_master_url(master: str, rpc_layer: str | None = None) -> str:
    """``rpc_layer://master`` (``"grpc://localhost:2222"``), or ``master`` unchanged without a layer."""
    return f"{rpc_layer}://{master}" if rpc_layer else master


class ClusterResolver(abc.ABC):
    """What a task needs to know about its cluster (TF's abstract ``ClusterResolver``).

    Subclasses give ``cluster_spec()`` and ``master()``; ``task_type`` (a job name or None),
    ``task_id`` (an int or None) and ``rpc_layer`` (``"grpc"`` or None) are plain attributes here.
    """

    task_type: str | None = None
    task_id: int | None = None
    rpc_layer: str | None = None

    @abc.abstractmethod
    def cluster_spec(self) -> ClusterSpec:
        """The cluster's ``tf.train.ClusterSpec`` (read anew on each call)."""

    @abc.abstractmethod
    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The session target of a task (default: this one), e.g. ``"grpc://localhost:2222"``; ``""`` if none."""

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: Any = None) -> dict[str, int]:
        """``{device type: count}`` per task: ``{}`` — dfcore's tasks compute on their CPU."""
        return {}

    @property
    def environment(self) -> str:
        """The cluster manager's name (``""``: none that needs special handling)."""
        return ""


class SimpleClusterResolver(ClusterResolver):
    """A resolver that answers what it was given (TF's ``SimpleClusterResolver``).

    >>> r = SimpleClusterResolver(ClusterSpec({"ps": ["localhost:2222"]}), master="grpc://localhost:2222")
    >>> r.master(), r.master("ps", 0, rpc_layer="grpc")
    ('grpc://localhost:2222', 'grpc://localhost:2222')

    Raises:
        TypeError: ``cluster_spec`` is not a ``ClusterSpec`` or ``master`` not a string (TF's wording).
    """

    def __init__(self, cluster_spec: ClusterSpec, master: str = "", task_type: str | None = None,
                 task_id: int | None = None, environment: str = "",
                 num_accelerators: dict[str, int] | None = None, rpc_layer: str | None = None) -> None:
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError("cluster_spec must be a `tf.train.ClusterSpec`.")
        if not isinstance(master, str):
            raise TypeError("master must be a string.")
        self._cluster_spec, self._master, self._environment = cluster_spec, master, environment
        self.task_type, self.task_id, self.rpc_layer = task_type, task_id, rpc_layer
        self._num_accelerators = dict(num_accelerators or {})

    def cluster_spec(self) -> ClusterSpec:
        return self._cluster_spec

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The given ``master`` (with ``rpc_layer`` put in front), or ``task_type``/``task_id``'s address.

        Raises:
            ValueError: a ``task_type``/``task_id`` that is not in the ``ClusterSpec``.
        """
        if task_type is not None and task_id is not None:
            return format_master_url(self._cluster_spec.task_address(task_type, task_id), rpc_layer or self.rpc_layer)
        return format_master_url(self._master, rpc_layer or self.rpc_layer)

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: Any = None) -> dict[str, int]:
        return dict(self._num_accelerators)

    @property
    def environment(self) -> str:
        return self._environment
