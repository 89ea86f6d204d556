"""Sphinx extension: the book's reference section, generated at each build, and links to it from the lessons.

On ``builder-inited`` it writes ``<srcdir>/reference/``: ``index.md``, one API page per group (autodoc directives
over the public names, see ``dfcore_reference_api``), ``tf_names.md`` and ``glossary.md`` (see
``dfcore_reference_pages``); a file is rewritten only when its text changes, so an unchanged reference is not
read again. On ``doctree-resolved`` it links each lesson's first use of an API name or a glossary term
(``dfcore_reference_links``). On the API pages, a class's members stay out of the page's contents list and
Python's built-in names in signatures (``bool``) stay unlinked, not fuzzily linked to ``tf.bool``.

Settings (conf.py): ``dfcore_reference_glossary``, the glossary.toml to read (default: ``glossary.toml`` in the
source folder, else ``notebooks/glossary.toml`` in the nearest folder above it that has one);
``dfcore_reference_groups``, the API pages to write by slug (default: all; ``["tf", "widgets"]`` for a quick build).
"""

from __future__ import annotations

import builtins
import pathlib
import re
from typing import Any

import dfcore_reference_api as api
import dfcore_reference_links as links
import dfcore_reference_pages as pages
from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

OUT = "reference"
logger = logging.getLogger(__name__)
_MEMBERS = frozenset({"method", "classmethod", "staticmethod", "attribute", "property"})
_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))


def write_if_changed(path: pathlib.Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds it; returns whether it wrote."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def find_glossary(srcdir: pathlib.Path, configured: str | None) -> pathlib.Path:
    """The glossary.toml to read (see the module's settings).

    Raises:
        FileNotFoundError: there is none.
    """
    if configured:
        return (srcdir / configured).resolve()
    candidates = [srcdir / "glossary.toml", *(d / "notebooks" / "glossary.toml" for d in [srcdir, *srcdir.parents])]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise FileNotFoundError(f"no glossary.toml in {srcdir} or a notebooks/ folder above it")
    return found


class Reference:
    """The two handlers, sharing the glossary's patterns (read when the pages are written)."""

    def __init__(self) -> None:
        self.glossary: dict[str, re.Pattern[str]] = {}

    def generate(self, app: Sphinx) -> None:
        """Write the reference pages into the source folder; keep the glossary's patterns for the lessons."""
        srcdir = pathlib.Path(app.srcdir)
        out = srcdir / OUT
        api_pages = api.api_pages(app.config.dfcore_reference_groups)
        terms = pages.read_glossary(find_glossary(srcdir, app.config.dfcore_reference_glossary))
        lessons = pages.lesson_pages(srcdir)
        for name in pages.missing_lessons(terms, lessons):
            logger.warning("glossary term %r: its lesson has no page in %s", name, srcdir)
        texts = {f"{p.slug}.md": api.render_page(p) for p in api_pages}
        texts |= {"tf_names.md": pages.tf_names_page(documented=api.entry_names(api_pages)),
                  "glossary.md": pages.glossary_page(terms, lessons), "index.md": pages.index_page(api_pages)}
        for name, text in texts.items():
            write_if_changed(out / name, text)
        for stale in {p.name for p in out.glob("*.md")} - set(texts):
            (out / stale).unlink()
        self.glossary = {t["name"]: re.compile(t["pattern"], re.IGNORECASE) for t in terms}

    def link_lesson(self, app: Sphinx, doctree: nodes.document, docname: str) -> None:
        """Link a lesson page's first uses of API names and glossary terms to the reference."""
        if not links.LESSON.match(docname):
            return
        from dfcore.framework.registry import registered_op_types

        def uri(target: tuple[str, str]) -> str:
            return f"{app.builder.get_relative_uri(docname, target[0])}#{target[1]}"

        py, std = app.env.get_domain("py"), app.env.get_domain("std")
        entries = {name: entry for name, entry in py.objects.items()  # type: ignore[attr-defined]
                   if entry.docname.startswith(OUT + "/")}
        kinds = {name: entry.objtype for name, entry in entries.items()}
        op_types = frozenset(registered_op_types())
        links.link_api_names(doctree, lambda text: links.api_target(text, kinds, op_types),
                             lambda name: uri((entries[name].docname, entries[name].node_id)))
        terms = {name: std.objects.get(("term", name)) or std.objects.get(("term", name.lower()))  # type: ignore[attr-defined]
                 for name in self.glossary}
        links.link_glossary_terms(doctree, {n: p for n, p in self.glossary.items() if terms[n]},
                                  lambda name: uri(terms[name]))


def members_out_of_contents(app: Sphinx, doctree: nodes.document) -> None:
    """Keep a reference page's contents (the page's side list) to its module-level names: a class's methods and
    attributes get no entry, which halves the list of a page such as ``tf.train``."""
    if not app.env.docname.startswith(OUT + "/"):
        return
    for desc in doctree.findall(addnodes.desc):
        if desc.get("objtype") in _MEMBERS:
            desc["no-contents-entry"] = True


class BuiltinNames(SphinxPostTransform):
    """Leave Python's built-in names in signatures and docstrings unlinked: ``x: bool`` names Python's ``bool``,
    which the book does not document, not ``tf.bool``, which it does (a fuzzy match would link it there)."""

    default_priority = 5  # before sphinx's ReferencesResolver (10)

    def run(self, **kwargs: Any) -> None:
        for xref in list(self.document.findall(addnodes.pending_xref)):
            if xref.get("refdomain") == "py" and xref.get("reftarget") in _BUILTINS:
                xref.replace_self(xref.children or nodes.Text(xref["reftarget"]))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the settings, autodoc (with napoleon for the Google-style sections) and the two handlers."""
    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")
    app.add_config_value("dfcore_reference_glossary", None, "env", types=[str, type(None)])
    app.add_config_value("dfcore_reference_groups", None, "env", types=[list, type(None)])
    app.add_post_transform(BuiltinNames)
    reference = Reference()
    app.connect("builder-inited", reference.generate)
    app.connect("doctree-resolved", reference.link_lesson)
    app.connect("doctree-read", members_out_of_contents, priority=400)  # before the contents are collected (500)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
