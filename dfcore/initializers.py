"""``tf.initializers``: TF 1.x's namespace of initializers (``tf.initializers.glorot_uniform`` …).

Source: ``tensorflow/python/ops/init_ops.py`` and ``variables.py`` (TF 1.x API names). The classes are
those of :mod:`dfcore.ops.init_ops`; ``global_variables``, ``local_variables`` and ``variables`` are
the initializer ops of :mod:`dfcore.ops.variables`.
"""

from .ops.init_ops import (
    Constant as constant,
    GlorotNormal as glorot_normal,
    GlorotUniform as glorot_uniform,
    Ones as ones,
    RandomNormal as random_normal,
    RandomUniform as random_uniform,
    TruncatedNormal as truncated_normal,
    VarianceScaling as variance_scaling,
    Zeros as zeros,
)
from .ops.variables import (
    global_variables_initializer as global_variables,
    local_variables_initializer as local_variables,
    variables_initializer as variables,
)

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
