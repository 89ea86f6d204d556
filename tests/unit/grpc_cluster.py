"""Start the tasks of a gRPC cluster as separate processes for tests/unit/test_grpc_*.py (bounded waits; every
process killed when the ``with`` block ends)."""

import json
import os
import queue
import subprocess
import sys
import threading
import time

from _requirements import require_module

require_module("grpc", "grpcio")  # skips (fails under CI=true) every test module importing this one

from dfcore.transport.grpc_server import free_ports  # noqa: E402 - after the check: it imports grpc

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grpc_programs", "task.py")


def cluster_dict(ps=1, workers=1):
    ports = free_ports(ps + workers)
    return {"ps": [f"localhost:{p}" for p in ports[:ps]], "worker": [f"localhost:{p}" for p in ports[ps:]]}


class Task:
    """One task process; its stdout lines arrive on a queue."""

    def __init__(self, cluster, job, index, mode, *args):
        self.name = f"{job}:{index}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")  # servers listen on their loopback addresses by default
        env.pop("DFCORE_SERVERS", None)
        env.pop("TF_CONFIG", None)
        self.process = subprocess.Popen([sys.executable, PROGRAM, json.dumps(cluster), job, str(index), mode,
                                         *map(str, args)],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines = queue.Queue()
        self.output = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self, timeout_s, what="a line"):
        """The next output line (AssertionError with the output so far after ``timeout_s``)."""
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"{self.name}: no {what} within {timeout_s} s; output:\n{''.join(self.output)}") \
                from None
        assert line is not None, f"{self.name} exited ({self.process.poll()}) before {what}:\n{''.join(self.output)}"
        return line

    def json_line(self, timeout_s, what="a result"):
        """The next output line that is a JSON object."""
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.line(max(0.01, deadline - time.monotonic()), what)
            if line.startswith("{"):
                return json.loads(line)

    def ready(self, timeout_s=60):
        while self.line(timeout_s, "'ready'") != "ready":
            pass
        return self

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


class Cluster:
    """``with Cluster(cluster) as c: c.start("ps", 0, "serve")`` — every task killed at the end."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.tasks = []

    def start(self, job, index, mode, *args):
        task = Task(self.cluster, job, index, mode, *args)
        self.tasks.append(task)
        return task

    def address(self, job, index):
        return self.cluster[job][index]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for task in self.tasks:
            task.kill()
