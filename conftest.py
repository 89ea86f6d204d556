"""pytest at the repository root: ``make test``'s ``--doctest-modules dfcore`` imports every dfcore module, and
the cupy backend imports cupy, which only a machine with the ``gpu`` extra has (DESIGN §5: GPU code is
skipped cleanly without a GPU). ``make test-gpu`` checks that module on a GPU."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("cupy") is not None else ["dfcore/backends/cupy_backend.py"]
