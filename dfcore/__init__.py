"""dfcore: a TensorFlow-1-style dataflow engine on numpy, for teaching distributed execution.

``import dfcore as tf`` runs classic TF1 programs: build a Graph, run it in a
Session. Public names follow TF1's API; ``dfcore.compat.v1`` is the same namespace.
Each ops module lists its public names in ``__all__``; this file gathers them.
"""

import importlib

from . import errors
from .eager import GradientTape, defun, enable_eager_execution, executing_eagerly, function
from .framework import dtypes
from .framework.default_session import get_default_session
from .framework.device import DeviceSpec
from .framework.dtypes import (
    DType,
    as_dtype,
    bool,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
)
from .framework.graph import Graph, GraphKeys, get_default_graph, reset_default_graph
from .framework.importer import import_graph_def
from .framework.operation import Operation
from .framework.protos import (
    AttrValue,
    Event,
    GraphDef,
    HistogramProto,
    MetaGraphDef,
    NameAttrList,
    NodeDef,
    SessionLog,
    Summary,
    TensorShapeProto,
)
from .framework.registry import NoGradient, NotDifferentiable, RegisterGradient
from .framework.scopes import (
    add_to_collection,
    add_to_collections,
    colocate_with,
    container,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    name_scope,
)
from .framework.tensor import Tensor
from .framework.tensor_conversion import convert_to_tensor, register_tensor_conversion_function
from .framework.tensor_shape import Dimension, TensorShape
from .framework.versions import __version__
from .ops import (  # register gradients
    array_grad as _array_grad,
    control_flow_grad as _control_flow_grad,  # Switch, Merge, Enter, Exit, NextIteration, their gradients
    math_grad as _math_grad,
    nn_grad as _nn_grad,
    out_kernels as _out_kernels,  # kernels writing into the allocator's buffers (out=)
    stack_ops as _stack_ops,  # registers StackV2, StackPushV2, StackPopV2
)
from .ops.array_ops import *
from .ops.array_ops_gather import *
from .ops.array_ops_join import *
from .ops.array_ops_layout import *
from .ops.array_ops_reverse import *
from .ops.array_ops_slice import *
from .ops.array_ops_where import *
from .ops.clip_ops import *
from .ops.constant_op import constant
from .ops.control_flow_cond import case, cond
from .ops.control_flow_ops import Assert, group, no_op, tuple, with_dependencies
from .ops.control_flow_while import while_loop
from .ops.data_flow_ops import *
from .ops.decode_raw_op import decode_raw
from .ops.dynamic_partition import *
from .ops.functional_ops import foldl, foldr, map_fn, scan
from .ops.gradients_impl import gradients
from .ops.image_convert import saturate_cast
from .ops.image_random import random_crop
from .ops.init_ops import *
from .ops.io_ops import *
from .ops.linalg_ops import matrix_determinant, matrix_inverse
from .ops.math_ops import *
from .ops.numerics import *
from .ops.parsing_ops import *
from .ops.partitioned_variables import *
from .ops.random_ops import *
from .ops.script_ops import py_func
from .ops.state_ops import assign, assign_add, assign_sub, count_up_to, is_variable_initialized
from .ops.variable_scope import AUTO_REUSE, VariableScope, get_variable, get_variable_scope, variable_scope
from .ops.variables import (
    Variable,
    all_variables,
    global_variables,
    global_variables_initializer,
    initialize_all_variables,
    initialize_variables,
    local_variables,
    local_variables_initializer,
    moving_average_variables,
    trainable_variables,
    variables_initializer,
)
from .runtime.config import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
    StepRecords,
    step_records,
)
from .runtime.placement_options import PlacementOptions
from .runtime.session import InteractiveSession, Session

# isort: split
# The subpackages come last, after every name above: they build on `import dfcore as tf`, so they need the
# core namespace filled in first. mpi/ and transport/ come after distribute/, with which they register their
# server backends; task_processes registers run_job's gRPC jobs with mpi/.
from absl import flags  # tf.flags is absl's, as in TF 1.x

from . import (
    app,
    data,
    debugging,
    distribute,
    gfile,
    image,
    initializers,
    io,
    layers,
    linalg,
    losses,
    math,
    mpi,
    nest,
    nn,
    python_io,
    queue,
    random,
    summary,
    task_processes,
    test,
    tf_logging as logging,
    train,
    transport,
)
from .data.fixed_length_reader import FixedLengthRecordReader  # TF 1.x readers
from .data.queue_readers import IdentityReader, ReaderBase, TFRecordReader, WholeFileReader


def __getattr__(name: str):
    """``tf.compat``, loaded on first use (compat.v1 is this namespace, so compat/ builds on it), or for a TF 1.x
    name dfcore lacks an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    if name == "compat":
        return importlib.import_module(".compat", __name__)
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf", name)
