"""The pipeline bubble of GPipe's schedule: predicted by GPipe's formula, by a flow-shop model, and measured.

GPipe (Huang et al., NeurIPS 2019, §2.2) runs the forward passes of M micro-batches through N stages, then
their backward passes. With every stage taking the same time per micro-batch and free hand-offs, each device
is idle ``(N − 1) / (M + N − 1)`` of the time: :func:`predicted_bubble`.

Real stages differ (the last one also computes the loss; the first computes no gradient for the input), and
each hand-off is a transfer over a link (latency + bytes / bandwidth, PCIe 2.0 between the simulated K20m GPUs).
:func:`flow_shop_bubble` takes both into account. Each phase is a flow shop of M identical jobs through the
stages with the N − 1 links as extra stages, and such a shop takes ``Σ stage times + (M − 1) · max stage time``
(every job follows the slowest stage after the first). Forward phase ``F = Σ f_s + (N − 1) t + (M − 1) ·
max(f_1 … f_N, t)``, backward phase ``B`` the same with the ``b_s``; the devices work ``M · Σ (f_s + b_s)``
of ``N · (F + B)``. With equal stages and ``t = 0`` it is GPipe's formula exactly.

:func:`measured_bubble` reads the idle share off a step's simulated timeline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: The pipeline's work: ops with a ``micro_<m>`` scope in their name, each micro-batch's forward ops and their
#: gradients (not the sums of the micro-batches' gradients, nor the update).
PIPELINE_OP = re.compile(r"(^|/)micro_\d+/")
#: Backward ops: those a ``tf.gradients`` call named (``gradients/…``, ``gradients_3/…``) and their seeds
#: (``micro_<m>/loss/grad_seed``).
BACKWARD_OP = re.compile(r"^gradients(_\d+)?/|/grad_seed$")


def predicted_bubble(num_stages: int, micro_batches: int) -> float:
    """GPipe's bubble fraction ``(N − 1) / (M + N − 1)`` of N stages and M micro-batches.

    Raises:
        ValueError: ``num_stages`` or ``micro_batches`` below 1.
    """
    if num_stages < 1 or micro_batches < 1:
        raise ValueError(f"need num_stages >= 1 and micro_batches >= 1, got {num_stages} and {micro_batches}")
    return (num_stages - 1) / (micro_batches + num_stages - 1)


def flow_shop_bubble(forward_s: Sequence[float], backward_s: Sequence[float], micro_batches: int,
                     transfer_s: float = 0.0) -> float:
    """The bubble of GPipe's schedule with stage s taking ``forward_s[s]`` and ``backward_s[s]`` seconds per
    micro-batch and each hand-off ``transfer_s`` seconds (the flow-shop model of the module docstring).

    Raises:
        ValueError: the two lists differ in length or are empty, or ``micro_batches < 1``.
    """
    if len(forward_s) != len(backward_s) or not forward_s or micro_batches < 1:
        raise ValueError(f"need as many forward as backward stage times (got {len(forward_s)} and "
                         f"{len(backward_s)}, at least one) and micro_batches >= 1 (got {micro_batches})")
    n, m = len(forward_s), micro_batches

    def phase(times):
        return sum(times) + (n - 1) * transfer_s + (m - 1) * max(max(times), transfer_s if n > 1 else 0.0)

    window = phase(forward_s) + phase(backward_s)
    return 1.0 - m * (sum(forward_s) + sum(backward_s)) / (n * window) if window else 0.0


def measured_bubble(step_stats: Any, devices: Sequence[str]) -> float:
    """The idle share of ``devices`` (full names) within the pipeline on the simulated clock of ``step_stats``
    (a :class:`~dfcore.runtime.step_stats.StepStats`): ``1 − Σ busy / (len(devices) · window)``, where busy
    counts the ops :data:`PIPELINE_OP` matches and the window runs from the first such op's start to the last
    one's end on any of the devices. 0.0 when they ran no such op."""
    spans = [(start, end) for start, end, _ in _pipeline_ops(step_stats, devices)]
    if not spans:
        return 0.0
    window = max(end for _, end in spans) - min(start for start, _ in spans)
    busy = sum(end - start for start, end in spans)
    return 1.0 - busy / (len(devices) * window) if window else 0.0


def stage_times(step_stats: Any, devices: Sequence[str], micro_batches: int) -> tuple[list[float], list[float]]:
    """``(forward_s, backward_s)``: per stage device, the simulated time (s) of its pipeline ops per micro-batch,
    forward and backward (:data:`BACKWARD_OP`), as :func:`flow_shop_bubble` takes them."""
    forward = {d: 0 for d in devices}
    backward = {d: 0 for d in devices}
    for start, end, (device, name) in _pipeline_ops(step_stats, devices):
        (backward if BACKWARD_OP.search(name) else forward)[device] += end - start
    return ([forward[d] * 1e-6 / micro_batches for d in devices],
            [backward[d] * 1e-6 / micro_batches for d in devices])


def _pipeline_ops(step_stats, devices):
    wanted = set(devices)
    return [(n.sim_start_micros, n.sim_end_micros, (dev.device, n.node_name)) for dev in step_stats.dev_stats
            if dev.device in wanted for n in dev.node_stats if PIPELINE_OP.search(n.node_name)]
