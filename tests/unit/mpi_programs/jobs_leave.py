"""Rank program: the last rank's program ends before the others'.

Usage: ``jobs_leave.py HOW [SECONDS]``. HOW says how the last rank leaves: ``exit`` (``sys.exit(0)``),
``return`` (its program ends), ``os_exit`` (``os._exit(1)``, outside MPI) — while the others wait for it
in a barrier it never joins — or ``sooner``: its program ends, and the others, which need nothing more from
it, work SECONDS (default 1) longer and end too. The last rank reports ``left_at`` (``time.time()``) just
before it leaves; every rank reports ``pid``.
"""

import os
import sys
import time

from mpi4py import MPI

from dfcore.mpi.report import report

comm = MPI.COMM_WORLD
how = sys.argv[1]
leaver = comm.Get_size() - 1
report(pid=os.getpid())
comm.Barrier()
if comm.Get_rank() == leaver:
    report(left_at=time.time())
    if how == "exit":
        sys.exit(0)
    if how == "os_exit":
        os._exit(1)
elif how == "sooner":
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
else:
    comm.Barrier()
