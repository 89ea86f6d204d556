"""The kinds of job ``run_job`` starts besides ``mpiexec``'s, registered by the module that defines each.

Source: dfcore's own layering (docs/architecture.md#layers): :mod:`dfcore.task_processes` (plain ``python``
processes that find each other over gRPC, ``run_job(transport="grpc")``) builds on mpi/'s processes and
layouts, so mpi/ never imports it; it registers its job here when imported (``import dfcore`` imports it), as
the transports register their server backends with distribute/.
"""

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class ProcessJobKind:
    """How ``run_job`` starts and reads a job of one transport.

    ``start(layout, argv, env, stdout, stderr, with_tf_flags=...)`` returns the running job (the methods of
    :class:`~dfcore.mpi.processes.MPIJob`); ``untag(text, layout)`` splits the job's output into
    ``(text without task tags, {rank: its lines})``.
    """

    start: Callable[..., Any]
    untag: Callable[[str, Any], tuple[str, dict[int, str]]]


_KINDS: dict[str, ProcessJobKind] = {}


def register_process_job(transport: str, kind: ProcessJobKind) -> None:
    """Make ``run_job(transport=transport)`` start and read jobs with ``kind``."""
    _KINDS[transport] = kind


def process_job(transport: str) -> ProcessJobKind:
    """The job kind registered for ``transport``.

    Raises:
        ValueError: none is (``"grpc"`` is registered by importing :mod:`dfcore.task_processes`).
    """
    try:
        return _KINDS[transport]
    except KeyError:
        raise ValueError(f"no job kind is registered for transport {transport!r} (import dfcore.task_processes "
                         "for 'grpc')") from None
