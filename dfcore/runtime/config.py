"""``ConfigProto``, ``GPUOptions``, ``RunOptions`` and ``RunMetadata`` with TF's field names.

Source: ``tensorflow/core/protobuf/config.proto``. Plain Python objects, not
protobufs; unknown keyword arguments raise ``ValueError`` naming the field, as
protobuf constructors do.
"""

from ..framework import protos


class _Message:
    _FIELDS = {}

    def __init__(self, **kwargs):
        for name, default in self._FIELDS.items():
            setattr(self, name, default() if callable(default) else default)
        for name, value in kwargs.items():
            if name not in self._FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
            setattr(self, name, value)

    def __repr__(self):
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS if getattr(self, n) not in (None, 0, False, {}, []))
        return f"{type(self).__name__}({fields})"


class GPUOptions(_Message):
    """``allow_growth``: allocate device memory as needed instead of preallocating."""

    _FIELDS = {
        "allow_growth": False,
        "per_process_gpu_memory_fraction": 0.0,
        "visible_device_list": "",
    }


class GraphOptions(_Message):
    _FIELDS = {"build_cost_model": 0, "infer_shapes": False, "place_pruned_graph": False}


class ConfigProto(_Message):
    """Session configuration.

    Fields: ``device_count`` ({"CPU": c, "GPU": g}), ``log_device_placement``,
    ``allow_soft_placement``, ``inter_op_parallelism_threads`` (0 = number of
    cores), ``intra_op_parallelism_threads``, ``gpu_options``, ``graph_options``,
    ``operation_timeout_in_ms`` (0 = no deadline beyond the runtime's default),
    ``device_filters`` (list of partial device names such as ``"/job:ps"`` or
    ``"/job:worker/task:1"``: a session on a cluster sees, and waits for, only the tasks and devices
    that match one of them — its own task always; empty = every task).
    """

    _FIELDS = {
        "device_count": dict,
        "log_device_placement": False,
        "allow_soft_placement": False,
        "inter_op_parallelism_threads": 0,
        "intra_op_parallelism_threads": 0,
        "gpu_options": GPUOptions,
        "graph_options": GraphOptions,
        "operation_timeout_in_ms": 0,
        "device_filters": list,
    }


class RunOptions(_Message):
    """Per-call options: ``trace_level``, ``timeout_in_ms``, ``output_partition_graphs``."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    _FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "output_partition_graphs": False}


class RunMetadata(_Message):
    """Filled by ``Session.run``: ``step_stats``, ``partition_graphs``, ``cost_graph``, and
    (dfcore, with FULL_TRACE) ``transfers``: the step's rendezvous
    :class:`~dfcore.runtime.rendezvous.TransferRecord` list (sent, requested, matched, bytes),
    and ``collective_traces``: one :class:`~dfcore.distribute.trace.CollectiveTrace` per
    collective instance that ran in the step, by instance key."""

    _FIELDS = {"step_stats": None, "partition_graphs": list, "cost_graph": None, "transfers": list,
               "collective_traces": list}


def run_metadata_proto(run_metadata) -> "protos.RunMetadata":
    """TF's ``RunMetadata`` message of a step: ``step_stats`` (wall clock, :meth:`StepStats.to_proto`) and
    ``partition_graphs``; the one conversion FileWriter and the tools that want TF's format call."""
    if isinstance(run_metadata, protos.RunMetadata):
        return run_metadata
    proto = protos.RunMetadata(partition_graphs=list(run_metadata.partition_graphs))
    if run_metadata.step_stats is not None:
        proto.step_stats.CopyFrom(run_metadata.step_stats.to_proto())
    return proto
