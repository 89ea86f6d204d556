"""Python's cyclic garbage collector held off while a run signature is compiled.

Compiling a big graph's first run (prune, place, optimize, partition, compile) allocates a few objects per
node that all stay alive; each allocation burst triggers the collector, and its oldest generation rescans
every object of the process, the whole user graph included. At 40k ops that was about half of the first
run, and its share grows with the graph (the number of full collections grows with the heap, and each one
is as big as the heap). The compile creates no garbage cycles worth collecting on the way, so the
collector is switched off for its duration and back on after it, as it was; the next collections then
scan what the compile made as they scan anything else. (Moving it to the oldest generation at once with
``gc.freeze()``/``gc.unfreeze()`` saved a little more but let the garbage cycles of programs that build many
short sessions wait for rare full collections: the chaos soak's tf.data driver grew from 60 to 142 MiB in
two minutes.) CPython's collector is process-wide: concurrent compiles share one pause (a depth count), and
a collector the program switched off itself stays off.

Source: CPython's ``gc`` module documentation (``gc.disable``/``gc.enable``); TF's graph compilation runs in
C++ and never meets this collector.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0  # pauses in progress
_resume = False  # whether the collector was on when the outermost pause began


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector off for the ``with`` block (nested and concurrent blocks share one
    pause); on leaving the last block the collector is on again if it was on when the first began. Raises
    nothing of its own."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
