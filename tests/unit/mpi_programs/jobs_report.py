"""Rank program for test_mpi_jobs: every rank reports arrays, an all-reduce trace and progress.

Usage: ``jobs_report.py STEPS``. Each step is one ``MPI.Allreduce`` of the rank number; rank ``k``
reports ``rank``, ``task``, ``pid``, ``ones`` (``k`` × ones(3), float32), ``total`` (the
all-reduced sum of ranks) and ``trace`` (a ``CollectiveTrace`` of a small in-process ring).
"""

import os
import sys

import numpy as np
from mpi4py import MPI

from dfcore.distribute.all_reduce import all_reduce
from dfcore.mpi import MPIClusterResolver
from dfcore.mpi.report import progress, report

comm = MPI.COMM_WORLD
rank, steps = comm.Get_rank(), int(sys.argv[1])
resolver = MPIClusterResolver(rank=rank)
report(rank=rank, task=f"/job:{resolver.task_type}/replica:0/task:{resolver.task_id}", pid=os.getpid())
total = np.zeros(1)
for step in range(1, steps + 1):
    comm.Allreduce(np.array([float(rank)]), total, op=MPI.SUM)
    progress(step, steps)
trace = all_reduce([np.full(8, float(i), np.float32) for i in range(2)]).trace
report(ones=np.full(3, rank, np.float32), total=float(total[0]), trace=trace)
