"""Model parallelism and GPipe pipelining: a deep MLP on the digits with its layers split over 4 simulated GPUs.

Run: ``python -m dfcore.examples.model_parallel [--micro-batches M] [--epochs 8]``. For each placement it prints
one traced step on the simulated clock (Tesla K20m GPUs on PCIe 2.0): its step time, the bytes that crossed
devices and each device's peak memory (the StepStats allocator records), then trains and prints
``test_accuracy=<value>``. Placements:

* ``one_gpu`` (a): every layer under ``tf.device("/gpu:0")``;
* ``by_hand`` (b): stage s (two wide layers, :func:`~dfcore.examples.staged_mlp.split_layers`) on ``/gpu:s``;
* ``tf_rules`` (c): no ``tf.device`` at all: TF's placer puts every op with a GPU kernel on the
  highest-priority device, ``GPU:0`` (``tensorflow/core/common_runtime/placer.cc``), so TF's rules never split
  a model by themselves;
* ``cost_static`` and ``cost_measured`` (d): no ``tf.device`` either, placed by the whitepaper's cost-model
  placer (§3.2.1, :mod:`dfcore.runtime.cost_placer`), first with the cost model's static estimates, then with
  the op times measured in the ``cost_static`` step (``PlacementOptions(measured=...)``).

With ``--micro-batches M`` the hand placement runs GPipe's schedule (:mod:`~dfcore.examples.staged_mlp`) and
the bubble, the share of the N stage devices' time they sit idle within the pipeline, is printed predicted
``(N − 1) / (M + N − 1)`` (Huang et al., GPipe, NeurIPS 2019, §2.2) and measured on the simulated timeline.

With ``--split tensor`` it splits every layer's *weights* over the GPUs instead (Megatron-LM's column and row
splits, :mod:`~dfcore.examples.tensor_parallel`): it prints one traced step of the tensor and the layer split on
2 and 4 GPUs (bytes that crossed devices, ``_Send``/``_Recv`` pairs), then trains Megatron's MLP block split over
4 GPUs and prints ``test_accuracy=<value>``.

Every session runs the graph as built (TF's no-rewrite test config, :func:`session_config`): the placements
are compared on the nodes the model builds, without the graph optimizer's fusions.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import threadpoolctl

import dfcore as tf
from dfcore.examples.digits_data import fit_full_batches, load_digits_split
from dfcore.examples.pipeline_bubble import flow_shop_bubble, measured_bubble, predicted_bubble, stage_times
from dfcore.examples.staged_mlp import DEFAULT_LAYERS, StagedMLP, build_staged_mlp
from dfcore.examples.tensor_parallel import build_tensor_parallel_mlp
from dfcore.runtime.cost_model import PCIE_2_X16, ring_allreduce_time_s, transfer_time_s
from dfcore.runtime.grappler import no_rewrite_session_config
from dfcore.runtime.step_trace import machine_for

NUM_GPUS = 4
BATCH_SIZE = 64
#: What ``--split tensor`` trains: Megatron-LM's MLP block (one column-split and one row-split layer), 64 pixels →
#: 256 ReLU units → 10 classes; the deep MLP of 10 layers trains to ≥ 0.95 only with some seeds in 8 epochs.
TENSOR_TRAIN_LAYERS = (64, 256, 10)

#: Placement name → the device each of the N stages asks for (None: no ``tf.device``).
PLACEMENTS: dict[str, Callable[[int], list[str | None]]] = {
    "one_gpu": lambda n: ["/gpu:0"] * n,
    "by_hand": lambda n: [f"/gpu:{i}" for i in range(n)],
    "tf_rules": lambda n: [None] * n,
    "cost_static": lambda n: [None] * n,
    "cost_measured": lambda n: [None] * n,
}


@dataclasses.dataclass(frozen=True)
class StepReport:
    """One traced training step on the simulated clock.

    Attributes:
        placement: the placement's name; ``micro_batches``: M.
        step_s: simulated step time (s): the end of the step's last op.
        transfer_bytes: bytes that crossed devices (every ``_Send``/``_Recv`` pair, the fed batch included).
        peak_bytes: device → peak bytes of its allocator in the step (StepStats ``AllocatorMemoryUsed``).
        busy_s: device → simulated time its ops ran (s).
        stage_devices: the devices that ran the stages, in stage order.
        bubble: measured pipeline bubble (:func:`~dfcore.examples.pipeline_bubble.measured_bubble`) over the
            stage devices; 0.0 with one.
        flow_shop_bubble: the bubble :func:`~dfcore.examples.pipeline_bubble.flow_shop_bubble` predicts from the
            step's own stage times and the slowest hand-off between stage devices.
        step_stats: the step's :class:`~dfcore.runtime.step_stats.StepStats` (for a timeline).
        send_recv: how many ``_Send``/``_Recv`` pairs moved a value between two devices in the step.
    """

    placement: str
    micro_batches: int
    step_s: float
    transfer_bytes: int
    peak_bytes: Mapping[str, int]
    busy_s: Mapping[str, float]
    stage_devices: tuple[str, ...]
    bubble: float
    flow_shop_bubble: float
    step_stats: Any
    send_recv: int = 0


def session_config(num_gpus: int = NUM_GPUS) -> Any:
    """One CPU and ``num_gpus`` simulated GPUs (Tesla K20m, the default profile), with the graph run as built:
    TF's no-rewrite test config (:func:`~dfcore.runtime.grappler.no_rewrite_session_config`), so every placement
    places the nodes the model builds (no ``_FusedMatMul`` from the remapper; lesson 01 shows the optimizer)."""
    return no_rewrite_session_config(tf.ConfigProto(device_count={"CPU": 1, "GPU": num_gpus}))


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
    records = _traced_run(sess, model.train_op if fetch is None else fetch, feed)
    stats = records.step_stats
    placed = {r.node_name: r.assigned_device for r in sess.placement_records()}
    stage_devices = tuple(dict.fromkeys(placed[w.op.name] for stage in model.stages for w, _ in stage))
    bubble = flow_bubble = 0.0
    if len(stage_devices) > 1:
        bubble = measured_bubble(stats, stage_devices)
        forward_s, backward_s = stage_times(stats, stage_devices, model.micro_batches)
        flow_bubble = flow_shop_bubble(forward_s, backward_s, model.micro_batches,
                                       _hand_off_s(model, stage_devices, machine_for(sess.device_set)))
    return _step_report(records, placement, model.micro_batches, stage_devices, bubble, flow_bubble)


def _traced_run(sess, fetch, feed):
    """Run ``fetch`` once with ``FULL_TRACE``; the step's :class:`~dfcore.runtime.config.StepRecords`."""
    run_metadata = tf.RunMetadata()
    sess.run(fetch, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=run_metadata)
    return tf.step_records(run_metadata)


