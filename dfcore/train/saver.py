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
is built). dfcore writes no MetaGraphDef: rebuild the graph in code, then restore.
"""

import os
import time

import numpy as np

from .. import errors
from ..framework import dtypes
from ..ops import array_ops, control_flow_ops, state_ops, variables
from ..runtime.session import BaseSession
from . import checkpoint_format, checkpoint_management, file_io, training_util


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
        sharded, write_version, restore_sequentially: accepted for TF1 signatures;
            dfcore always writes one file per checkpoint.
    Raises:
        ValueError: no variables to save, or two with the same key (TF's wording).
        TypeError: a ``var_list`` entry is not a Variable.
    """

    def __init__(self, var_list=None, max_to_keep=5, keep_checkpoint_every_n_hours=10000.0, name=None,
                 allow_empty=False, pad_step_number=False, save_relative_paths=False, sharded=False,
                 write_version=2, restore_sequentially=False):
        if var_list is None:
            var_list = variables.global_variables()
        self._names_to_vars = _names_to_variables(var_list)
        self._is_empty = not self._names_to_vars
        if self._is_empty and not allow_empty:
            raise ValueError("No variables to save")
        self._max_to_keep = max_to_keep
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600
        self._next_checkpoint_time = time.time() + self._keep_every_s
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._last_checkpoints = []
        self._checkpoints_to_be_deleted = []
        if not self._is_empty:
            self._build(name or "save")

    def _build(self, name):
        graph = next(iter(self._names_to_vars.values())).graph
        self._restore_inputs = {}
        with graph.as_default(), graph.control_dependencies(None), graph.name_scope(name):
            for key, var in self._names_to_vars.items():
                value = array_ops.placeholder(var.dtype.base_dtype, shape=var.shape, name="restore_value")
                with graph.colocate_with(var.op):
                    assign = state_ops.assign(var, value, name="Assign")
                self._restore_inputs[key] = (value, assign.op)
            self._restore_op = control_flow_ops.group(*[op for _, op in self._restore_inputs.values()],
                                                      name="restore_all")
        self._save_fetches = {key: var._ref() for key, var in self._names_to_vars.items()}

    # -- saving ----------------------------------------------------------------------
    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False):
        """Write the variables' values in ``sess`` to ``<save_path>[-<step>].npz``; return that prefix.

        ``global_step`` (int, Tensor or Variable) is appended to the name. With
        ``write_state``, the ``checkpoint`` state file is updated and checkpoints
        beyond ``max_to_keep`` are deleted. ``meta_graph_suffix``,
        ``write_meta_graph`` and ``strip_default_attrs`` are accepted for TF1
        signatures; no meta graph is written.
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
            checkpoint_file = f"{save_path}-{global_step:08d}" if self._pad_step_number else f"{save_path}-{global_step}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and '{save_path}'")
        save_dir = os.path.dirname(save_path)
        if not os.path.isdir(save_dir or "."):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        values = sess.run(self._save_fetches)
        file_io.remove_stale_temp_files(save_dir or ".")
        replaces_a_checkpoint = checkpoint_management.checkpoint_exists(checkpoint_file)
        file_io.atomic_write(checkpoint_file + checkpoint_format.SUFFIX,
                             lambda f: checkpoint_format.write_tensors(f, values))
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
    def last_checkpoints(self):
        """Prefixes of the checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def recover_last_checkpoints(self, checkpoint_paths):
        """Resume ``max_to_keep`` bookkeeping from an earlier run's ``all_model_checkpoint_paths``."""
        mtimes = checkpoint_management.get_checkpoint_mtimes(checkpoint_paths)
        existing = [p for p in checkpoint_paths if checkpoint_management.checkpoint_exists(p)]
        self._last_checkpoints = list(zip(existing, mtimes))

    # -- restoring -------------------------------------------------------------------
    def restore(self, sess, save_path):
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
        with checkpoint_format.CheckpointReader(save_path) as reader:
            feed = {}
            for key, var in self._names_to_vars.items():
                if not reader.has_tensor(key):
                    raise errors.NotFoundError(
                        None, self._restore_op,
                        f"Key {key} not found in checkpoint {save_path} (it holds: {', '.join(reader.keys())}). "
                        "Restore needs every variable of the Saver's var_list; pass var_list= to restore a subset.")
                placeholder, assign = self._restore_inputs[key]
                feed[placeholder] = _checked(key, var, reader.get_tensor(key), assign)
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
    """``value`` if it fits ``var`` (TF's RestoreV2 / Assign messages otherwise)."""
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
