"""Rank side of :mod:`dfcore.mpi.departures`: the note ``rank<k>.left`` a rank writes when its program ends.

Source: dfcore's own protocol (see :mod:`dfcore.mpi.departures`). Standard library only, and no
relative import: :mod:`dfcore.mpi.rank_main` loads this file by its path in ranks that never import
``dfcore`` (a user's plain ``mpi4py`` program), and ``dfcore.mpi`` imports it in ranks that do. Whichever
installs first takes ``DFCORE_JOB_DIR`` out of the environment, so a rank writes one note.
"""

import atexit
import json
import os
import sys
import time
from collections.abc import Callable

#: The environment variable naming the directory where ranks note their departure.
JOB_DIR_ENV = "DFCORE_JOB_DIR"
#: The module whose ``current()`` is the rank's ``tf.train.Server`` transport, if it ran one.
_TRANSPORT_MODULE = "dfcore.mpi.transport"


def departure_path(directory: str, rank: int) -> str:
    """Where rank ``rank`` notes its departure."""
    return os.path.join(directory, f"rank{int(rank)}.left")


def install(rank_of: Callable[[], int]) -> None:
    """Note this rank's departure at exit (``rank_of()`` gives its rank then); a no-op outside a launched job
    or once installed. Takes ``DFCORE_JOB_DIR`` out of the environment, so that processes the rank starts
    (a ``multiprocessing`` worker) do not speak for it when they end."""
    directory = os.environ.pop(JOB_DIR_ENV, None)
    if directory:
        atexit.register(note_departure, directory, rank_of)


def note_departure(directory: str, rank_of: Callable[[], int]) -> None:
    """Write ``{"left_at": time.time(), "served": bool}`` to this rank's note (atomically: a temporary file
    renamed); ``served``: the rank ran a ``tf.train.Server``. Nothing if the launcher's directory is gone."""
    transport = sys.modules.get(_TRANSPORT_MODULE)
    served = transport is not None and transport.current() is not None
    path = departure_path(directory, rank_of())
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"left_at": time.time(), "served": served}, f)
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # the launcher is gone with its directory: nobody is left to tell
