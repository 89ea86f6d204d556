"""``tf.nn``: neural-network ops (activations, softmax, cross-entropy, dropout, convolution, pooling,
normalization, top-k, embeddings, dynamic_rnn and its cells)."""

from .ops import (
    fused_conv as _fused_conv,  # registers _FusedConv2D (the remapper's)
    rnn_cell,  # tf.nn.rnn_cell.BasicRNNCell …
)
from .ops.candidate_sampling import *
from .ops.embedding_ops import *
from .ops.nn_batch_norm import *
from .ops.nn_conv import *
from .ops.nn_conv_transpose import *
from .ops.nn_impl import *
from .ops.nn_lrn import *
from .ops.nn_ops import *
from .ops.nn_ops_xent import *
from .ops.nn_pool import *
from .ops.nn_sampled import *
from .ops.nn_topk import *
from .ops.rnn import dynamic_rnn
from .ops.rnn_static import bidirectional_dynamic_rnn, static_bidirectional_rnn, static_rnn


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.nn", name)