def _step_report(records, placement, micro_batches, stage_devices, bubble=0.0, flow_bubble=0.0):
    stats = records.step_stats
    crossing = [t for t in records.transfers if t.src_device != t.dst_device]
    return StepReport(
        placement=placement, micro_batches=micro_batches,
        step_s=max((_sim_us(n)[1] for d in stats.dev_stats for n in d.node_stats), default=0) * 1e-6,
        transfer_bytes=sum(t.nbytes for t in crossing),
        peak_bytes={d.device: max((m.peak_bytes for m in d.memory if not m.allocator_name.endswith("reserved")),
                                  default=0) for d in stats.dev_stats},
        busy_s={d.device: sum(_sim_us(n)[1] - _sim_us(n)[0] for n in d.node_stats) * 1e-6 for d in stats.dev_stats},
        stage_devices=tuple(stage_devices), bubble=bubble, flow_shop_bubble=flow_bubble, step_stats=stats,
        send_recv=len(crossing))


def _sim_us(node: Any) -> tuple[int, int]:
    """A node's simulated ``(start, end)`` in µs (0 where the step was not replayed)."""
    return node.sim_start_micros or 0, node.sim_end_micros or 0


def _hand_off_s(model, stage_devices, machine):
    """The slowest transfer of one micro-batch's activations from a stage to the next (s)."""
    rows = model.x.shape.as_list()[0] // model.micro_batches
    itemsize = model.x.dtype.size
    widths = [stage[-1][1].shape.as_list()[0] for stage in model.stages[:-1]]
    return max(transfer_time_s(rows * width * itemsize, machine.link(src, dst))
               for width, src, dst in zip(widths, stage_devices, stage_devices[1:]))


def measure(placement: str, micro_batches: int = 1, batch: tuple[np.ndarray, np.ndarray] | None = None,
            config: Any = None, measured: Any = None, **kwargs: Any) -> StepReport:
    """Build ``placement`` (:func:`build`), initialise it and trace one training step on ``batch``
    (default: the first :data:`BATCH_SIZE` training digits); ``kwargs`` go to the builder. ``measured``: for
    ``cost_measured``, the StepStats of an earlier step of the same model (default: the ``cost_static`` step)."""
    batch_size = kwargs.setdefault("batch_size", BATCH_SIZE)
    if batch is None:
        data = load_digits_split(seed=kwargs.get("seed", 0))
        batch = data.x_train[:batch_size], data.y_train[:batch_size]
    if placement == "cost_measured" and measured is None:
        measured = measure("cost_static", micro_batches, batch, config, **kwargs).step_stats
    model = build(placement, micro_batches, **kwargs)
    with tf.Session(graph=model.graph, config=config or session_config(),
                    placement=placement_options(placement, measured)) as sess:
        sess.run(model.init)
        return trace_step(sess, model, {model.x: batch[0], model.y: batch[1]}, placement)


