"""One way to construct an op: every op constructor goes through ``op_util.apply_op`` (TF's
``op_def_library.apply_op``); ``Graph.create_op``, the graph's own primitive, is called only by it, by GraphDef
import, and by a graph subclass's own ``create_op`` (``super().create_op``)."""

import ast
import pathlib

import dfcore as tf
from dfcore.ops import op_util

DFCORE = pathlib.Path(__file__).resolve().parents[2] / "dfcore"
_CALLERS = {("ops/op_util.py", "apply_op"), ("framework/importer.py", "import_nodes")}


def _create_op_calls():
    """``(file, enclosing function, line)`` of every ``<x>.create_op(...)`` call in dfcore."""
    for path in sorted(DFCORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "create_op":
                inside = [f for f in functions if f.lineno <= node.lineno <= f.end_lineno]
                name = min(inside, key=lambda f: f.end_lineno - f.lineno).name if inside else "<module>"
                overriding = name == "create_op" and ast.unparse(node.func.value) == "super()"
                yield path.relative_to(DFCORE).as_posix(), name, node.lineno, overriding


def test_only_apply_op_and_graph_def_import_call_graph_create_op():
    calls = list(_create_op_calls())
    stray = [(f, name, line) for f, name, line, overriding in calls if (f, name) not in _CALLERS and not overriding]
    assert stray == [], f"build ops with op_util.apply_op, not Graph.create_op: {stray}"
    assert {(f, name) for f, name, _, overriding in calls if not overriding} == _CALLERS


def test_apply_op_names_ops_in_the_scope_and_takes_the_inputs_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
    with tf.Graph().as_default():  # another default graph: the op still goes to its input's graph
        with graph.as_default(), graph.name_scope("outer"):
            op = op_util.apply_op("Identity", [x], {"T": tf.float32})
            again = op_util.apply_op("NoOp", [], {})
    assert (op.graph, op.name, again.graph, again.name) == (graph, "outer/Identity", graph, "outer/NoOp")
    assert tf.constant(1.0).op.graph is tf.get_default_graph()
