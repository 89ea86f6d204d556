"""The tf.data soak's model of what TF delivers (tests/soak/data_job.py), checked on TF 2.21's recorded runs.

Recorded with TF 2.21 (``tf.compat.v1``, one-shot iterator): ``range(8).map(f).batch(3)`` with ``f`` failing
on element 2 gave [error, [3, 4, 5], [6, 7]]; with ``ignore_errors()`` after the batch [[3, 4, 5], [6, 7]];
``range(5).map(f)`` gave [0, 1, error, 3, 4].
"""

import os
import random
import sys

SOAK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "soak")
sys.path.insert(0, SOAK)

import data_job  # noqa: E402 - tests/soak/ is importable once on sys.path (above)

E = data_job.ERROR


def test_expected_outcomes_match_tf_recorded_runs():
    assert data_job.expected_outcomes(5, {2}, None, False) == [0, 1, E, 3, 4]
    assert data_job.expected_outcomes(8, {2}, 3, False) == [E, [3, 4, 5], [6, 7]]
    assert data_job.expected_outcomes(8, {2}, 3, True) == [[3, 4, 5], [6, 7]]
    assert data_job.expected_outcomes(5, {2}, None, True) == [0, 1, 3, 4]


def test_each_scenario_round_holds_its_invariants():
    rng = random.Random(5)
    for scenario in data_job.SCENARIOS:
        assert getattr(data_job, scenario)(rng) == [], scenario
