"""Module-level scope functions acting on the default graph: ``tf.name_scope``,
``tf.device``, ``tf.control_dependencies``, ``tf.colocate_with``, collections.

Source: ``tensorflow/python/framework/ops.py`` (the functions of these names).
"""

import contextlib

from . import graph as graph_lib


def _graph_for(values):
    return graph_lib.graph_of(values or [])


@contextlib.contextmanager
def name_scope(name, default_name=None, values=None):
    """TF1's ``tf.name_scope(name, default_name=None, values=None)``; yields ``"scope/"``.

    The scope is entered in the graph of ``values`` (default: the default graph).
    """
    graph = _graph_for(values)
    scope = name if name is not None else default_name
    if scope is None and name is None and default_name is None:
        scope = ""
    with graph.as_default(), graph.name_scope(scope) as entered:
        yield entered


def device(device_name_or_function):
    """Ops created in this context request ``device_name_or_function`` (string, DeviceSpec, function or None)."""
    return graph_lib.get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs):
    """Ops created in this context run after ``control_inputs`` (None clears outer scopes)."""
    return graph_lib.get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    """Ops created in this context are placed with ``op``."""
    return graph_lib.get_default_graph().colocate_with(op, ignore_existing)


@contextlib.contextmanager
def container(container_name):
    """Accepted for TF1 compatibility; variables are per session in dfcore."""
    yield container_name


def add_to_collection(name, value):
    graph_lib.get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    graph_lib.get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return graph_lib.get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return graph_lib.get_default_graph().get_collection_ref(key)
