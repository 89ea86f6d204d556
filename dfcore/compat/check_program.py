"""Which TensorFlow 1.x names a Python program uses, and whether dfcore has them.

The program is parsed, never run. Modules bound by ``import dfcore as tf``, ``import tensorflow as tf``,
``import tensorflow.compat.v1 as tf``, ``from tensorflow.compat import v1 as tf``, ``from tensorflow
import nn`` (any local name; ``dfcore`` and ``tensorflow`` alike) are roots; every attribute chain
that starts at a root (``tf.nn.conv2d``, ``tf.compat.v1.train.Saver``) is mapped to its TF 1.x name
(``compat.v1`` dropped) and looked up in TF's API as listed in ``tf_v1_symbols.txt`` (TF's golden
API files at v1.15.0). Names bound in other ways (``getattr(tf, "nn")``, ``nn = tf.nn``) are not
followed. :func:`program_files` also finds the program's local modules (files beside it that it imports,
such as a tutorial's ``cifar10_input.py``), and theirs, so a whole program is checked.
"""

import ast
import dataclasses
from pathlib import Path

from .coverage import HAVE, LACK, resolves, symbol
from .symbols import listed_namespaces, tf_v1_symbols

UNKNOWN = "unknown"  # not in TF 1.x's API as listed (tf.contrib, tf.python …) and not in dfcore
_ROOTS = ("tensorflow", "dfcore")


@dataclasses.dataclass(frozen=True)
class NameUse:
    """A TF name the program uses, on which lines, with dfcore's status (have, partial, lack, unknown)."""

    name: str
    status: str
    lines: tuple[int, ...]
    note: str = ""


def _api_parts(module: str) -> list[str] | None:
    """``["nn"]`` for ``"tensorflow.nn"`` or ``"dfcore.compat.v1.nn"``; None for other modules."""
    parts = module.split(".")
    return parts[1:] if parts[0] in _ROOTS else None


def _strip_compat_v1(parts: list[str]) -> list[str]:
    return parts[2:] if parts[:2] == ["compat", "v1"] else parts


def _tf_name(parts: list[str]) -> str:
    """The TF 1.x name an attribute chain (after ``tf``) refers to: it stops at a class, function or
    constant (``tf.Session.run`` → ``tf.Session``), and at a module whose contents are not listed
    (``tf.keras.layers.Dense`` → ``tf.keras``)."""
    symbols, name = tf_v1_symbols(), "tf"
    for part in _strip_compat_v1(parts):
        candidate = f"{name}.{part}"
        if candidate in symbols:
            name = candidate
            if symbols[name] != "module":
                break
            continue
        return candidate if name in listed_namespaces() else name
    return name


class _Collector(ast.NodeVisitor):
    def __init__(self) -> None:
        self.roots: dict[str, list[str]] = {}  # local name -> its TF parts after "tf"
        self.uses: dict[str, list[int]] = {}
        self._inner: set[int] = set()

    def _use(self, parts: list[str], line: int) -> None:
        if _strip_compat_v1(parts):
            self.uses.setdefault(_tf_name(parts), []).append(line)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            parts = _api_parts(alias.name)
            if parts is None:
                continue
            if alias.asname:
                self.roots[alias.asname] = parts
                self._use(parts, node.lineno)
            else:  # `import tensorflow.compat.v1` binds `tensorflow`
                self.roots[alias.name.split(".")[0]] = []

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        parts = _api_parts(node.module or "") if node.level == 0 else None
        if parts is None:
            return
        for alias in node.names:
            if alias.name != "*":
                self.roots[alias.asname or alias.name] = parts + [alias.name]
                self._use(parts + [alias.name], node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if id(node) not in self._inner:
            chain: list[str] = []
            inner: ast.expr = node
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                self._inner.add(id(inner))
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in self.roots:
                self._use(self.roots[inner.id] + chain[::-1], node.lineno)
        self.generic_visit(node)


def check_source(source: str, filename: str = "<program>") -> list[NameUse]:
    """The TF names ``source`` uses, sorted by name.

    Raises:
        SyntaxError: ``source`` is not valid Python.
    """
    collector = _Collector()
    collector.visit(ast.parse(source, filename))
    uses = []
    for name, lines in sorted(collector.uses.items()):
        if name in tf_v1_symbols():
            found = symbol(name)
            uses.append(NameUse(name, found.status, tuple(sorted(set(lines))), found.reason))
        elif resolves(name):
            uses.append(NameUse(name, HAVE, tuple(sorted(set(lines))), "dfcore's own, not in TF 1.x's API"))
        else:
            uses.append(NameUse(name, UNKNOWN, tuple(sorted(set(lines))), "not in TF 1.x's API (tf.contrib?) "
                                                                          "nor in dfcore"))
    return uses


def check_file(path: str | Path) -> list[NameUse]:
    """:func:`check_source` of a file."""
    return check_source(Path(path).read_text(encoding="utf-8"), str(path))


def runs_unchanged(uses: list[NameUse]) -> bool:
    """Whether dfcore has (at least in part) every TF name in ``uses``."""
    return all(use.status not in (LACK, UNKNOWN) for use in uses)


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """``(level, dotted name)`` of every module an import statement may load (``from a import b`` may load
    ``a`` or ``a.b``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found.append((node.level, base))
            found.extend((node.level, f"{base}.{alias.name}".lstrip(".")) for alias in node.names if alias.name != "*")
    return found


def _local_file(directory: Path, level: int, dotted: str) -> Path | None:
    """The file of module ``dotted`` if it lies in ``directory`` (or, for a relative import, above it)."""
    if not dotted:
        return None
    base = directory
    for _ in range(max(level - 1, 0)):
        base = base.parent
    stem = base.joinpath(*dotted.split("."))
    for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def program_files(path: str | Path) -> list[Path]:
    """``path``, then every local module it imports (directly or through another local module), each once.

    Raises:
        OSError, SyntaxError, UnicodeDecodeError: ``path`` cannot be read or parsed (a local module that
            cannot be is skipped).
    """
    first = Path(path)
    order, pending, seen = [], [first], {first.resolve()}
    while pending:
        current = pending.pop(0)
        try:
            tree = ast.parse(current.read_text(encoding="utf-8"), str(current))
        except (OSError, SyntaxError, UnicodeDecodeError):
            if current is first:
                raise
            continue
        order.append(current)
        for level, dotted in _imported_modules(tree):
            found = _local_file(current.parent, level, dotted)
            if found is not None and found.resolve() not in seen:
                seen.add(found.resolve())
                pending.append(found)
    return order


def check_program(path: str | Path) -> dict[str, list[NameUse]]:
    """:func:`check_file` of the program and of each of its local modules, by file (program first).

    Raises:
        OSError, SyntaxError, UnicodeDecodeError: the program itself cannot be read or parsed.
    """
    return {str(file): check_file(file) for file in program_files(path)}
