"""What a Session keeps across steps besides variables: random generators, stateful
resources (queues, accumulators, mutexes) and per-step commit/abort hooks.

Source: TF's ``ResourceMgr`` (``core/framework/resource_mgr.h``), keyed here by
(kind, name). Split out of :mod:`dfcore.runtime.session`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from .. import errors
from .allocator import Allocator
from .device_set import allocator_name


class SessionResources:
    """State a session keeps across steps besides variables: random generators, stateful
    resources (queues, accumulators, mutexes) and the per-step commit/abort hooks.

    A cluster session (:mod:`dfcore.distribute.cluster_runtime`) uses a subclass whose
    variable keys and resources are those of the task owning the op's device, shared by
    every session on the cluster.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._generators = {}
        self._resources = {}
        self._step_hooks = {}
        self._allocators: dict[str, Allocator] = {}
        self._closed = False
        self._running: dict[Hashable, Callable[[errors.OpError], Any]] = {}
        self._steps_error: errors.OpError | None = None
        #: the session's hardware profiles (a :class:`~dfcore.runtime.cost_model.MachineProfile`) for what
        #: its ops simulate (an in-graph collective's time); None where the owner sets none
        self.machine: Any = None

    def variable_key(self, name: str, device: str) -> str:
        """The store key of variable ``name`` on ``device``: the name (a local session is one task)."""
        return name

    def resource(self, kind: str, name: str, device: str, factory: Callable[[], Any]) -> Any:
        """The resource ``(kind, name)`` of an op on ``device``, made by ``factory()`` on first use.

        Raises:
            CancelledError: the session was closed (a step still running then makes no new resource).
        """
        with self._lock:
            if self._closed:
                raise errors.CancelledError(None, None, "Session has been closed.")
            found = self._resources.get((kind, name))
            if found is None:
                found = self._resources[(kind, name)] = factory()
            return found

    def allocator(self, device: str) -> Allocator:
        """The :class:`~dfcore.runtime.allocator.Allocator` of ``device`` (made on first use)."""
        found = self._allocators.get(device)
        if found is None:
            with self._lock:
                found = self._allocators.setdefault(device, Allocator(allocator_name(device)))
        return found

    def allocators(self) -> dict[str, Allocator]:
        """``{device: Allocator}`` of the devices that have run a step."""
        with self._lock:
            return dict(self._allocators)

    def defer(self, step_id: Hashable, on_commit: Callable[[], Any] | None = None,
              on_abort: Callable[[], Any] | None = None) -> None:
        """Run ``on_commit()`` after step ``step_id`` commits, or ``on_abort()`` if it fails (``step_id``: the
        step's key, unique among the steps using these resources: see :class:`~dfcore.runtime.executor.StepContext`)."""
        with self._lock:
            self._step_hooks.setdefault(step_id, []).append((on_commit, on_abort))

    def watch_step(self, step_id: Hashable, abort: Callable[[errors.OpError], Any]) -> None:
        """Let :meth:`cancel_steps` end step ``step_id`` with ``abort(error)`` until :meth:`end_step`; a step
        that starts after it is aborted at once."""
        with self._lock:
            error = self._steps_error
            if error is None:
                self._running[step_id] = abort
        if error is not None:
            abort(error)

    def cancel_steps(self, error: errors.OpError) -> None:
        """Abort every step :meth:`watch_step` watches, and every one that starts later, with ``error``."""
        with self._lock:
            self._steps_error = error
            aborts, self._running = list(self._running.values()), {}
        for abort in aborts:
            abort(error)

    def end_step(self, step_id: Hashable, committed: bool) -> None:
        """Run the hooks :meth:`defer` registered for ``step_id`` (in registration order)."""
        with self._lock:
            hooks = self._step_hooks.pop(step_id, ())
            self._running.pop(step_id, None)
        for on_commit, on_abort in hooks:
            fn = on_commit if committed else on_abort
            if fn is not None:
                fn()

    def close(self) -> None:
        """Retire the session's own resources: blocked waiters, and any a still-running step adds later,
        fail with ``CancelledError``."""
        with self._lock:
            resources, self._resources, self._closed = list(self._resources.values()), {}, True
        for resource in resources:
            cancel = getattr(resource, "retire", None) or getattr(resource, "cancel_all", None)
            if cancel is not None:
                cancel(errors.CancelledError(None, None, "Session has been closed."))

    def generator(self, key: Any, seed: int, seed2: int) -> np.random.Generator:
        """The numpy Generator of one random op; ``seed == seed2 == 0`` draws fresh entropy."""
        with self._lock:
            gen = self._generators.get(key)
            if gen is None:
                entropy = None if (seed == 0 and seed2 == 0) else [seed, seed2]
                gen = self._generators[key] = np.random.Generator(np.random.Philox(np.random.SeedSequence(entropy)))
            return gen
