"""The ``checkpoint`` state file and checkpoint files on disk.

Source: ``tensorflow/python/training/checkpoint_management.py``. A directory
of checkpoints holds one state file (default name ``checkpoint``) in TF's
``CheckpointState`` text format::

    # crc32: 0xad09f2b9
    model_checkpoint_path: "model.ckpt-20"
    all_model_checkpoint_paths: "model.ckpt-10"
    all_model_checkpoint_paths: "model.ckpt-20"

and, for each checkpoint prefix ``P``, the file ``P.npz`` written by
:class:`~dfcore.train.saver.Saver` (dfcore's format, see ``checkpoint_format``)
its MetaGraphDef ``P.meta`` and any sidecar files ``P.<name>.json`` written beside
it (a parameter-server driver's ``P.driver.json``), deleted with it. As in TF, paths are
stored relative to the directory when the directory is given as a relative path
(or with ``save_relative_paths``), and relative paths read back are joined to
the directory. Every file is replaced atomically (``file_io.atomic_write``).

The first line, a text-format comment TF's parser skips, is dfcore's: the CRC-32
of the lines after it, so a damaged state file is caught even where it still
parses. Unlike TF, which logs a corrupt state file and goes on as if there were
no checkpoint (a training job then silently starts over), reading one raises
``DataLossError``; a state file without the line (written by TF) is read as TF does.
"""

import dataclasses
import glob
import logging
import os
import re
import zlib
from collections.abc import Sequence

from .. import errors
from . import file_io
from .checkpoint_format import SUFFIX as CHECKPOINT_SUFFIX

_LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class CheckpointState:
    """TF's ``CheckpointState`` proto: the newest checkpoint and those still kept (oldest first)."""

    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list = dataclasses.field(default_factory=list)


# -- the text format: one build/parse pair ------------------------------------------
_FIELDS = ("model_checkpoint_path", "all_model_checkpoint_paths")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t"}
_LINE = re.compile(r'^\s*(\w+)\s*:\s*"((?:[^"\\]|\\.)*)"\s*$')
_OCTAL = re.compile(r"[0-7]{1,3}")
_OTHER_FIELD = re.compile(r"^\s*\w+\s*:\s*[-+0-9.eE]+\s*$")
_CHECKSUM = re.compile(r"^# crc32: 0x([0-9a-f]{8})\n")


def format_checkpoint_state(state: CheckpointState) -> str:
    """``state`` as TF's text proto (``field: "value"`` lines, C escapes) after a CRC-32 comment line."""
    lines = [f'model_checkpoint_path: "{_escape(state.model_checkpoint_path)}"']
    lines += [f'all_model_checkpoint_paths: "{_escape(p)}"' for p in state.all_model_checkpoint_paths]
    body = "\n".join(lines) + "\n"
    return f"# crc32: 0x{zlib.crc32(body.encode('utf-8')):08x}\n" + body


def parse_checkpoint_state(text: str) -> CheckpointState:
    """The :class:`CheckpointState` in ``text``; comments and numeric fields of newer TF versions are skipped.

    Raises:
        ValueError: the CRC-32 line does not match the text after it, or a line is not a
            ``CheckpointState`` field.
    """
    checksum = _CHECKSUM.match(text)
    if checksum:
        body = text[checksum.end():]
        stored, computed = int(checksum.group(1), 16), zlib.crc32(body.encode("utf-8"))
        if stored != computed:
            raise ValueError(f"Checksum does not match: stored 0x{stored:08x} vs. calculated 0x{computed:08x} "
                             "on the lines after it")
        text = body
    state = CheckpointState()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#") or _OTHER_FIELD.match(line):
            continue
        match = _LINE.match(line)
        if match is None or match.group(1) not in _FIELDS:
            raise ValueError(f"Line {number}: cannot parse {line!r} as a CheckpointState field")
        value = _unescape(match.group(2))
        if match.group(1) == "model_checkpoint_path":
            state.model_checkpoint_path = value
        else:
            state.all_model_checkpoint_paths.append(value)
    return state


def _escape(text):
    return "".join(_ESCAPES.get(c, c) for c in text)


