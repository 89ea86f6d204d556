"""The C heap keeps a step's transient buffers (:mod:`dfcore.runtime.heap`): with glibc's mmap and trim
thresholds set as its own adjustment ends them, arrays of a few MiB freed and made again every step land in
pages the process already has. Reference: the minor page faults the kernel counts (``getrusage``), in a
fresh interpreter each (malloc's thresholds are per process and adapt to its history); issue 32's conv
step took 256 per step before, 0 after."""

import os
import resource
import subprocess
import sys

import pytest

from dfcore.runtime import heap

GLIBC = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")

# One "step": a 4 MiB array (mmapped at first, which raises glibc's thresholds to 4 MiB / trim at 8 MiB),
# then twelve 1 MiB arrays freed together, 12 MiB at the heap's top: trimmed (and faulted in again) unless
# the thresholds are held. Prints the minor page faults per step after warm-up.
_STEPS = """
import resource, sys
import numpy as np
if sys.argv[1] == "held":
    from dfcore.runtime import heap
    assert heap.hold_heap()
def step():
    big = np.ones(1 << 19)
    del big
    parts = [np.ones(1 << 17) for _ in range(12)]
    del parts
for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 10)
"""


def _faults_per_step(mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _STEPS, mode], capture_output=True, text=True, env=env, timeout=120,
                          check=True)
    return int(done.stdout.split()[-1])


def test_the_thresholds_are_set_once_on_glibc_only():
    assert heap.hold_heap() is GLIBC
    assert heap.hold_heap() is GLIBC  # a second call answers the first one's result


@pytest.mark.skipif(not GLIBC or not hasattr(resource, "getrusage"), reason="glibc's malloc on Linux only")
def test_buffers_freed_and_made_again_each_step_fault_no_more_after_warm_up():
    assert _faults_per_step("plain") > 1000  # 12 MiB trimmed and faulted in again: 3072 pages, some reused
    assert _faults_per_step("held") < 16


_ADVICE = """
import sys
import numpy as np
from dfcore.runtime import heap
heap.hold_heap()
try:
    from numpy._core import multiarray
except ImportError:
    from numpy.core import multiarray
print(multiarray._set_madvise_hugepage(True))  # returns the setting it replaces
"""


@pytest.mark.parametrize("env, advised", [({}, "False"), ({"NUMPY_MADVISE_HUGEPAGE": "1"}, "True")])
def test_numpy_huge_page_advice_is_off_unless_the_user_chose(env, advised):
    # numpy's default is on where the kernel allows it (4.6+); NUMPY_MADVISE_HUGEPAGE=1 is numpy's own switch
    environ = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    environ.update(env, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _ADVICE], capture_output=True, text=True, env=environ,
                          timeout=120, check=True)
    assert done.stdout.split()[-1] == advised
