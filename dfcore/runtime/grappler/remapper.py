"""Remapper: ``MatMul`` or ``Conv2D``, + ``BiasAdd`` (+ ``Relu``), fused into one ``_FusedMatMul``/``_FusedConv2D``.

Source: ``tensorflow/core/grappler/optimizers/remapper.cc`` (``FindContractionWithBias``,
``FindContractionWithBiasAndActivation``, ``IsCpuCompatibleMatMul``, ``IsCpuCompatibleConv2D``,
``IsGpuCompatible``, ``AddFusedContractionNode``), TF's conditions:

- the root of the pattern is a ``BiasAdd`` (NHWC) whose input 0 is the contraction; a plain ``Add`` of a bias
  (what ``x @ W + b`` writes) is not fused, as in TF 1.15 (later TF fuses such an ``Add`` only in its MKL
  builds); optionally a ``Relu`` reads the ``BiasAdd``;
- the contraction is read only by the ``BiasAdd`` and the ``BiasAdd`` only by the ``Relu``; no node of the
  pattern has a control input or a control reader; all on one device; the inner nodes are not fetched;
- the device and dtype allow it (:data:`CONTRACTIONS`): a ``MatMul`` only on a CPU and in ``float32``; a
  ``Conv2D`` on a CPU in ``float32``/``float64`` and NHWC, or on a GPU in ``float32`` only with a ``Relu`` and a
  spatial filter (not 1×1, TF's cuDNN condition; dfcore's fused kernel is NHWC only).

The fused node takes the last node's name (what its readers and a fetch ask for) and TF's attrs: ``T``,
``num_args`` = 1, ``fused_ops`` (``["BiasAdd"]`` or ``["BiasAdd", "Relu"]``), ``epsilon`` = 0, and the
contraction's own (``transpose_a``/``transpose_b``; ``strides``, ``padding``, ``dilations``, ``data_format``).

The lessons' softmax cross-entropy needs no fusion: dfcore's ``SoftmaxCrossEntropyWithLogits`` (and the
sparse one) already computes the loss and its backprop in one kernel, and the gradient reads that second
output, as in TF.
"""

from __future__ import annotations

from collections.abc import Callable

from ...framework import dtypes
from ...framework.device import DeviceSpec
from .graph_item import GraphItem, Input, Node, Output

NHWC = ("NHWC", b"NHWC")


def _device_type(node: Node) -> str | None:
    return DeviceSpec.from_string(node.device).device_type if node.device else None


def _matmul_attrs(node: Node, relu: bool) -> dict | None:
    """The fused node's attrs from the ``MatMul``, or None where TF does not fuse (``IsCpuCompatibleMatMul``)."""
    if _device_type(node) != "CPU" or node._outputs[0].dtype != dtypes.float32:
        return None
    return {"transpose_a": node._attrs.get("transpose_a", False), "transpose_b": node._attrs.get("transpose_b", False)}


def _conv2d_attrs(node: Node, relu: bool) -> dict | None:
    """The fused node's attrs from the ``Conv2D``, or None where TF (or dfcore's NHWC kernel) does not fuse."""
    dtype, device = node._outputs[0].dtype, _device_type(node)
    if node._attrs.get("data_format", "NHWC") not in NHWC:
        return None
    if device == "CPU" and dtype in (dtypes.float32, dtypes.float64):
        pass
    elif device == "GPU" and dtype == dtypes.float32 and relu:
        height, width = (node.inputs[1].shape.as_list() + [None, None])[:2] if node.inputs[1].shape.ndims else (1, 1)
        if height in (None, 1) or width in (None, 1):
            return None
    else:
        return None
    return {name: node._attrs[name] for name in ("strides", "padding", "dilations", "data_format")}


#: contraction op type -> (fused op type, its own attrs of the fused node given whether a Relu follows, or None:
#: TF does not fuse it there)
CONTRACTIONS: dict[str, tuple[str, Callable[[Node, bool], dict | None]]] = {
    "MatMul": ("_FusedMatMul", _matmul_attrs), "Conv2D": ("_FusedConv2D", _conv2d_attrs)}


def run(item: GraphItem) -> None:
    """Fuse every matching pattern, producers first."""
    for node in item.ordered():
        if node.type in CONTRACTIONS and item.nodes.get(node.name) is node:
            _fuse(item, node)


def _only_reader(item: GraphItem, node: Node) -> Node | None:
    """The one node reading ``node`` (through one data edge, no control edge), on its device."""
    uses = item.data_users(node)
    if len(uses) != 1 or item.control_users(node) or not item.removable(node):
        return None
    reader = uses[0][0]
    return reader if reader.device == node.device else None


def _bias_of(add: Node, product: Output) -> Input | None:
    """The bias of a ``BiasAdd`` (NHWC) whose input 0 is ``product``, or None when ``add`` is no such node."""
    if add.type != "BiasAdd" or add._attrs.get("data_format", "NHWC") not in NHWC or add.inputs[0] is not product:
        return None
    return add.inputs[1]


def _fuse(item: GraphItem, contraction: Node) -> None:
    add = _only_reader(item, contraction)
    if add is None:
        return
    bias = _bias_of(add, contraction._outputs[0])
    if bias is None or bias.dtype != contraction._outputs[0].dtype:
        return
    chain: list[Node] = [contraction, add]
    relu = _only_reader(item, add)
    if relu is not None and relu.type == "Relu":
        chain.append(relu)
    fused_type, own_attrs = CONTRACTIONS[contraction.type]
    attrs = own_attrs(contraction, len(chain) == 3)
    if attrs is None or any(node.control_inputs for node in chain) or item.control_users(chain[-1]):
        return
    root = chain[-1]
    fused = Node(root.name, fused_type,
                 {"T": contraction._outputs[0].dtype, **attrs, "num_args": 1,
                  "fused_ops": ["BiasAdd", "Relu"][:len(chain) - 1], "epsilon": 0.0},
                 root.device, root._id, [(root._outputs[0].dtype, root._outputs[0].shape)])
    fused.inputs = [*contraction.inputs, bias]
    for inner in chain[:-1]:
        item.remove(inner)
    item.replace(root, fused)
