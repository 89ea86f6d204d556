"""dfcore's graph optimizer: TF's Grappler passes and the classic L1 passes, run once per run signature.

Source: ``tensorflow/core/grappler/`` (see :mod:`.meta_optimizer` for the order and the switches). Public API:

- :func:`optimize` — what :func:`dfcore.runtime.step_plan.build_step_plan` calls between placing and
  partitioning; returns an :class:`OptimizedGraph` (its :class:`PassRecord` per pass), or None.
- :func:`no_rewrite_session_config` — the config TF's own tests use to see the graph as built (every
  rewrite off, classic passes at L0).
- ``Session.optimizer_records(fetches, feed_dict)`` returns the records of one run signature, and
  ``RunMetadata.partition_graphs`` holds the optimized partitions.

One pass per module: :mod:`.common_subgraph_elimination`, :mod:`.constant_folding`, :mod:`.remapper`,
:mod:`.arithmetic_optimizer`, :mod:`.dependency_optimizer`; :mod:`.graph_item` is the graph they rewrite.
"""

from .meta_optimizer import PASSES, GraphPass, OptimizedGraph, PassRecord, optimize
from .noopt import no_rewrite_session_config

__all__ = ["PASSES", "GraphPass", "OptimizedGraph", "PassRecord", "no_rewrite_session_config", "optimize"]
