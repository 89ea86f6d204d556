"""``Session`` and ``InteractiveSession``: run fetches of a graph, TF1's way.

Source: ``tensorflow/python/client/session.py`` and
``tensorflow/core/common_runtime/direct_session.cc``. A session owns its devices
(from ``ConfigProto.device_count``; on a cluster target, the whole cluster's, see
:func:`~dfcore.runtime.session_targets.register_target_resolver`), its variables and a thread pool of
``inter_op_parallelism_threads`` (see :mod:`dfcore.runtime.thread_pools`). ``run`` validates feeds and
fetches; builds, once
per signature, a plan (prune → place → partition with ``_Send``/``_Recv`` → one
executor per device; feeds and fetches through the step's call frame, ``_Arg`` and
``_Retval``); runs every partition of the step in one variable transaction; and
commits the step's variable writes only if every op succeeded. ``partial_run_setup``
and ``partial_run`` feed and fetch through the rendezvous instead
(:mod:`dfcore.runtime.partial_run`).
The whole graph is placed on the first run (and again when ops were added), as
TF's DirectSession does, so ``log_device_placement`` lists every node.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal

from .. import errors
from ..framework import graph as graph_lib
from ..framework.default_session import default_session
from ..framework.protos import GraphDef
from . import placer, step as step_lib, step_plan
from .cancellation import DEFAULT_STEP_TIMEOUT_S
from .config import ConfigProto, RunMetadata, RunOptions
from .device_context import device_context
from .device_set import Device, DeviceSet
from .feed import client_value, feed_list_tensors, feed_tensor, feed_value
from .fetch import FetchHandler
from .gc_pause import gc_paused
from .grappler import PassRecord
from .partial_run import PartialRun, partial_run_handle
from .partition import Partitions
from .placement_options import PlacementArg, PlacementOptions, placement_options
from .placer import Placement, PlacementRecord
from .session_resources import SessionResources
from .session_steps import StepsInFlight, closed_error, interrupted_error
from .session_targets import bind_target
from .step_plan import StepPlan
from .step_trace import fill_run_metadata, machine_for
from .thread_pools import InterOpPool, SessionThreadPools
from .variable_store import VariableStore


class BaseSession:
    """Common code of :class:`Session` and :class:`InteractiveSession`.

    ``executor_runner`` (dfcore, not TF) chooses where partitions run: ``"auto"``
    (default: heavy partitions on the pool, the rest inline), ``"inline"`` (all on the
    calling thread) or ``"pool"`` (all on the thread pool); results are identical.
    ``placement`` (dfcore, not TF: TF's ConfigProto has no such field) chooses the placement
    strategy: ``"rules"`` (default, TF's placer), ``"cost_model"`` (the whitepaper's), or a
    :class:`~dfcore.runtime.placement_options.PlacementOptions`; an unknown name is an
    InvalidArgumentError listing the known ones.
    """

    def __init__(self, target: str = "", graph: graph_lib.Graph | None = None, config: ConfigProto | None = None,
                 executor_runner: str = "auto", placement: PlacementArg = None) -> None:
        self._placement_options = placement_options(placement)
        if executor_runner not in step_plan.RUNNERS:
            raise ValueError(f"executor_runner must be one of {step_plan.RUNNERS}, got {executor_runner!r}")
        self._runner = executor_runner
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        if graph is None:  # while executing eagerly TF's default graph stays empty: eager ops are not in it
            graph = graph_lib.Graph() if graph_lib.executing_eagerly() else graph_lib.get_default_graph()
        self._graph = graph
        if not isinstance(self._graph, graph_lib.Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(self._graph)}")
        self._target = target or ""
        self._config = config if config is not None else ConfigProto()
        self._binding = bind_target(self._target, self._config)
        if self._binding is None:
            self._variables = VariableStore()
            self._resources = SessionResources()
            self._device_set = DeviceSet.from_config(self._config)
            self._resources.machine = machine_for(self._device_set)
        else:
            self._variables = self._binding.variable_store
            self._resources = self._binding.resources
            self._device_set = self._binding.device_set
        self._plans: dict[Any, StepPlan] = {}
        self._contexts: dict[str, Any] | None = None  # the real GPUs' DeviceContexts, made on first plan
        self._plans_lock = threading.Lock()
        self._step_ids = itertools.count(1)
        self._steps = StepsInFlight()
        self._default_session_context: Any = None
        self._placement: Placement | None = None
        self._placed_version = -1
        self._placement_lock = threading.Lock()
        self._pools: SessionThreadPools | None = SessionThreadPools(self._config)
        self._partial_runs: dict[str, PartialRun] = {}
        self._partial_run_ids = itertools.count()

    @property
    def graph(self) -> graph_lib.Graph:
        return self._graph

    @property
    def graph_def(self) -> GraphDef:
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self._target

    @property
    def variable_store(self) -> VariableStore:
        return self._variables

    @property
    def device_set(self) -> DeviceSet:
        """The :class:`~dfcore.runtime.device_set.DeviceSet` this session runs on."""
        return self._device_set

    def list_devices(self) -> list[Device]:
        """The session's devices (TF's ``Session.list_devices``), as Device records."""
        return list(self._device_set.devices)

    def partitions(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None,
                   partial_run: bool = False) -> Partitions:
        """The :class:`~dfcore.runtime.partition.Partitions` (``{device: PartitionGraph}`` with ``.stats``) that
        ``run(fetches, feed_dict)`` executes (``partial_run``: that ``partial_run_setup(fetches, list(feed_dict))``
        starts); builds (and caches) its plan without running it (dfcore, for the partition widgets and lessons)."""
        if self._steps.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        handler = FetchHandler(self._graph, fetches)
        feed_tensors, _ = self._process_feeds(feed_dict)
        return self._plan_for(handler.tensors, handler.targets, feed_tensors, self._thread_pool(None),
                              partial_run).graphs

    @property
    def placement_options(self) -> PlacementOptions:
        """The :class:`~dfcore.runtime.placement_options.PlacementOptions` this session places with."""
        return self._placement_options

    def placement(self) -> Placement | None:
        """The graph's :class:`~dfcore.runtime.placer.Placement` (a ``CostPlacement`` under ``"cost_model"``,
        with its decisions); None before the first run."""
        return self._placement

    def optimizer_records(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None) -> tuple[PassRecord, ...]:
        """The graph optimizer's :class:`~dfcore.runtime.grappler.PassRecord` per pass for ``run(fetches,
        feed_dict)`` (empty when no pass ran: see :mod:`dfcore.runtime.grappler.meta_optimizer`); builds (and
        caches) its plan without running it (dfcore, for GraphView and the lessons)."""
        if self._steps.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        handler = FetchHandler(self._graph, fetches)
        feed_tensors, _ = self._process_feeds(feed_dict)
        return self._plan_for(handler.tensors, handler.targets, feed_tensors,
                              self._thread_pool(None)).optimizer_records

    def placement_records(self) -> list[PlacementRecord]:
        """One :class:`~dfcore.runtime.placer.PlacementRecord` per placed node (empty before the first run)."""
        return [] if self._placement is None else self._placement.records()

    # -- running --------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None, options: RunOptions | None = None,
            run_metadata: RunMetadata | None = None) -> Any:
        """Run the ops needed for ``fetches``, feeding ``feed_dict``; return values in the fetches' structure.

        Raises:
            RuntimeError: the session is closed.
            TypeError / ValueError: a malformed fetch or feed (TF's wording).
            OpError subclasses: an op failed; no variable was changed by this call.
            DeadlineExceededError: the step ran past ``options.timeout_in_ms`` (else
                ``ConfigProto.operation_timeout_in_ms``), wherever its ops ran; nothing was committed.
            KeyboardInterrupt: Ctrl-C while the step ran or waited; re-raised once the step was cancelled
                everywhere (its queue waits withdrawn, its executors stopped); nothing was committed.
        """
        with self._steps.running():
            return self._run(fetches, feed_dict, options, run_metadata)

    def _run(self, fetches, feed_dict, options, run_metadata):
        handler = FetchHandler(self._graph, fetches)
        feed_tensors, feed_values = self._process_feeds(feed_dict)
        options = options or RunOptions()
        remote_run = getattr(self._binding, "run", None)
        if remote_run is not None:  # a remote master runs the whole step (TF's GrpcSession)
            values = remote_run(self._graph, handler.tensors, handler.targets, feed_tensors, feed_values, options,
                                run_metadata)
            return handler.build([client_value(v) for v in values])
        pool = self._thread_pool(options)
        plan = self._plan_for(handler.tensors, handler.targets, feed_tensors, pool)
        trace = options.trace_level >= RunOptions.FULL_TRACE and run_metadata is not None
        if self._binding is not None:
            self._binding.check_step(plan)
        txn = self._variables.begin()
        step_id = next(self._step_ids)
        try:
            run_step = getattr(self._binding, "run_step", step_lib.run_step)
            with self._intra_op_scope():
                result = run_step(plan, feed_values, txn, self._resources, step_id, pool, self._timeout_s(options),
                                  trace)
        except Exception as error:
            self._abort_step(txn, step_id)
            interrupted = interrupted_error(self._steps, self._binding, plan)
            if interrupted is None:
                raise
            raise interrupted from error
        except BaseException:
            self._abort_step(txn, step_id)
            raise
        interrupted = interrupted_error(self._steps, self._binding, plan)
        if interrupted is not None:  # closed, or a task went down, while it ran: nothing is committed
            self._abort_step(txn, step_id)
            raise interrupted
        txn.commit()
        self._resources.end_step(step_id, committed=True)
        if run_metadata is not None:
            fill_run_metadata(run_metadata, plan, result, options, self._device_set, self._config)
        return handler.build([client_value(v) for v in result.values])

    def _abort_step(self, txn, step_id):
        txn.abort()
        self._resources.end_step(step_id, committed=False)

    # -- partial runs (TF 1.x, experimental there too) ---------------------------
    def partial_run_setup(self, fetches: Any, feeds: Any = None) -> str:
        """Start a step whose ``feeds`` (a tensor or list) are given and ``fetches`` taken in later
        :meth:`partial_run` calls; returns its handle (a str). Source: TF ``DirectSession::PRunSetup``.
        Raises:
            RuntimeError: the session is closed. TypeError: a feed that names no tensor (TF's wording).
            InvalidArgumentError: a feed given twice, or a tensor both fed and fetched.
            UnimplementedError: a session on an MPI target (dfcore runs its steps as one ``run_graph`` per task).
        """
        if self._steps.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if getattr(self._binding, "run_step", None) is not None:
            raise errors.UnimplementedError(None, None, "partial_run is not implemented for sessions on an MPI target.")
        handler = FetchHandler(self._graph, fetches)
        feed_tensors = feed_list_tensors(self._graph, feeds)
        pool = self._thread_pool(None)
        plan = self._plan_for(handler.tensors, handler.targets, feed_tensors, pool, partial_run=True)
        if self._binding is not None:
            self._binding.check_step(plan)
        handle = partial_run_handle(feed_tensors, handler.tensors, handler.targets, next(self._partial_run_ids))
        self._partial_runs[handle] = PartialRun(
            plan, feed_tensors, handler.tensors, self._variables.begin(), self._resources, next(self._step_ids),
            pool, self._timeout_s(RunOptions()) or DEFAULT_STEP_TIMEOUT_S)
        return handle

    def partial_run(self, handle: str, fetches: Any, feed_dict: Mapping[Any, Any] | None = None) -> Any:
        """Feed ``feed_dict`` to and fetch ``fetches`` from the partial run ``handle``; values in the fetches'
        structure. Each feed and fetch named at setup is given once over the calls; the step's writes are
        committed when the last one is. Source: TF ``DirectSession::PRun``.
        Raises:
            RuntimeError: the session is closed, or ``fetches`` holds an operation (TF's wording).
            InvalidArgumentError: an unknown handle, a feed or fetch not named at setup or already given, or a
                fetch that needs a feed not given yet (TF's wording).
            OpError: an op of the step failed (the partial run is over; nothing is committed).
        """
        if self._steps.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        handler = FetchHandler(self._graph, fetches)
        feed_tensors, feed_values = self._process_feeds(feed_dict)
        fed = dict(zip(feed_tensors, feed_values))
        wanted = [t for t in handler.tensors if t not in fed]
        if not (wanted or handler.targets or feed_tensors):
            return handler.build([])
        if handler.targets:
            raise RuntimeError("partial_run() requires empty target_list.")
        run = self._partial_runs.get(handle)
        if run is None:
            raise errors.InvalidArgumentError(None, None, "Must run 'setup' before performing partial runs!")
        run.check(feed_tensors, wanted)
        try:
            values = dict(zip(wanted, run.run(feed_tensors, feed_values, wanted)))
        finally:
            if run.ended:
                del self._partial_runs[handle]
        return handler.build([client_value(fed[t] if t in fed else values[t]) for t in handler.tensors])

    def _timeout_s(self, options):
        ms = options.timeout_in_ms or self._config.operation_timeout_in_ms
        return ms / 1000.0 if ms else None

    def _thread_pool(self, options: RunOptions | None) -> InterOpPool | None:
        """The inter-op pool of a run (None: the caller's thread; see :mod:`dfcore.runtime.thread_pools`)."""
        if self._pools is None:
            raise RuntimeError("Attempted to use a closed Session.")
        return self._pools.pool_for(options)

    def _intra_op_scope(self):
        return self._pools.intra_op_scope() if self._pools is not None else contextlib.nullcontext()

    def _plan_for(self, fetch_tensors, target_ops, feed_tensors, pool, partial_run=False):
        threads = pool.threads if pool is not None else 0
        runner = self._runner if pool is not None else "inline"
        key = (tuple(fetch_tensors), tuple(target_ops), tuple(feed_tensors), partial_run, threads, runner)
        with self._plans_lock:
            plan = self._plans.get(key)
        if plan is None:
            with gc_paused():  # a big graph's compile would spend as long again in full collections
                plan = step_plan.build_step_plan(fetch_tensors, target_ops, feed_tensors, self._placement_for,
                                                 self._device_set.client_device.name, threads, runner,
                                                 partial_run, self._config,
                                                 {d.name: d.backend for d in self._device_set.devices},
                                                 self._device_contexts())
            with self._plans_lock:
                plan = self._plans.setdefault(key, plan)
        return plan

    def _device_contexts(self):
        """``{device name: DeviceContext}`` of the session's real GPUs (made once; none on simulated ones)."""
        contexts = self._contexts
        if contexts is None:
            contexts = self._contexts = {d.name: c for d in self._device_set.devices
                                         if (c := device_context(d)) is not None}
        return contexts

    def _placement_for(self, ops):
        """The placement of the whole graph, redone when ops were added since the last one."""
        with self._placement_lock:
            if self._placed_version != self._graph.version:
                previous = self._placement
                placement = self._placement_options.place(self._graph.get_operations(), self._device_set,
                                                          self._config.allow_soft_placement)
                if self._config.log_device_placement:
                    self._log_placement(placement, previous)
                self._placement, self._placed_version = placement, self._graph.version
            return self._placement

    def _log_placement(self, placement, previous):
        """Print TF's ``Device mapping:`` header (first time) and one line per newly placed node."""
        known = set() if previous is None else {r.node_name for r in previous.records()}
        records = [r for r in placement.records() if r.node_name not in known]
        lines = placer.placement_log_lines(self._device_set, records)
        if previous is not None:
            lines = lines[-len(records):] if records else []
        if lines:
            print("\n".join(lines), flush=True)

    def _process_feeds(self, feed_dict):
        if not feed_dict:
            return (), ()
        tensors, values = [], []
        for key, value in feed_dict.items():
            tensor = feed_tensor(self._graph, key)
            tensors.append(tensor)
            values.append(feed_value(tensor, value))
        order = sorted(range(len(tensors)), key=lambda i: tensors[i].name)
        return tuple(tensors[i] for i in order), tuple(values[i] for i in order)

    # -- lifecycle ------------------------------------------------------------
    def close(self) -> None:
        """Release the session's variables, plans and threads; later ``run`` calls raise RuntimeError. Steps
        and partial runs still running end with ``CancelledError("Session has been closed.")`` (close waits up
        to :data:`~dfcore.runtime.session_steps.CLOSE_DRAIN_S` for them to stop)."""
        if self._steps.close():
            for run in self._partial_runs.values():
                run.cancel(closed_error())
            self._partial_runs.clear()
            self._resources.cancel_steps(closed_error())
            if self._binding is None:  # a cluster's state outlives its sessions
                self._resources.close()
                self._steps.drain()  # the cancelled steps stop before their variables go
                self._variables.clear()
            else:
                self._steps.drain()
                if hasattr(self._binding, "close"):
                    self._binding.close()
            self._plans.clear()
            if self._pools is not None:
                self._pools.close()
                self._pools = None

    def as_default(self) -> contextlib.AbstractContextManager[Any]:
        """A context manager making this the default session (for ``Tensor.eval``)."""
        return default_session(self)

    def __enter__(self) -> BaseSession:
        self._graph_context = self._graph.as_default()
        self._graph_context.__enter__()
        self._default_session_context = default_session(self)
        self._default_session_context.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        self._default_session_context.__exit__(exc_type, exc, tb)
        self._graph_context.__exit__(exc_type, exc, tb)
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"<dfcore.Session target={self._target!r}{' closed' if self._steps.closed else ''}>"


class Session(BaseSession):
    """A session on the local process (``target=""``) or on a cluster (``target=server.target``,
    see :mod:`dfcore.distribute.cluster`)."""


class InteractiveSession(BaseSession):
    """A session that installs itself as the default session on construction (for shells and notebooks)."""

    def __init__(self, target: str = "", graph: graph_lib.Graph | None = None, config: ConfigProto | None = None,
                 executor_runner: str = "auto", placement: PlacementArg = None) -> None:
        super().__init__(target, graph, config, executor_runner, placement)
        self._interactive_context = default_session(self)
        self._interactive_context.__enter__()
        self._graph_context = self._graph.as_default()
        self._graph_context.__enter__()

    def close(self) -> None:
        if not self._steps.closed and getattr(self, "_interactive_context", None) is not None:
            self._graph_context.__exit__(None, None, None)
            self._interactive_context.__exit__(None, None, None)
        super().close()
