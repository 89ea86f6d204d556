"""Rank program that hangs: every rank waits for a message no rank sends (at most SECONDS, default 60).

Usage: ``jobs_hang.py [SECONDS [MARKER]]`` (MARKER: an unused word that lets a test find the processes).
Every rank reports ``pid`` first. The wait polls (``Iprobe`` and a 10 ms sleep) so a hung job costs
no CPU, and ends by itself after SECONDS should its killer fail.
"""

import os
import sys
import time

from mpi4py import MPI

from dfcore.mpi.report import report

comm = MPI.COMM_WORLD
report(pid=os.getpid())
give_up = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
while not comm.Iprobe(source=MPI.ANY_SOURCE) and time.monotonic() < give_up:
    time.sleep(0.01)
