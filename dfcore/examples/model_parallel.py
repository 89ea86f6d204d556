"""Model parallelism and GPipe pipelining: a deep MLP on the digits with its layers split over 4 simulated GPUs.

Run: ``python -m dfcore.examples.model_parallel [--micro-batches M] [--epochs 8]``. For each placement it prints
one traced step on the simulated clock (Tesla K20m GPUs on PCIe 3.0): its step time, the bytes that crossed
devices and each device's peak memory (the StepStats allocator records), then trains and prints
``test_accuracy=<value>``. Placements:

* ``one_gpu`` (a): every layer under ``tf.device("/gpu:0")``;
* ``by_hand`` (b): stage s (two wide layers, :func:`~dfcore.examples.staged_mlp.split_layers`) on ``/gpu:s``;
* ``tf_rules`` (c): no ``tf.device`` at all: TF's placer puts every op with a GPU kernel on the
  highest-priority device, ``GPU:0`` (``tensorflow/core/common_runtime/placer.cc``), so TF's rules never split
  a model by themselves.

With ``--micro-batches M`` the hand placement runs GPipe's schedule (:mod:`~dfcore.examples.staged_mlp`) and
the bubble, the share of the N stage devices' time they sit idle within the pipeline, is printed predicted
``(N − 1) / (M + N − 1)`` (Huang et al., GPipe, NeurIPS 2019, §2.2) and measured on the simulated timeline.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import dfcore as tf
from dfcore.examples.digits_data import fit_full_batches, load_digits_split
from dfcore.examples.staged_mlp import DEFAULT_LAYERS, StagedMLP, build_staged_mlp

NUM_GPUS = 4
BATCH_SIZE = 64

#: Placement name → the device each of the N stages asks for (None: no ``tf.device``).
PLACEMENTS: dict[str, Callable[[int], list[str | None]]] = {
    "one_gpu": lambda n: ["/gpu:0"] * n,
    "by_hand": lambda n: [f"/gpu:{i}" for i in range(n)],
    "tf_rules": lambda n: [None] * n,
}
#: The pipeline's work: the ops with a ``micro_<m>`` scope in their name, each micro-batch's forward ops and
#: their gradients (not the sums of the micro-batches' gradients, nor the update).
PIPELINE_OP = re.compile(r"(^|/)micro_\d+/")


@dataclasses.dataclass(frozen=True)
class StepReport:
    """One traced training step on the simulated clock.

    Attributes:
        placement: the placement's name; ``micro_batches``: M.
        step_s: simulated step time (s): the end of the step's last op.
        transfer_bytes: bytes that crossed devices (every ``_Send``/``_Recv`` pair, the fed batch included).
        peak_bytes: device → peak bytes of its allocator in the step (StepStats ``AllocatorMemoryUsed``).
        busy_s: device → simulated time its ops ran (s).
        bubble: measured pipeline bubble (:func:`measured_bubble`) over the devices that ran stages.
        step_stats: the step's :class:`~dfcore.runtime.step_stats.StepStats` (for a timeline).
    """

    placement: str
    micro_batches: int
    step_s: float
    transfer_bytes: int
    peak_bytes: Mapping[str, int]
    busy_s: Mapping[str, float]
    bubble: float
    step_stats: Any


def predicted_bubble(num_stages: int, micro_batches: int) -> float:
    """GPipe's bubble fraction ``(N − 1) / (M + N − 1)`` of N stages and M micro-batches (Huang et al. 2019,
    §2.2): each device idles N − 1 of the M + N − 1 slots of equal length the schedule takes."""
    return (num_stages - 1) / (micro_batches + num_stages - 1)


def measured_bubble(step_stats: Any, devices: Sequence[str]) -> float:
    """The idle share of ``devices`` (full names) within the pipeline on the simulated clock:
    ``1 − Σ busy / (len(devices) · window)``, where busy counts the ops :data:`PIPELINE_OP` matches and the
    window runs from the first such op's start to the last one's end on any of the devices. 0.0 when they ran
    no such op."""
    spans: dict[str, list[tuple[int, int]]] = {d: [] for d in devices}
    for dev in step_stats.dev_stats:
        if dev.device in spans:
            spans[dev.device] = [(n.sim_start_micros, n.sim_end_micros) for n in dev.node_stats
                                 if PIPELINE_OP.search(n.node_name)]
    every = [s for span in spans.values() for s in span]
    if not every:
        return 0.0
    window = max(end for _, end in every) - min(start for start, _ in every)
    busy = sum(end - start for start, end in every)
    return 1.0 - busy / (len(devices) * window) if window else 0.0


def session_config(num_gpus: int = NUM_GPUS) -> Any:
    """One CPU and ``num_gpus`` simulated GPUs (Tesla K20m, the default profile)."""
    return tf.ConfigProto(device_count={"CPU": 1, "GPU": num_gpus})


def build(placement: str, micro_batches: int = 1, num_stages: int = NUM_GPUS, **kwargs: Any) -> StagedMLP:
    """:func:`~dfcore.examples.staged_mlp.build_staged_mlp` with the stage devices of ``placement``
    (a key of :data:`PLACEMENTS`); ``kwargs`` go to the builder.

    Raises:
        KeyError: an unknown placement, listing the known ones.
    """
    if placement not in PLACEMENTS:
        raise KeyError(f"Unknown placement {placement!r}; known: {', '.join(PLACEMENTS)}")
    return build_staged_mlp(PLACEMENTS[placement](num_stages), micro_batches, **kwargs)


def trace_step(sess: Any, model: StagedMLP, feed: Mapping[Any, Any], placement: str, fetch: Any = None) -> StepReport:
    """Run ``fetch`` (default the model's ``train_op``) once in ``sess`` with ``FULL_TRACE`` and report the step."""
    run_metadata = tf.RunMetadata()
    sess.run(model.train_op if fetch is None else fetch, feed,
             options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=run_metadata)
    records = tf.step_records(run_metadata)
    stats = records.step_stats
    placed = {r.node_name: r.assigned_device for r in sess.placement_records()}
    stage_devices = sorted({placed[op.name] for op in model.graph.get_operations()
                            if PIPELINE_OP.search(op.name) and op.name in placed})
    return StepReport(
        placement=placement, micro_batches=model.micro_batches,
        step_s=max((n.sim_end_micros for d in stats.dev_stats for n in d.node_stats), default=0) * 1e-6,
        transfer_bytes=sum(t.nbytes for t in records.transfers if t.src_device != t.dst_device),
        peak_bytes={d.device: max((m.peak_bytes for m in d.memory if not m.allocator_name.endswith("reserved")),
                                  default=0) for d in stats.dev_stats},
        busy_s={d.device: sum(n.sim_end_micros - n.sim_start_micros for n in d.node_stats) * 1e-6
                for d in stats.dev_stats},
        bubble=measured_bubble(stats, stage_devices) if len(stage_devices) > 1 else 0.0,
        step_stats=stats)


def measure(placement: str, micro_batches: int = 1, batch: tuple[np.ndarray, np.ndarray] | None = None,
            config: Any = None, **kwargs: Any) -> StepReport:
    """Build ``placement`` (:func:`build`), initialise it and trace one training step on ``batch``
    (default: the first :data:`BATCH_SIZE` training digits); ``kwargs`` go to the builder."""
    batch_size = kwargs.setdefault("batch_size", BATCH_SIZE)
    if batch is None:
        data = load_digits_split(seed=kwargs.get("seed", 0))
        batch = data.x_train[:batch_size], data.y_train[:batch_size]
    model = build(placement, micro_batches, **kwargs)
    with tf.Session(graph=model.graph, config=config or session_config()) as sess:
        sess.run(model.init)
        return trace_step(sess, model, {model.x: batch[0], model.y: batch[1]}, placement)


def format_report(report: StepReport) -> str:
    """Two lines: the step (time in µs, transfers in KB), then each GPU's peak memory in KB."""
    head = (f"{report.placement:10} M={report.micro_batches}  step {report.step_s * 1e6:8.1f} µs  "
            f"transfers {report.transfer_bytes / 1e3:8.1f} KB")
    if report.bubble:
        head += f"  bubble {report.bubble:.3f}"
    gpus = {d.rsplit("/", 1)[-1]: b for d, b in report.peak_bytes.items() if "GPU" in d}
    return head + "\n" + " " * 13 + "peak " + "  ".join(f"{d} {b / 1e3:7.1f} KB" for d, b in sorted(gpus.items()))


def train(placement: str = "by_hand", micro_batches: int = 1, epochs: int = 8, learning_rate: float = 0.003,
          seed: int = 0, progress: bool = True, layers: Sequence[int] = DEFAULT_LAYERS) -> float:
    """Train ``placement`` with ``micro_batches`` over full batches of :data:`BATCH_SIZE` digits for ``epochs``
    epochs (Adam); return the test accuracy (a float in [0, 1])."""
    data = load_digits_split(seed=seed)
    model = build(placement, micro_batches, batch_size=BATCH_SIZE, layers=layers, learning_rate=learning_rate,
                  seed=seed)
    with tf.Session(graph=model.graph, config=session_config()) as sess:
        sess.run(model.init)
        fit_full_batches(sess, model.train_op, model.x, model.y, data, epochs, BATCH_SIZE, seed,
                         f"{placement}, M={micro_batches}", progress)
        return float(sess.run(model.accuracy, {model.x_eval: data.x_test, model.y_eval: data.y_test}))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro-batches", type=int, default=1, help="GPipe micro-batches per batch (M)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    for placement in PLACEMENTS:
        print(format_report(measure(placement, seed=args.seed)))
    if args.micro_batches > 1:
        report = measure("by_hand", args.micro_batches, seed=args.seed)
        print(format_report(report))
        print(f"bubble with N={NUM_GPUS} stages, M={args.micro_batches}: predicted "
              f"{predicted_bubble(NUM_GPUS, args.micro_batches):.3f}, measured {report.bubble:.3f}")
    accuracy = train("by_hand", args.micro_batches, args.epochs, args.lr, args.seed, not args.no_progress)
    print(f"test_accuracy={accuracy:.4f}")


if __name__ == "__main__":
    main()
