"""The type check every widget constructor runs on what it is given, before it draws anything.

A widget handed ``None`` or the wrong record raises a ``TypeError`` that names the widget,
what it accepts and where that comes from, instead of an ``AttributeError`` deep inside.
"""

from dfcore import Graph, RunMetadata  # the public classes, wherever they are defined
from dfcore.distribute.cluster import ClusterDef, Server
from dfcore.distribute.staleness import RunRecord
from dfcore.distribute.trace import AllReduceResult, CollectiveTrace
from dfcore.framework.protos import StepStats as StepStatsProto
from dfcore.runtime.cost_placer import CostPlacement
from dfcore.runtime.session import BaseSession
from dfcore.runtime.step_stats import StepStats
from dfcore.train.cluster_spec import ClusterSpec

#: What each kind of argument may be, and how the message describes it.
SESSION = ((BaseSession,), "a Session (dfcore.Session(...))")
GRAPH = ((Graph,), "a Graph (tf.Graph(), or tf.get_default_graph())")
RUN_METADATA = ((RunMetadata,), "a RunMetadata (from Session.run(..., run_metadata=...)) or None")
STEP_TRACE = ((RunMetadata, StepStats, StepStatsProto),
              ("a RunMetadata or StepStats (from Session.run(..., options=tf.RunOptions("
               "trace_level=tf.RunOptions.FULL_TRACE), run_metadata=...))"))
ALL_REDUCE = ((AllReduceResult, CollectiveTrace),
              "an AllReduceResult (from dfcore.distribute.all_reduce(..., trace=True)) or a CollectiveTrace")
RUN_RECORD = ((RunRecord,), "a RunRecord (from dfcore.distribute.parameter_server.train)")
RUN_RECORDS = ((RunRecord, list, tuple, dict),
               ("a RunRecord (from dfcore.distribute.parameter_server.train), a list of them, "
                "or a dict of them by name"))
CLUSTER = ((ClusterSpec, dict, ClusterDef, Server, BaseSession),
           "a ClusterSpec, a dict of job names to task addresses, a ClusterDef, a Server or a Session")
PLACEMENT = ((BaseSession, CostPlacement),
             "a Session placed with placement='cost_model' (after a run) or a CostPlacement (cost_placer.place)")
PASS_RECORDS = ((list, tuple), "a tuple of PassRecords (from Session.optimizer_records(fetches, feed_dict))")
DEVICE_VALUES = ((list, tuple), "a list of arrays (one per device)")


def expect(widget: str, argument: str, value, kind, optional: bool = False):
    """Return ``value`` if it is one of ``kind``'s types (or None when ``optional``).

    Args:
        widget: the widget's class name; argument: the parameter's name.
        kind: one of this module's ``(types, description)`` pairs.
    Raises:
        TypeError: ``"<widget> expects <description> as <argument>, got <type name>"``.
    """
    types, description = kind
    if isinstance(value, types) or (optional and value is None):
        return value
    raise TypeError(f"{widget} expects {description} as {argument}, got {type(value).__name__}")
