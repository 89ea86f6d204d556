"""Run every ``bench_*.py`` in this folder (or those whose names contain the given words) and print their ratios.

Usage: ``python tests/benchmarks/run_all.py [WORD ...]`` (``make bench`` runs it with BLAS on one thread).
"""

import importlib
import pathlib
import platform
import sys

import numpy as np
from _timing import blas_description, one_blas_thread

HERE = pathlib.Path(__file__).resolve().parent


def main(words):
    """Import and run ``main()`` of each selected benchmark module, in file-name order."""
    names = sorted(p.stem for p in HERE.glob("bench_*.py"))
    selected = [n for n in names if not words or any(w in n for w in words)]
    if not selected:
        sys.exit(f"no benchmark matches {words}; have: {', '.join(names)}")
    with one_blas_thread():
        print(f"Python {platform.python_version()}, numpy {np.__version__}; {blas_description()}")
        for name in selected:
            print(f"\n== {name} ==")
            importlib.import_module(name).main()


if __name__ == "__main__":
    main(sys.argv[1:])
