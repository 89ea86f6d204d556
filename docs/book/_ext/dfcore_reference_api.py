"""The book's API pages: which objects each page documents, and the autodoc directives that document them.

One page per group: ``tf`` (dfcore's top-level namespace), one per TF 1.x submodule that dfcore has (``tf.nn``,
``tf.train`` with its nested ``tf.train.experimental`` ...), ``dfcore.distribute``, ``dfcore.launch`` and
``widgets``. A namespace's public names are its ``__all__``, else its names without a leading underscore; modules
and objects defined outside dfcore and widgets (numpy, absl, tensorboard's protocol buffers) are left out, except
plain constants (``None``, numbers, strings, dicts) the namespace itself defines.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import types
from collections.abc import Iterator

from dfcore.compat.symbols import listed_namespaces, tf_v1_symbols

OWN_PACKAGES = ("dfcore", "widgets")
# dfcore's own namespaces with a page each, and the TF namespaces without a TF page: tf.compat.v1 is the top-level
# namespace again, tf.distribute is dfcore.distribute (its own page, with its submodules).
OWN_PAGES = ("dfcore.distribute", "dfcore.launch", "widgets")
SKIPPED_TF = ("tf.compat", "tf.distribute")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One documented object: its dotted name (``dfcore.nn.conv2d``) and the autodoc directive for it."""

    name: str
    directive: str
    obj: object = dataclasses.field(compare=False, repr=False, default=None)
    alias_of: str = ""  # the name under which the same class or function is documented in full

    @property
    def short(self) -> str:
        return self.name.rpartition(".")[2]


@dataclasses.dataclass(frozen=True)
class Section:
    """One namespace of a page: its import path, the TF name it stands for ("" if none) and its entries."""

    module: str
    tf_name: str
    entries: tuple[Entry, ...]
    foreign: tuple[str, ...]  # public names left out because another package defines them


@dataclasses.dataclass(frozen=True)
class Page:
    """One API page: ``reference/<slug>.md``, its title and its namespaces."""

    slug: str
    title: str
    sections: tuple[Section, ...]


def resolve(path: str) -> object:
    """The object at a dotted path whose first part is a package (``dfcore.train.experimental``); a part that is
    not yet an attribute is imported as a submodule (``dfcore.launch``).

    Raises:
        ImportError: the package does not import.
        AttributeError: a later part is neither an attribute nor a submodule.
    """
    parts = path.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        if not hasattr(obj, part) and isinstance(obj, types.ModuleType):
            try:
                importlib.import_module(".".join(parts[:i]))
            except ModuleNotFoundError:
                pass
        obj = getattr(obj, part)
    return obj


def public_names(module: types.ModuleType) -> list[str]:
    """``__all__`` if the namespace has one, else its names without a leading underscore."""
    names = getattr(module, "__all__", None)
    return list(names) if names is not None else [n for n in vars(module) if not n.startswith("_")]


def is_own(obj: object) -> bool:
    """Whether dfcore or widgets defines ``obj`` (classes and functions by their module, constants by type)."""
    if isinstance(obj, types.ModuleType):
        return False
    if inspect.isclass(obj) or inspect.isroutine(obj):
        home = getattr(obj, "__module__", None) or ""
    else:
        home = type(obj).__module__
        if home == "builtins":
            return True
    return home.split(".")[0] in OWN_PACKAGES


def directive_for(obj: object) -> str:
    """The autodoc directive (with its options) that documents ``obj``."""
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return "autoexception"
        return "autoclass"
    if callable(obj):
        return "autofunction"
    return "autodata"


def section(path: str, tf_name: str) -> Section:
    """The entries of the namespace at ``path``, sorted by name."""
    module = resolve(path)
    assert isinstance(module, types.ModuleType), path
    entries, foreign = [], []
    for name in sorted(public_names(module), key=str.lower):
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            continue
        if is_own(obj):
            entries.append(Entry(f"{path}.{name}", directive_for(obj), obj))
        else:
            foreign.append(name)
    return Section(path, tf_name, tuple(entries), tuple(foreign))


def dfcore_path(tf_name: str) -> str:
    """``dfcore.train.experimental`` for ``tf.train.experimental``."""
    return "dfcore" + tf_name.removeprefix("tf")


def has_namespace(tf_name: str) -> bool:
    """Whether dfcore has the TF namespace ``tf_name`` as a module of its own (``tf.flags`` is absl's)."""
    try:
        module = resolve(dfcore_path(tf_name))
    except AttributeError:
        return False
    return isinstance(module, types.ModuleType) and module.__name__.split(".")[0] in OWN_PACKAGES


def tf_namespaces() -> list[str]:
    """TF 1.x's namespaces that dfcore has, sorted (``tf``, ``tf.app``, ``tf.data``, ``tf.data.experimental`` ...)."""
    names = set(listed_namespaces()) | {ns for ns, kind in tf_v1_symbols().items() if kind == "module"}
    return sorted(ns for ns in names
                  if not any(ns == s or ns.startswith(s + ".") for s in SKIPPED_TF) and has_namespace(ns))


