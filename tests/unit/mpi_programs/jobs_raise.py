"""Rank program: the last rank raises ValueError while the others block in a barrier.

The failing rank reports ``raised_at`` (``time.time()``) just before it raises, and prints it as ``raised_at=<t>``
for a job launched from the command line; every rank reports ``pid``.
"""

import os
import time

from mpi4py import MPI

from dfcore.mpi.report import report

comm = MPI.COMM_WORLD
culprit = comm.Get_size() - 1
report(pid=os.getpid())
comm.Barrier()
if comm.Get_rank() == culprit:
    time.sleep(0.2)
    raised_at = time.time()
    report(raised_at=raised_at)
    print(f"raised_at={raised_at}", flush=True)
    raise ValueError(f"jobs_raise: rank {culprit} fails on purpose")
comm.Barrier()