def _unescape(text):
    """Undo C escapes, octal ones included (TF writes non-ASCII paths as octal UTF-8 bytes)."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] != "\\":
            out += text[i].encode("utf-8")
            i += 1
            continue
        octal = _OCTAL.match(text, i + 1)
        if octal:
            out.append(int(octal.group(0), 8) & 0xFF)
            i = octal.end()
        else:
            out += _UNESCAPES.get(text[i + 1], text[i + 1]).encode("utf-8")
            i += 2
    return out.decode("utf-8")


# -- files ------------------------------------------------------------------------
def _state_filename(save_dir, latest_filename):
    return os.path.join(save_dir, latest_filename or "checkpoint")


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: Sequence[str] | None = None, latest_filename: str | None = None,
                            save_relative_paths: bool = False) -> None:
    """Write the state file of ``save_dir`` atomically; the newest path is appended to the list if missing.

    Raises:
        RuntimeError: the checkpoint path is the state file's own path (TF's wording).
        PermissionDeniedError, ResourceExhaustedError, ...: the file cannot be written (the old one is kept).
    """
    save_dir = save_dir or "."
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if save_relative_paths or not os.path.isabs(save_dir):
        model_checkpoint_path = _relative_to(model_checkpoint_path, save_dir)
        paths = [_relative_to(p, save_dir) for p in paths]
    filename = _state_filename(save_dir, latest_filename)
    if os.path.abspath(filename) == os.path.abspath(os.path.join(save_dir, model_checkpoint_path)):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state.  "
                           "Please use a different save path.")
    text = format_checkpoint_state(CheckpointState(model_checkpoint_path, paths))
    file_io.atomic_write(filename, lambda f: f.write(text.encode("utf-8")))


def _relative_to(path, save_dir):
    if os.path.isabs(path) != os.path.isabs(save_dir):
        path, save_dir = os.path.abspath(path), os.path.abspath(save_dir)
    return os.path.relpath(path, save_dir)


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None) -> CheckpointState | None:
    """The :class:`CheckpointState` of ``checkpoint_dir`` (relative paths joined to it), or None
    if it has no state file.

    Raises:
        DataLossError: the state file is corrupt (names it; TF would log it and return None).
        PermissionDeniedError, ...: the state file cannot be read.
    """
    filename = _state_filename(checkpoint_dir or ".", latest_filename)
    try:
        with open(filename, "rb") as f:
            raw = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise errors.error_from_os_error(error, filename, "Cannot read the checkpoint state file") from error
    try:
        state = parse_checkpoint_state(raw.decode("utf-8"))  # UnicodeDecodeError is a ValueError
        if not state.model_checkpoint_path:
            raise ValueError("no model_checkpoint_path")
    except ValueError as error:
        raise errors.DataLossError(
            None, None, f"Unable to read checkpoint state file {filename}: Data loss: {error}. The file is "
            "corrupt; restore it from a backup, or write it anew with tf.train.update_checkpoint_state naming "
            "the checkpoints in that directory.") from error

    def join(p):
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)

    return CheckpointState(join(state.model_checkpoint_path), [join(p) for p in state.all_model_checkpoint_paths])


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint in ``checkpoint_dir``, or None if none exists."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    if checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    _LOG.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether the checkpoint with this prefix exists on disk."""
    return os.path.isfile(checkpoint_prefix + CHECKPOINT_SUFFIX)


def get_checkpoint_mtimes(checkpoint_prefixes: Sequence[str]) -> list[float]:
    """The modification times (seconds since the epoch) of the existing checkpoints among the prefixes."""
    return [os.path.getmtime(p + CHECKPOINT_SUFFIX) for p in checkpoint_prefixes if checkpoint_exists(p)]


def remove_checkpoint(checkpoint_prefix: str, meta_graph_suffix: str = "meta") -> None:
    """Delete the checkpoint's files: ``<checkpoint_prefix>.npz``, its MetaGraphDef ``<checkpoint_prefix>.meta``
    and its sidecars ``<checkpoint_prefix>.<name>.json``, as TF deletes ``.index``, ``.data-*`` and ``.meta``
    (no error for a file already gone).

    Raises:
        PermissionDeniedError, ...: a file cannot be deleted.
    """
    prefix = glob.escape(checkpoint_prefix)
    for path in glob.glob(prefix + CHECKPOINT_SUFFIX) + glob.glob(f"{prefix}.{meta_graph_suffix}") + \
            glob.glob(prefix + ".*.json"):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        except OSError as error:
            raise errors.error_from_os_error(error, path, "Cannot delete this file of an old checkpoint") from error
