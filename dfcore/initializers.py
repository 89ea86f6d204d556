"""``tf.initializers``: TF 1.x's namespace of initializers (``tf.initializers.glorot_uniform`` …).

Source: ``tensorflow/python/ops/init_ops.py`` and ``variables.py`` (TF 1.x API names). The classes are
those of :mod:`dfcore.ops.init_ops`; ``global_variables``, ``local_variables`` and ``variables`` are
the initializer ops of :mod:`dfcore.ops.variables`.
"""

from .ops.init_ops import Constant as constant
from .ops.init_ops import GlorotNormal as glorot_normal
from .ops.init_ops import GlorotUniform as glorot_uniform
from .ops.init_ops import Ones as ones
from .ops.init_ops import RandomNormal as random_normal
from .ops.init_ops import RandomUniform as random_uniform
from .ops.init_ops import TruncatedNormal as truncated_normal
from .ops.init_ops import VarianceScaling as variance_scaling
from .ops.init_ops import Zeros as zeros
from .ops.variables import global_variables_initializer as global_variables
from .ops.variables import local_variables_initializer as local_variables
from .ops.variables import variables_initializer as variables

__all__ = [
                           "constant",
                           "global_variables",
                           "glorot_normal",
                           "glorot_uniform",
                           "local_variables",
                           "ones",
                           "random_normal",
                           "random_uniform",
                           "truncated_normal",
                           "variables",
                           "variance_scaling",
                           "zeros",
]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.initializers", name)
