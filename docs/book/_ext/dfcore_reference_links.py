"""Links from the lessons to the reference, made on each lesson's resolved doctree (the notebooks stay as they are).

On a lesson page (a document whose name starts with two digits) the first inline-code use of each documented API
name (``tf.device``, ``tf.train.replica_device_setter(cluster=...)``, ``all_reduce``, ``PartitionView``) becomes a
link to its autodoc entry, and the first use of each glossary term in the text (found with the term's
``pattern`` from glossary.toml, case-insensitive) a link to its glossary entry.

Names are read as code reads them: ``tf.X`` is ``dfcore.X``; ``dfcore.X`` and ``widgets.X`` are themselves; any
other dotted or bare name is the documented name ending in it, preferring the top-level namespace, then
``tf.train``, widgets, ``dfcore.distribute``, ``dfcore.launch``. A bare name must look like an API name (it has an
underscore or a capital letter) and not be an op type (``Switch``, ``Identity`` name ops in the lessons).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from docutils import nodes

LESSON = re.compile(r"\d\d")
_NAME = re.compile(r"[A-Za-z_][\w.]*[\w]")
_PREFERENCE = ("dfcore.train.", "widgets.", "dfcore.distribute.", "dfcore.launch.")
# Where a literal or a term is left as it is: already a link, a heading, code and cell outputs.
_SKIP_INSIDE = (nodes.reference, nodes.title, nodes.literal_block, nodes.raw, nodes.term, nodes.literal)
_MODULE_LEVEL = frozenset({"module", "function", "class", "exception", "data"})
API_CLASS, GLOSSARY_CLASS = "dfcore-api-link", "dfcore-glossary-link"


def called_name(text: str) -> str | None:
    """The dotted name a piece of inline code names: ``tf.device`` for ``tf.device("/gpu:0")``, else None."""
    text = text.strip()
    match = _NAME.match(text)
    if match is None or (match.end() < len(text) and text[match.end()] != "("):
        return None
    return match.group()


def _rank(name: str) -> tuple[int, int, str]:
    top = name.count(".") == 1 and name.startswith("dfcore.")
    order = 0 if top else next((i + 1 for i, p in enumerate(_PREFERENCE) if name.startswith(p)), len(_PREFERENCE) + 1)
    return order, len(name), name


def api_target(text: str, documented: Mapping[str, str], op_types: frozenset[str]) -> str | None:
    """The documented name (``dfcore.device``) that the inline code ``text`` uses, or None.

    ``documented`` maps each documented name to its kind (``function``, ``method`` ...); a bare name matches only
    module-level names (``take_grad`` alone is not linked, ``ConditionalAccumulator.take_grad`` is).
    """
    name = called_name(text)
    if name is None:
        return None
    if name.startswith("tf."):
        full = "dfcore" + name.removeprefix("tf")
        return full if full in documented else None
    if name.split(".")[0] in ("dfcore", "widgets"):
        return name if name in documented else None
    if "." not in name and (name in op_types or not ("_" in name.strip("_") or name != name.lower())):
        return None
    found = sorted((d for d, kind in documented.items() if d.endswith("." + name)
                    and ("." in name or kind in _MODULE_LEVEL)), key=_rank)
    return found[0] if found else None


def _skipped(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, _SKIP_INSIDE) or "cell_output" in parent.get("classes", ()):
            return True
        parent = parent.parent
    return False


def _reference(uri: str, cls: str, *children: nodes.Node) -> nodes.reference:
    ref = nodes.reference("", "", *children, internal=True, refuri=uri, classes=[cls])
    return ref


def link_api_names(doctree: nodes.document, resolve: Callable[[str], str | None], uri: Callable[[str], str]) -> int:
    """Wrap the first inline-code use of each API name in a link; returns how many were linked.

    ``resolve`` maps inline code to a documented name (or None), ``uri`` a documented name to the link's target.
    """
    seen: set[str] = set()
    for literal in list(doctree.findall(nodes.literal)):
        if _skipped(literal) or "xref" in literal.get("classes", ()):
            continue
        target = resolve(literal.astext())
        if target is None or target in seen:
            continue
        seen.add(target)
        ref = _reference(uri(target), API_CLASS)
        literal.replace_self(ref)
        ref += literal
    return len(seen)


def _first_match(text: str, patterns: Mapping[str, re.Pattern[str]]) -> tuple[str, re.Match[str]] | None:
    """The term whose pattern matches earliest in ``text`` (the longest match on a tie)."""
    found = [(term, m) for term, p in patterns.items() if (m := p.search(text))]
    return min(found, key=lambda tm: (tm[1].start(), -len(tm[1].group())), default=None)


def link_glossary_terms(doctree: nodes.document, patterns: Mapping[str, re.Pattern[str]],
                        uri: Callable[[str], str]) -> list[str]:
    """Link the first use of each term in the page's paragraphs to its entry; returns the terms linked."""
    left = dict(patterns)
    linked = []
    for text in list(doctree.findall(nodes.Text)):
        if not left:
            break
        if not isinstance(text.parent, nodes.paragraph | nodes.emphasis | nodes.strong) or _skipped(text):
            continue
        pieces: list[nodes.Node] = []
        rest = str(text)
        while (hit := _first_match(rest, left)) is not None:
            term, match = hit
            link = _reference(uri(term), GLOSSARY_CLASS, nodes.Text(match.group()))
            pieces += [nodes.Text(rest[:match.start()]), link]
            rest = rest[match.end():]
            linked.append(term)
            del left[term]
        if pieces:
            text.parent.replace(text, [*pieces, nodes.Text(rest)])
    return linked