def measure_tensor(num_gpus: int = NUM_GPUS, batch: tuple[np.ndarray, np.ndarray] | None = None, config: Any = None,
                   **kwargs: Any) -> StepReport:
    """Trace one training step of the tensor-split MLP on ``num_gpus`` GPUs
    (:func:`~dfcore.examples.tensor_parallel.build_tensor_parallel_mlp`, ``kwargs`` go to it) on ``batch``
    (default: the first :data:`BATCH_SIZE` training digits); placement ``tensor``, no bubble."""
    batch_size = kwargs.setdefault("batch_size", BATCH_SIZE)
    if batch is None:
        data = load_digits_split(seed=kwargs.get("seed", 0))
        batch = data.x_train[:batch_size], data.y_train[:batch_size]
    model = build_tensor_parallel_mlp(num_gpus, **kwargs)
    with tf.Session(graph=model.graph, config=config or session_config(num_gpus)) as sess:
        sess.run(model.init)
        records = _traced_run(sess, model.train_op, {model.x: batch[0], model.y: batch[1]})
    return _step_report(records, "tensor", 1, model.devices)


def placement_options(placement: str, measured: Any = None) -> Any:
    """The ``Session(placement=...)`` of a placement: the cost-model placer for ``cost_static`` and (with the
    ``measured`` StepStats) ``cost_measured``; TF's rules otherwise."""
    if placement == "cost_static":
        return tf.PlacementOptions("cost_model")
    if placement == "cost_measured":
        return tf.PlacementOptions("cost_model", measured=measured)
    return tf.PlacementOptions("rules")


@dataclasses.dataclass(frozen=True)
class DataParallelEstimate:
    """Data parallelism on the same GPUs, estimated: each GPU runs the whole model on ``batch_size / N`` examples
    (``replica_step_s``: that step traced on one simulated GPU), then one ring all-reduce of all the gradients,
    ``gradient_bytes``, over PCIe (``allreduce_s``: the α-β formula of
    :func:`~dfcore.runtime.cost_model.ring_allreduce_time_s`, one fused buffer, no overlap with compute)."""

    replica_step_s: float
    allreduce_s: float
    gradient_bytes: int

    @property
    def step_s(self) -> float:
        """``replica_step_s + allreduce_s``."""
        return self.replica_step_s + self.allreduce_s


def data_parallel_estimate(layers: Sequence[int] = DEFAULT_LAYERS, batch_size: int = BATCH_SIZE,
                           num_gpus: int = NUM_GPUS, seed: int = 0) -> DataParallelEstimate:
    """:class:`DataParallelEstimate` of the staged MLP with ``layers`` on ``num_gpus`` GPUs.

    Raises:
        ValueError: ``batch_size`` not divisible by ``num_gpus``.
    """
    if batch_size % num_gpus:
        raise ValueError(f"batch_size {batch_size} must be divisible by num_gpus {num_gpus}")
    rows = batch_size // num_gpus
    data = load_digits_split(seed=seed)
    replica = measure("one_gpu", batch=(data.x_train[:rows], data.y_train[:rows]), layers=layers, batch_size=rows,
                      seed=seed)
    gradient_bytes = sum((fan_in + 1) * fan_out * 4 for fan_in, fan_out in zip(layers, layers[1:]))
    return DataParallelEstimate(replica.step_s, ring_allreduce_time_s(gradient_bytes, num_gpus, PCIE_2_X16),
                                gradient_bytes)


def format_report(report: StepReport) -> str:
    """Two lines: the step (time in µs, transfers in KB), then each GPU's peak memory in KB."""
    head = (f"{report.placement:13} M={report.micro_batches}  step {report.step_s * 1e6:8.1f} µs  "
            f"transfers {report.transfer_bytes / 1e3:8.1f} KB")
    if report.bubble:
        head += f"  bubble {report.bubble:.3f}"
    gpus = {d.rsplit("/", 1)[-1]: b for d, b in report.peak_bytes.items() if "GPU" in d}
    return head + "\n" + " " * 16 + "peak " + "  ".join(f"{d} {b / 1e3:7.1f} KB" for d, b in sorted(gpus.items()))


