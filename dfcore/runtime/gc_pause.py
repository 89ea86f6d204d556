"""Python's cyclic garbage collector held off while a run signature is compiled.

Compiling a big graph's first run (prune, place, optimize, partition, compile) allocates a few objects per
node that all stay alive; each allocation burst triggers the collector, and its oldest generation rescans
every object of the process, the whole user graph included. At 40k ops that was about half of the first
run, and its share grows with the graph (the number of full collections grows with the heap, and each one
is as big as the heap). The compile creates no garbage cycles worth collecting on the way, so the
collector is switched off for its duration and back on after it, as it was; the next collections then
scan what the compile made as they scan anything else. A compile that made many objects ends with one
collection of the two young generations: left to itself, the collector would scan all of them twice at the
next allocations (a young collection, then the middle generation's, which comes due at once), finding the
same garbage (200k-op chain: about 1 s less). (Moving it to the oldest generation at once with
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
# objects a pause may leave in the young generation before its end sweeps them (a compile of a few thousand ops)
_SWEEP_AFTER = 100_000


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector off for the ``with`` block (nested and concurrent blocks share one
    pause); on leaving the last block the collector is on again if it was on when the first began, after one
    collection of the young generations when the block left more than ``_SWEEP_AFTER`` objects there. Raises
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
                if gc.get_count()[0] > _SWEEP_AFTER:
                    gc.collect(1)
                gc.enable()
