"""Distributed execution: collectives (all-reduce), data-parallel helpers, clusters and parameter servers.

Source: TF's ``tensorflow/python/distribute`` (``all_reduce.py``, ``cross_device_ops.py``,
``collective_ops.py``) and docs/architecture.md#layers. See :mod:`dfcore.distribute.all_reduce` for the
runtime collective and its trace, :mod:`dfcore.distribute.schedules` for the algorithms,
chunking and byte counts, :mod:`dfcore.distribute.fusion` and :mod:`dfcore.distribute.overlap`
for tensor fusion and for bucketed all-reduces that overlap the backward pass;
:mod:`dfcore.distribute.cluster` for ``ClusterSpec``/``Server`` (in-process tasks) and
:mod:`dfcore.distribute.parameter_server` for sync / async / SSP / bounded-delay training
(``parameter_server.train``, one discipline per module in :mod:`dfcore.distribute.ps_modes`) and its run
records.
"""

import importlib

from ..train.cluster_spec import ClusterSpec
from . import cluster_resolver
from .all_reduce import all_reduce
from .cluster import Server
from .collective_cost import PsRingPoint, predicted_time_s, ps_vs_ring_curve, simulate_schedule
from .collective_ops import collective_all_reduce
from .fusion import BatchAllReduceResult, batch_all_reduce
from .mirrored import MirroredStrategy
from .overlap import BucketSpan, OverlapResult, overlapped_all_reduce
from .replication import compare_replication
from .schedules import Schedule, build_schedule, ring_bytes_sent
from .staleness import RunRecord, UpdateRecord
from .trace import AllReduceResult, ChunkTransfer, CollectiveTrace, FusionCopy, RoundRecord

__all__ = ["AllReduceResult", "BatchAllReduceResult", "BucketSpan", "ChunkTransfer", "ClusterSpec", "CollectiveTrace",
           "FusionCopy", "MirroredStrategy", "OverlapResult", "PsRingPoint", "RoundRecord", "RunRecord", "Schedule",
           "Server", "UpdateRecord", "all_reduce", "batch_all_reduce", "build_schedule", "cluster_resolver",
           "collective_all_reduce", "compare_replication", "overlapped_all_reduce", "parameter_server",
           "predicted_time_s", "ps_vs_ring_curve", "ring_bytes_sent", "simulate_schedule"]


def __getattr__(name):
    # parameter_server (its models, drivers and data) loads on first use: `import dfcore` in every
    # rank of an MPI job stays cheaper (PEP 562).
    if name == "parameter_server":
        return importlib.import_module(".parameter_server", __name__)
    from ..compat.missing import missing_attribute  # a TF 1.x name dfcore lacks says so
    raise missing_attribute(__name__, "tf.distribute", name)
