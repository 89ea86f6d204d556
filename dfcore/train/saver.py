"""``Saver``: save variables to checkpoints and restore them, TF1's way.

Source: ``tensorflow/python/training/saver.py``.

Checkpoint format (dfcore's, see ``checkpoint_format``): one file
``<prefix>.npz`` per checkpoint, one array per variable named by its checkpoint
key (its op name, ``layer1/weights``, or the key of a ``var_list`` dict), each
with a CRC-32. A save reads every variable in one ``sess.run`` (one consistent
snapshot), writes the file atomically (temp file, fsync, rename), then updates
the ``checkpoint`` state file the same way and only then deletes checkpoints
beyond ``max_to_keep``: a failed, interrupted or killed save leaves the previous
checkpoint and state intact (the next save removes a killed one's temp file).
A restore verifies the file (``DataLossError`` if it is corrupt), checks names,
shapes and dtypes, then assigns every variable in one ``sess.run`` of
``save/restore_all`` (Assign ops fed by placeholders, built once when the Saver
is built).

The Saver's ``SaverDef`` (:meth:`Saver.as_saver_def`) names real ops of the graph,
with TF's names: ``filename_tensor_name`` ``save/Const:0`` (a string Const,
``"model"``), ``save_tensor_name`` ``save/control_dependency:0`` (that filename
behind a control edge from ``save/SaveV2``, whose dfcore kernel writes
``<filename>.npz``: run it with the filename fed and you get the checkpoint
:meth:`Saver.save` writes, without the state file), and ``restore_op_name``
``save/restore_all``. Unlike TF's, ``save/restore_all`` does not read the file
itself: it assigns what the ``save/restore_value*`` placeholders are fed, which
:meth:`Saver.restore` reads and verifies in Python first (so a bad checkpoint
assigns nothing). :meth:`Saver.save` reads the variables and writes the file from
Python too (same function as the kernel), so that a failed or interrupted save
keeps the previous checkpoint. A Saver rebuilt from a SaverDef
(``Saver(saver_def=...)``, ``tf.train.import_meta_graph``) finds its variables
and checkpoint keys through ``save/SaveV2``'s inputs. ``save()`` also writes
``<prefix>.meta``, the graph's ``MetaGraphDef`` (:mod:`dfcore.framework.meta_graph`).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import dtypes, meta_graph
from ..framework.graph import GraphKeys, get_default_graph
from ..framework.protos import MetaGraphDef, SaverDef
from ..ops import array_ops, constant_op, control_flow_ops, state_ops, variables
from ..runtime.session import BaseSession
from . import checkpoint_format, checkpoint_management, file_io, graph_io, save_op, training_util

if TYPE_CHECKING:
    from ..framework.graph import Graph
    from ..framework.tensor_like import TensorLike
    from ..runtime.session import Session

_LOG = logging.getLogger(__name__)


class Saver:
    """Saves and restores variables.

    Args:
        var_list: Variables to save: a list (keys are their op names) or a dict
            ``{key: Variable}``; default all global variables.
        max_to_keep: how many recent checkpoints to keep on disk and in the state file (None or 0:
            keep every file; the state file then lists only the newest, as TF).
        keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
        name: name scope of the restore ops (default ``save``).
        allow_empty: with no variables, make save/restore no-ops instead of raising.
        pad_step_number: name checkpoints ``<path>-00000042`` instead of ``<path>-42``.
        save_relative_paths: store paths relative to the directory in the state file.
        write_version: the ``SaverDef.version`` to record (default 2, ``V2``); the files are dfcore's either way.
        saver_def: a ``SaverDef`` naming a dfcore Saver's ops in the default graph (``name`` is then the
            import scope prefixed to those names); its ``max_to_keep`` and ``keep_checkpoint_every_n_hours``
            replace the arguments, ``var_list`` is ignored.
        sharded, restore_sequentially: accepted for TF1 signatures; dfcore always writes one file per checkpoint.
    Raises:
        ValueError: no variables to save, or two with the same key (TF's wording); a ``saver_def`` whose names
            are not a dfcore Saver's ops (``save/SaveV2`` behind the save tensor, Assigns in the restore op).
        TypeError: a ``var_list`` entry is not a Variable; ``saver_def`` is not a SaverDef.
        KeyError: a ``saver_def`` name is not in the default graph.
    """

    def __init__(self, var_list: Any = None, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float = 10000.0, name: str | None = None, allow_empty: bool = False,
                 pad_step_number: bool = False, save_relative_paths: bool = False, sharded: bool = False,
                 write_version: int = SaverDef.V2, restore_sequentially: bool = False,
                 saver_def: SaverDef | None = None):
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._saver_def = None
        # checkpoint key -> (variable ref tensor, restore placeholder, its Assign op)
        self._entries: dict[str, tuple[Any, Any, Any]] = {}
        if saver_def is not None:
            self._build_from_saver_def(saver_def, name)
        else:
            names_to_vars = _names_to_variables(variables.global_variables() if var_list is None else var_list)
            if not names_to_vars and not allow_empty:
                raise ValueError("No variables to save")
            if names_to_vars:
                self._build(names_to_vars, name or "save", SaverDef(
                    max_to_keep=max_to_keep, keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                    version=write_version))
        self._is_empty = self._saver_def is None
        self._max_to_keep = self._saver_def.max_to_keep if self._saver_def else max_to_keep
        hours = self._saver_def.keep_checkpoint_every_n_hours if self._saver_def else keep_checkpoint_every_n_hours
        self._keep_every_s = hours * 3600
        self._next_checkpoint_time = time.time() + self._keep_every_s

    def _build(self, names_to_vars, name, saver_def):
        """The save and restore ops, under ``name`` (see the module docstring); fills in ``saver_def``'s names."""
        graph = next(iter(names_to_vars.values())).graph
        with graph.as_default(), graph.control_dependencies(None), graph.name_scope(name):
            filename = constant_op.constant("model", name="Const")
            save = save_op.save_v2(filename, list(names_to_vars), [v._ref() for v in names_to_vars.values()])
            with graph.control_dependencies([save]):
                save_tensor = array_ops.identity(filename, name="control_dependency")
            for key, var in names_to_vars.items():
                value = array_ops.placeholder(var.dtype.base_dtype, shape=var.shape, name="restore_value")
                with graph.colocate_with(var.op):
                    assign = state_ops.assign(var, value, name="Assign")
                self._entries[key] = (var._ref(), value, assign.op)
            self._restore_op = control_flow_ops.group(*[op for _, _, op in self._entries.values()],
                                                      name="restore_all")
        saver_def.filename_tensor_name = filename.name
        saver_def.save_tensor_name = save_tensor.name
        saver_def.restore_op_name = self._restore_op.name
        self._saver_def = saver_def

    def _build_from_saver_def(self, saver_def, import_scope):
        """Find the ops ``saver_def`` names (under ``import_scope``) in the default graph (TF's ``Saver`` with a
        ``saver_def`` runs them by name; dfcore needs the variables and keys behind them)."""
        if not isinstance(saver_def, SaverDef):
            raise TypeError(f"saver_def must be a saver_pb2.SaverDef: {saver_def!r}")
        saver_def = _scoped_saver_def(saver_def, meta_graph.prepend_name_scope, import_scope)
        graph = get_default_graph()
        save_tensor = graph.get_tensor_by_name(saver_def.save_tensor_name)
        graph.get_tensor_by_name(saver_def.filename_tensor_name)  # KeyError if the SaverDef names none
        self._restore_op = graph.get_operation_by_name(saver_def.restore_op_name)
        saves = [op for op in save_tensor.op.control_inputs if op.type == "SaveV2"]
        assigns = {op.inputs[0].op: op for op in _grouped(self._restore_op) if op.type == "Assign"}
        if len(saves) != 1:
            controls = [op.name for op in save_tensor.op.control_inputs]
            raise ValueError(f"{saver_def.save_tensor_name} is not a dfcore Saver's save tensor: it needs one "
                             f"control input of type SaveV2, and has {controls}")
        keys = [save_op.as_str(k) for k in np.ravel(saves[0].inputs[1].op.get_attr("value"))]
        for key, ref in zip(keys, saves[0].inputs[3:]):
            if ref.op not in assigns:
                raise ValueError(f"{saver_def.restore_op_name} has no Assign to {ref.op.name}, which "
                                 f"{saves[0].name} saves as {key}")
            self._entries[key] = (ref, assigns[ref.op].inputs[1], assigns[ref.op])
        self._saver_def = saver_def

    # -- SaverDef and MetaGraphDef ----------------------------------------------------
    @property
    def saver_def(self) -> SaverDef | None:
        return self._saver_def

    def as_saver_def(self) -> SaverDef | None:
        """This Saver's ``SaverDef`` (names as in the module docstring), or None for an empty Saver."""
        return self._saver_def

    def to_proto(self, export_scope: str | None = None) -> SaverDef | None:
        """The SaverDef with ``export_scope`` stripped from its names; None if they are outside it."""
        if self._saver_def is None or export_scope is None:
            return self._saver_def
        names = (self._saver_def.filename_tensor_name, self._saver_def.save_tensor_name,
                 self._saver_def.restore_op_name)
        if not all(n.startswith(export_scope) for n in names):
            return None
        return _scoped_saver_def(self._saver_def, meta_graph.strip_name_scope, export_scope)

    @staticmethod
    def from_proto(saver_def: SaverDef, import_scope: str | None = None) -> Saver:
        """The Saver over the ops ``saver_def`` names under ``import_scope`` in the default graph."""
        return Saver(saver_def=saver_def, name=import_scope)

    def export_meta_graph(self, filename: str | None = None, collection_list: Sequence[str] | None = None,
                          as_text: bool = False, export_scope: str | None = None, clear_devices: bool = False,
                          clear_extraneous_savers: bool = False, strip_default_attrs: bool = False,
                          save_debug_info: bool = False) -> MetaGraphDef:
        """:func:`export_meta_graph` of the default graph with this Saver's SaverDef."""
        return export_meta_graph(filename=filename, saver_def=self._saver_def, collection_list=collection_list,
                                 as_text=as_text, export_scope=export_scope, clear_devices=clear_devices,
                                 clear_extraneous_savers=clear_extraneous_savers,
                                 strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)

    # -- saving ----------------------------------------------------------------------
    def save(self, sess: Session, save_path: str, global_step: TensorLike | None = None,
             latest_filename: str | None = None, meta_graph_suffix: str = "meta", write_meta_graph: bool = True,
             write_state: bool = True, strip_default_attrs: bool = False) -> str | None:
        """Write the variables' values in ``sess`` to ``<save_path>[-<step>].npz``; return that prefix.

        ``global_step`` (int, Tensor or Variable) is appended to the name. With
        ``write_state``, the ``checkpoint`` state file is updated and checkpoints
        beyond ``max_to_keep`` are deleted (with their ``.meta`` files). With
        ``write_meta_graph``, the session graph's MetaGraphDef is then written to
        ``<prefix>.<meta_graph_suffix>`` (:meth:`export_meta_graph`), as TF.
        Raises:
            TypeError: ``sess`` is not a Session.
            ValueError: the parent directory does not exist, or ``latest_filename`` collides.
            FailedPreconditionError: a variable is uninitialized (nothing is written).
            PermissionDeniedError, ResourceExhaustedError (disk full), ...: a file cannot be written,
                naming it; the previous checkpoint and state file are unchanged, no temp file is left.
        """
        if self._is_empty:
            return None
        if not isinstance(sess, BaseSession):
            raise TypeError(f"'sess' must be a Session; {sess}")
        latest_filename = latest_filename or "checkpoint"
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = training_util.global_step(sess, global_step)
            step = f"{global_step:08d}" if self._pad_step_number else f"{global_step}"
            checkpoint_file = f"{save_path}-{step}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and '{save_path}'")
        save_dir = os.path.dirname(save_path)
        if not os.path.isdir(save_dir or "."):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        values = sess.run({key: ref for key, (ref, _, _) in self._entries.items()})
        file_io.remove_stale_temp_files(save_dir or ".")
        replaces_a_checkpoint = checkpoint_management.checkpoint_exists(checkpoint_file)
        save_op.write_checkpoint(checkpoint_file, values)
        if write_state:
            kept, dropped = self._kept_after_saving(checkpoint_file)
            try:
                checkpoint_management.update_checkpoint_state(
                    save_dir, checkpoint_file, [p for p, _ in kept], latest_filename, self._save_relative_paths)
            except BaseException:
                if not replaces_a_checkpoint:  # no state file names it: max_to_keep would never delete it
                    checkpoint_management.remove_checkpoint(checkpoint_file)
                raise
            self._last_checkpoints = kept
            self._checkpoints_to_be_deleted += dropped
            self._maybe_delete_old_checkpoints()
        if write_meta_graph:
            with sess.graph.as_default():
                self.export_meta_graph(meta_graph_filename(checkpoint_file, meta_graph_suffix),
                                       strip_default_attrs=strip_default_attrs)
        return checkpoint_file

    def _kept_after_saving(self, path):
        """``(kept, dropped)``: the ``(path, time)`` records to keep once ``path`` is saved, and the
        oldest beyond ``max_to_keep`` (all of them, also after :meth:`recover_last_checkpoints`)."""
        if not self._max_to_keep:
            return self._last_checkpoints, []
        kept = [p for p in self._last_checkpoints if p[0] != path] + [(path, time.time())]
        excess = max(0, len(kept) - self._max_to_keep)
        return kept[excess:], kept[:excess]

    def _maybe_delete_old_checkpoints(self):
        while self._checkpoints_to_be_deleted:
            path, saved_at = self._checkpoints_to_be_deleted.pop(0)
            if saved_at > self._next_checkpoint_time:
                self._next_checkpoint_time += self._keep_every_s
                continue
            checkpoint_management.remove_checkpoint(path)

    @property
    def last_checkpoints(self) -> list[str]:
        """Prefixes of the checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def recover_last_checkpoints(self, checkpoint_paths: Sequence[str]) -> None:
        """Resume ``max_to_keep`` bookkeeping from an earlier run's ``all_model_checkpoint_paths``."""
        mtimes = checkpoint_management.get_checkpoint_mtimes(checkpoint_paths)
        existing = [p for p in checkpoint_paths if checkpoint_management.checkpoint_exists(p)]
        self._last_checkpoints = list(zip(existing, mtimes))

    # -- restoring -------------------------------------------------------------------
    def restore(self, sess: Session, save_path: str | None) -> None:
        """Assign every variable of this Saver its value from checkpoint ``save_path``, in one step.

        Raises:
            ValueError: ``save_path`` is None or not a checkpoint (TF's wording).
            DataLossError: the checkpoint file is truncated or corrupt (a checksum or its structure).
            NotFoundError: ``Key <name> not found in checkpoint``.
            InvalidArgumentError: a shape or dtype differs from the checkpoint's.
            Nothing is assigned when any of these is raised.
        """
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not checkpoint_management.checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        _LOG.info("Restoring parameters from %s", save_path)  # TF's Saver.restore logs this line
        with checkpoint_format.CheckpointReader(save_path) as reader:
            feed = {}
            for key, (ref, placeholder, assign) in self._entries.items():
                if not reader.has_tensor(key):
                    raise errors.NotFoundError(
                        None, self._restore_op,
                        f"Key {key} not found in checkpoint {save_path} (it holds: {', '.join(reader.keys())}). "
                        "Restore needs every variable of the Saver's var_list; pass var_list= to restore a subset.")
                feed[placeholder] = _checked(key, ref, reader.get_tensor(key), assign)
        sess.run(self._restore_op, feed)