def tf_pages() -> Iterator[Page]:
    """The ``tf`` page, then one page per top-level TF submodule with its nested namespaces as sections."""
    namespaces = tf_namespaces()
    yield Page("tf", "`tf`: the top-level namespace", (section("dfcore", "tf"),))
    for top in (ns for ns in namespaces if ns.count(".") == 1):
        nested = [ns for ns in namespaces if ns == top or ns.startswith(top + ".")]
        yield Page(top.replace(".", "_"), f"`{top}`", tuple(section(dfcore_path(ns), ns) for ns in nested))


def own_page(path: str) -> Page:
    """The page of one of dfcore's own namespaces: the namespace, then its public child modules as sections."""
    module = resolve(path)
    assert isinstance(module, types.ModuleType), path
    children = [f"{path}.{n}" for n in public_names(module)
                if isinstance(getattr(module, n), types.ModuleType)
                and getattr(module, n).__name__.startswith(module.__name__ + ".")]
    return Page(path.replace(".", "_"), f"`{path}`", tuple(section(p, "") for p in [path, *children]))


def with_aliases(pages: list[Page]) -> list[Page]:
    """The pages with each class or function after its first entry (in page order) marked as an alias of it:
    ``tf.math.add`` is ``tf.add``, documented once."""
    first: dict[int, str] = {}
    done = []
    for page in pages:
        sections = []
        for sec in page.sections:
            entries = []
            for entry in sec.entries:
                if entry.directive != "autodata":
                    entry = dataclasses.replace(entry, alias_of=first.setdefault(id(entry.obj), entry.name))
                entries.append(entry if entry.alias_of != entry.name else dataclasses.replace(entry, alias_of=""))
            sections.append(dataclasses.replace(sec, entries=tuple(entries)))
        done.append(dataclasses.replace(page, sections=tuple(sections)))
    return done


def api_pages(groups: list[str] | None = None) -> list[Page]:
    """Every API page, or those whose slug is in ``groups``."""
    pages = with_aliases([*tf_pages(), *(own_page(p) for p in OWN_PAGES)])
    return [p for p in pages if groups is None or p.slug in groups]


def entry_names(pages: list[Page]) -> set[str]:
    """Every name the pages document (``dfcore.nn.conv2d``), aliases included."""
    return {entry.name for page in pages for sec in page.sections for entry in sec.entries}


def _module_directive(sec: Section) -> str:
    """``automodule`` where the namespace's import path is its module's name, else a bare ``py:module``."""
    real = getattr(resolve(sec.module), "__name__", "") == sec.module
    return f".. automodule:: {sec.module}" if real else f".. py:module:: {sec.module}"


_PLAIN = {"autofunction": "function", "autoclass": "class", "autoexception": "exception", "autodata": "data"}
_ROLE = {"function": "func", "class": "class", "exception": "exc", "data": "data"}


def render_entry(entry: Entry) -> list[str]:
    """The directive lines of one entry. A constant is a plain ``py:data`` with its type (autodoc would show its
    type's docstring: ``dict``'s, ``DType``'s); an alias names the entry that documents it."""
    kind = _PLAIN[entry.directive]
    module, _, short = entry.name.rpartition(".")
    if entry.alias_of:
        return [f".. py:{kind}:: {short}", f"   :module: {module}", "",
                f"   The same as :py:{_ROLE[kind]}:`{entry.alias_of}`."]
    if kind == "data":
        cls = type(entry.obj)
        home = "" if cls.__module__ == "builtins" else cls.__module__ + "."
        lines = [f".. py:data:: {short}", f"   :module: {module}", f"   :type: {home}{cls.__qualname__}"]
        if isinstance(entry.obj, int | float | str | type(None)) and len(repr(entry.obj)) <= 60:
            lines.append(f"   :value: {entry.obj!r}")
        return lines
    return [f".. {entry.directive}:: {entry.name}", *(["   :members:"] if kind != "function" else [])]


def render_section(sec: Section, heading: str | None) -> str:
    """One namespace as markdown: a heading (none for the page's own namespace), a module target, the entries'
    autodoc directives."""
    lines = [f"{heading} `{sec.tf_name or sec.module}`", ""] if heading else []
    if sec.tf_name:
        lines += [f"dfcore's `{sec.tf_name}` is `{sec.module}`.", ""]
    lines += ["```{eval-rst}", _module_directive(sec), ""]
    for entry in sec.entries:
        lines += [*render_entry(entry), ""]
    lines.append("```")
    if sec.foreign:
        names = ", ".join(f"`{n}`" for n in sec.foreign)
        lines += ["", f"Also exported, and documented by the package that defines them: {names}."]
    return "\n".join(lines) + "\n"


def render_page(page: Page) -> str:
    """The page's markdown source."""
    parts = [f"# {page.title}\n"]
    parts += [render_section(sec, "##" if i else None) for i, sec in enumerate(page.sections)]
    return "\n".join(parts)
