"""``tf.app``: ``tf.app.run`` and ``tf.app.flags``, which in TF 1.x are absl's.

Source: ``tensorflow/python/platform/app.py`` (TF 1.x): ``run`` parses the command line into
``flags.FLAGS`` — leaving flags it does not know for the program, as TF does — and calls
``main(argv)`` (default: the ``main`` of ``__main__``) through ``absl.app.run``, which exits with
``main``'s return value.
"""

import sys

from absl import app as _absl_app, flags

__all__ = ["flags", "run"]


def _parse_flags_tolerate_undef(argv):
    """Parse the flags defined so far; unknown ones stay in the returned argv (TF 1.x's parser)."""
    return flags.FLAGS(argv, known_only=True)


def run(main=None, argv=None):
    """Parse the command line into ``tf.app.flags.FLAGS`` and run ``main(argv)``; exits with its result.

    Raises:
        AttributeError: no ``main`` given and ``__main__`` defines none.
    """
    main = main or sys.modules["__main__"].main
    _absl_app.run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.app", name)
