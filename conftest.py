"""pytest at the repository root: ``make test``'s ``--doctest-modules dfcore`` imports every dfcore module, and
the cupy backend imports cupy, which only a machine with the ``gpu`` extra has (GPU code is
skipped cleanly without a GPU: docs/architecture.md#devices-and-array-backends). ``make test-gpu`` checks
that module on a GPU."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("cupy") is not None else ["dfcore/backends/cupy_backend.py"]