def train(placement: str = "by_hand", micro_batches: int = 1, epochs: int = 8, learning_rate: float = 0.003,
          seed: int = 0, progress: bool = True, layers: Sequence[int] = DEFAULT_LAYERS) -> float:
    """Train ``placement`` (a key of :data:`PLACEMENTS`, or ``"tensor"``: the tensor split over
    :data:`NUM_GPUS` GPUs, ``micro_batches`` ignored) with ``micro_batches`` over full batches of
    :data:`BATCH_SIZE` digits for ``epochs`` epochs (Adam); return the test accuracy (a float in [0, 1])."""
    data = load_digits_split(seed=seed)
    options: dict[str, Any] = dict(batch_size=BATCH_SIZE, layers=layers, learning_rate=learning_rate, seed=seed)
    model = (build_tensor_parallel_mlp(NUM_GPUS, **options) if placement == "tensor"
             else build(placement, micro_batches, **options))
    with tf.Session(graph=model.graph, config=session_config()) as sess:
        sess.run(model.init)
        fit_full_batches(sess, model.train_op, model.x, model.y, data, epochs, BATCH_SIZE, seed,
                         f"{placement}, M={micro_batches}", progress)
        return float(sess.run(model.accuracy, {model.x_eval: data.x_test, model.y_eval: data.y_test}))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("layer", "tensor"), default="layer",
                        help="layer: whole layers per GPU (the placements below); tensor: every layer's weights "
                             "split over the GPUs (Megatron-LM's column and row splits)")
    parser.add_argument("--layers", type=lambda text: tuple(int(w) for w in text.split(",")), default=DEFAULT_LAYERS,
                        help="--split tensor: the widths (input first, an even number of weight layers) of the MLP "
                             "whose step is traced in both splits (default %(default)s)")
    parser.add_argument("--micro-batches", type=int, default=1, help="GPipe micro-batches per batch (M)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    # The matrices are small (64 x 256): BLAS threads would only contend with the executor's threads.
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        run(args)


def run(args: argparse.Namespace) -> None:
    """What :func:`main` prints, for its parsed ``args``."""
    if args.split == "tensor":
        run_tensor(args)
        return
    reports: dict[str, StepReport] = {}
    for placement in PLACEMENTS:
        measured = reports["cost_static"].step_stats if placement == "cost_measured" else None
        reports[placement] = measure(placement, seed=args.seed, measured=measured)
        print(format_report(reports[placement]))
    if args.micro_batches > 1:
        report = measure("by_hand", args.micro_batches, seed=args.seed)
        print(format_report(report))
        print(f"bubble with N={NUM_GPUS} stages, M={args.micro_batches}: GPipe's (N-1)/(M+N-1) "
              f"{predicted_bubble(NUM_GPUS, args.micro_batches):.3f}, flow shop with these stages and hand-offs "
              f"{report.flow_shop_bubble:.3f}, measured {report.bubble:.3f}")
    accuracy = train("by_hand", args.micro_batches, args.epochs, args.lr, args.seed, not args.no_progress)
    print(f"test_accuracy={accuracy:.4f}")


def run_tensor(args: argparse.Namespace) -> None:
    """``--split tensor``: one traced step of the ``args.layers`` MLP in the tensor and the layer split on 2 and 4
    GPUs (bytes that crossed devices and ``_Send``/``_Recv`` pairs per step), then the tensor split of
    :data:`TENSOR_TRAIN_LAYERS` on :data:`NUM_GPUS` GPUs trained, and its test accuracy."""
    for num_gpus in (2, NUM_GPUS):
        tensor = measure_tensor(num_gpus, seed=args.seed, layers=args.layers)
        layer = measure("by_hand", num_stages=num_gpus, seed=args.seed, layers=args.layers)
        for report in (tensor, layer):
            print(f"{report.placement:7} split on {num_gpus} GPUs  step {report.step_s * 1e6:8.1f} µs  "
                  f"transfers {report.transfer_bytes / 1e3:8.1f} KB in {report.send_recv:4d} Send/Recv pairs")
        print(f"bytes per step on {num_gpus} GPUs: tensor/layer = {tensor.transfer_bytes / layer.transfer_bytes:.1f}")
    print(f"training Megatron's MLP block {'-'.join(map(str, TENSOR_TRAIN_LAYERS))} split over {NUM_GPUS} GPUs")
    accuracy = train("tensor", 1, args.epochs, args.lr, args.seed, not args.no_progress, TENSOR_TRAIN_LAYERS)
    print(f"test_accuracy={accuracy:.4f}")


if __name__ == "__main__":
    main()
