"""Fair comparisons of the parameter-server modes: the learning rate per example each mode reports (against the
first update's parameter change, computed by hand in numpy) and the occasional straggler's schedule (the fraction
of slow steps it states)."""

import numpy as np
import pytest

from dfcore.distribute import parameter_server as ps
from dfcore.distribute.ps_arguments import TrainConfig
from dfcore.distribute.ps_data import ShardedDigits
from dfcore.examples import parameter_server as example
from dfcore.framework.graph import Graph
from dfcore.models.mlp import mlp_variables
from dfcore.ops import variables
from dfcore.runtime.session import Session

HIDDEN, BATCH = 16, 8


def initial_params(seed):
    graph = Graph()
    with graph.as_default():
        params = mlp_variables(64, HIDDEN, 10, seed)
        init = variables.global_variables_initializer()
    with Session(graph=graph) as session:
        session.run(init)
        return dict(zip(("w1", "b1", "w2", "b2"), session.run(list(params))))


def summed_gradient(p, x, y):
    """Σ over the examples of ∇ cross-entropy of the MLP, by hand (float64)."""
    w1, b1, w2, b2 = (p[k].astype(np.float64) for k in ("w1", "b1", "w2", "b2"))
    h = np.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(1, keepdims=True))
    d_logits = e / e.sum(1, keepdims=True)
    d_logits[np.arange(len(y)), y] -= 1.0
    d_h = (d_logits @ w2.T) * (h > 0)
    return {"w1": x.T @ d_h, "b1": d_h.sum(0), "w2": h.T @ d_logits, "b2": d_logits.sum(0)}


@pytest.mark.parametrize("fields,per_example", [
    (dict(mode="sync", learning_rate=0.6), 0.6 / (4 * BATCH)),
    (dict(mode="sync", learning_rate=0.6, replicas_to_aggregate=3, straggler={3: 4.0}), 0.6 / (3 * BATCH)),
    (dict(mode="bounded_delay", staleness=1, learning_rate=0.6), 0.6 / (4 * BATCH)),
    (dict(mode="async", learning_rate=0.2), 0.2 / BATCH),
    (dict(mode="ssp", staleness=1, learning_rate=0.2), 0.2 / BATCH),
])
def test_first_update_moves_the_parameters_by_the_rate_per_example_times_the_summed_gradient(fields, per_example):
    config = TrainConfig(steps=1, eval_every=0, hidden=HIDDEN, batch_size=BATCH, **fields)
    assert ps.learning_rate_per_example(config) == pytest.approx(per_example, rel=1e-12)
    record = ps.train(config)
    assert record.learning_rate_per_example == pytest.approx(per_example, rel=1e-12)
    first = [u for u in record.updates if u.applied and u.version_applied_at == 0]
    assert record.examples_per_update == len(first) * BATCH  # the gradients the first update applied
    data, start = ShardedDigits(4, BATCH, 0), initial_params(0)
    total = {k: np.zeros(v.shape) for k, v in start.items()}
    for u in first:
        assert u.version_computed_on == 0
        x, y = data.batch(u.worker, u.step)
        for k, g in summed_gradient(start, x.astype(np.float64), y).items():
            total[k] += g
    for k in start:
        np.testing.assert_allclose(record.params[k] - start[k], -per_example * total[k], rtol=2e-3, atol=1e-6)


def test_matched_rates_sync_at_n_times_the_async_rate():
    sync = TrainConfig(mode="sync", learning_rate=0.4)
    asynchronous = TrainConfig(mode="async", learning_rate=0.1)
    assert ps.examples_per_update(sync) == 4 * 32 and ps.examples_per_update(asynchronous) == 32
    assert ps.learning_rate_per_example(sync) == ps.learning_rate_per_example(asynchronous) == 0.1 / 32


def test_occasional_straggler_schedule_is_reproducible_and_hits_the_stated_fraction():
    config = TrainConfig(occasional_straggler=(0.1, 4.0), straggler={2: 3.0}, seed=5)
    n, steps = 4, 2500
    speeds = np.array([[config.speed(w, c) for c in range(steps)] for w in range(n)])
    again = TrainConfig(occasional_straggler=(0.1, 4.0), straggler={2: 3.0}, seed=5)
    assert np.array_equal(speeds, [[again.speed(w, c) for c in range(steps)] for w in range(n)])
    constant = np.array([3.0 if w == 2 else 1.0 for w in range(n)])[:, None]
    slow = speeds / constant
    assert set(np.unique(slow)) == {1.0, 4.0}  # the occasional factor multiplies the constant one
    fraction, sd = (slow == 4.0).mean(), np.sqrt(0.1 * 0.9 / (n * steps))
    assert abs(fraction - 0.1) < 4 * sd  # a Binomial(10000, 0.1) count within 4 standard deviations
    other_seed = TrainConfig(occasional_straggler=(0.1, 4.0), seed=6)
    assert not np.array_equal(slow == 4.0, [[other_seed.speed(w, c) == 4.0 for c in range(steps)]
                                            for w in range(n)])


def test_example_reports_the_rate_per_update_and_per_example(capsys):
    example.main(["--mode", "sync", "--replicas", "3", "--lr", "0.3", "--steps", "4",
                  "--occasional-straggler", "0.2:3"])
    out = capsys.readouterr().out
    assert "learning_rate=0.3 per update, learning_rate_per_example=0.003125 (over 96 examples per update)" in out
    example.main(["--mode", "async", "--lr", "0.1", "--steps", "4"])
    assert "learning_rate=0.1 per update, learning_rate_per_example=0.003125 (over 32 examples per update)" \
        in capsys.readouterr().out
