"""The meta-optimizer: TF's graph passes, in TF's order, switched by TF's own config fields.

Source: ``tensorflow/core/grappler/optimizers/meta_optimizer.cc`` (``MetaOptimizer::OptimizeGraph``) and
``tensorflow/core/common_runtime/graph_optimizer.cc`` (the classic L1 ``ConstantFold`` and ``OptimizeCSE``).
It runs once per run signature, on the pruned, placed graph, before partitioning
(:func:`dfcore.runtime.step_plan.build_step_plan`).

Switches (``ConfigProto.graph_options``), with TF's semantics:

- ``rewrite_options`` (TF's ``RewriterConfig``): each pass runs unless its Toggle is ``OFF`` (``DEFAULT`` =
  on): ``common_subgraph_elimination`` (needs ``arithmetic_optimization`` on too, as in TF),
  ``constant_folding``, ``remapping``, ``arithmetic_optimization``, ``dependency_optimization``.
  ``disable_meta_optimizer`` turns them all off; ``min_graph_nodes`` (0 = TF's 4, -1 = always) skips smaller
  graphs; ``meta_optimizer_iterations`` (``DEFAULT_NUM_ITERS`` = 2) repeats the list.
  ``memory_optimization`` is read and does nothing (dfcore has no swapping or recomputation);
  ``layout_optimizer`` stays off (numpy kernels are NHWC and NCHW alike).
- ``optimizer_options`` (TF's ``OptimizerOptions``): at ``opt_level`` L1 (the default) the classic
  ``ConstantFold`` and ``OptimizeCSE`` run after the passes above; at L0 only if ``do_constant_folding`` /
  ``do_common_subexpression_elimination`` ask for them.

Nothing runs on a graph with control-flow ops (a frame changes what "constant" and "the same value" mean;
dfcore does not prove those cases safe, so it skips them). Each pass that ran leaves a :class:`PassRecord`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...framework.operation import Operation
from ...framework.protos import ConfigProto, OptimizerOptions
from ...framework.tensor import Tensor
from ..control_flow_info import has_control_flow
from . import arithmetic_optimizer, common_subgraph_elimination, constant_folding, dependency_optimizer, remapper
from .graph_item import GraphItem, Node, input_strings

DEFAULT_MIN_GRAPH_NODES = 4  # meta_optimizer.cc kDefaultMinGraphNodes
DEFAULT_ITERATIONS = 2  # meta_optimizer.cc kDefaultNumberOfIterations


@dataclasses.dataclass(frozen=True)
class GraphPass:
    """One pass: TF's optimizer ``name``, whether ``config`` turns it on, and ``run(item)`` (rewrites in place)."""

    name: str
    enabled: Callable[[ConfigProto], bool]
    run: Callable[[GraphItem], None]
    classic: bool = False  # graph_optimizer.cc's: runs once, after the meta-optimizer's iterations


def _toggle_on(field: str) -> Callable[[ConfigProto], bool]:
    def enabled(config: ConfigProto) -> bool:
        rewrite = config.graph_options.rewrite_options
        return not rewrite.disable_meta_optimizer and getattr(rewrite, field) != rewrite.OFF
    return enabled


def _cse_on(config: ConfigProto) -> bool:
    return _toggle_on("common_subgraph_elimination")(config) and _toggle_on("arithmetic_optimization")(config)


def _classic_on(flag: str) -> Callable[[ConfigProto], bool]:
    def enabled(config: ConfigProto) -> bool:
        options = config.graph_options.optimizer_options
        return options.opt_level >= OptimizerOptions.L1 or getattr(options, flag)
    return enabled


# The registry, in TF's order (InitializeOptimizers; classic passes after, as the executor's GraphOptimizer).
PASSES: tuple[GraphPass, ...] = (
    GraphPass("common_subgraph_elimination", _cse_on, common_subgraph_elimination.run),
    GraphPass("constant_folding", _toggle_on("constant_folding"), constant_folding.run),
    GraphPass("remapper", _toggle_on("remapping"), remapper.run),
    GraphPass("arithmetic_optimizer", _toggle_on("arithmetic_optimization"), arithmetic_optimizer.run),
    GraphPass("dependency_optimizer", _toggle_on("dependency_optimization"), dependency_optimizer.run),
    GraphPass("ConstantFold", _classic_on("do_constant_folding"), constant_folding.run_classic, classic=True),
    GraphPass("OptimizeCSE", _classic_on("do_common_subexpression_elimination"), common_subgraph_elimination.run,
              classic=True),
)


