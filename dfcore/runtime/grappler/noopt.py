"""The "no optimizations" session config of TF's own tests.

Source: ``tensorflow/python/framework/test_util.py`` (``TensorFlowTestCase._no_rewrite_session_config``:
every ``RewriterConfig`` rewrite off, ``min_graph_nodes = -1``) with ``OptimizerOptions(opt_level=L0)``, as TF's
partitioning and step-stats tests set it, so the classic L1 constant folding and CSE do not run either.
"""

from __future__ import annotations

from ...framework.protos import ConfigProto, OptimizerOptions

_REWRITES = ("constant_folding", "arithmetic_optimization", "dependency_optimization", "remapping",
             "common_subgraph_elimination", "layout_optimizer", "shape_optimization", "loop_optimization",
             "function_optimization")


def no_rewrite_session_config(config: ConfigProto | None = None) -> ConfigProto:
    """A copy of ``config`` (default: a fresh ``ConfigProto``) with the graph optimizer off.

    Sets ``graph_options.rewrite_options``: ``disable_meta_optimizer``, each rewrite Toggle ``OFF``,
    ``disable_model_pruning``, ``min_graph_nodes = -1``; and ``graph_options.optimizer_options.opt_level = L0``
    with ``do_constant_folding`` and ``do_common_subexpression_elimination`` False. The session then runs the
    graph exactly as built (pruned, placed and partitioned only).
    """
    result = ConfigProto()
    if config is not None:
        result.CopyFrom(config)
    rewrite = result.graph_options.rewrite_options
    rewrite.disable_meta_optimizer = True
    rewrite.disable_model_pruning = True
    rewrite.min_graph_nodes = -1
    for field in _REWRITES:
        setattr(rewrite, field, rewrite.OFF)
    rewrite.memory_optimization = rewrite.NO_MEM_OPT
    options = result.graph_options.optimizer_options
    options.opt_level = OptimizerOptions.L0
    options.do_constant_folding = False
    options.do_common_subexpression_elimination = False
    return result
