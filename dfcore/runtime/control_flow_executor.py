"""The executor of a partition holding control flow: frames, iterations and dead tensors.

Source: TF's ``common_runtime/executor.cc`` (``ExecutorState``: ``FrameState``,
``IterationState``, ``ActivateNodes``, ``CleanupFramesIterations``) and Yu et al., EuroSys
2018, §4.1. Only partitions with ``Switch``/``Merge``/``Enter``/``Exit``/``NextIteration``
use it (:func:`make_executor` picks), so straight-line graphs keep the lean
:class:`~dfcore.runtime.executor.Executor`.

* A node runs in a *frame* (the root frame, or one instance of a loop per parent frame and
  iteration) and an *iteration* of it; each iteration has its own value slots, pending
  counts and dead marks. ``Enter`` creates (or joins) the child frame instance; its
  value reaches iteration 0, or every iteration when ``is_constant``. ``NextIteration``
  starts the next iteration; ``Exit`` hands its value to the parent frame's iteration.
* Dead tensors: a node with a dead input (data or control) does not run; its outputs are
  dead. A ``Merge`` runs on its first live data input (``value_index`` says which; a later
  live input is ignored) and is dead only when all its awaited data inputs are dead. A dead
  ``NextIteration`` ends the iteration chain; a dead ``Exit`` is passed to the parent only
  when its frame ends without a live one (a loop inside an untaken branch). A dead ``_Send``
  still runs and sends DEAD, so its ``_Recv`` runs dead on the other device (TF's ``is_dead``).
  A ``ControlTrigger`` is never dead.
* ``parallel_iterations``: a frame instance has at most that many iterations outstanding;
  a ``NextIteration`` past the bound waits until the oldest iteration is done.
* Iterations are done oldest first (no ready or running node, no child frame, and for
  iteration 0 every ``Enter`` arrived); a frame is done with its last iteration.
* Frame ids are a hash of the parent's id, the parent's iteration and the frame name, the
  same in every partition, as TF's; :class:`~dfcore.runtime.executor.NodeTiming` records of
  nodes inside a loop carry ``(frame_id, iter)``.

Aborts, deadlines, async nodes and ``done`` work as in :class:`~dfcore.runtime.executor.Executor`.
"""

from __future__ import annotations

import collections
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from .. import errors
from ..framework.registry import DEAD
from .cancellation import cancelled_error
from .compiled_partition import CompiledPartition
from .executor import Executor, NodeTiming, StepContext, StepRun
from .kernel_errors import kernel_error


class _Iteration:
    """One iteration of one frame instance: value slots, pending counts, dead marks."""

    __slots__ = ("values", "pending", "dead", "merge_dead", "merged", "outstanding")

    def __init__(self, initial_values, pending):
        self.values = list(initial_values)
        self.pending = list(pending)
        self.dead: set[int] = set()
        self.merge_dead: dict[int, int] = {}
        self.merged: dict[int, int] = {}  # Merge → position of its first live input
        self.outstanding = 0  # ready or running nodes, plus live child frames


class _Frame:
    """One instance of a frame (TF's ``FrameState``)."""

    __slots__ = ("name", "frame_id", "parent", "parent_iter", "iterations", "oldest", "iteration_count",
                 "num_outstanding", "max_parallel", "pending_enters", "invariants", "deferred", "live_exits")

    def __init__(self, name, frame_id, parent, parent_iter, max_parallel, pending_enters):
        self.name = name
        self.frame_id = frame_id
        self.parent = parent
        self.parent_iter = parent_iter
        self.iterations: dict[int, _Iteration] = {}
        self.oldest = 0
        self.iteration_count = 0
        self.num_outstanding = 1
        self.max_parallel = max_parallel
        self.pending_enters = pending_enters
        self.invariants: list[tuple[int, tuple, bool, tuple]] = []
        self.deferred: list[tuple[int, tuple, tuple]] = []
        self.live_exits: set[int] = set()