class GraphState:
    """A graph as one pass left it: per node, its name, op, the op it runs, its input lists, device and
    position, captured without building a string or sorting (passes never change an input list in place, see
    :mod:`~dfcore.runtime.grappler.graph_item`); :meth:`snapshot` orders and spells it out when asked.

    The first state captures every node; a later one copies the ``previous`` state's table and captures
    again only the names the pass ``changed`` (:meth:`GraphItem.take_changes`): a node the pass left alone
    shares the previous state's entry."""

    __slots__ = ("_by_name", "_snapshot")

    def __init__(self, item: GraphItem, previous: GraphState | None = None,
                 changed: Sequence[str] = ()) -> None:
        if previous is None:
            by_name = {name: _entry(n) for name, n in item.nodes.items()}
        else:
            earlier = previous._by_name
            by_name = earlier.copy()
            for name in changed:
                node = item.nodes.get(name)
                if node is None:
                    by_name.pop(name, None)
                    continue
                entry, old = _entry(node), earlier.get(name)
                by_name[name] = old if old is not None and _same(old, entry) else entry
        self._by_name: dict[str, tuple[Any, ...]] = by_name
        self._snapshot: tuple[tuple[str, str, tuple[str, ...], str], ...] | None = None

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self) -> Any:
        return self._by_name.keys()

    def snapshot(self) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
        """``(name, op, inputs, device)`` per node, producers first."""
        if self._snapshot is None:
            self._snapshot = tuple((name, op_type, tuple(input_strings(inputs, controls)), device)
                                   for name, op_type, _, inputs, controls, device, _ in
                                   sorted(self._by_name.values(), key=_position))
        return self._snapshot

    def rewritten(self, later: GraphState, names: Iterable[str]) -> list[str]:
        """Those of ``names`` in both states whose op, kernel source or input strings differ in ``later``."""
        found = []
        for name in names:
            entry, other = self._by_name.get(name), later._by_name.get(name)
            if entry is None or other is None:
                continue
            _, op_type, original, inputs, controls, _, _ = entry
            _, later_type, later_original, later_inputs, later_controls, _, _ = other
            if inputs is later_inputs and controls is later_controls:  # the same lists: no string to spell out
                changed = op_type != later_type or original is not later_original
            else:
                changed = op_type != later_type or original is not later_original or (
                    input_strings(inputs, controls) != input_strings(later_inputs, later_controls))
            if changed:
                found.append(name)
        return found


def _entry(n: Node) -> tuple[Any, ...]:
    """A node's :class:`GraphState` entry."""
    return (n.name, n.type, n.original, n.inputs, n.control_inputs, n.device, n._id)


