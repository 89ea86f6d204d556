"""``tf.train.ClusterSpec`` and ``tf.train.Server``: jobs, tasks and the servers running them.

Source: ``tensorflow/python/training/server_lib.py`` (API, argument checks and error
wording) and TF's distributed glossary (cluster, job, task, server, target).

A :class:`Server` runs its task *inside this process*: it registers the task in the process-wide registry of
:mod:`dfcore.distribute.cluster_runtime`, where sessions of this process reach it directly (several servers in
one process make a cluster, as a lesson builds one); and, as TensorFlow's does, it listens with gRPC on its
address when that address is a loopback one (``localhost``, ``127.0.0.1``; :mod:`dfcore.transport`), so that
other processes reach it (nothing listens for another host's name, ``ps0.example.com:2222``: such a task lives in
this process only; ``DFCORE_SERVERS=in_process`` keeps every server off the network). ``server.target``
(``"grpc://<address>"``) is what ``tf.Session(target=...)`` takes to run on the whole cluster: every task
contributes its devices (``/job:<job>/replica:0/task:<t>/device:CPU:0``, plus the GPUs of its ``config``), and
variables and queues live in the state of the task they are placed on, shared by every session on the cluster
(see the runtime module; docs/architecture.md#transports). A :class:`TaskListener` (``dfcore.transport``
registers one) serves a registered task to other processes. Another package may register a
:class:`TaskBackend` (``dfcore.mpi`` does, for the ranks of an MPI job; ``dfcore.transport`` for gRPC): a
server whose backend says it is active starts, stops and joins through it instead.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .. import errors
from ..framework.protos import ClusterDef
from ..runtime.config import ConfigProto
from ..train.cluster_spec import ClusterSpec
from . import cluster_runtime


@dataclasses.dataclass(frozen=True)
class TaskBackend:
    """Where servers run when ``active()``: ``start(server)`` brings up the task, ``join(timeout_s)`` returns
    True once the task may end (False: ``timeout_s`` passed first), ``stop(server)`` (if given) ends it, and
    ``local_address()`` (if given) is a fresh address for ``create_local_server``; ``protocols``: the server
    protocols it runs."""

    active: Callable[[], bool]
    start: Callable[[Server], None]
    join: Callable[[float | None], bool]
    stop: Callable[[Server], None] | None = None
    local_address: Callable[[], str] | None = None
    protocols: tuple[str, ...] = ("grpc",)


_BACKENDS: list[TaskBackend] = []


def register_task_backend(backend: TaskBackend) -> None:
    """Add ``backend``; a server uses the first registered backend that is active (else the in-process registry)."""
    _BACKENDS.append(backend)


@dataclasses.dataclass(frozen=True)
class TaskListener:
    """What else serves a task of the in-process registry: ``start(server)`` (after its registration) serves it to
    other processes where it can (``dfcore.transport``: a gRPC server on a loopback address), ``stop(server)``
    ends that, ``local_address()`` is a fresh address for ``create_local_server``."""

    start: Callable[[Server], None]
    stop: Callable[[Server], None]
    local_address: Callable[[], str]


_LISTENERS: list[TaskListener] = []


def register_task_listener(listener: TaskListener) -> None:
    """Add ``listener``: every server of the in-process registry is also served by it."""
    _LISTENERS.append(listener)


def _active_backend() -> TaskBackend | None:
    return next((b for b in _BACKENDS if b.active()), None)


def _check_protocol(protocol: str, backend: TaskBackend | None) -> None:
    """Raise unless ``protocol`` runs where this server would (TF's names: ``grpc``; ``grpc+mpi``, gRPC for
    control and MPI for tensors, inside an MPI job only)."""
    if protocol in (backend.protocols if backend is not None else ("grpc",)):
        return
    if protocol == "grpc+mpi":
        raise errors.FailedPreconditionError(
            None, None, 'protocol="grpc+mpi" sends tensors between tasks over MPI, so each task must be a rank of an '
            "MPI job (started by python -m dfcore.launch, or run_job(...) from a notebook; DFCORE_CLUSTER set), "
            "and this process is not: use protocol=\"grpc\" here")
    raise errors.InvalidArgumentError(None, None, f"Unknown server protocol {protocol!r}: dfcore's tf.train.Server "
                                      'speaks "grpc", and "grpc+mpi" inside an MPI job')


@dataclasses.dataclass(frozen=True)
class ServerDef:
    """TF's ``ServerDef`` (``tensorflow_server.proto``) as a record, as ``tensorboard`` does not ship that message:
    the cluster (TF's ``ClusterDef`` message), this server's job and task, protocol and session config."""

    cluster: ClusterDef
    job_name: str
    task_index: int
    protocol: str = "grpc"
    default_session_config: ConfigProto | None = None


_LOCAL_PORTS = itertools.count(20000)


class Server:
    """A TF server: one task of a cluster (in this process's registry, or a gRPC server; see the module docstring).

    Args:
        server_or_cluster_def: a :class:`ClusterSpec`, a dict for one, a :class:`ClusterDef`
            or a :class:`ServerDef`.
        job_name, task_index: this server's task; may be left out when the cluster has one
            job / the job one task (TF's rule).
        protocol: ``"grpc"`` (a gRPC server on a loopback address, see above; with ``DFCORE_SERVERS=grpc``: a gRPC
            server on the host and port the cluster gives this task); ``"grpc+mpi"`` (TF's name) inside an MPI
            job: a gRPC server for control, tensors between the job's tasks over MPI.
        config: a ``ConfigProto`` whose ``device_count`` gives the task's devices
            (default: the default machine, CPU:0 plus the host's GPUs).
        start: start at once.
    Raises:
        ValueError: job or task left out where it is ambiguous (TF's wording).
        InvalidArgumentError: the job or task is not in the cluster.
        UnknownError: ``start`` finds the address taken by another running server (over gRPC: ``Could not
            start gRPC server``, TF's wording).
        FailedPreconditionError: ``start`` with ``"grpc+mpi"`` outside an MPI job (names what it needs).
        InvalidArgumentError: ``start`` with another protocol.
    """

    def __init__(self, server_or_cluster_def: ClusterSpec | Mapping[str, Any] | ClusterDef | ServerDef,
                 job_name: str | None = None, task_index: int | None = None, protocol: str | None = None,
                 config: ConfigProto | None = None, start: bool = True) -> None:
        self._server_def = _make_server_def(server_or_cluster_def, job_name, task_index, protocol, config)
        self._config = config if config is not None else ConfigProto()
        self._stopped = threading.Event()
        self._started = False
        self._backend: TaskBackend | None = None
        self._lock = threading.Lock()
        if start:
            self.start()

    @staticmethod
    def create_local_server(config: ConfigProto | None = None, start: bool = True) -> Server:
        """A one-task server (job ``"localhost"``) on a fresh address (a free loopback port where servers listen)."""
        backend = _active_backend()
        if backend is not None and backend.local_address is not None:
            address = backend.local_address()
        elif backend is None and _LISTENERS:
            address = _LISTENERS[0].local_address()
        else:
            address = f"localhost:{next(_LOCAL_PORTS)}"
        return Server({"localhost": [address]}, protocol="grpc", config=config, start=start)

    @property
    def server_def(self) -> ServerDef:
        return self._server_def

    @property
    def target(self) -> str:
        """``"grpc://<address>"``: pass it to ``tf.Session(target=...)``."""
        return "grpc://" + self.address

    @property
    def address(self) -> str:
        """This task's address in the cluster spec (``"localhost:2222"``)."""
        spec = ClusterSpec(self._server_def.cluster)
        return spec.task_address(self._server_def.job_name, self._server_def.task_index)

    @property
    def cluster_spec(self) -> ClusterSpec:
        return ClusterSpec(self._server_def.cluster)

    @property
    def task_name(self) -> str:
        """``/job:<job>/replica:0/task:<index>``."""
        return f"/job:{self._server_def.job_name}/replica:0/task:{self._server_def.task_index}"

    @property
    def config(self) -> ConfigProto:
        return self._config

    def start(self) -> None:
        """Register the task in the process's cluster registry (idempotent)."""
        with self._lock:
            if self._started:
                return
            if self._stopped.is_set():
                raise errors.FailedPreconditionError(None, None, f"Server {self.target} was stopped; create a new one")
            backend = _active_backend()
            _check_protocol(self._server_def.protocol, backend)
            if backend is not None:
                backend.start(self)
                self._backend = backend
            else:
                cluster_runtime.start_task(self)
                try:
                    for listener in _LISTENERS:
                        listener.start(self)
                except BaseException:
                    cluster_runtime.stop_task(self, "its address could not be listened on")
                    raise
            self._started = True

    def join(self, timeout_s: float | None = None) -> None:
        """Block until the server is stopped (TF's ``join`` blocks forever); inside an MPI job
        (:mod:`dfcore.launch`), until every task of the other jobs has exited.

        Raises:
            DeadlineExceededError: ``timeout_s`` (dfcore) passed first.
        """
        if self._backend is not None:
            if not self._backend.join(timeout_s):
                raise errors.DeadlineExceededError(None, None, f"Server {self.target}: the other jobs' tasks were "
                                                   f"still running after {timeout_s} s")
            return
        if not self._stopped.wait(timeout_s):
            raise errors.DeadlineExceededError(None, None, f"Server {self.target} still running after {timeout_s} s")

    def stop(self, reason: str | None = None) -> None:
        """Stop the task (dfcore: simulate its death): later steps that use its devices fail with
        ``UnavailableError``, and every op blocked on its queues or accumulators is woken with it."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            if self._started and self._backend is None:
                for listener in _LISTENERS:
                    listener.stop(self)
                cluster_runtime.stop_task(self, reason)
            elif self._started and self._backend is not None and self._backend.stop is not None:
                self._backend.stop(self)

    @property
    def is_running(self) -> bool:
        return self._started and not self._stopped.is_set()

    def __repr__(self):
        state = "running" if self.is_running else "stopped" if self._stopped.is_set() else "not started"
        return f"<dfcore.train.Server {self.task_name} target={self.target!r} {state}>"


def _make_server_def(server_or_cluster_def, job_name, task_index, protocol, config):
    if isinstance(server_or_cluster_def, ServerDef):
        if job_name is not None or task_index is not None:
            raise ValueError("`job_name` and `task_index` may not be given with a `ServerDef`")
        return server_or_cluster_def
    spec = ClusterSpec(server_or_cluster_def)
    if job_name is None:
        if len(spec.jobs) != 1:
            raise ValueError("Must specify an explicit `job_name`.")
        job_name = spec.jobs[0]
    if job_name not in spec.jobs:
        raise errors.InvalidArgumentError(None, None, f'Job "{job_name}" was not defined in cluster')
    if task_index is None:
        indices = spec.task_indices(job_name)
        if len(indices) != 1:
            raise ValueError("Must specify an explicit `task_index`.")
        task_index = indices[0]
    if task_index not in spec.task_indices(job_name):
        raise errors.InvalidArgumentError(None, None, f'Task {task_index} was not defined in job "{job_name}"')
    return ServerDef(spec.as_cluster_def(), job_name, int(task_index), protocol or "grpc", config)