def _names_to_variables(var_list):
    """``{checkpoint key: Variable}`` in key order (TF's ``op_list_to_dict``)."""
    if isinstance(var_list, dict):
        items = list(var_list.items())
    else:
        items = []
        for var in var_list:
            if not isinstance(var, variables.Variable):
                raise TypeError(f"Variable to save is not a Variable: {var}")
            items.append((var.op.name, var))
    result = {}
    for key, var in sorted(items, key=lambda item: item[0]):
        if not isinstance(var, variables.Variable):
            raise TypeError(f"Variable to save is not a Variable: {var}")
        if key in result:
            raise ValueError(f"At least two variables have the same name: {key}")
        result[key] = var
    return result


def _checked(key, var, value, op):
    """``value`` if it fits ``var``, a variable's ref tensor (TF's RestoreV2 / Assign messages otherwise)."""
    expected = var.dtype.base_dtype
    if value.dtype != np.dtype(expected.as_numpy_dtype):
        raise errors.InvalidArgumentError(
            None, op, f"tensor_name = {key}; expected dtype {dtypes.tf_type_name(expected)} does not equal original "
            f"dtype {dtypes.tf_type_name(dtypes.as_dtype(value.dtype))}")
    if not var.shape.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            None, op, f"Assign requires shapes of both tensors to match. lhs shape= {var.shape.tf_str()} "
            f"rhs shape= [{','.join(str(d) for d in value.shape)}] (variable {key})")
    return value


