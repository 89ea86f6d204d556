"""TensorFlow's own protobuf messages, as the ``tensorboard`` package ships them.

Source: ``tensorflow/core/framework/*.proto`` and ``tensorflow/core/protobuf/*.proto``, compiled
into ``tensorboard.compat.proto.*_pb2`` (wire-compatible with TensorFlow's, without TensorFlow).
The exceptions are the messages ``tensorboard`` lacks — ``tensorflow/core/example/{feature,example}.proto``
(``tf.train.Example`` & co) and ``core/protobuf/queue_runner.proto`` (``QueueRunnerDef``, with the
``error.Code`` enum): dfcore keeps its own ``.proto`` files of them (TF's names and field numbers, in a package
of dfcore's own, ``dfcore.tensorflow``, so that TensorFlow can be imported beside dfcore) in
:mod:`dfcore.framework.tf_protos`, compiled by ``make protos``.
This is the one module that names where TF's messages come from; everything else imports them from here.
"""

from tensorboard.compat.proto.attr_value_pb2 import AttrValue, NameAttrList
from tensorboard.compat.proto.cluster_pb2 import ClusterDef, JobDef
from tensorboard.compat.proto.config_pb2 import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from tensorboard.compat.proto.cost_graph_pb2 import CostGraphDef
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.meta_graph_pb2 import CollectionDef, MetaGraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.saver_pb2 import SaverDef
from tensorboard.compat.proto.step_stats_pb2 import (
    AllocatorMemoryUsed,
    DeviceStepStats,
    NodeExecStats,
    NodeOutput,
    StepStats,
)
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.types_pb2 import DataType
from tensorboard.compat.proto.variable_pb2 import VariableDef
from tensorboard.compat.proto.versions_pb2 import VersionDef

from .tf_protos.example_pb2 import Example, SequenceExample
from .tf_protos.feature_pb2 import (
    BytesList,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
)
from .tf_protos.queue_runner_pb2 import QueueRunnerDef

__all__ = [
    "AllocatorMemoryUsed", "AttrValue", "BytesList", "ClusterDef", "CollectionDef", "ConfigProto", "CostGraphDef",
    "DataType", "DeviceStepStats", "Event", "Example", "Feature", "FeatureList", "FeatureLists", "Features",
    "FloatList", "GPUOptions", "GraphDef", "GraphOptions", "HistogramProto", "Int64List", "JobDef", "MetaGraphDef",
    "NameAttrList", "NodeDef", "NodeExecStats", "NodeOutput", "OptimizerOptions", "QueueRunnerDef", "RunMetadata",
    "RunOptions", "SaverDef", "SequenceExample", "SessionLog", "StepStats", "Summary", "SummaryMetadata",
    "TaggedRunMetadata", "TensorProto", "TensorShapeProto", "VariableDef", "VersionDef",
]

# The producer version dfcore writes into its GraphDefs (``versions.producer``; TF 1.x-era graphs). TensorFlow
# accepts any producer at or above its ``GRAPH_DEF_VERSION_MIN_PRODUCER`` (0): see
# ``tensorflow/core/public/version.h``.
GRAPH_DEF_VERSION = 134
