"""Simulated step time of the model-parallel MLP (``dfcore.examples.model_parallel``) under placements (a)–(d) and
of the hand placement pipelined with M = 1, 2, 4, 8 micro-batches, side by side, on 4 simulated Tesla K20m.

Two models: the example's (ten layers, 256 wide, batch 64: every op costs about its 5 µs launch) and a wider one
(1024 wide), where the cost-model placer's greedy choices move the weights and lose to the hand placement.
The numbers are simulated-clock times, deterministic; ratios are to ``one_gpu``. Bubble: measured idle share of
the stage devices, beside GPipe's ``(N − 1) / (M + N − 1)`` and the flow-shop model of unequal stages.
Nothing is asserted.
"""

import numpy as np
from _timing import one_blas_thread, report

from dfcore.examples import model_parallel as mp
from dfcore.examples.pipeline_bubble import predicted_bubble
from dfcore.examples.staged_mlp import DEFAULT_LAYERS

WIDE = (64,) + (1024,) * 9 + (10,)


def placements(layers):
    """Rows of placements (a)–(d): simulated step time, ratio to one_gpu, transfers."""
    rng = np.random.default_rng(0)
    batch = rng.random((mp.BATCH_SIZE, 64)).astype(np.float32), rng.integers(0, 10, mp.BATCH_SIZE)
    reports = {}
    for name in mp.PLACEMENTS:
        measured = reports["cost_static"].step_stats if name == "cost_measured" else None
        reports[name] = mp.measure(name, batch=batch, layers=layers, measured=measured)
    base = reports["one_gpu"].step_s
    return [row for name, r in reports.items() for row in (
        (f"{name} step", r.step_s * 1e6, "µs (simulated)"), (f"{name} / one_gpu", r.step_s / base, "x"),
        (f"{name} transfers", r.transfer_bytes / 1e3, "KB"))]


def pipelined(layers):
    """Rows of the hand placement with M micro-batches: step time, its ratio to M = 1 and the bubbles."""
    reports = {m: mp.measure("by_hand", m, layers=layers) for m in (1, 2, 4, 8)}
    rows = []
    for m, r in reports.items():
        rows += [(f"by_hand M={m} step", r.step_s * 1e6, "µs (simulated)"),
                 (f"by_hand M={m} / M=1", r.step_s / reports[1].step_s, "x"),
                 (f"by_hand M={m} bubble measured", r.bubble, ""),
                 (f"by_hand M={m} bubble flow shop", r.flow_shop_bubble, ""),
                 (f"by_hand M={m} bubble GPipe (N-1)/(M+N-1)", predicted_bubble(len(r.stage_devices), m), "")]
    return rows


def main():
    """Print both tables for both models."""
    for title, layers in (("example MLP, 10 x 256", DEFAULT_LAYERS), ("wide MLP, 10 x 1024", WIDE)):
        print(f"-- {title}: placements (a)-(d), batch {mp.BATCH_SIZE}")
        report(placements(layers))
        print(f"-- {title}: GPipe micro-batches on the hand placement")
        report(pipelined(layers))


if __name__ == "__main__":
    with one_blas_thread():
        main()
