"""Where a ``Session(target=...)`` runs: resolvers that bind a target string to devices, variables and a
step runner (a cluster's tasks, an MPI job), tried in order; the local target ``""`` binds to nothing.

Source: TF's ``SessionFactory`` registry (``core/common_runtime/session_factory.h``, ``session.cc``): a
target no factory accepts is a ``NotFoundError`` listing the registered factories.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import errors
from .config import ConfigProto

_TARGET_RESOLVERS: list[Callable[..., Any]] = []


def register_target_resolver(resolver: Callable[[str, ConfigProto], Any], first: bool = False) -> None:
    """Let ``Session(target=...)`` run on something other than this process.

    ``resolver(target, config)`` returns None when ``target`` is not its kind, else a
    binding with ``device_set`` (a DeviceSet whose client device is the session's task),
    ``variable_store``, ``resources`` (a :class:`SessionResources`),
    ``check_step(plan)`` (raises ``UnavailableError`` when a task the plan uses is down) and
    optionally ``run_step`` (same signature as :func:`dfcore.runtime.step.run_step`) to run
    steps itself, or ``run(graph, fetch tensors, target ops, feed tensors, feed values, options,
    run_metadata)`` returning the fetched values to run whole calls elsewhere (a remote master),
    and optionally ``close()``. ``first`` puts it
    before the resolvers registered so far.
    """
    if first:
        _TARGET_RESOLVERS.insert(0, resolver)
    else:
        _TARGET_RESOLVERS.append(resolver)


def bind_target(target: str, config: ConfigProto) -> Any:
    """The binding of ``target`` (None for the local target ``""``).

    Raises:
        NotFoundError: no resolver knows the target (TF's wording).
    """
    if not target:
        return None
    for resolver in _TARGET_RESOLVERS:
        binding = resolver(target, config)
        if binding is not None:
            return binding
    raise errors.NotFoundError(
        None, None, f'No session factory registered for the given session options: {{target: "{target}"}} '
        "Registered factories are {DIRECT_SESSION, GRPC_SESSION}.")
