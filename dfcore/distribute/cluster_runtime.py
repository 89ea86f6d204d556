"""The process-wide registry of in-process clusters: what ``Session(target=server.target)`` runs on.

Source: TF's distributed runtime (``core/distributed_runtime``: the master gathers every
task's devices into one ``DeviceSet``; each worker task owns the variables and queues
placed on its devices, in its ``ResourceMgr``), here inside one process with nothing
listening on any socket.

* Servers with equal :class:`~dfcore.distribute.cluster.ClusterSpec` s join one
  :class:`InProcessCluster`; an address can be held by one running server only.
* A session on ``grpc://<address>`` gets a :class:`ClusterBinding`: the devices of
  every task (sorted by job, then task; the session's own task first in placement
  priority), the cluster's variable store and resources.
* State is keyed by ``(task, name)`` where the task comes from the device the op runs
  on (``ctx.device``): variables named alike on a ps task are one variable for every
  worker's graph (between-graph replication); worker-local state stays per task.
* A stopped task (``Server.stop``) is *down*: its state is dropped (a restarted
  process starts empty), ops waiting on its queues or accumulators fail with
  ``UnavailableError``, and a step that uses its devices fails with ``UnavailableError``
  before it starts. When every server of a cluster has stopped, the cluster is gone.

The transport-specific part is only this module's binding (the MPI runtime provides
another one behind :func:`dfcore.runtime.session_targets.register_target_resolver`).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .. import errors
from ..framework.device import DeviceSpec
from ..runtime import session_targets
from ..runtime.config import ConfigProto
from ..runtime.device_set import Device, DeviceSet, passes_device_filters
from ..runtime.session_resources import SessionResources
from ..runtime.variable_store import VariableState, VariableStore, VarRef

if TYPE_CHECKING:
    from ..runtime.step_plan import StepPlan
    from ..train.cluster_spec import ClusterSpec
    from .cluster import Server

_LOCK = threading.Lock()
_CLUSTERS: dict[tuple, InProcessCluster] = {}  # by the spec's _key
_ADDRESSES: dict[str, tuple[InProcessCluster, str]] = {}  # address -> (cluster, task name)


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """One task of a cluster, for views: job, index, address, ``/job:j/replica:0/task:t``,
    its device names, and whether a server is running it."""

    job: str
    task_index: int
    address: str
    task_name: str
    devices: tuple[str, ...]
    running: bool


@functools.lru_cache(maxsize=4096)
def task_of(device: str) -> str:
    """``/job:ps/replica:0/task:1`` of a full device name (or of a task name)."""
    spec = DeviceSpec.from_string(device)
    return f"/job:{spec.job}/replica:{spec.replica or 0}/task:{spec.task or 0}"


class ClusterVariableStore(VariableStore):
    """A :class:`VariableStore` keyed by ``(task, name)``; a variable's state keeps its plain name
    (so messages read ``Attempting to use uninitialized value w``)."""

    def ref(self, key: Any) -> VarRef:
        ref = self._refs.get(key)
        if ref is not None:
            return ref
        with self._lock:
            if key not in self._refs:
                state = self._states[key] = VariableState(key[1] if isinstance(key, tuple) else key)
                self._refs[key] = VarRef(state)
            return self._refs[key]

    def task_variables(self, task: str) -> dict[str, Any]:
        """``{name: value}`` of the initialized variables of ``task``."""
        with self._lock:
            return {k[1]: s.value for k, s in sorted(self._states.items())
                    if isinstance(k, tuple) and k[0] == task and s.value is not None}

    def purge_task(self, task: str) -> None:
        with self._lock:
            for key in [k for k in self._states if isinstance(k, tuple) and k[0] == task]:
                del self._states[key]
                del self._refs[key]


class TaskResources:
    """Stateful resources (queues, accumulators, mutexes) keyed by ``(task, kind, name)``, made on first use."""

    def __init__(self):
        self._lock = threading.Lock()
        self._resources = {}

    def resource(self, task: str, kind: str, name: str, factory: Callable[[], Any]) -> Any:
        with self._lock:
            found = self._resources.get((task, kind, name))
            if found is None:
                found = self._resources[(task, kind, name)] = factory()
            return found


class InProcessCluster(TaskResources):
    """The shared state of one cluster: its tasks' servers, variables and resources."""

    def __init__(self, spec: ClusterSpec) -> None:
        super().__init__()
        self.spec = spec
        self._servers: dict[str, Server] = {}
        self._down: dict[str, str] = {}  # task -> why it is down
        #: Bumped whenever a task starts or stops (read without the lock: a check that passed at one value
        #: still holds while the value is unchanged).
        self.membership_epoch = 0
        self.variable_store = ClusterVariableStore()

    def task_names(self) -> list[str]:
        """Every task of the spec, by job name then index."""
        return [f"/job:{job}/replica:0/task:{t}" for job in sorted(self.spec.jobs)
                for t in self.spec.task_indices(job)]

    def task_devices(self, task: str) -> tuple[Device, ...]:
        """The devices of ``task``: from its server's config, or CPU:0 if no server was created yet."""
        spec = DeviceSpec.from_string(task)
        server = self._servers.get(task)
        config = server.config if server is not None else None
        if config is None:
            config = ConfigProto(device_count={"CPU": 1, "GPU": 0})
        return DeviceSet.from_config(config, job=spec.job, task=spec.task).devices

    def device_set(self, client_task: str, device_filters: Iterable[str] = ()) -> DeviceSet:
        """The devices a session on ``client_task`` sees: every task's, or those passing ``device_filters``."""
        devices = [d for task in self.task_names() if passes_device_filters(task, device_filters, client_task)
                   for d in self.task_devices(task) if passes_device_filters(d.name, device_filters, client_task)]
        return DeviceSet(devices, client_device=client_task + "/device:CPU:0")

    def is_up(self, task: str) -> bool:
        with self._lock:
            return task in self._servers and task not in self._down

    def down_reason(self, task: str) -> str | None:
        with self._lock:
            if task in self._down:
                return self._down[task]
            return None if task in self._servers else "no server was started for it"

    def cancel_waiters(self, error: errors.OpError) -> None:
        """Fail every op blocked on any resource of the cluster with ``error`` (state is kept)."""
        with self._lock:
            resources = list(self._resources.values())
        for resource in resources:
            cancel = getattr(resource, "cancel_all", None)
            if cancel is not None:
                cancel(error)

    def find_resource(self, task: str, kind: str, name: str) -> Any:
        """The resource ``(kind, name)`` of ``task``, or None."""
        with self._lock:
            return self._resources.get((task, kind, name))

    def task_info(self) -> tuple[TaskInfo, ...]:
        """A :class:`TaskInfo` per task of the spec."""
        out = []
        for task in self.task_names():
            spec = DeviceSpec.from_string(task)
            out.append(TaskInfo(spec.job, spec.task, self.spec.task_address(spec.job, spec.task), task,
                                tuple(d.name for d in self.task_devices(task)), self.is_up(task)))
        return tuple(out)

    def _add(self, server):
        with self._lock:
            self._servers[server.task_name] = server
            self._down.pop(server.task_name, None)
            self.membership_epoch += 1

    def _stop(self, task, reason):
        error = errors.UnavailableError(None, None, f"Task {task} is down: {reason}")
        with self._lock:
            self._down[task] = reason
            self.membership_epoch += 1
            mine = [k for k in self._resources if k[0] == task]
            resources = [self._resources.pop(k) for k in mine]
        self.variable_store.purge_task(task)
        for resource in resources:
            cancel = getattr(resource, "cancel_all", None)
            if cancel is not None:
                cancel(error)

    def _running(self):
        with self._lock:
            return [t for t in self._servers if t not in self._down]


