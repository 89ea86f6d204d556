"""A job of plain processes, one per task of a cluster, that find each other by loopback address.

Source: how TF's classic between-graph programs are started (the "Distributed TensorFlow" how-to and
``mnist_replica.py``: one process per task, each told the cluster by ``TF_CONFIG`` or by
``--ps_hosts/--worker_hosts/--job_name/--task_index``) and issue 16 item 3 (the launcher's rules).
Used by ``python -m dfcore.launch --grpc`` and ``run_job(..., transport="grpc")``; the MPI launcher's
rules that hold for both live in :mod:`dfcore.mpi.job_command` (arguments, exit statuses) and
:mod:`dfcore.launch` (deadline, heartbeat).

* Each task gets a free port on ``127.0.0.1`` (:func:`free_loopback_ports`) and ``TF_CONFIG``
  (:func:`task_environment`); tasks are numbered job by job as MPI ranks are
  (:class:`~dfcore.mpi.world.Layout`), and that number goes in ``DFCORE_TASK_RANK`` so that
  :func:`dfcore.mpi.report` knows whom it speaks for.
* Every line a task writes is prefixed with its task, ``[worker:0] ...`` (:class:`TaskJob`).
* The job ends when the chief (``worker`` 0) ends — its exit status is the job's — or as soon as any
  task fails (a non-zero status; killed by signal N counts as ``128 + N``, as in a shell); the others are
  then killed. Each task runs in a session of its own and dies with the thread that started it
  (:func:`dfcore.mpi.processes.start_job`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO

from .distribute.cluster_resolver.tfconfig import TF_CONFIG_ENV
from .mpi.process_jobs import ProcessJobKind, register_process_job
from .mpi.processes import kill_job, start_job
from .mpi.report import TASK_RANK_ENV
from .mpi.world import Layout
from .transport import SERVERS_ENV

#: The task whose end ends the job (TF's chief when the cluster has no ``chief`` job).
CHIEF = ("worker", 0)
_TAG = re.compile(r"^\[([A-Za-z_][\w-]*):(\d+)\] ?(.*)$")


def free_loopback_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on ``127.0.0.1`` that were free a moment ago
    (:func:`dfcore.transport.grpc_server.free_ports`, imported here on first use: grpcio loads only for gRPC jobs)."""
    from .transport.grpc_server import free_ports

    return free_ports(count)


def cluster_addresses(layout: Layout, ports: Sequence[int]) -> dict[str, list[str]]:
    """``{job: ["127.0.0.1:port", ...]}``: task ``rank`` of ``layout`` at ``ports[rank]``."""
    cluster: dict[str, list[str]] = {}
    for rank in range(layout.size):
        cluster.setdefault(layout.task_of_rank(rank)[0], []).append(f"127.0.0.1:{ports[rank]}")
    return cluster


def tf_flags(cluster: dict[str, list[str]], job: str, index: int) -> list[str]:
    """The how-to's command-line flags for one task: ``--ps_hosts=... --worker_hosts=... --job_name=...
    --task_index=...`` (a job other than ``ps``/``worker`` gets ``--<job>_hosts``)."""
    return [f"--{name}_hosts={','.join(addresses)}" for name, addresses in cluster.items()] + \
        [f"--job_name={job}", f"--task_index={index}"]


def task_environment(base: dict[str, str], cluster: dict[str, list[str]], job: str, index: int,
                     rank: int) -> dict[str, str]:
    """``base`` plus this task's ``TF_CONFIG`` (``{"cluster", "task": {"type", "index"}, "rpc_layer": "grpc"}``),
    ``DFCORE_TASK_RANK``, and ``DFCORE_SERVERS=grpc`` (its ``tf.train.Server`` listens on its address)."""
    env = dict(base)
    env[SERVERS_ENV] = "grpc"
    env[TF_CONFIG_ENV] = json.dumps({"cluster": cluster, "task": {"type": job, "index": index}, "rpc_layer": "grpc"})
    env[TASK_RANK_ENV] = str(rank)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_task(cluster: dict[str, list[str]], job: str, index: int, argv: Sequence[str], env: dict[str, str],
               with_tf_flags: bool = False, rank: int = 0, **popen_kwargs) -> subprocess.Popen:
    """Start one task, ``python argv`` (plus :func:`tf_flags` with ``with_tf_flags``), with its
    :func:`task_environment`, in a session of its own; it dies with the calling thread
    (:func:`~dfcore.mpi.processes.start_job`). ``popen_kwargs`` go to ``subprocess.Popen`` (``stdout`` ...);
    stdin is closed. Used by :class:`TaskJob`, and by hand to start, kill and restart single tasks (lesson 9).
    """
    command = [sys.executable, *argv, *(tf_flags(cluster, job, index) if with_tf_flags else [])]
    return start_job(command, env=task_environment(env, cluster, job, index, rank), stdin=subprocess.DEVNULL,
                     **popen_kwargs)


