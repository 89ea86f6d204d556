"""Rank program that never imports dfcore: rank 1 calls ``sys.exit(0)`` while the others wait in a barrier.

Usage: ``plain_leave.py``. Rank 1 prints ``left_at=<time.time()>`` just before it leaves; the others would wait
for it forever. A user's own mpi4py program under ``python -m dfcore.launch`` looks like this.
"""

import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 1:
    print(f"left_at={time.time()}", flush=True)
    sys.exit(0)
comm.Barrier()
assert "dfcore" not in sys.modules