class ClusterResources(SessionResources):
    """A session's resources on a cluster: variable keys and resources are the cluster's,
    keyed by the task of the op's device; random generators and step hooks stay per session."""

    def __init__(self, cluster: TaskResources) -> None:
        super().__init__()
        self._cluster = cluster

    def variable_key(self, name: str, device: str) -> Any:
        return (task_of(device), name)

    def resource(self, kind: str, name: str, device: str, factory: Callable[[], Any]) -> Any:
        return self._cluster.resource(task_of(device), kind, name, factory)


class ClusterBinding:
    """What a Session on a cluster target uses (see ``register_target_resolver``)."""

    def __init__(self, cluster: InProcessCluster, task: str, config: ConfigProto | None = None) -> None:
        self.cluster = cluster
        self.task = task
        self.device_set = cluster.device_set(task, config.device_filters if config is not None else ())
        self.variable_store = cluster.variable_store
        self.resources = ClusterResources(cluster)
        # id(plan) -> (plan, its tasks, the membership epoch its last passing check saw)
        self._plan_tasks: dict[int, tuple[StepPlan, list[str], int]] = {}

    def check_step(self, plan: StepPlan) -> None:
        """Raise ``UnavailableError`` if a task with a partition of ``plan`` is down (asked of the cluster only
        when a task started or stopped since the plan's last check passed)."""
        entry = self._plan_tasks.get(id(plan))
        epoch = self.cluster.membership_epoch
        if entry is not None and entry[0] is plan and entry[2] == epoch:
            return
        if entry is None or entry[0] is not plan:
            entry = (plan, sorted({task_of(p.device) for p in plan.partitions} | {self.task}), -1)
        for task in entry[1]:
            if not self.cluster.is_up(task):
                raise errors.UnavailableError(
                    None, None, f"Task {task} is unavailable ({self.cluster.down_reason(task)}); the step needs "
                    "its devices. Restart its tf.train.Server, or place the ops elsewhere.")
        self._plan_tasks[id(plan)] = (plan, entry[1], epoch)