def exit_status(returncode: int) -> int:
    """A process's status as a shell reports it: killed by signal N is ``128 + N``."""
    return 128 - returncode if returncode < 0 else returncode


class TaskJob:
    """Every task of ``layout`` running ``python argv`` (plus ``--tf-flags`` words when ``with_tf_flags``).

    Args:
        layout: the jobs and their task counts (ranks job by job).
        argv: what follows ``python``: ``["train.py", ...]``, ``["-m", "module", ...]``.
        env: the base environment of every task.
        out, err: text streams that get every task's prefixed lines (the launcher's own stdout/stderr, or files).
        with_tf_flags: append :func:`tf_flags` to each task's command line.
    """

    def __init__(self, layout: Layout, argv: Sequence[str], env: dict[str, str], out: IO[str], err: IO[str],
                 with_tf_flags: bool = False) -> None:
        self.layout = layout
        self.cluster = cluster_addresses(layout, free_loopback_ports(layout.size))
        self._lock = threading.Lock()
        self.processes: list[subprocess.Popen] = []
        self._pumps: list[threading.Thread] = []
        self.ended: tuple[int, int] | None = None  # (rank, exit status) of the task that ended the job
        try:
            for rank in range(layout.size):
                self._start(rank, argv, env, out, err, with_tf_flags)
        except BaseException:
            self.kill()  # none left running when one could not start
            raise

    def _start(self, rank, argv, env, out, err, with_tf_flags):
        job, index = self.layout.task_of_rank(rank)
        process = start_task(self.cluster, job, index, argv, env, with_tf_flags, rank, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        self.processes.append(process)
        for pipe, sink in ((process.stdout, out), (process.stderr, err)):
            pump = threading.Thread(target=self._pump, args=(pipe, sink, f"[{job}:{index}] "), daemon=True,
                                    name=f"dfcore-task-output-{job}:{index}")
            pump.start()
            self._pumps.append(pump)

    def _pump(self, pipe, sink, prefix):
        for raw in iter(pipe.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            with self._lock:
                sink.write(f"{prefix}{line}\n")
                sink.flush()
        pipe.close()

    def poll(self) -> int | None:
        """The job's exit status once it has ended — the chief's when it ended, else the first failed
        task's — or None while it runs."""
        if self.ended is not None:
            return self.ended[1]
        chief = self.layout.rank_of(*CHIEF)
        for rank, process in enumerate(self.processes):
            code = process.poll()
            if code is not None and (code != 0 or rank == chief):
                self.ended = (rank, exit_status(code))
                return self.ended[1]
        return None

    def overdue(self) -> str | None:
        """Why the job must end now though it has not ended: never for a gRPC job (its chief decides)."""
        return None

    def alive(self) -> int:
        """The number of tasks still running."""
        return sum(process.poll() is None for process in self.processes)

    def describe_end(self) -> str:
        """Which task ended the job, and how."""
        if self.ended is None:
            return "the job is still running"
        rank, status = self.ended
        how = "ended" if status == 0 else (f"was killed by signal {status - 128}" if status > 128 else
                                             f"exited with status {status}")
        return f"task {self.layout.task_name(rank)} {how}"

    def kill(self) -> None:
        """SIGKILL every task (and what it started) that still runs, and wait for their output to drain."""
        for process in self.processes:
            kill_job(process)
        for pump in self._pumps:
            pump.join(timeout=5.0)


def untag(text: str, layout: Layout) -> tuple[str, dict[int, str]]:
    """``(text without task prefixes, {rank: that task's lines})`` of a :class:`TaskJob`'s output."""
    plain: list[str] = []
    by_rank: dict[int, list[str]] = {}
    for line in text.splitlines():
        match = _TAG.match(line)
        if match:
            try:
                rank = layout.rank_of(match.group(1), int(match.group(2)))
            except ValueError:
                rank = None
            if rank is not None:
                line = match.group(3)
                by_rank.setdefault(rank, []).append(line)
        plain.append(line)
    return "\n".join(plain) + ("\n" if plain else ""), {rank: "\n".join(lines) for rank, lines in by_rank.items()}


register_process_job("grpc", ProcessJobKind(TaskJob, untag))  # run_job(transport="grpc") starts TaskJobs