def frame_id_of(parent_id: int, parent_iter: int, name: str) -> int:
    """The id of frame ``name`` entered in iteration ``parent_iter`` of frame ``parent_id`` (0: root)."""
    return zlib.crc32(f"{parent_id};{parent_iter};{name}".encode())


class ControlFlowExecutor(StepRun):
    """Runs one partition with control flow for one step; same arguments as
    :class:`~dfcore.runtime.executor.Executor`."""

    def __init__(self, partition: CompiledPartition, ctx: StepContext, runner: Callable[[Callable[[], None]], Any],
                 done: Callable[[errors.OpError | None], None], timings: list[NodeTiming] | None = None) -> None:
        info = partition.control_flow
        assert info is not None
        self._partition = partition
        self._info = info
        self._kinds = info.kinds
        self._out_edges = info.out_edges
        self._nodes = partition.nodes
        self._ctx = ctx
        self._runner = runner
        self._done = done
        self._timings = timings
        self._lock = threading.Lock()
        self._running = False
        self._finished = False
        self._ready: collections.deque = collections.deque()
        self._frames: dict[tuple[int, int, str], _Frame] = {}
        self._root = _Frame("", 0, None, 0, 1, 0)
        root_iteration = self._root.iterations[0] = _Iteration(partition.initial_values, info.pending)
        self.values = root_iteration.values
        self._outstanding = 0
        # traced steps: per executed (node, frame_id, iter), its producers (input position or -1 for a control
        # edge, producer instance, output port), for the simulated-clock replay of every iteration
        self.instance_producers: dict[tuple[int, int, int], list] | None = {} if timings is not None else None
        for index in info.roots:
            self._activate(index, self._root, 0, root_iteration)

    # -- running ------------------------------------------------------------------------
    def start(self) -> None:
        """Begin processing (through the runner)."""
        if self._outstanding == 0:
            self._finish(None)
            return
        self._wake()

    def stop(self) -> None:
        """Report now if the step was aborted (see :meth:`Executor.stop`)."""
        self._wake()

    def _wake(self):
        with self._lock:
            if self._running or self._finished:
                return
            self._running = True
        self._runner(self._run_loop)

    def _loop(self):
        ready, nodes, ctx, timings, kinds = self._ready, self._nodes, self._ctx, self._timings, self._kinds
        expiry_s = ctx.deadline.expiry_s if ctx.deadline is not None else None
        clock = time.perf_counter
        try:
            while True:
                if ctx.rendezvous.abort_status is not None or (expiry_s is not None and clock() >= expiry_s):
                    self._finish(self._stop_error())
                    return
                try:
                    index, frame, it, result = ready.pop()
                except IndexError:
                    with self._lock:
                        if ready:
                            continue
                        self._running = False
                    return
                node = nodes[index]
                state = frame.iterations[it]
                dead = index in state.dead
                if result is not None:  # an async node completed
                    error, value = result
                    if error is not None:
                        self._finish(error)
                        return
                    outputs = (value,) if node.num_outputs == 1 else tuple(value)
                    dead = value is DEAD  # a _Recv of a dead value
                elif dead and index not in self._info.runs_dead:
                    outputs = (DEAD,) * node.num_outputs
                    if timings is not None:
                        now = clock()
                        timings.append(NodeTiming(self._partition.device, index, now, now, threading.get_ident(),
                                                  list(outputs), (frame.frame_id, it), True))
                elif node.is_async:
                    ctx.frame_iter = (frame.frame_id, it)
                    self._start_async(index, node, frame, it, node.gather(state.values))
                    continue
                else:
                    if index in state.merged:
                        position = state.merged[index]
                        args: tuple[Any, ...] = (state.values[node.in_slots[position]], position)
                    elif dead:  # it runs to pass the deadness on (a _Send)
                        args = (DEAD,) * len(node.in_slots)
                    else:
                        args = node.gather(state.values)
                    if node.needs_context:  # a _Send keys its value with the frame and iteration
                        ctx.frame_iter = (frame.frame_id, it)
                    start = clock() if timings is not None else 0.0
                    try:
                        value = node.compute(ctx, *args) if node.needs_context else node.compute(*args)
                    except Exception as error:  # every kernel failure ends the step as an OpError
                        self._finish(kernel_error(error, node, args, self._partition.device))
                        return
                    n = node.num_outputs
                    outputs = (value,) if n == 1 else (tuple(value) if n else ())
                    if timings is not None:
                        timings.append(NodeTiming(self._partition.device, index, start, clock(), threading.get_ident(),
                                                  list(outputs), (frame.frame_id, it), dead))
                if kinds[index] is None:
                    self._deliver(index, outputs, dead, frame, it, (index, frame.frame_id, it))
                else:
                    self._propagate(index, frame, it, outputs, dead)
                state.outstanding -= 1
                if state.outstanding == 0:
                    self._cleanup(frame)
                self._outstanding -= 1
                if self._outstanding == 0:
                    self._finish(None)
                    return
        except BaseException as interrupt:  # Ctrl-C on the calling thread: cancel the step, let it propagate
            self._finish(cancelled_error(interrupt))
            raise

    def _start_async(self, index, node, frame, it, args):
        start = time.perf_counter()

        def completed(error, value):
            if error is None and self._timings is not None:
                outputs = [value] if node.num_outputs == 1 else list(value)
                self._timings.append(NodeTiming(self._partition.device, index, start, time.perf_counter(),
                                                threading.get_ident(), outputs, (frame.frame_id, it), value is DEAD))
            self._ready.append((index, frame, it, (error, value)))
            self._wake()

        self._compute_async(node, args, completed)

    # -- moving values between frames and iterations ---------------------------------
    def _propagate(self, index, frame, it, outputs, dead):
        kind = self._kinds[index]
        src = (index, frame.frame_id, it)
        if kind == "enter":
            attrs = self._nodes[index].source
            child = self._child_frame(frame, it, attrs)
            if attrs.get_attr("is_constant"):
                child.invariants.append((index, outputs, dead, src))
                for child_it in sorted(child.iterations):
                    self._deliver(index, outputs, dead, child, child_it, src)
            else:
                self._deliver(index, outputs, dead, child, 0, src)
            child.pending_enters -= 1
            if child.pending_enters == 0:
                self._cleanup(child)
        elif kind == "exit":
            if not dead:
                frame.live_exits.add(index)
                self._deliver(index, outputs, False, frame.parent, frame.parent_iter, src)
        elif kind == "next_iteration":
            if dead:
                return  # the loop ends here
            nxt = it + 1
            if nxt not in frame.iterations:
                if frame.deferred or frame.num_outstanding >= frame.max_parallel:
                    frame.deferred.append((index, outputs, src))
                    return
                self._new_iteration(frame)
            self._deliver(index, outputs, False, frame, nxt, src)
        else:
            self._deliver(index, outputs, dead, frame, it, src)

    def _deliver(self, index, outputs, dead, frame, it, src):
        """Store ``outputs`` of node ``index`` (run as instance ``src``: index, frame id, iteration) in
        ``(frame, it)`` and count them at each consumer there."""
        state = frame.iterations[it]
        out_slot = self._nodes[index].out_slot
        state.values[out_slot:out_slot + len(outputs)] = outputs
        kinds, pending = self._kinds, state.pending
        if self.instance_producers is not None:
            self._record_producers(out_slot, frame.frame_id, it, src)
        for dst, port in self._out_edges[index]:
            edge_dead = dead if port < 0 else outputs[port] is DEAD
            kind = kinds[dst]
            if kind != "merge":
                if edge_dead and kind != "control_trigger":
                    state.dead.add(dst)
                pending[dst] -= 1
                if pending[dst] == 0:  # activate (inlined: the hot path)
                    state.outstanding += 1
                    self._outstanding += 1
                    self._ready.append((dst, frame, it, None))
                continue
            if port < 0:
                pending[dst] -= 1
            elif edge_dead:
                state.merge_dead[dst] = state.merge_dead.get(dst, 0) + 1
            elif dst not in state.merged:
                state.merged[dst] = self._nodes[dst].in_slots.index(out_slot + port)
            if pending[dst] == 0 and (dst in state.merged
                                      or state.merge_dead.get(dst, 0) >= self._info.merge_inputs[dst]):
                pending[dst] = -1  # fired: later inputs are ignored
                if dst not in state.merged:
                    state.dead.add(dst)
                self._activate(dst, frame, it, state)

    def _record_producers(self, out_slot, frame_id, it, src):
        producers = self.instance_producers
        assert producers is not None, "called for traced steps only"
        for dst, port in dict.fromkeys(self._out_edges[src[0]]):  # one output may feed several inputs of dst
            record = producers.setdefault((dst, frame_id, it), [])
            if port < 0:
                record.append((-1, src, port))
            else:
                record.extend((position, src, port) for position, slot in enumerate(self._nodes[dst].in_slots)
                              if slot == out_slot + port)

    def _activate(self, index, frame, it, state):
        state.outstanding += 1
        self._outstanding += 1
        self._ready.append((index, frame, it, None))

    def _child_frame(self, frame, it, enter):
        name = enter.get_attr("frame_name")
        key = (frame.frame_id, it, name)
        child = self._frames.get(key)
        if child is None:
            child = _Frame(name, frame_id_of(frame.frame_id, it, name), frame, it,
                           enter.get_attr("parallel_iterations"), self._info.frame_enters[name])
            child.iterations[0] = _Iteration(self._partition.initial_values, self._info.pending)
            self._frames[key] = child
            frame.iterations[it].outstanding += 1  # the child frame keeps this iteration alive
        return child

    def _new_iteration(self, frame):
        frame.iteration_count += 1
        frame.num_outstanding += 1
        it = frame.iteration_count
        frame.iterations[it] = _Iteration(self._partition.initial_values, self._info.pending)
        for index, outputs, dead, src in frame.invariants:
            self._deliver(index, outputs, dead, frame, it, src)

    def _cleanup(self, frame):
        """Retire the frame's done iterations (oldest first), start a deferred one, end a done frame."""
        if frame.parent is None:
            return  # the root frame ends with the step
        while frame.oldest in frame.iterations:
            state = frame.iterations[frame.oldest]
            if state.outstanding or (frame.oldest == 0 and frame.pending_enters):
                return
            del frame.iterations[frame.oldest]
            frame.oldest += 1
            frame.num_outstanding -= 1
            if frame.deferred:
                deferred, frame.deferred = frame.deferred, []
                self._new_iteration(frame)
                for index, outputs, src in deferred:
                    self._deliver(index, outputs, False, frame, frame.iteration_count, src)
        if frame.num_outstanding or frame.pending_enters:
            return
        del self._frames[(frame.parent.frame_id, frame.parent_iter, frame.name)]
        parent, parent_it = frame.parent, frame.parent_iter
        for exit_index in self._info.frame_exits.get(frame.name, ()):
            if exit_index not in frame.live_exits:  # a loop that never ran live (inside an untaken branch)
                self._deliver(exit_index, (DEAD,), True, parent, parent_it,
                              (exit_index, frame.frame_id, frame.iteration_count))
        state = parent.iterations[parent_it]
        state.outstanding -= 1
        if state.outstanding == 0:
            self._cleanup(parent)


def make_executor(partition: CompiledPartition, ctx: StepContext, runner: Callable[[Callable[[], None]], Any],
                  done: Callable[[errors.OpError | None], None],
                  timings: list[NodeTiming] | None = None) -> Executor | ControlFlowExecutor:
    """The executor for ``partition``: :class:`ControlFlowExecutor` if it holds control flow, else the
    straight-line :class:`~dfcore.runtime.executor.Executor`."""
    if partition.control_flow is not None:
        return ControlFlowExecutor(partition, ctx, runner, done, timings)
    return Executor(partition, ctx, runner, done, timings)
