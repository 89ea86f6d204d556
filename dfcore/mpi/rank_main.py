"""Run a program as an MPI rank, as ``python -m mpi4py`` does, noting when the program ends.

Usage (what :func:`dfcore.mpi.env.mpiexec_command` puts after ``mpiexec -n N``)::

    python <this file> train.py --steps 10      # or: python <this file> -m package.module ...

Source: ``mpi4py.run`` (an uncaught exception or a non-zero ``sys.exit`` in one rank calls ``MPI_Abort``
and ends the whole job), plus the departure note of :mod:`dfcore.mpi.departure_note`, so that
the launcher ends a job whose rank's program returned or called ``sys.exit(0)`` while the others
wait for it, whether or not the program imports ``dfcore``. Run by its path, it loads the note's
module and the rank variables by path too: the rank never imports ``dfcore`` unless its program does.
"""

import importlib.util
import os
import sys


def _load(name):
    """The sibling module ``<name>.py`` of this file, loaded by path (stdlib-only modules)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_dfcore_rank_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    note, env = _load("departure_note"), _load("env")
    note.install(lambda: env.launcher_rank() or 0)
    sys.path[0] = os.getcwd()  # as under `python -m mpi4py`: not this file's directory
    from mpi4py.run import main as run_rank  # after the note, which must precede MPI's exit

    run_rank()


if __name__ == "__main__":
    main()
