"""A step's writes on other tasks are visible to every task once its Session.run returns (as in TF,
which applies updates in place during the step)."""

from _requirements import require_mpi
from test_mpi_jobs import program

from dfcore.mpi import run_job

require_mpi()


def test_a_steps_writes_on_other_tasks_are_visible_once_its_run_returns():
    """Worker 1's increment on the ps, then an MPI barrier, then worker 0's read: the read sees it every
    time (the commit on the ps used to be posted, not awaited, so the read could overtake it)."""
    result = run_job(program("read_after_commit.py"), ps=1, workers=2, timeout_s=120, progress=False)
    assert result.ranks["/job:worker/replica:0/task:0"]["stale"] == []
