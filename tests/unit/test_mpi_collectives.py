"""All-reduce over MPI ranks (``dfcore.mpi.collectives``) in one real 4-rank job.

The job (``mpi_programs/collectives_rank.py``) runs every check on every rank and writes
``rank<r>.json``; the tests here assert on those results. References: ``np.sum``/``mean``/``max``
of the ranks' inputs, ``MPI.Allreduce``, and the in-process ``dfcore.distribute.all_reduce``
(outputs bit for bit, trace chunk for chunk). Skipped, with the reason, where mpi4py or
``mpiexec`` is missing, and failed under ``CI=true`` (``make test`` installs both; ``tests/_requirements.py``).
"""

import json
import pathlib
import pickle
import subprocess
import sys

import pytest
from _requirements import require_module, require_mpi

from dfcore.distribute.schedules import ALGORITHMS, Message, build_schedule

PROGRAM = pathlib.Path(__file__).parent / "mpi_programs" / "collectives_rank.py"
RANKS = 4
JOB_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """``(checks per rank, out dir)`` of one 4-rank run of the rank program."""
    require_mpi()
    from dfcore.launch import command_and_env

    out = tmp_path_factory.mktemp("mpi_collectives")
    command, env, _ = command_and_env(["-n", str(RANKS), str(PROGRAM), str(out)])
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    assert proc.returncode == 0, \
        f"the MPI job failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    checks = [json.loads((out / f"rank{r}.json").read_text())["checks"] for r in range(RANKS)]
    return checks, out


def _assert_group(job, prefix, minimum):
    checks, _ = job
    for rank, rank_checks in enumerate(checks):
        group = {k: v for k, v in rank_checks.items() if k.startswith(prefix)}
        assert len(group) >= minimum, f"rank {rank} ran only {len(group)} '{prefix}' checks"
        failed = {k: detail for k, (ok, detail) in group.items() if not ok}
        assert not failed, f"rank {rank} failed: {failed}"


def test_sum_equals_numpy_mpi_and_in_process_for_every_algorithm(job):
    # 4 algorithms x {float32, float64} x {(17, 59) s1, (1003,) s3, (3,) s1 (empty chunks)}, 5 checks each
    _assert_group(job, "sum/", 4 * 2 * 3 * 5 + 3 * 5)
    checks, _ = job
    for algorithm in ALGORITHMS:
        assert checks[0][f"sum/{algorithm}/float32/(1003,)/s3/mpi_exact"][0]


def test_mean_and_max_match_numpy_and_mpi(job):
    _assert_group(job, "mean/", 3 * 5)
    _assert_group(job, "max/", 3 * 5)


def test_gathered_trace_matches_in_process_trace_chunk_for_chunk(job):
    checks, _ = job
    _assert_group(job, "trace/", 1)
    for algorithm in ALGORITHMS:
        for part in ("rounds_chunks", "bytes", "layout", "values", "inputs", "transfer_times"):
            assert checks[0][f"trace/{algorithm}/{part}"][0], (algorithm, part)


def test_mismatched_shapes_and_dtypes_raise_on_every_rank_naming_ranks(job):
    checks, _ = job
    _assert_group(job, "error/", 2)
    for rank_checks in checks:
        assert "rank 2: [5]" in rank_checks["error/shape"][1] and "rank 0: [4]" in rank_checks["error/shape"][1]
        assert "rank 1: float64" in rank_checks["error/dtype"][1]


def test_bad_arguments_raise_the_in_process_error_on_every_rank(job):
    checks, _ = job
    _assert_group(job, "argument/", 2)
    _assert_group(job, "sum/after_argument_errors/", 3)
    for rank_checks in checks:
        assert "num_subchunks must be an integer in [1, 2] for a ring all-reduce of 5 elements on 4 ranks" in \
            rank_checks["argument/num_subchunks"][1]
        assert "root must be an integer in [0, 3] (one of 4 ranks), got 4" in rank_checks["argument/root"][1]


def test_gathered_result_shows_in_all_reduce_view(job):
    require_module("ipywidgets")
    from widgets import AllReduceView

    _, out = job
    result = pickle.loads((out / "result.pickle").read_bytes())
    view = AllReduceView(result, clock="wall")
    assert result.trace.devices[3] == "/job:worker/replica:0/task:3/device:CPU:0"
    assert len(view.frame_states) == result.trace.num_rounds + 1 == 2 * (RANKS - 1) + 1
    assert view.times["wall"] == result.wall_time_s > 0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("num_ranks", [2, 3, 4, 5, 7])
def test_no_rank_receives_what_it_sends_in_the_same_round(algorithm, num_ranks):
    # The MPI version posts a round's sends and receives at once; that equals the in-process
    # sequential order only if no rank's received and sent element ranges overlap within a round.
    for subchunks in (1, 3):
        schedule = build_schedule(algorithm, num_ranks, 101, subchunks)
        rounds = {}
        for step in schedule.steps:
            if isinstance(step, Message):
                rounds.setdefault((step.round, step.src), []).append(("send", step.element_range))
                rounds.setdefault((step.round, step.dst), []).append(("recv", step.element_range))
        for (rnd, rank), moves in rounds.items():
            sent = [r for kind, r in moves if kind == "send"]
            got = [r for kind, r in moves if kind == "recv"]
            assert not any(a < d and c < b for a, b in sent for c, d in got), (algorithm, rnd, rank)


def test_importing_the_module_does_not_start_mpi():
    code = "import sys, dfcore.mpi.collectives; print('mpi4py' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
