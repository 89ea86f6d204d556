"""The book's reference pages other than the API: the TF 1.x names dfcore implements, the glossary, the index.

``tf_names.md`` is ``python -m dfcore.compat_report``'s data (its ``all_symbols`` and ``count_by_namespace``,
called in-process): the summary table, then one table per namespace of the names dfcore has or has in part.
``glossary.md`` is a Sphinx ``glossary`` of ``notebooks/glossary.toml`` (``[[term]]`` tables with ``name``,
``pattern``, ``lesson`` and ``definition``; tests/notebooks/test_glossary_order.py checks the lessons against it).
"""

from __future__ import annotations

import pathlib
import tomllib
from collections.abc import Collection
from itertools import groupby

from dfcore_reference_api import Page

from dfcore.compat.coverage import LACK, PARTIAL, Symbol, all_symbols, count_by_namespace
from dfcore.compat.symbols import namespace_of, tf_source


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _status_cell(sym: Symbol) -> str:
    return _cell(f"partial: {sym.reason}") if sym.status == PARTIAL else sym.status


def _name_cell(name: str, documented: Collection[str]) -> str:
    """``tf.nn.conv2d`` as code, linked to its API entry (``dfcore.nn.conv2d``) when the reference has one."""
    target = "dfcore" + name.removeprefix("tf")
    return f"{{py:obj}}`{name} <{target}>`" if target in documented else f"`{name}`"


def tf_names_page(symbols: list[Symbol] | None = None, documented: Collection[str] = ()) -> str:
    """``tf_names.md``: the per-namespace counts, then each namespace's names that dfcore has (or has in part),
    each linked to its API entry where ``documented`` (the API pages' names) has it."""
    symbols = all_symbols() if symbols is None else symbols
    lines = ["(tf-names)=", "# TF 1.x names in dfcore", "",
             "Which names of TensorFlow 1.x's API dfcore implements, by namespace, as `python -m "
             f"dfcore.compat_report` lists them. TF's names come from its golden API files at {tf_source()}. "
             "A *partial* name exists but does only part of what TF's does; its note says which part.", "",
             "| namespace | have | partial | lack | total |", "| --- | ---: | ---: | ---: | ---: |"]
    counts = count_by_namespace(symbols)
    lines += [f"| `{c.namespace}` | {c.have} | {c.partial} | {c.lack} | {c.total} |" for c in counts]
    for namespace, group in groupby(symbols, key=lambda s: namespace_of(s.name)):
        had = [s for s in group if s.status != LACK]
        if not had:
            continue
        lines += ["", f"## `{namespace}`", "", "| name | kind | status |", "| --- | --- | --- |"]
        lines += [f"| {_name_cell(s.name, documented)} | {s.kind} | {_status_cell(s)} |" for s in had]
    return "\n".join(lines) + "\n"


def read_glossary(path: pathlib.Path) -> list[dict[str, str]]:
    """The ``[[term]]`` tables of a glossary.toml, in file order."""
    return list(tomllib.loads(path.read_text(encoding="utf-8"))["term"])


def lesson_pages(srcdir: pathlib.Path) -> dict[str, str]:
    """Lesson number (``"05"``, ``"06a"``) → its page name (the notebook stem) for the lessons under ``srcdir``."""
    stems = sorted({p.stem for p in srcdir.glob("[0-9][0-9]*_*") if p.suffix in (".ipynb", ".md", ".rst")})
    return {stem.split("_", 1)[0]: stem for stem in stems}


def glossary_page(terms: list[dict[str, str]], lessons: dict[str, str]) -> str:
    """``glossary.md``: one glossary entry per term, its definition, and a link to the lesson that defines it
    (the lesson's number alone where ``lessons`` lacks it: see ``missing_lessons``)."""
    lines = ["(glossary)=", "# Glossary", "",
             "The course's terms, each with the lesson that defines it.", "",
             "```{eval-rst}", ".. glossary::", ""]
    for term in sorted(terms, key=lambda t: t["name"].lower().lstrip("_")):
        number, stem = term["lesson"], lessons.get(term["lesson"])
        where = f":doc:`../{stem}`" if stem else f"lesson {number}"
        definition = " ".join(term["definition"].split())
        lines += [f"   {_term_text(term['name'])}", f"      {definition} Defined in {where}.", ""]
    lines.append("```")
    return "\n".join(lines) + "\n"


def missing_lessons(terms: list[dict[str, str]], lessons: dict[str, str]) -> list[str]:
    """The terms whose defining lesson has no page among ``lessons``."""
    return [t["name"] for t in terms if t["lesson"] not in lessons]


def _term_text(name: str) -> str:
    """A term line that reStructuredText reads as plain text (``_Send/_Recv``'s underscores escaped)."""
    return name.replace("_", "\\_")


def index_page(api: list[Page]) -> str:
    """``index.md``: the reference's table of contents."""
    entries = [f"{page.slug}" for page in api]
    return "\n".join(["# Reference", "",
                      "The engine's and the widgets' API, generated from their docstrings; the TF 1.x names dfcore "
                      "implements; the course's glossary.", "",
                      "```{toctree}", ":maxdepth: 1", "", *entries, "tf_names", "glossary", "```", ""])
