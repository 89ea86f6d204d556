"""Shared pytest fixtures: a fresh default graph for every test, and a thread-leak check.

A test that starts threads (executors, rendezvous, parameter servers) can ask for
``no_thread_leak`` to fail if any thread it started is still alive shortly after it ends. Every test folder
imports the suite's skip policy from this folder: ``from _requirements import require_module``.
"""

import pathlib
import sys
import threading
import time

import pytest

import dfcore
from dfcore.eager import context as eager_context

THREAD_JOIN_TIMEOUT_S = 2.0

_TESTS = str(pathlib.Path(__file__).resolve().parent)
if _TESTS not in sys.path:  # for `from _requirements import ...`; pytest's import mode may not have added it
    sys.path.insert(0, _TESTS)

# Rank programs started by the MPI tests with mpiexec, and task programs the gRPC tests start as processes: never
# collected or imported by pytest itself (`make test` passes --doctest-modules, which would import them).
# The folders' own conftest.py files are loaded as plugins, never collected as doctest modules: two of them would
# both be imported as the module `conftest`.
collect_ignore_glob = ["unit/mpi_programs/*.py", "unit/grpc_programs/*.py", "*/conftest.py"]


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    """Give every test an empty global default graph (``dfcore.reset_default_graph()``), and leave eager
    execution off after it whatever the test turned on (``dfcore.eager``)."""
    dfcore.reset_default_graph()
    yield
    eager_context._reset_for_tests()


def threads_left_running(before, timeout_s=THREAD_JOIN_TIMEOUT_S):
    """Return the threads not in ``before`` still alive after waiting up to ``timeout_s`` seconds.

    Args:
        before: the threads alive before the code under test ran (``threading.enumerate()``).
        timeout_s: how long to wait for new threads to finish on their own.

    Returns:
        list of ``threading.Thread``, empty when nothing leaked.
    """
    known = set(before)
    deadline = time.monotonic() + timeout_s
    while True:
        leaked = [t for t in threading.enumerate() if t not in known and t.is_alive()]
        if not leaked or time.monotonic() >= deadline:
            return leaked
        leaked[0].join(timeout=max(0.0, min(0.05, deadline - time.monotonic())))


@pytest.fixture
def no_thread_leak():
    """Fail the test if it leaves behind threads that are still running after it returns."""
    before = threading.enumerate()
    yield
    leaked = threads_left_running(before)
    if leaked:
        names = ", ".join(sorted(f"{t.name} (daemon={t.daemon})" for t in leaked))
        pytest.fail(f"{len(leaked)} thread(s) still running {THREAD_JOIN_TIMEOUT_S} s after the test: {names}")


@pytest.fixture
def sess():
    """A Session on a fresh graph that is the default graph during the test."""
    graph = dfcore.Graph()
    with graph.as_default(), dfcore.Session(graph=graph) as session:
        yield session
