"""Rank program: a loop of all-reduces; in step 3 the last rank SIGKILLs itself, the others block.

The killed rank reports ``killed_at`` (``time.time()``) just before; every rank reports ``pid``.
"""

import os
import signal
import time

import numpy as np
from mpi4py import MPI

from dfcore.mpi.report import report

comm = MPI.COMM_WORLD
victim = comm.Get_size() - 1
report(pid=os.getpid())
total = np.zeros(1)
for step in range(100):
    if step == 3 and comm.Get_rank() == victim:
        report(killed_at=time.time())
        os.kill(os.getpid(), signal.SIGKILL)
    comm.Allreduce(np.ones(1), total, op=MPI.SUM)
