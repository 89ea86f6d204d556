"""Eager execution: ops that run when called, ``GradientTape`` and ``tf.function``.

Source: ``tensorflow/python/eager/`` (``context.py``, ``execute.py``, ``backprop.py``,
``def_function.py``) and Agrawal et al., "TensorFlow Eager" (SysML 2019). Eager ops run the
registered kernels of graph mode one at a time (:mod:`.execute`); ``tf.function`` traces Python into
a graph and runs it through the Session machinery (:mod:`.def_function`).
"""

from . import eager_variable  # registers the eager Variable class
from .backprop import GradientTape
from .context import eager_mode, enable_eager_execution, executing_eagerly
from .def_function import defun, function
from .eager_tensor import EagerTensor

__all__ = ["EagerTensor", "GradientTape", "defun", "eager_mode", "eager_variable", "enable_eager_execution",
           "executing_eagerly", "function"]
