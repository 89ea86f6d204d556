"""What a rank sends back to whoever launched its job: reported values and progress.

Source: dfcore's own protocol between :func:`dfcore.mpi.job.run_job` and the ranks it
starts, so a job's traces show in the same widgets as an in-process run (docs/architecture.md#transports).

The launcher puts a fresh directory in ``DFCORE_RESULTS_DIR``; rank ``k`` writes

* ``rank<k>.pkl`` — a pickled ``{name: value}`` dict (:func:`report`; later calls merge,
  the same name overwrites), and
* ``rank<k>.progress`` — JSON ``{"done": d, "total": t, "what": "steps"}`` (:func:`progress`).

Both are written atomically (a temp file in the same directory, then ``os.replace``), so
the launcher, polling, and the files left by a rank killed mid-write are always whole:
the previous version or the new one. Values are pickled, with one addition: read-only
mappings (``types.MappingProxyType``, used by dfcore's frozen records such as
``CollectiveTrace`` and ``RunRecord``) are pickled as their contents and come back
read-only.

Outside a job run by :func:`~dfcore.mpi.job.run_job` (``DFCORE_RESULTS_DIR`` unset: the
script was started by hand, by ``python -m dfcore.launch`` or by plain ``python``),
:func:`report` and :func:`progress` do nothing, so a training script can call them
unconditionally.

The rank comes from the MPI launcher's environment (``OMPI_COMM_WORLD_RANK``,
``PMI_RANK``, ``PMIX_RANK``), else from ``mpi4py`` if the program already imported it —
not from :func:`dfcore.mpi.world.world`, whose ``comm.Dup`` is collective and would hang
a rank that reports alone.
"""

import copyreg
import io
import json
import os
import pickle
import sys
import types
from typing import Any

from .env import launcher_rank

#: The environment variable naming the directory the ranks write their reports into.
RESULTS_ENV = "DFCORE_RESULTS_DIR"
#: The rank of a task started as a plain process (``python -m dfcore.launch --grpc``), not by MPI.
TASK_RANK_ENV = "DFCORE_TASK_RANK"


def current_rank() -> int:
    """This process's rank in ``MPI_COMM_WORLD``, or the task number a gRPC job's launcher gave it
    (``DFCORE_TASK_RANK``); 0 for a process started otherwise."""
    if os.environ.get(TASK_RANK_ENV, "").isdigit():
        return int(os.environ[TASK_RANK_ENV])
    rank = launcher_rank()
    if rank is not None:
        return rank
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized():
        return mpi.COMM_WORLD.Get_rank()
    return 0


def report(**values: Any) -> None:
    """Send ``values`` back to the launcher: they appear in ``JobResult.ranks[rank]``.

    Merges into this rank's earlier reports (a name reported again is overwritten).
    A no-op when ``DFCORE_RESULTS_DIR`` is unset (the script was not started by ``run_job``).

    Args:
        **values: picklable objects — numpy arrays, ``StepStats``, ``CollectiveTrace``,
            ``RunRecord``, numbers, dicts of them.
    Raises:
        TypeError / pickle.PicklingError: a value cannot be pickled (nothing is written).
    """
    directory = os.environ.get(RESULTS_ENV)
    if not directory:
        return
    path = report_path(directory, current_rank())
    merged = load(path) if os.path.exists(path) else {}
    merged.update(values)
    atomic_write(path, dumps(merged))


def progress(done: int, total: int, what: str = "steps") -> None:
    """Tell the launcher's progress bar that this rank has done ``done`` of ``total`` ``what``.

    The bar shows the sum over ranks. A no-op when ``DFCORE_RESULTS_DIR`` is unset.
    """
    directory = os.environ.get(RESULTS_ENV)
    if not directory:
        return
    text = json.dumps({"done": int(done), "total": int(total), "what": str(what)})
    atomic_write(progress_path(directory, current_rank()), text.encode())


def report_path(directory: str, rank: int) -> str:
    """Where rank ``rank`` pickles its reports."""
    return os.path.join(directory, f"rank{int(rank)}.pkl")


def progress_path(directory: str, rank: int) -> str:
    """Where rank ``rank`` writes its progress."""
    return os.path.join(directory, f"rank{int(rank)}.progress")


def read_reports(directory: str, num_ranks: int) -> dict[int, dict[str, Any]]:
    """``{rank: {name: value}}`` of the ranks of ``range(num_ranks)`` that reported anything."""
    return {rank: load(report_path(directory, rank)) for rank in range(num_ranks)
            if os.path.exists(report_path(directory, rank))}


def read_progress(directory: str, num_ranks: int) -> tuple[int, int, str] | None:
    """``(done, total, what)`` summed over the ranks that reported progress; None if none did."""
    done = total = 0
    what = None
    for rank in range(num_ranks):
        try:
            with open(progress_path(directory, rank)) as f:
                state = json.load(f)
        except FileNotFoundError:
            continue
        done, total, what = done + state["done"], total + state["total"], state["what"]
    return None if what is None else (done, total, what)


def _mappingproxy(contents):
    return types.MappingProxyType(contents)


def _reduce_mappingproxy(proxy):
    return _mappingproxy, (dict(proxy),)


def dumps(obj: Any) -> bytes:
    """``pickle.dumps(obj)``, also for read-only mappings (``types.MappingProxyType``)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = copyreg.dispatch_table.copy()
    pickler.dispatch_table[types.MappingProxyType] = _reduce_mappingproxy
    pickler.dump(obj)
    return buffer.getvalue()


def load(path: str) -> Any:
    """Unpickle the file at ``path`` (written by :func:`dumps`)."""
    with open(path, "rb") as f:
        return pickle.load(f)


def atomic_write(path: str, data: bytes) -> None:
    """Replace the file at ``path`` by ``data`` (bytes) in one step, unsynced (progress and report notes)."""
    # At call time: train/ sits above distribute/ and mpi/ (distribute.cluster imports mpi), so a module-level
    # import here would close an import cycle.
    from ..train import file_io

    file_io.atomic_write(path, lambda f: f.write(data), sync=False)
