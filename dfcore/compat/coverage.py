"""Which of TensorFlow 1.x's names dfcore has, has only in part, or lacks.

Source: the names of ``tf_v1_symbols.txt`` (TF's API golden files at v1.15.0, see
:mod:`dfcore.compat.symbols`). A name is *had* when the attribute chain resolves on the ``dfcore``
module (``tf.nn.conv2d`` → ``dfcore.nn.conv2d``), *partial* when it resolves and ``partial.txt``
gives a reason, and *lacking* otherwise.
"""

import dataclasses

import dfcore

from .symbols import namespace_of, partial_symbols, tf_v1_symbols

HAVE, PARTIAL, LACK = "have", "partial", "lack"


@dataclasses.dataclass(frozen=True)
class Symbol:
    """One TF 1.x name: ``kind`` (module, class, function, constant), ``status`` and, if partial, why."""

    name: str
    kind: str
    status: str
    reason: str = ""


@dataclasses.dataclass(frozen=True)
class NamespaceCount:
    """How many of a namespace's TF 1.x names dfcore has, has in part and lacks."""

    namespace: str
    have: int
    partial: int
    lack: int

    @property
    def total(self) -> int:
        return self.have + self.partial + self.lack


def resolves(name: str) -> bool:
    """Whether ``dfcore`` has the TF name ``name`` (``"tf.train.Saver"``)."""
    obj = dfcore
    try:
        for part in name.split(".")[1:]:
            obj = getattr(obj, part)
    except AttributeError:
        return False
    return True


def symbol(name: str) -> Symbol:
    """The status of one listed TF 1.x name.

    Raises:
        KeyError: ``name`` is not in TensorFlow 1.x's API as listed.
    """
    kind = tf_v1_symbols()[name]
    if not resolves(name):
        return Symbol(name, kind, LACK)
    reason = partial_symbols().get(name)
    return Symbol(name, kind, PARTIAL, reason) if reason else Symbol(name, kind, HAVE)


def in_namespace(name: str, namespace: str) -> bool:
    """Whether ``name`` lives in ``namespace`` or one of its submodules (``tf.train`` holds
    ``tf.train.experimental.X``; ``tf`` holds everything)."""
    home = namespace_of(name)
    return home == namespace or home.startswith(namespace + ".")


def all_symbols(namespace: str | None = None) -> list[Symbol]:
    """Every listed name (of ``namespace`` and its submodules, if given), sorted by name."""
    return [symbol(name) for name in sorted(tf_v1_symbols())
            if namespace is None or in_namespace(name, namespace)]


def count_by_namespace(symbols: list[Symbol]) -> list[NamespaceCount]:
    """One row per namespace of ``symbols``, sorted by namespace."""
    tally: dict[str, dict[str, int]] = {}
    for sym in symbols:
        row = tally.setdefault(namespace_of(sym.name), dict.fromkeys((HAVE, PARTIAL, LACK), 0))
        row[sym.status] += 1
    return [NamespaceCount(ns, row[HAVE], row[PARTIAL], row[LACK]) for ns, row in sorted(tally.items())]
