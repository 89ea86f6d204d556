"""The small graph of the multi-process optimizer tests (gRPC: tests/unit/test_grpc_optimizer.py; MPI:
tests/unit/mpi_programs/runtime_between_graph.py): weights and bias on the ps, ``relu(bias_add(x @ w, b))`` on a
worker's CPU.

With the graph optimizer on (TF's default config), the master's remapper fuses the worker's ``MatMul``,
``BiasAdd`` and ``Relu`` into one ``_FusedMatMul`` named ``hidden`` (TF's ``remapper.cc`` keeps the last node's
name) before partitioning, so the partitions registered with both tasks carry the optimized graph.
"""

import numpy as np

import dfcore as tf

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
B = np.float32([-3.0, 0.0, 0.5])
X = np.float32([[1.0, -1.0, 2.0, 0.5], [0.0, 1.0, -2.0, 1.0]])


def build_fused(worker=0):
    """``(x, hidden, init)``: the ps holds ``fused_w``/``fused_b``; worker ``worker`` computes ``hidden``."""
    with tf.device("/job:ps/task:0/device:CPU:0"):
        w = tf.Variable(W, name="fused_w")
        b = tf.Variable(B, name="fused_b")
    with tf.device(f"/job:worker/task:{worker}/device:CPU:0"):
        x = tf.placeholder(tf.float32, [2, 4], name="fused_x")
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b), name="hidden")
    return x, hidden, tf.variables_initializer([w, b])


def expected_hidden():
    """numpy's ``relu(X @ W + B)`` (a column is all zeros: the ReLU is really applied)."""
    return np.maximum(X @ W + B, 0.0)


def partition_summary(metadata):
    """``{device: sorted (node name or, for _Send/_Recv, '', op)}`` of ``metadata.partition_graphs`` (the
    generated names of transfer nodes are left out), and ``{device: sorted node names}`` of its step stats."""
    graphs = {}
    for graph in metadata.partition_graphs:
        for node in graph.node:
            name = "" if node.op in ("_Send", "_Recv") else node.name
            graphs.setdefault(node.device, []).append([name, node.op])
    stats = {d.device: sorted(n.node_name for n in d.node_stats) for d in metadata.step_stats.dev_stats}
    return {device: sorted(nodes) for device, nodes in graphs.items()}, stats


def expected_partitions(worker=0):
    """By hand: what each task's partition holds after the remapper (the client's feed and fetch use the
    worker's call frame: ``_Arg``/``_Retval``; each ps value crosses to the worker by one ``_Send``/``_Recv``)."""
    ps = "/job:ps/replica:0/task:0/device:CPU:0"
    wk = f"/job:worker/replica:0/task:{worker}/device:CPU:0"
    return {
        ps: sorted([["fused_b", "VariableV2"], ["fused_b/read", "Identity"], ["fused_w", "VariableV2"],
                    ["fused_w/read", "Identity"], ["", "_Send"], ["", "_Send"]]),
        wk: sorted([["_arg_fused_x_0_0", "_Arg"], ["_retval_hidden_0_0", "_Retval"], ["hidden", "_FusedMatMul"],
                    ["", "_Recv"], ["", "_Recv"]]),
    }