def _scoped_saver_def(saver_def: SaverDef, rename, scope) -> SaverDef:
    """A copy of ``saver_def`` with ``rename(name, scope)`` applied to its three names."""
    scoped = SaverDef()
    scoped.CopyFrom(saver_def)
    scoped.filename_tensor_name = rename(saver_def.filename_tensor_name, scope)
    scoped.save_tensor_name = rename(saver_def.save_tensor_name, scope)
    scoped.restore_op_name = rename(saver_def.restore_op_name, scope)
    return scoped


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    """``<checkpoint prefix>.<suffix>``, a sharded ``-?????-of-NNNNN`` tail dropped (TF's rule)."""
    return re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename) + "." + meta_graph_suffix


# -- tf.train.export_meta_graph / import_meta_graph ----------------------------------
def export_meta_graph(filename: str | None = None, meta_info_def: Any = None, graph_def: Any = None,
                      saver_def: SaverDef | None = None, collection_list: Sequence[str] | None = None,
                      as_text: bool = False, graph: Graph | None = None, export_scope: str | None = None,
                      clear_devices: bool = False, clear_extraneous_savers: bool = False,
                      strip_default_attrs: bool = False, save_debug_info: bool = False) -> MetaGraphDef:
    """The ``MetaGraphDef`` of ``graph`` (default graph), also written to ``filename`` (binary, or text with
    ``as_text``) atomically if given; see :func:`dfcore.framework.meta_graph.export_scoped_meta_graph`.

    ``strip_default_attrs`` strips nothing (dfcore has no OpDefs to know defaults from);
    ``save_debug_info`` writes no ``_debug`` file (dfcore records no stack traces).
    Raises:
        TypeError: an argument is not the message type TF expects.
        PermissionDeniedError, NotFoundError, ...: ``filename`` cannot be written.
    """
    del strip_default_attrs, save_debug_info
    meta_graph_def = meta_graph.export_scoped_meta_graph(
        graph_def=graph_def, graph=graph, export_scope=export_scope, clear_devices=clear_devices,
        saver_def=saver_def, clear_extraneous_savers=clear_extraneous_savers, meta_info_def=meta_info_def,
        collection_list=collection_list)
    if filename:
        graph_io.write_graph(meta_graph_def, os.path.dirname(filename), os.path.basename(filename), as_text=as_text)
    return meta_graph_def


