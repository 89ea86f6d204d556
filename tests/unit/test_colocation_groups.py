"""Colocation groups as TF 1.x's ``ColocationGraph`` forms them (``core/common_runtime/placer.cc``): ops
naming one ``loc:@name`` (an op without a ``_class`` names itself) share a group, and an op reading a
reference joins the reference's producer. Reference: the groups worked out by hand from those rules;
nothing is timed."""

import numpy as np

import dfcore as tf
from dfcore.runtime.colocation import colocation_groups, group_name


def _groups():
    ops = sorted(tf.get_default_graph().get_operations(), key=lambda op: op._id)
    groups = colocation_groups(ops)
    return {op.name: [m.name for m in groups[op].members] for op in ops}, groups


def test_names_tie_ops_made_before_and_after_the_op_they_name():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    c = tf.identity(a, name="c")
    d = tf.identity(a, name="d")
    e = tf.identity(a, name="e")  # made after d, which names it
    b.op._set_attr("_class", ["loc:@a"])
    c.op._set_attr("_class", ["loc:@a"])
    d.op._set_attr("_class", ["loc:@e"])
    members, groups = _groups()
    assert members["a"] == members["b"] == members["c"] == ["a", "b", "c"]
    assert members["d"] == members["e"] == ["d", "e"]  # members in op order: the first names the group
    assert group_name(groups[e.op]) == "loc:@d" and group_name(groups[a.op]) == "loc:@a"


def test_an_op_with_a_class_of_its_own_no_longer_answers_to_its_name():
    f = tf.constant(1.0, name="f")
    g = tf.identity(f, name="g")
    tf.identity(f, name="h")
    f.op._set_attr("_class", ["loc:@g"])  # g names h, not itself: nothing else answers to "g"
    g.op._set_attr("_class", ["loc:@h"])
    members, groups = _groups()
    assert members["f"] == ["f"] and group_name(groups[f.op]) is None
    assert members["g"] == members["h"] == ["g", "h"]


def test_a_reference_reader_joins_the_variable_and_plain_ops_stay_alone():
    v = tf.Variable(np.zeros(2, np.float32), name="v")
    update = v.assign([1.0, 2.0])
    total = tf.reduce_sum(v.read_value() * 2.0, name="total")
    members, groups = _groups()
    assert update.op.name in members["v"] and "v/read" in members["v"]
    assert [op.name for op in groups[v.op].ref_readers] == ["v/Assign", "Assign"]  # the initializer, the update
    assert members["total"] == ["total"] and groups[total.op].members == [total.op]
