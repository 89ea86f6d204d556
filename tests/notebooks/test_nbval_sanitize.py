"""Specification of ``notebooks/nbval_sanitize.cfg``: what nbval masks before comparing the lesson
cells marked ``# NBVAL_CHECK_OUTPUT``, and what it must leave compared."""

import pathlib
import re
from collections import OrderedDict

import pytest
from _requirements import require_module

nbval_plugin = require_module("nbval.plugin")

SANITIZE_FILE = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "nbval_sanitize.cfg"


def sanitize(text):
    """Apply the patterns exactly as nbval does (file order, ``re.sub`` each, later duplicates win)."""
    patterns = OrderedDict(nbval_plugin.get_sanitize_patterns(SANITIZE_FILE.read_text(encoding="utf-8")))
    for regex, replace in patterns.items():
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.parametrize("run_a, run_b", [
    ("<widgets.Foo object at 0x7f3a5c2d1e90>", "<widgets.Foo object at 0x7fe01b2c3d40>"),
    ("graph-style step: 412.5 µs, eager: 1,204 µs", "graph-style step: 388.0 µs, eager: 1,310 µs"),
    ("took 12.3ms (3.1 ms per op)", "took 9.8ms (2.0 ms per op)"),
    ("Wall time: 2.31 s", "Wall time: 1.9 s"),
    ("wall_s=0.123", "wall_s=0.098"),
    ("CPU times: user 1.2 ms, sys: 0 ns, total: 1.2 ms", "CPU times: user 3 ms, sys: 12 µs, total: 3 ms"),
    ("5.21 ms ± 102 µs per loop (mean ± std. dev. of 7 runs, 100 loops each)",
     "4.9 ms ± 88.1 µs per loop (mean ± std. dev. of 7 runs, 100 loops each)"),
    ("epoch: 100%|██████████| 10/10 [00:01<00:00,  9.51it/s]",
     "epoch: 100%|██████████| 10/10 [00:00<00:00, 12.20it/s]"),
    ("saved to /tmp/tmpa1b2c3/model.ckpt", "saved to /tmp/tmpz9y8x7/model.ckpt"),
    ("saved to /var/folders/xy/abc123/T/tmpq/model.ckpt", "saved to /tmp/tmpz9y8x7/model.ckpt"),
    ("run at 2026-11-22 23:41:07.123456", "run at 2026-11-23 08:00:00.5"),
    ("thread_id=140213", "thread_id=139877"),
    ("<tf.Tensor: id=12, shape=(), dtype=float32, numpy=3.0>", "<tf.Tensor: id=57, shape=(), dtype=float32, numpy=3.0>"),
    ('<svg width="320pt"><g id="graph0"><text>MatMul</text></g></svg>',
     '<svg width="318pt"><g id="graph0"><text>MatMul</text></g></svg>'),
    ('<div class="dfcore-static" data-widget="TimelineView"><div>step 2.1 ms (wall time)</div></div>',
     '<div class="dfcore-static" data-widget="TimelineView"><div>step 3.4 ms (wall time)</div>\n</div>'),
])
def test_machine_dependent_values_compare_equal(run_a, run_b):
    assert sanitize(run_a) == sanitize(run_b)


@pytest.mark.parametrize("run_a, run_b", [
    ("result [[5.]]", "result [[6.]]"),
    ("simulated 4.20 ms", "simulated 4.25 ms"),
    ("simulated step time: 830 µs, wall 2.1 ms", "simulated step time: 831 µs, wall 2.1 ms"),
    ("sim 12 us", "sim 13 us"),
    ("PS sync per step: 10.8 s", "PS sync per step: 11.9 s"),
    ("MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0",
     "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:1"),
    ("pairs inserted: 3, transfers saved: 1", "pairs inserted: 4, transfers saved: 1"),
    ("overlap 37%", "overlap 38%"),
    ("<tf.Tensor: id=12, shape=(), dtype=float32, numpy=3.0>", "<tf.Tensor: id=12, shape=(), dtype=float32, numpy=4.0>"),
    ("/job:localhost/replica:0/task:0/device:CPU:0;0000000000000001;/job:localhost/replica:0/task:0/device:GPU:0;"
     "edge_5_x;0:0",
     "/job:localhost/replica:0/task:0/device:CPU:0;0000000000000002;/job:localhost/replica:0/task:0/device:GPU:0;"
     "edge_5_x;0:0"),
])
def test_lesson_values_stay_compared(run_a, run_b):
    assert sanitize(run_a) != sanitize(run_b)


def test_wall_times_are_masked_but_simulated_times_on_the_same_line_are_kept():
    line = "simulated 4.2 ms, wall 3.9 ms"
    assert sanitize(line) == "simulated 4.2 sim-ms, wall WALL_TIME"
