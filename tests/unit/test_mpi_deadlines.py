"""RunOptions.timeout_in_ms in an MPI job: the deadline holds between ops on every task's partition.

Reference: TF's ``DirectSession``/``MasterSession`` (``DEADLINE_EXCEEDED: Timed out waiting for
notification``), and dfcore's in-process rule (tests/unit/test_runtime_faults.py): a step past its
deadline stops before its next op everywhere and commits nothing.
"""

import pytest
from _requirements import require_mpi
from test_mpi_jobs import program

from dfcore.mpi import run_job

require_mpi()

#: generous bounds for a loaded 2-core machine: 20 slow ops take 2 s, the deadline is 0.5 s
MAX_ELAPSED_S = 1.5
MAX_SLOW_OPS = 14


@pytest.mark.parametrize("where", ["worker", "ps"])
def test_a_step_past_its_deadline_stops_between_ops_on_every_task_and_commits_nothing(where):
    result = run_job(program("deadline_between_ops.py"), ps=1, workers=1, args=[where], timeout_s=90,
                     progress=False)
    worker, ps = result.ranks["/job:worker/replica:0/task:0"], result.ranks["/job:ps/replica:0/task:0"]
    assert worker["error"] == "DeadlineExceededError", worker
    assert worker["message"].startswith("Timed out waiting for notification: the step did not finish within 0.5 s")
    assert worker["elapsed_s"] < MAX_ELAPSED_S
    assert worker["flag"] == 0.0  # the step's assign on the ps was not committed
    assert worker["next"] == 1.0  # and the session goes on
    slow_ops_run = (worker if where == "worker" else ps)["slow_ops_run"]
    assert 1 <= slow_ops_run <= MAX_SLOW_OPS, f"the partition on the {where} ran {slow_ops_run} of 20 slow ops"

