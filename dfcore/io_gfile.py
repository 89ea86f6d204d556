"""``tf.io.gfile``: the lower-case names of :mod:`dfcore.gfile` (TF 1.13 and later spell them so).

Source: ``tensorflow/python/lib/io/file_io.py`` (``copy_v2``, ``exists_v2``, ... ``walk_v2``).
"""

import os

from .gfile import (
    Copy as copy,
    DeleteRecursively as rmtree,
    Exists as exists,
    GFile,
    Glob as glob,
    IsDirectory as isdir,
    ListDirectory as listdir,
    MakeDirs as makedirs,
    MkDir as mkdir,
    Remove as remove,
    Rename as rename,
    Stat as stat,
    Walk as walk,
)

join = os.path.join

__all__ = ["GFile", "copy", "exists", "glob", "isdir", "join", "listdir", "makedirs", "mkdir", "remove", "rename",
           "rmtree", "stat", "walk"]
