"""``ConfigProto``, ``GPUOptions``, ``GraphOptions``, ``RunOptions`` and ``RunMetadata``: TF's own messages.

Source: ``tensorflow/core/protobuf/config.proto`` (the classes are TF's, from :mod:`dfcore.framework.protos`).
A session reads ``device_count``, ``log_device_placement``, ``allow_soft_placement``,
``inter_op_parallelism_threads``, ``use_per_session_threads``, ``session_inter_op_thread_pool``,
``intra_op_parallelism_threads`` (see :mod:`dfcore.runtime.thread_pools`), ``gpu_options.allow_growth``,
``operation_timeout_in_ms``, ``device_filters`` and ``graph_options`` (``rewrite_options``, TF's
``RewriterConfig``, and ``optimizer_options``, TF's ``OptimizerOptions``: the graph optimizer's switches, see
:mod:`dfcore.runtime.grappler`); a run reads ``trace_level``, ``timeout_in_ms``, ``inter_op_thread_pool`` and
``output_partition_graphs``.

``Session.run`` fills a ``RunMetadata`` as TF does: ``partition_graphs`` (GraphDefs) and ``step_stats``
(TF's ``StepStats``, wall clock). What dfcore records beyond TF's message — the step stats on the
simulated clock, the rendezvous transfers, the collectives' round-by-round traces — is a
:class:`StepRecords` attached to the ``RunMetadata`` object itself (dfcore's ``RunMetadata`` wraps TF's
message: :mod:`dfcore.framework.run_metadata`), found with :func:`step_records` (the widgets and lessons
use it); it goes when the object goes, or when the object is refilled.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..framework import protos
from ..framework.protos import ConfigProto, GPUOptions, GraphOptions, OptimizerOptions, RunOptions
from ..framework.run_metadata import RunMetadata, attached_step_records
from .rendezvous import TransferRecord
from .step_stats import StepStats

__all__ = ["ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RunMetadata", "RunOptions", "StepRecords",
           "step_records"]


@dataclasses.dataclass(frozen=True)
class StepRecords:
    """dfcore's records of one traced step, beside TF's ``RunMetadata``.

    ``step_stats``: :class:`~dfcore.runtime.step_stats.StepStats` with wall and simulated-clock times;
    ``transfers``: the rendezvous :class:`~dfcore.runtime.rendezvous.TransferRecord` list (sent, requested,
    matched, bytes); ``collective_traces``: one :class:`~dfcore.distribute.trace.CollectiveTrace` per
    collective instance that ran, by instance key; ``dead_nodes``: the ``(device, node name, frame_iter)`` of
    each node that ran dead (``frame_iter`` is ``(frame_id, iteration)`` inside a loop, None in the root
    frame), in execution order: the untaken branch of a ``tf.cond``, a loop's last test.
    """

    step_stats: StepStats
    transfers: tuple[TransferRecord, ...]
    collective_traces: tuple[Any, ...]  # CollectiveTrace records: distribute/ is above runtime/, never imported
    dead_nodes: tuple[tuple[str, str, tuple[int, int] | None], ...] = ()


def step_records(run_metadata: RunMetadata) -> StepRecords:
    """dfcore's :class:`StepRecords` of the step that filled ``run_metadata``.

    Raises:
        TypeError: ``run_metadata`` is not a ``RunMetadata``.
        ValueError: it was not filled by a ``Session.run`` with ``RunOptions(trace_level=FULL_TRACE)`` (or is
            TF's bare message, which carries no records).
    """
    if isinstance(run_metadata, protos.RunMetadata):
        raise ValueError("TF's RunMetadata message carries no dfcore step records: pass dfcore's "
                         "tf.RunMetadata() to Session.run")
    if not isinstance(run_metadata, RunMetadata):
        raise TypeError(f"step_records() expects a RunMetadata; got {type(run_metadata).__name__}")
    records = attached_step_records(run_metadata)
    if records is None:
        raise ValueError("This RunMetadata has no dfcore step records: pass it to Session.run with "
                         "options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)")
    return records
