"""What an asynchronous kernel reports through its ``done`` callback becomes the step's error the way TF's
executor names a failed node: an ``OpError`` keeps its class and gains ``\\n\\t [[node <name>]]``, anything else
is an ``InternalError`` (reference: TF's executor appends the node suffix to a kernel's status,
``common_runtime/executor.cc``; dfcore's loop does the same for synchronous kernels, ``kernel_error``)."""

import types

from dfcore import errors
from dfcore.runtime.kernel_errors import async_error

RECV = types.SimpleNamespace(name="edge_3_w/_1", source=types.SimpleNamespace(original=None))


def test_an_op_error_keeps_its_class_and_gains_the_node_suffix():
    error = async_error(errors.AbortedError(None, None, "Step was aborted"), RECV)
    assert type(error) is errors.AbortedError
    assert error.message == "Step was aborted\n\t [[node edge_3_w/_1]]"


def test_anything_else_is_an_internal_error_naming_the_node():
    error = async_error(RuntimeError("the wire closed"), RECV)
    assert type(error) is errors.InternalError
    assert error.message == "the wire closed\n\t [[node edge_3_w/_1]]"


def test_an_error_already_naming_a_node_is_left_as_it_is():
    named = errors.CancelledError(None, None, "Cancelled\n\t [[node other]]")
    assert async_error(named, RECV) is named
