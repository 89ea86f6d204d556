"""Whole programs timed as processes, one per engine, rounds interleaved: ``bench_whole_programs.py`` and
``bench_input_pipeline.py``.

A program (``tfdata_program.py``, ``mnist_deep_program.py``, ``two_tower_program.py``) is run as
``python PROGRAM ENGINE STEPS`` under this interpreter for dfcore and under :func:`_tf_process.tf_python` for
TensorFlow (left out when there is none), each engine with its own default threads, as a user runs a program:
the thread limits ``make bench`` sets for the kernel rows (``OMP/OPENBLAS/MKL_NUM_THREADS=1``) are taken out of
the child's environment. TF's kernels never read them (its intra-op pool has one thread per core by default), so
with them dfcore's GEMMs ran on one core against TF's two; dfcore's default (``intra_op_parallelism_threads=0``)
leaves numpy's BLAS its own default, one thread per core. It prints
``seconds S cpu C loss L``: wall and CPU seconds after its imports. The parent also takes the whole process's
wall time and its CPU time (user + system, the operating system's accounting of the finished child).
"""

from __future__ import annotations

import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time

from _tf_process import TF_PYTHON_ENV, tf_python
from _timing import report

HERE = pathlib.Path(__file__).resolve().parent
#: The environment's thread limits a program runs without (see the module docstring).
_THREAD_LIMITS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: What each run measures, in the order :func:`run_program` returns them.
MEASURES = ("after imports, wall", "after imports, CPU", "whole process, wall", "whole process, CPU")


def run_program(python: str, program: str, engine: str, steps: int) -> tuple[float, float, float, float]:
    """One run of ``program`` (a file of this folder) on ``engine``: the four :data:`MEASURES`, in seconds.

    Raises:
        subprocess.CalledProcessError: the program failed (its output is in the error).
    """
    env = {name: value for name, value in os.environ.items() if name not in _THREAD_LIMITS}
    if engine == "tensorflow":
        env.pop("PYTHONPATH", None)  # TensorFlow's environment imports nothing of this checkout
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([python, str(HERE / program), engine, str(steps)], capture_output=True, text=True,
                         env=env, check=True, timeout=600).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    words = out.split()
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return float(words[words.index("seconds") + 1]), float(words[words.index("cpu") + 1]), wall, cpu


def compare(program: str, steps: int, rounds: int, title: str, target: float) -> None:
    """Run ``program`` on dfcore and TensorFlow in interleaved rounds (the order alternates) and print the
    medians of each measure and the median of the paired ratios dfcore / TF (``target``: the issue's bound)."""
    other = tf_python()
    engines = {"dfcore": sys.executable} | ({"tensorflow": other} if other else {})
    samples: dict[str, list[tuple[float, ...]]] = {name: [] for name in engines}
    for r in range(rounds):
        for name in (list(engines) if r % 2 == 0 else list(engines)[::-1]):
            samples[name].append(run_program(engines[name], program, name, steps))
    print(f"\n{title}: {steps} steps, median of {rounds} interleaved runs per engine, load "
          f"{os.getloadavg()[0]:.1f}" + ("" if other else f"; TensorFlow not found (set {TF_PYTHON_ENV})"))
    rows = [(f"{name}: {what}", statistics.median(run[i] for run in runs), "s")
            for name, runs in samples.items() for i, what in enumerate(MEASURES)]
    if other:
        rows += [(f"dfcore / TF, {what} (target <= {target})",
                  statistics.median(a[i] / b[i] for a, b in zip(samples["dfcore"], samples["tensorflow"])), "x")
                 for i, what in enumerate(MEASURES)]
    report(rows)
