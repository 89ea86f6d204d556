"""``SessionRunHook``: code that runs around each ``MonitoredSession.run`` call.

Source: ``tensorflow/python/training/session_run_hook.py`` (TF 1.x). A hook's ``before_run``
may ask for extra fetches, feeds and run options (:class:`SessionRunArgs`); they are run in the
same ``Session.run`` call as the caller's, and ``after_run`` gets their values
(:class:`SessionRunValues`). A hook ends training with ``run_context.request_stop()``.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..runtime.session import Session
    from .coordinator import Coordinator


class SessionRunHook:
    """The hook interface; every method does nothing by default.

    Order: ``begin()`` (the graph can still change) → ``after_create_session(session, coord)`` →
    per call ``before_run(run_context)`` / ``after_run(run_context, run_values)`` → ``end(session)``
    (only when training ends without an error).
    """

    def begin(self) -> None:
        pass

    def after_create_session(self, session: Session, coord: Coordinator) -> None:
        pass

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        pass

    def end(self, session: Session) -> None:
        pass


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run call: ``fetches`` (any fetch structure), ``feed_dict``, ``options`` (RunOptions)."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """What a hook gets back: ``results`` (its fetches' values), the call's ``options`` and ``run_metadata``."""


class SessionRunContext:
    """The call being made (``original_args``: the caller's :class:`SessionRunArgs`) and the ``session``;
    a hook calls :meth:`request_stop` to end training after this call."""

    def __init__(self, original_args: SessionRunArgs, session: Session):
        self._original_args, self._session, self._stop_requested = original_args, session, False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self) -> Session:
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        self._stop_requested = True
