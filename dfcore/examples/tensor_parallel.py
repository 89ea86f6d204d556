"""Tensor-slice model parallelism: one layer's weights split over devices, Megatron-LM's two MLP splits.

Source: Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model
Parallelism", 2019, §3 (Figure 3a, the MLP block). For ``Y = X W`` with W split over N devices:

* the **column split** (:func:`column_parallel_matmul`): device i holds the columns ``W_i`` and computes
  ``X W_i``, its slice of Y's columns; an element-wise op (ReLU, GeLU) can follow on each slice with no
  communication; a concat (all-gather) joins the slices where the whole Y is needed;
* the **row split** (:func:`row_parallel_matmul`): device i holds the rows ``W_i`` and the matching columns
  ``X_i`` of the input, and computes the partial product ``X_i W_i``; ``Y = Σ_i X_i W_i``, summed by an
  all-reduce (here the ring of :func:`~dfcore.distribute.all_reduce_graph.build_ring_all_reduce`, ordinary
  graph ops, so the partitioner draws every chunk that crosses devices as a ``_Send``/``_Recv`` pair).

Megatron's MLP block puts the two back to back: the first layer column-split, ReLU on each slice, the second
layer row-split over those same slices, so one block needs one all-reduce in the forward pass (and, by the
chain rule through the ring's ops, one in the backward pass). :func:`build_tensor_parallel_mlp` stacks such
blocks into the examples' digits MLP; every device ends a block with the whole activation, which feeds the
next block's column split on that device.

Differences from Megatron: the row layer's bias is added once, to device 0's partial product, before the
all-reduce (Megatron adds a replicated bias after it); the sum is the same and the bias stays one variable.
The evaluation forward pass joins the slices and runs unsplit on ``/gpu:0`` (the ring needs a known batch).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import dfcore as tf
from dfcore.distribute.all_reduce_graph import build_ring_all_reduce
from dfcore.examples.staged_mlp import (
    DEFAULT_LAYERS,
    DigitsMLP,
    digits_inputs,
    eval_accuracy,
    forward,
    initial_weights,
    make_optimizer,
)

SPLITS = ("column", "row")


def column_parallel_matmul(x: Any, weight_slices: Sequence[Any], bias_slices: Sequence[Any] = ()) -> list[Any]:
    """``x @ w_i (+ b_i)`` on each ``w_i``'s device: the column slices of ``x @ concat(w, axis=1)``.

    Args:
        x: ``[batch, fan_in]``, on any device (the partitioner sends it to each slice's device).
        weight_slices: N ``[fan_in, fan_out / N]`` weights, one per device (their ``.device`` places the ops).
        bias_slices: empty, or N ``[fan_out / N]`` biases.
    Returns:
        N ``[batch, fan_out / N]`` Tensors, slice i on ``weight_slices[i]``'s device.
    Raises:
        ValueError: ``bias_slices`` is neither empty nor one per weight slice.
    """
    if bias_slices and len(bias_slices) != len(weight_slices):
        raise ValueError(f"{len(bias_slices)} bias slices for {len(weight_slices)} weight slices")
    outputs = []
    for i, w in enumerate(weight_slices):
        with tf.device(w.device):
            y = tf.matmul(x, w)
            outputs.append(y + bias_slices[i] if bias_slices else y)
    return outputs


def row_parallel_matmul(x_slices: Sequence[Any], weight_slices: Sequence[Any], bias: Any = None) -> list[Any]:
    """``Σ_i x_i @ w_i (+ bias)`` on every ``w_i``'s device: each device's partial product, then a ring
    all-reduce (one subchunk, the ring in slice order).

    Args:
        x_slices: N ``[batch, fan_in / N]`` column slices of the input (shapes fully known: the ring cuts chunks).
        weight_slices: N ``[fan_in / N, fan_out]`` row slices of the weight, one per device.
        bias: optional ``[fan_out]``, added to device 0's partial product (so once to the sum).
    Returns:
        N ``[batch, fan_out]`` Tensors, each the whole product, output i on ``weight_slices[i]``'s device.
    Raises:
        ValueError: different numbers of input and weight slices, or shapes the ring cannot cut.
    """
    if len(x_slices) != len(weight_slices):
        raise ValueError(f"{len(x_slices)} input slices for {len(weight_slices)} weight slices")
    partials = []
    for i, (x, w) in enumerate(zip(x_slices, weight_slices)):
        with tf.device(w.device):
            y = tf.matmul(x, w)
            partials.append(y + bias if bias is not None and i == 0 else y)
    if len(partials) == 1:
        return partials
    return build_ring_all_reduce(partials, 1, 1, list(range(len(partials))), tf.add)


def gpu_devices(num_gpus: int) -> list[str]:
    """``["/gpu:0", …, "/gpu:N-1"]``."""
    return [f"/gpu:{i}" for i in range(num_gpus)]


@dataclasses.dataclass(frozen=True)
class SplitLayer:
    """One dense layer's variables split over the devices.

    Attributes:
        kind: ``"column"`` (weight and bias split along the output axis) or ``"row"`` (weight split along the
            input axis, one bias on the first device).
        weights: one weight slice per device; ``biases``: per device (column) or one (row).
    """

    kind: str
    weights: tuple[Any, ...]
    biases: tuple[Any, ...]

    @property
    def axis(self) -> int:
        """The weight axis that is split: 1 for the column split, 0 for the row split."""
        return 1 if self.kind == "column" else 0

    def joined(self) -> tuple[Any, Any]:
        """The unsplit ``(weights, biases)`` as Tensors (concats of the slices, on the current device)."""
        bias = tf.concat(list(self.biases), 0) if len(self.biases) > 1 else self.biases[0]
        return tf.concat(list(self.weights), self.axis) if len(self.weights) > 1 else self.weights[0], bias


def split_layer(index: int, kind: str, fan_in: int, fan_out: int, devices: Sequence[str], seed: int = 0,
                dtype: Any = tf.float32) -> SplitLayer:
    """Variables of layer ``index`` split ``kind``-wise over ``devices``, initialised with the slices of the
    unsplit model's weights (:func:`~dfcore.examples.staged_mlp.initial_weights`, cut on ``/cpu:0``); zero biases.

    Raises:
        ValueError: an unknown ``kind``, or a split axis not divisible by ``len(devices)``.
    """
    if kind not in SPLITS:
        raise ValueError(f"kind must be one of {SPLITS}, got {kind!r}")
    n = len(devices)
    width = fan_out if kind == "column" else fan_in
    if n < 1 or width % n:
        raise ValueError(f"Cannot split {width} {'columns' if kind == 'column' else 'rows'} over {n} devices")
    with tf.device("/cpu:0"):
        full = initial_weights(index, fan_in, fan_out, seed, dtype)
        parts = tf.split(full, n, axis=1 if kind == "column" else 0) if n > 1 else [full]
    weights, biases = [], []
    for i, device in enumerate(devices):
        with tf.device(device), tf.name_scope(f"gpu_{i}"):
            weights.append(tf.Variable(parts[i], name=f"w{index}"))
            if kind == "column" or i == 0:
                biases.append(tf.Variable(tf.zeros([fan_out // n if kind == "column" else fan_out], dtype=dtype),
                                          name=f"b{index}"))
    return SplitLayer(kind, tuple(weights), tuple(biases))


@dataclasses.dataclass(frozen=True)
class TensorParallelMLP(DigitsMLP):
    """The digits MLP with every layer's weights split over the devices in Megatron blocks
    (:class:`~dfcore.examples.staged_mlp.DigitsMLP`; its evaluation pass runs unsplit on ``/gpu:0``), and:

    Attributes:
        devices: the N devices; ``layers``: one :class:`SplitLayer` per layer, column and row alternating.
        logits: ``[batch_size, classes]`` on the first device (``loss`` is computed there).
    """

    devices: tuple[str, ...] = ()
    layers: tuple[SplitLayer, ...] = ()
    logits: Any = None

    @property
    def variables(self) -> list[Any]:
        """Every weight and bias slice, layer by layer."""
        return _slices(self.layers)


def _slices(layers):
    return [v for layer in layers for v in (*layer.weights, *layer.biases)]


def build_tensor_parallel_mlp(num_gpus: int = 4, batch_size: int = 64, layers: Sequence[int] = DEFAULT_LAYERS,
                              learning_rate: float = 0.003, seed: int = 0, dtype: Any = tf.float32,
                              optimizer: str = "adam") -> TensorParallelMLP:
    """Build the MLP with ``layers`` as Megatron blocks over ``/gpu:0 … /gpu:N-1`` in a new graph: layer 2k
    column-split with ReLU per slice, layer 2k+1 row-split and all-reduced (ReLU on every device's copy, except
    after the last layer: its device-0 copy is the logits). The initial weights equal the staged MLP's
    (:func:`~dfcore.examples.staged_mlp.build_staged_mlp`) with the same ``seed``.

    Raises:
        ValueError: an odd number of weight layers, a hidden width not divisible by ``num_gpus``, or an
            unknown optimizer.
    """
    if (len(layers) - 1) % 2:
        raise ValueError(f"A Megatron block is a column and a row layer: need an even number of weight layers, "
                         f"got {len(layers) - 1}")
    opt = make_optimizer(optimizer, learning_rate)
    devices = gpu_devices(num_gpus)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        x, y = digits_inputs(batch_size, layers[0], dtype)
        split = tuple(split_layer(i, SPLITS[i % 2], layers[i], layers[i + 1], devices, seed, dtype)
                      for i in range(len(layers) - 1))
        h = [x] * num_gpus
        for k in range(0, len(split), 2):
            with tf.name_scope(f"block_{k // 2}"):
                column = column_parallel_matmul_per_device(h, split[k])
                h = row_parallel_matmul([_on(c, tf.nn.relu) for c in column], split[k + 1].weights,
                                        split[k + 1].biases[0])
                if k + 2 < len(split):
                    h = [_on(t, tf.nn.relu) for t in h]
        logits = h[0]
        with tf.device(devices[0]), tf.name_scope("loss"):
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        variables = _slices(split)
        grads = tf.gradients(loss, variables, colocate_gradients_with_ops=True)
        grads_and_vars = tuple(zip(grads, variables))
        train_op = opt.apply_gradients(grads_and_vars)
        with tf.device(devices[0]):
            stages = [[layer.joined() for layer in split]]
            x_eval, y_eval, accuracy = eval_accuracy(lambda t: forward(t, stages, devices[:1]), layers[0], dtype)
        init = tf.global_variables_initializer()
    return TensorParallelMLP(graph, x, y, loss, grads_and_vars, train_op, init, x_eval, y_eval, accuracy,
                             devices=tuple(devices), layers=split, logits=logits)


def column_parallel_matmul_per_device(inputs: Sequence[Any], layer: SplitLayer) -> list[Any]:
    """:func:`column_parallel_matmul` where device i reads its own copy ``inputs[i]`` of the input (the
    previous block's all-reduced output), so no input crosses devices."""
    return [column_parallel_matmul(t, [w], [b])[0] for t, w, b in zip(inputs, layer.weights, layer.biases)]


def _on(t, fn):
    with tf.device(t.device):
        return fn(t)


@dataclasses.dataclass(frozen=True)
class SplitMatMul:
    """One ``y = x @ W`` with W split over the devices (:func:`build_split_matmul`).

    Attributes:
        graph: its ``tf.Graph``; ``x`` (``[batch, fan_in]``, fed on ``/cpu:0``) and ``dy`` (``[batch, fan_out]``).
        layer: the :class:`SplitLayer` (its biases are not used).
        outputs: per device: the column slice of y (column split) or the whole all-reduced y (row split).
        y: the whole ``[batch, fan_out]`` product on ``/gpu:0`` (the concat of the slices, or device 0's sum).
        loss: ``sum(y * dy)``; ``grads``: its gradients for every weight slice, then for ``x``.
    """

    graph: Any
    x: Any
    dy: Any
    layer: SplitLayer
    outputs: tuple[Any, ...]
    y: Any
    loss: Any
    grads: tuple[Any, ...]


def build_split_matmul(kind: str, num_gpus: int, batch: int = 64, fan_in: int = 256, fan_out: int = 256,
                       seed: int = 0, dtype: Any = tf.float32) -> SplitMatMul:
    """One MatMul with its weight split ``kind``-wise over ``/gpu:0 … /gpu:N-1`` in a new graph: the column
    split joins the output slices with a concat on ``/gpu:0``; the row split cuts ``x`` into N column slices
    on ``/cpu:0`` and all-reduces the partial products (:func:`row_parallel_matmul`).

    Raises:
        ValueError: as :func:`split_layer`.
    """
    devices = gpu_devices(num_gpus)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        with tf.device("/cpu:0"):
            x = tf.placeholder(dtype, [batch, fan_in], name="x")
            dy = tf.placeholder(dtype, [batch, fan_out], name="dy")
        layer = split_layer(0, kind, fan_in, fan_out, devices, seed, dtype)
        if kind == "column":
            outputs = column_parallel_matmul(x, layer.weights)
            with tf.device(devices[0]):
                y = tf.concat(outputs, 1, name="gather") if num_gpus > 1 else outputs[0]
        else:
            with tf.device("/cpu:0"):
                x_slices = tf.split(x, num_gpus, axis=1) if num_gpus > 1 else [x]
            outputs = row_parallel_matmul(x_slices, layer.weights)
            y = outputs[0]
        with tf.device(devices[0]):
            loss = tf.reduce_sum(y * dy, name="loss")
        grads = tf.gradients(loss, [*layer.weights, x], colocate_gradients_with_ops=True)
    return SplitMatMul(graph, x, dy, layer, tuple(outputs), y, loss, tuple(grads))