def _key(spec):
    return tuple(sorted((job, tuple(sorted(spec._spec[job].items()))) for job in spec.jobs))


def start_task(server: Server) -> None:
    """Register ``server``'s task (called by ``Server.start``).

    Raises:
        UnknownError: the address is held by another running server (TF: ``Could not start gRPC server``).
    """
    spec, address = server.cluster_spec, server.address
    with _LOCK:
        holder = _ADDRESSES.get(address)
        if holder is not None:
            raise errors.UnknownError(None, None, f"Could not start gRPC server: address {address} is already used "
                                      f"by the running in-process server of {holder[1]}")
        cluster = _CLUSTERS.get(_key(spec))
        if cluster is None:
            cluster = _CLUSTERS[_key(spec)] = InProcessCluster(spec)
        cluster._add(server)
        _ADDRESSES[address] = (cluster, server.task_name)


def stop_task(server: Server, reason: str | None = None) -> None:
    """Mark ``server``'s task down (called by ``Server.stop``); forget the cluster once no task runs."""
    with _LOCK:
        entry = _ADDRESSES.pop(server.address, None)
        if entry is None:
            return
        cluster = entry[0]
        cluster._stop(server.task_name, reason or "its server was stopped")
        if not cluster._running() and _CLUSTERS.get(_key(cluster.spec)) is cluster:
            del _CLUSTERS[_key(cluster.spec)]


def cluster_for_target(target: str) -> tuple[InProcessCluster, str]:
    """``(InProcessCluster, task name)`` serving ``grpc://<address>``.

    Raises:
        UnavailableError: no running in-process server has that address.
    """
    address = target[len("grpc://"):] if target.startswith("grpc://") else target
    with _LOCK:
        entry = _ADDRESSES.get(address)
    if entry is None:
        raise errors.UnavailableError(
            None, None, f"No in-process server is running at {target}: start a tf.train.Server for that address "
            "first (dfcore runs a cluster's tasks inside this process; nothing listens on a socket).")
    return entry


def serves(target: str) -> bool:
    """True when a running in-process server has the address of ``target`` (``grpc://<address>`` or the address)."""
    address = target[len("grpc://"):] if target.startswith("grpc://") else target
    with _LOCK:
        return address in _ADDRESSES


def serves_session(target: str, device_filters: Iterable[str] = ()) -> bool:
    """True when a session on ``target`` can run in this process alone: an in-process server has that address, and
    every task the session uses (those passing ``device_filters``) has had a server here (a stopped one is down:
    its steps fail with ``UnavailableError``). Otherwise a session waits for the tasks elsewhere, over gRPC."""
    address = target[len("grpc://"):] if target.startswith("grpc://") else target
    with _LOCK:
        entry = _ADDRESSES.get(address)
    if entry is None:
        return False
    cluster, task = entry
    with cluster._lock:
        started = set(cluster._servers)
    return all(name in started for name in cluster.task_names() if passes_device_filters(name, device_filters, task))


def cluster_of(server: Server) -> InProcessCluster | None:
    """The :class:`InProcessCluster` a running ``server`` belongs to (None once it stopped)."""
    with _LOCK:
        entry = _ADDRESSES.get(server.address)
    return None if entry is None else entry[0]


def _resolve(target, config):
    if not target.startswith("grpc://"):
        return None
    cluster, task = cluster_for_target(target)
    return ClusterBinding(cluster, task, config)


session_targets.register_target_resolver(_resolve)