def _same(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """Whether two :class:`GraphState` entries of a node agree (its input lists compared by identity: passes
    replace a list, never change one)."""
    return (old[3] is new[3] and old[4] is new[4] and old[2] is new[2] and old[1] == new[1]
            and old[5] == new[5] and old[6] == new[6])


def _position(entry: tuple[Any, ...]) -> int:
    """A :class:`GraphState` entry's node position (producers first)."""
    return entry[-1]


@dataclasses.dataclass(frozen=True)
class PassRecord:
    """What one pass did to one run signature's graph.

    ``optimizer``: TF's pass name; ``iteration``: the meta-optimizer's round (0-based; classic passes: -1);
    ``nodes_before``/``nodes_after``: node counts; ``removed``/``added``: node names gone / new;
    ``rewritten``: names kept whose op, attrs or inputs changed; ``graph_before``/``graph``: the graph before
    and after the pass as ``(name, op, inputs, device)`` per node, producers first (what a before/after view
    draws; spelled out when first read).
    """

    optimizer: str
    iteration: int
    nodes_before: int
    nodes_after: int
    removed: tuple[str, ...]
    added: tuple[str, ...]
    rewritten: tuple[str, ...]
    state_before: GraphState = dataclasses.field(repr=False, compare=False)
    state_after: GraphState = dataclasses.field(repr=False, compare=False)

    @property
    def graph_before(self) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
        return self.state_before.snapshot()

    @property
    def graph(self) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
        return self.state_after.snapshot()

    @property
    def changed(self) -> bool:
        """Whether the pass changed the graph."""
        return bool(self.removed or self.added or self.rewritten)


@dataclasses.dataclass(frozen=True)
class OptimizedGraph:
    """The result: ``ops`` (nodes, producers first) with their ``placement``, the ``fetches`` as the nodes'
    outputs (same order) and one record per pass."""

    ops: tuple[Node, ...]
    placement: dict[Node, str]
    fetches: tuple[Any, ...]
    records: tuple[PassRecord, ...]


def optimize(ops: Sequence[Operation], placement: Any, feeds: Sequence[Tensor], fetches: Sequence[Tensor],
             targets: Sequence[Operation], config: ConfigProto) -> OptimizedGraph | None:
    """Run the passes ``config`` turns on over the pruned, placed ``ops``; None when none applies (no pass on,
    a graph under ``min_graph_nodes``, or control flow): the caller then partitions ``ops`` unchanged."""
    passes = [p for p in PASSES if p.enabled(config)]
    if not passes or has_control_flow([op.type for op in ops]):
        return None
    rewrite = config.graph_options.rewrite_options
    min_nodes = rewrite.min_graph_nodes or DEFAULT_MIN_GRAPH_NODES
    item = GraphItem(ops, placement, feeds, fetches, targets)
    grappler = [p for p in passes if not p.classic]
    if len(item) < min_nodes:
        grappler = []
    records: list[PassRecord] = []
    state = GraphState(item)  # the graph after the last pass: the next pass's "before" (one snapshot per pass)
    idle: set[Callable[[GraphItem], None]] = set()  # passes that changed nothing on the graph as it is now
    for iteration in range(rewrite.meta_optimizer_iterations or DEFAULT_ITERATIONS):
        if len(item) < min_nodes:
            break
        for graph_pass in grappler:
            record, state = _run(graph_pass, item, iteration, state, idle)
            records.append(record)
    for graph_pass in passes:
        if graph_pass.classic:
            record, state = _run(graph_pass, item, -1, state, idle)
            records.append(record)
    nodes = tuple(item.ordered())
    return OptimizedGraph(nodes, {n: n.device for n in nodes}, tuple(item.fetch_outputs()), tuple(records))


def _run(graph_pass: GraphPass, item: GraphItem, iteration: int, before: GraphState,
         idle: set[Callable[[GraphItem], None]]) -> tuple[PassRecord, GraphState]:
    """Run one pass and prune; its record, and the graph's state after it (``before``: the state before it).

    A pass is a function of the graph alone: one that changed nothing (``idle``) would change nothing again
    on the same graph, so while no pass has changed it since, it is not run again, and its record says it
    changed nothing (what running it would have recorded)."""
    if graph_pass.run in idle:
        return _unchanged(graph_pass, iteration, before), before
    graph_pass.run(item)
    item.prune()
    changed = item.take_changes()
    if not changed:
        idle.add(graph_pass.run)
        return _unchanged(graph_pass, iteration, before), before
    idle.clear()
    after = GraphState(item, before, changed)
    names_before, names_after = before.names(), after.names()
    record = PassRecord(graph_pass.name, iteration, len(before), len(after),
                        tuple(sorted(n for n in changed if n in names_before and n not in names_after)),
                        tuple(sorted(n for n in changed if n in names_after and n not in names_before)),
                        tuple(sorted(before.rewritten(after, changed))), before, after)
    return record, after


def _unchanged(graph_pass: GraphPass, iteration: int, state: GraphState) -> PassRecord:
    """The record of ``graph_pass`` leaving the graph (``state``) as it was."""
    return PassRecord(graph_pass.name, iteration, len(state), len(state), (), (), (), state, state)
