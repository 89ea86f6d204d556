"""The default session of each thread (TF's ``ops._default_session_stack``): what ``Tensor.eval``,
``Operation.run`` and ``tf.get_default_session`` use.

Source: ``tensorflow/python/framework/ops.py`` (``default_session``, ``get_default_session``). It lives in
framework/ beside the default graph, so that ``Tensor.eval`` needs nothing above framework/; the runtime's
``Session.as_default`` pushes onto it.
"""

from typing import Any

from .default_stack import DefaultStack

_default_sessions = DefaultStack()


def default_session(session: Any) -> Any:
    """A context manager making ``session`` the default session of this thread for a ``with`` block."""
    return _default_sessions.get_controller(session)


def get_default_session() -> Any:
    """The innermost default session of this thread, or None."""
    return _default_sessions.top()


def default_session_for(element: Any, session: Any, what: str) -> Any:
    """The session to evaluate ``element`` in, checking that it owns the element's graph.

    Raises:
        ValueError: no default session, or the session's graph differs (TF's wording).
    """
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(
                f"Cannot evaluate tensor using `{what}`: No default session is registered. Use `with "
                "sess.as_default()` or pass an explicit session to `eval(session=sess)`"
            )
    if session.graph is not element.graph:
        raise ValueError(
            "Cannot use the given session to evaluate tensor: the tensor's graph is different from the session's graph."
        )
    return session