def import_meta_graph(meta_graph_or_file: Any, clear_devices: bool = False, import_scope: str | None = None,
                      input_map: dict | None = None) -> Saver | None:
    """Import a ``MetaGraphDef`` (message, or a binary/text file) into the default graph with its collections
    (Variables rebuilt from their ``VariableDef``s); returns a Saver built from its ``SaverDef``, else a
    Saver of all global variables if it has none, else None (TF's ``import_meta_graph``).

    Raises:
        NotFoundError: no such file (TF raises ``IOError``).
        DataLossError: the file is neither a binary nor a text MetaGraphDef.
        ValueError, NotFoundError, KeyError: as :func:`dfcore.framework.meta_graph.import_scoped_meta_graph`.
    """
    meta_graph_def = meta_graph_or_file
    if not isinstance(meta_graph_def, MetaGraphDef):
        meta_graph_def = graph_io.read_proto(meta_graph_or_file, MetaGraphDef)
    imported = meta_graph.import_scoped_meta_graph(meta_graph_def, clear_devices=clear_devices,
                                                   import_scope=import_scope, input_map=input_map)
    if meta_graph_def.HasField("saver_def"):
        scope = import_scope
        if imported:  # the scope the importer really used (made unique as a name scope)
            key, var = next(iter(imported.items()))
            scope = var.name[:-len(key)]
        return Saver(saver_def=meta_graph_def.saver_def, name=scope)
    if variables.global_variables(scope=import_scope):
        return Saver()
    return None


meta_graph.register_proto_function(GraphKeys.SAVERS, SaverDef, lambda saver, export_scope=None:
                                   saver.to_proto(export_scope=export_scope), Saver.from_proto)


def _grouped(op):
    """The ops ``op`` (a ``tf.group``) waits for, through the per-device ``NoOp`` s ``group`` inserts."""
    for control in op.control_inputs:
        if control.type == "NoOp":
            yield from _grouped(control)
        else:
            yield control
