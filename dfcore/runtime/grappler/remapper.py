"""Remapper: ``MatMul`` or ``Conv2D``, + ``BiasAdd`` (+ ``Relu``), fused into one ``_FusedMatMul``/``_FusedConv2D``.

Source: ``tensorflow/core/grappler/optimizers/remapper.cc`` (``FindContractionWithBias``,
``FindContractionWithBiasAndActivation``, ``IsBiasSemanticAdd``, ``AddFusedContractionNode``). The pattern:
a ``MatMul`` or ``Conv2D`` (NHWC) of a floating dtype whose only reader is a bias add — ``BiasAdd`` (NHWC), or
``Add``/``AddV2`` of a rank-1 tensor as long as the product's last dimension (TF's "bias-semantic add", what
``x @ W + b`` writes) —
optionally read only by a ``Relu``; all on one device, the inner nodes neither fetched nor read elsewhere.
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
from .graph_item import GraphItem, Input, Node, Output

FLOAT_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64)
BIAS_ADDS = ("BiasAdd", "Add", "AddV2")


def _matmul_attrs(node: Node) -> dict | None:
    """The fused node's attrs that come from the ``MatMul``."""
    return {"transpose_a": node._attrs.get("transpose_a", False), "transpose_b": node._attrs.get("transpose_b", False)}


def _conv2d_attrs(node: Node) -> dict | None:
    """The fused node's attrs that come from the ``Conv2D``, or None for a layout the fused kernel lacks."""
    if node._attrs.get("data_format", "NHWC") not in ("NHWC", b"NHWC"):
        return None
    return {name: node._attrs[name] for name in ("strides", "padding", "dilations", "data_format")}


#: contraction op type -> (fused op type, its own attrs of the fused node, or None: not fusable)
CONTRACTIONS: dict[str, tuple[str, Callable[[Node], dict | None]]] = {
    "MatMul": ("_FusedMatMul", _matmul_attrs), "Conv2D": ("_FusedConv2D", _conv2d_attrs)}


def run(item: GraphItem) -> None:
    """Fuse every matching pattern, producers first."""
    users = item.users()
    for node in item.ordered():
        if node.type in CONTRACTIONS and item.nodes.get(node.name) is node:
            _fuse(item, node, users)


def _only_reader(item: GraphItem, node: Node, users: dict[str, set[str]]) -> Node | None:
    """The one node reading ``node`` (through one data edge, no control edge), on its device."""
    uses = item.data_users(node, users)
    if len(uses) != 1 or item.control_users(node, users) or not item.removable(node):
        return None
    reader = uses[0][0]
    return reader if reader.device == node.device else None


def _bias_of(add: Node, product: Output) -> Input | None:
    """The bias ``add`` adds to the 2-D ``product``, or None when it is no bias add."""
    if add.type == "BiasAdd":
        if add._attrs.get("data_format", "NHWC") not in ("NHWC", b"NHWC") or add.inputs[0] is not product:
            return None
        return add.inputs[1]
    bias = add.inputs[1] if add.inputs[0] is product else add.inputs[0]
    if bias is product:
        return None
    columns = product.shape.as_list()[-1] if product.shape.ndims else None
    if columns is None or bias.shape.ndims != 1 or bias.shape.as_list() != [columns]:
        return None
    return bias


def _fuse(item: GraphItem, matmul: Node, users: dict[str, set[str]]) -> None:
    dtype = matmul._outputs[0].dtype
    fused_type, own_attrs = CONTRACTIONS[matmul.type]
    attrs = own_attrs(matmul)
    if dtype not in FLOAT_TYPES or attrs is None:
        return
    add = _only_reader(item, matmul, users)
    if add is None or add.type not in BIAS_ADDS:
        return
    bias = _bias_of(add, matmul._outputs[0])
    if bias is None or bias.dtype != dtype or add._outputs[0].shape.as_list() != matmul._outputs[0].shape.as_list():
        return
    chain = [matmul, add]
    relu = _only_reader(item, add, users)
    if relu is not None and relu.type == "Relu":
        chain.append(relu)
    root = chain[-1]
    fused = Node(root.name, fused_type,
                 {"T": dtype, **attrs, "num_args": 1, "fused_ops": ["BiasAdd", "Relu"][:len(chain) - 1],
                  "epsilon": 0.0},
                 root.device, root._id, [(root._outputs[0].dtype, root._outputs[0].shape)])
    fused.inputs = [*matmul.inputs, bias]
    fused.control_inputs = list(dict.fromkeys(c for n in chain for c in n.control_inputs))
    for inner in chain[:-1]:
        del item.nodes[inner.name]
    item.replace(root, fused, users)
