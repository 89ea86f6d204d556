"""``TFConfigClusterResolver``: the cluster and this task from the ``TF_CONFIG`` environment variable.

Source: TF's ``tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver.py``.
``TF_CONFIG`` is JSON: ``{"cluster": {"ps": ["localhost:2222"], "worker": [...]},
"task": {"type": "worker", "index": 0}, "rpc_layer": "grpc", "environment": ""}``; every key may be
missing. It is read anew on each call, as TF does. Malformed JSON raises ``json``'s
``JSONDecodeError`` (a ``ValueError``), as in TF.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ...train.cluster_spec import ClusterSpec
from .base import ClusterResolver, format_master_url

#: The environment variable TF's tools and ``python -m dfcore.launch --grpc`` put the cluster in.
TF_CONFIG_ENV = "TF_CONFIG"


def load_tf_config() -> dict[str, Any]:
    """``TF_CONFIG`` parsed (``{}`` when unset).

    Raises:
        json.JSONDecodeError: malformed JSON.
        ValueError: valid JSON that is not an object.
    """
    config = json.loads(os.environ.get(TF_CONFIG_ENV, "{}"))
    if not isinstance(config, dict):
        raise ValueError(f"{TF_CONFIG_ENV} must be a JSON object like "
                         '{"cluster": {"worker": ["localhost:2222"]}, "task": {"type": "worker", "index": 0}}, '
                         f"got {os.environ[TF_CONFIG_ENV]!r}")
    return config


class TFConfigClusterResolver(ClusterResolver):
    """The cluster, task and RPC layer that ``TF_CONFIG`` gives this process.

    Args:
        task_type, task_id, rpc_layer, environment: override ``TF_CONFIG``'s values.

    In a process started with ``TF_CONFIG='{"cluster": {"ps": ["localhost:2222"]}, "task": {"type": "ps",
    "index": 0}}'``, ``TFConfigClusterResolver().master(rpc_layer="grpc")`` is ``'grpc://localhost:2222'``.
    """

    def __init__(self, task_type: str | None = None, task_id: int | None = None, rpc_layer: str | None = None,
                 environment: str | None = None) -> None:
        self._task_type, self._task_id = task_type, task_id
        self._rpc_layer, self._environment = rpc_layer, environment

    @property
    def task_type(self) -> str | None:
        """The job of this task (``TF_CONFIG``'s ``task.type``), or None."""
        if self._task_type is not None:
            return self._task_type
        task = load_tf_config().get("task", {})
        return str(task["type"]) if "type" in task else None

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        """The index of this task in its job (``TF_CONFIG``'s ``task.index``), or None."""
        if self._task_id is not None:
            return self._task_id
        task = load_tf_config().get("task", {})
        return int(task["index"]) if "index" in task else None

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def rpc_layer(self) -> str | None:
        """``TF_CONFIG``'s ``rpc_layer`` (e.g. ``"grpc"``), or None."""
        return self._rpc_layer if self._rpc_layer is not None else load_tf_config().get("rpc_layer")

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer

    @property
    def environment(self) -> str:
        return self._environment if self._environment is not None else load_tf_config().get("environment", "")

    def cluster_spec(self) -> ClusterSpec:
        """``TF_CONFIG``'s ``cluster`` as a ``ClusterSpec`` (an empty one when it has none)."""
        return ClusterSpec(load_tf_config().get("cluster", {}))

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The session target of ``task_type``/``task_id`` (default: this task), ``""`` when this task's job is
        not in the cluster (or it is an ``evaluator``, which runs outside it, as in TF).

        Raises:
            ValueError: ``task_type`` and ``task_id`` both given, but not a task of the cluster.
        """
        cluster = self.cluster_spec()
        layer = rpc_layer or self.rpc_layer
        if task_type is not None and task_id is not None:
            return format_master_url(cluster.task_address(task_type, task_id), layer)
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        if task_type is None or task_id is None or task_type not in cluster.jobs or task_type == "evaluator":
            return ""
        return format_master_url(cluster.task_address(task_type, task_id), layer)
