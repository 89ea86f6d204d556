"""The ``tf.nn.rnn_cell`` namespace: the cells of :mod:`dfcore.ops.rnn_cell_impl`, and dfcore's missing-name
message for the rest (PEP 562; see :mod:`dfcore.compat.missing`)."""

from .rnn_cell_impl import (
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    RNNCell,
)
from .rnn_cell_wrappers import DropoutWrapper, ResidualWrapper

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell", "LSTMStateTuple", "MultiRNNCell",
           "RNNCell", "ResidualWrapper"]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so."""
    from ..compat.missing import missing_attribute

    raise missing_attribute(__name__, "tf.nn.rnn_cell", name)
