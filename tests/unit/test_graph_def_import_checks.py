"""Hostile GraphDefs: ``import_graph_def`` and a gRPC master's ``CreateSession`` check before they allocate.

Reference: TF 2.21 ``tf.compat.v1.import_graph_def`` (recorded with the TF venv, ``name=""``):
  duplicate name    -> ValueError "Node 'c' is not unique"
  input "c:7"       -> ValueError "Node 'a': Connecting to invalid output 7 of source node c which has 1 outputs."
  input "missing"   -> ValueError "Node 'a': Unknown input node 'missing'"
  Const [-3,2]      -> ValueError "Shape [-3,2] is not fully defined for '{{node c}} = Const[...]"
TF decodes Const values when the step runs: 12 bytes of content for a float [2,2], and a float [1e5,1e5], are
both InvalidArgumentError "Node: 'c' Cannot parse tensor from proto" there; dfcore decodes at import, so it
checks them there (before allocating), naming the node. dfcore's errors are ``InvalidGraphDefError`` (an
InvalidArgumentError that is also TF's ValueError) and ResourceExhaustedError for what memory cannot hold.
"""

import grpc
import numpy as np
import pytest

import dfcore as tf
from dfcore.framework.graph_def_checks import MAX_ATTR_BYTES_ENV
from dfcore.framework.protos import GraphDef, NodeDef
from dfcore.framework.tf_protos import master_pb2
from dfcore.transport.grpc_master import MasterService


def const(name, dims, content=None, dtype=1, floats=()):
    """A Const NodeDef whose value is a TensorProto of ``dims`` (DataType enum ``dtype``; 1 is DT_FLOAT)."""
    node = NodeDef(name=name, op="Const")
    tensor = node.attr["value"].tensor
    tensor.dtype = dtype
    for d in dims:
        tensor.tensor_shape.dim.add(size=d)
    if content is not None:
        tensor.tensor_content = content
    tensor.float_val.extend(floats)
    node.attr["dtype"].type = dtype
    return node


def identity(name, source):
    node = NodeDef(name=name, op="Identity", input=[source])
    node.attr["T"].type = 1
    return node


def graph_of(*nodes):
    graph_def = GraphDef()
    graph_def.node.extend(nodes)
    return graph_def


def import_(graph_def):
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")


INVALID = [
    (graph_of(const("c", [2, 2], b"\0" * 12)),
     r"^Node 'c': Cannot parse tensor from proto: tensor_content of attr 'value' has 12 bytes; shape \[2,2\] of "
     r"float32 needs 16$"),
    (graph_of(const("c", [2], b"\0" * 8, dtype=2)), r"^Node 'c': Cannot parse tensor from proto: .* float64 needs 16"),
    (graph_of(const("c", [-3, 2], b"")), r"^Node 'c': Shape \[-3,2\] of attr 'value' is not fully defined$"),
    (graph_of(const("c", [1], b"\0" * 4), identity("a", "c:7")),
     r"^Node 'a': Connecting to invalid output 7 of source node c which has 1 outputs\.$"),
    (graph_of(const("c", [1], b"\0" * 4), identity("a", "c:x")), r"^Node 'a': Connecting to invalid output x "),
    (graph_of(const("c", [1], b"\0" * 4), identity("a", "missing")), r"^Node 'a': Unknown input node 'missing'$"),
    (graph_of(const("c", [1], b"\0" * 4), const("c", [1], b"\0" * 4)), r"^Node 'c' is not unique$"),
    (graph_of(const("c", [3], floats=[1.0, 2.0])), r"^Node 'c': Cannot parse an attr: "),
]


@pytest.mark.parametrize("graph_def,message", INVALID)
def test_malformed_graph_defs_are_invalid_argument_errors_naming_the_node(graph_def, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message) as caught:
        import_(graph_def)
    assert isinstance(caught.value, ValueError)  # what TF's import_graph_def raises


@pytest.mark.parametrize("dims", [[100000, 100000], [10**9, 10**9, 10**9]])
def test_a_const_larger_than_memory_is_resource_exhausted_before_it_is_allocated(dims):
    with pytest.raises(tf.errors.ResourceExhaustedError, match=r"^Node 'c': attr 'value' is a float32 tensor of "
                       r"shape \[.*\] \(\d+ bytes\), more than this process may allocate now"):
        import_(graph_of(const("c", dims, floats=[1.0])))


def test_an_attr_over_the_configured_limit_is_rejected(monkeypatch):
    node = const("c", [1], b"\0" * 4)
    node.attr["junk"].s = b"x" * 2000
    monkeypatch.setenv(MAX_ATTR_BYTES_ENV, "1000")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^Node 'c': attr 'junk' is 200\d bytes, more than "
                       r"the 1000 bytes a GraphDef attr may have here \(set DFCORE_GRAPHDEF_MAX_ATTR_BYTES"):
        import_(graph_of(node))
    monkeypatch.setenv(MAX_ATTR_BYTES_ENV, "3000")
    import_(graph_of(node))  # under the limit: accepted (TF ignores an unknown attr)


def test_a_well_formed_graph_def_still_imports_and_runs():
    with tf.Graph().as_default() as source:
        a = tf.constant(np.arange(4, dtype=np.float32).reshape(2, 2), name="a")
        tf.identity(a * 2.0, name="b")
    with tf.Graph().as_default():
        (b,) = tf.import_graph_def(source.as_graph_def(), return_elements=["b:0"], name="")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(b), [[0, 2], [4, 6]])


class _Transport:
    address, incarnation = "localhost:1", 1


class _Context:
    """Records ``abort(code, message)`` as gRPC's ServicerContext raises it."""

    def abort(self, code, message):
        self.code, self.message = code, message
        raise RuntimeError("aborted")


@pytest.mark.parametrize("graph_def,code", [(INVALID[0][0], grpc.StatusCode.INVALID_ARGUMENT),
                                            (INVALID[3][0], grpc.StatusCode.INVALID_ARGUMENT),
                                            (INVALID[6][0], grpc.StatusCode.INVALID_ARGUMENT),
                                            (graph_of(const("c", [100000, 100000], floats=[1.0])),
                                             grpc.StatusCode.RESOURCE_EXHAUSTED)])
def test_the_grpc_masters_create_session_answers_with_the_tf_status_code(graph_def, code):
    serve = MasterService._serving(MasterService(_Transport())._CreateSession)
    context = _Context()
    with pytest.raises(RuntimeError, match="aborted"):
        serve(master_pb2.CreateSessionRequest(graph_def=graph_def), context)
    assert context.code == code and context.message.startswith("Node '")

