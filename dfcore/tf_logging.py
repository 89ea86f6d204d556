"""``tf.logging``: TF 1.x's logging functions, on the standard ``logging`` module's ``dfcore`` logger.

Source: ``tensorflow/python/platform/tf_logging.py`` (TF 1.x): the same names and levels
(``DEBUG`` 10 … ``FATAL`` 50), ``set_verbosity``/``get_verbosity``, and ``log_every_n`` /
``log_first_n``. dfcore's own messages (``dfcore.train``'s hooks, …) go to children of this
logger, so ``tf.logging.set_verbosity(tf.logging.INFO)`` shows them, as in TF. Until a program
configures logging, the logger writes to stderr.
"""

import logging as _logging
import sys

DEBUG, INFO, WARN, ERROR, FATAL = _logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR, _logging.FATAL
_LOGGER = _logging.getLogger("dfcore")
_counts: dict[tuple[str, int], int] = {}

__all__ = ["DEBUG", "ERROR", "FATAL", "INFO", "WARN", "debug", "error", "fatal", "get_logger", "get_verbosity",
           "info", "log", "log_every_n", "log_first_n", "log_if", "set_verbosity", "warn", "warning"]


def get_logger():
    """The ``dfcore`` logger (given a stderr handler on first use if the program configured none)."""
    if not _LOGGER.handlers and not _logging.getLogger().handlers:
        handler = _logging.StreamHandler(sys.stderr)
        handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
        _LOGGER.addHandler(handler)
    return _LOGGER


def _log(level, msg, args, kwargs, depth=3):
    """Log through the ``dfcore`` logger, attributing the record to the user's line ``depth`` frames up."""
    get_logger().log(level, msg, *args, stacklevel=depth, **kwargs)


def log(level, msg, *args, **kwargs):
    _log(level, msg, args, kwargs)


def debug(msg, *args, **kwargs):
    _log(DEBUG, msg, args, kwargs)


def info(msg, *args, **kwargs):
    _log(INFO, msg, args, kwargs)


def warning(msg, *args, **kwargs):
    _log(WARN, msg, args, kwargs)


warn = warning


def error(msg, *args, **kwargs):
    _log(ERROR, msg, args, kwargs)


def fatal(msg, *args, **kwargs):
    _log(FATAL, msg, args, kwargs)


def log_if(level, msg, condition, *args):
    """Log ``msg`` at ``level`` only if ``condition``."""
    if condition:
        _log(level, msg, args, {})


def log_every_n(level, msg, n, *args):
    """Log ``msg`` the 1st, (n+1)th, (2n+1)th … time this line runs."""
    if _count() % n == 0:
        _log(level, msg, args, {})


def log_first_n(level, msg, n, *args):
    """Log ``msg`` only the first ``n`` times this line runs."""
    if _count() < n:
        _log(level, msg, args, {})


def _count():
    """How many times the line calling ``log_every_n``/``log_first_n`` has run before."""
    frame = sys._getframe(2)
    site = (frame.f_code.co_filename, frame.f_lineno)
    count = _counts.get(site, 0)
    _counts[site] = count + 1
    return count


def get_verbosity():
    return get_logger().getEffectiveLevel()


def set_verbosity(level):
    """Show messages at ``level`` and above (``tf.logging.INFO`` …)."""
    get_logger().setLevel(level)


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.logging", name)
