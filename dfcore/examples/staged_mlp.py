"""A deep ReLU MLP cut into pipeline stages, one device per stage, with GPipe micro-batches.

Model parallelism puts different layers on different devices; pipelining splits each batch into M
micro-batches that flow through the N stages one after another, so that stage s works on micro-batch m
while stage s+1 works on micro-batch m−1. GPipe's schedule (Huang et al., "GPipe: Efficient Training of
Giant Neural Networks using Pipeline Parallelism", NeurIPS 2019, §2.2): the forward passes of all
micro-batches, then their backward passes, the gradients of every micro-batch summed, and one update per
batch. Its idle "bubble" is ``(N − 1) / (M + N − 1)`` of each device's time.

In a dataflow graph the schedule needs no scheduler: the backward pass of each micro-batch starts from a
seed with a control dependency on the batch's loss (the sum of the micro-batch losses), so no backward op
can start before every forward has ended; an ``AddN`` beside each weight sums its M gradients. The loss of
micro-batch m is
``sum of its cross-entropies / batch_size``, so the M losses add up to the batch's mean loss exactly and the
gradients equal the un-pipelined step's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import dfcore as tf

#: 64 pixels → nine hidden layers of 256 ReLU units → 10 classes: ten weight layers, eight of them 256 × 256,
#: two of those per stage on 4 GPUs (the small first and last layers ride along with the first and last stage).
DEFAULT_LAYERS = (64, 256, 256, 256, 256, 256, 256, 256, 256, 256, 10)


@dataclasses.dataclass(frozen=True)
class DigitsMLP:
    """What every MLP graph of the model-parallel examples has.

    Attributes:
        graph: its ``tf.Graph``; ``x`` (float ``[batch_size, 64]``) and ``y`` (int64 ``[batch_size]``) its inputs.
        loss: the batch's mean cross-entropy.
        grads_and_vars: the gradients of ``loss`` and their variables.
        train_op: one Adam (or plain SGD) update from ``grads_and_vars``; ``init`` the initializer.
        x_eval, y_eval, accuracy: a whole-batch forward pass for evaluation (any batch size).
    """

    graph: Any
    x: Any
    y: Any
    loss: Any
    grads_and_vars: tuple[tuple[Any, Any], ...]
    train_op: Any
    init: Any
    x_eval: Any
    y_eval: Any
    accuracy: Any


@dataclasses.dataclass(frozen=True)
class StagedMLP(DigitsMLP):
    """The graph of one placement of the staged MLP (:class:`DigitsMLP`, its ``loss`` the sum of the M
    micro-batch losses and its gradients summed over the micro-batches), and:

    Attributes:
        stages: one list of ``(weights, biases)`` variables per stage.
        stage_devices: the device each stage asked for (None: no ``tf.device``, the placer decides).
        micro_batches: M.
    """

    stages: tuple[tuple[tuple[Any, Any], ...], ...] = ()
    stage_devices: tuple[str | None, ...] = ()
    micro_batches: int = 1

    @property
    def variables(self) -> list[Any]:
        """All weights and biases, stage by stage."""
        return [v for stage in self.stages for layer in stage for v in layer]


def split_layers(num_layers: int, num_stages: int) -> list[list[int]]:
    """Layer indices ``0 … num_layers−1`` cut into ``num_stages`` contiguous stages: the inner layers
    ``1 … num_layers−2`` (the wide ones) in runs of (almost) equal length, then the first layer joins the first
    stage and the last layer the last stage, e.g. 10 layers on 4 stages: ``[0 1 2] [3 4] [5 6] [7 8 9]``.

    Raises:
        ValueError: ``num_stages < 1``, no layer, or (with several stages) fewer than ``num_stages`` inner layers.
    """
    if num_stages == 1 and num_layers >= 1:
        return [list(range(num_layers))]
    if num_stages < 1 or num_layers - 2 < num_stages:
        raise ValueError(f"Cannot cut {num_layers} layers into {num_stages} stages: every stage needs an inner layer "
                         f"(at least {num_stages + 2} layers)")
    stages = [[int(i) for i in part] for part in np.array_split(np.arange(1, num_layers - 1), num_stages)]
    stages[0].insert(0, 0)
    stages[-1].append(num_layers - 1)
    return stages


def build_staged_mlp(stage_devices: Sequence[str | None], micro_batches: int = 1, batch_size: int = 64,
                     layers: Sequence[int] = DEFAULT_LAYERS, learning_rate: float = 0.003, seed: int = 0,
                     dtype: Any = tf.float32, optimizer: str = "adam") -> StagedMLP:
    """Build the staged MLP in a new graph: stage s (its layers from :func:`split_layers`, its forward and
    backward ops for every micro-batch, its variables and their updates) on ``stage_devices[s]``; the input
    placeholders and their split into micro-batches on ``/cpu:0``.

    Args:
        stage_devices: one device string per stage, or None for no ``tf.device`` (the session's placer decides).
        micro_batches: M, a divisor of ``batch_size``.
        layers: layer widths, input first; He-initialised (truncated normal, stddev √(2/fan-in)) with zero biases.
        optimizer: ``"adam"`` or ``"sgd"`` (``GradientDescentOptimizer``).

    Raises:
        ValueError: ``micro_batches`` does not divide ``batch_size``, more stages than layers, or an unknown optimizer.
    """
    if micro_batches < 1 or batch_size % micro_batches:
        raise ValueError(f"micro_batches {micro_batches} must be a positive divisor of batch_size {batch_size}")
    opt = make_optimizer(optimizer, learning_rate)
    devices = tuple(stage_devices)
    cuts = split_layers(len(layers) - 1, len(devices))
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        x, y = digits_inputs(batch_size, layers[0], dtype)
        with tf.device("/cpu:0"):
            x_parts = tf.split(x, micro_batches) if micro_batches > 1 else [x]
            y_parts = tf.split(y, micro_batches) if micro_batches > 1 else [y]
        stages = []
        for s, layer_ids in enumerate(cuts):
            with tf.device(devices[s]), tf.name_scope(f"stage_{s}"):
                stages.append(tuple(_layer_variables(i, layers[i], layers[i + 1], seed, dtype) for i in layer_ids))
        losses = []
        for m in range(micro_batches):
            with tf.name_scope(f"micro_{m}"):
                logits = forward(x_parts[m], stages, devices)
                with tf.device(devices[-1]), tf.name_scope("loss"):
                    xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_parts[m], logits=logits)
                    losses.append(tf.reduce_sum(xent) / float(batch_size))
        with tf.device(devices[-1]):
            loss = tf.add_n(losses, name="loss") if micro_batches > 1 else tf.identity(losses[0], name="loss")
        variables = [v for stage in stages for layer in stage for v in layer]
        grads_and_vars = list(zip(_accumulated_gradients(losses, loss, variables, devices[-1]), variables))
        train_op = opt.apply_gradients(grads_and_vars)
        x_eval, y_eval, accuracy = eval_accuracy(lambda h: forward(h, stages, devices), layers[0], dtype)
        init = tf.global_variables_initializer()
    return StagedMLP(graph, x, y, loss, tuple(grads_and_vars), train_op, init, x_eval, y_eval, accuracy,
                     stages=tuple(stages), stage_devices=devices, micro_batches=micro_batches)


def make_optimizer(optimizer: str, learning_rate: float) -> Any:
    """``tf.train.AdamOptimizer`` for ``"adam"``, ``GradientDescentOptimizer`` for ``"sgd"``.

    Raises:
        ValueError: any other name.
    """
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    return (tf.train.AdamOptimizer(learning_rate) if optimizer == "adam"
            else tf.train.GradientDescentOptimizer(learning_rate))


def initial_weights(index: int, fan_in: int, fan_out: int, seed: int, dtype: Any = tf.float32) -> Any:
    """Layer ``index``'s initial ``[fan_in, fan_out]`` weights: He's truncated normal (stddev √(2/fan-in)),
    op seed ``seed + index``, so every model built with one graph seed starts from the same weights."""
    return tf.truncated_normal([fan_in, fan_out], stddev=math.sqrt(2.0 / fan_in), seed=seed + index, dtype=dtype)


def digits_inputs(batch_size: int, width: int, dtype: Any = tf.float32) -> tuple[Any, Any]:
    """The training placeholders on ``/cpu:0``: ``x`` (``[batch_size, width]``) and ``y`` (int64 ``[batch_size]``)."""
    with tf.device("/cpu:0"):
        return tf.placeholder(dtype, [batch_size, width], name="x"), tf.placeholder(tf.int64, [batch_size], name="y")


def eval_accuracy(logits_of: Any, width: int, dtype: Any = tf.float32) -> tuple[Any, Any, Any]:
    """Placeholders ``x`` (``[None, width]``) and ``y`` (int64 ``[None]``) under ``eval/``, and the float32
    share of rows whose ``argmax(logits_of(x))`` equals ``y``."""
    with tf.name_scope("eval"):
        x_eval = tf.placeholder(dtype, [None, width], name="x")
        y_eval = tf.placeholder(tf.int64, [None], name="y")
        correct = tf.equal(tf.argmax(logits_of(x_eval), 1), y_eval)
        return x_eval, y_eval, tf.reduce_mean(tf.cast(correct, tf.float32))


def _layer_variables(index, fan_in, fan_out, seed, dtype):
    init = initial_weights(index, fan_in, fan_out, seed, dtype)
    return tf.Variable(init, name=f"w{index}"), tf.Variable(tf.zeros([fan_out], dtype=dtype), name=f"b{index}")


def _accumulated_gradients(losses, loss, variables, last_device):
    """Each variable's gradient of ``sum(losses)``: the backward pass of micro-batch m is its own
    ``tf.gradients`` call (so its ops come before micro-batch m+1's in the graph, and a device that has two
    micro-batches' gradients ready runs the earlier one first), started from a seed that waits for ``loss``,
    i.e. for every forward pass; each gradient op sits with its forward op (``colocate_gradients_with_ops``)
    and each variable's sum of the M gradients with the variable."""
    per_micro = []
    for m, micro_loss in enumerate(losses):
        with tf.device(last_device), tf.control_dependencies([loss]):
            seed = tf.ones_like(micro_loss, name=f"micro_{m}/loss/grad_seed")
        per_micro.append(tf.gradients(micro_loss, variables, grad_ys=seed, colocate_gradients_with_ops=True))
    if len(per_micro) == 1:
        return per_micro[0]
    sums = []
    with tf.name_scope("accumulate"):
        for variable, grads in zip(variables, zip(*per_micro)):
            with tf.colocate_with(variable):
                sums.append(tf.add_n(list(grads), name=variable.op.name.replace("/", "_")))
    return sums


def forward(h: Any, stages: Sequence[Sequence[tuple[Any, Any]]], devices: Sequence[str | None]) -> Any:
    """The MLP's logits for ``h`` (``[batch, layers[0]]``): ``h @ w + b`` per layer, ReLU after all but the
    last; stage s's ops on ``devices[s]``."""
    last = sum(len(stage) for stage in stages) - 1
    layer = 0
    for s, stage in enumerate(stages):
        with tf.device(devices[s]), tf.name_scope(f"stage_{s}"):
            for w, b in stage:
                h = tf.matmul(h, w) + b
                h = h if layer == last else tf.nn.relu(h)
                layer += 1
    return h
