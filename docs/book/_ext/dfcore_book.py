"""The course website's links: between a lesson and its exercise solutions, and to repository files the site
does not carry; and its code cells without test markers.

* At the top of each lesson page, a line linking the page of its solutions (``solutions/<lesson>``), and at
  the top of each solutions page, one linking back to the lesson; a solutions page's title (in the page, the
  sidebar and the search results) starts with "Solutions: ", as it otherwise repeats its lesson's title.
* Each mention of a solutions notebook in code style (``solutions/05_ring_allreduce.ipynb``, as every lesson's
  Exercises section names it) becomes a link to that page.
* A lesson's link to a repository file that is not a page of the site (``../docs/architecture.md#...``) opens
  that file on the repository's web host (``dfcore_blob_url``), read from where the lesson lies in the repository
  (``dfcore_sources_folder``: the folder whose copy Sphinx reads). A solutions page repeats its lesson's prose,
  so a link there to a lesson notebook that only the lessons' folder has opens that lesson.
* The test-runner markers of a code cell (nbval's ``# NBVAL_CHECK_OUTPUT``, ...) are left out of the page: they
  tell ``make test`` how to compare the cell's output and mean nothing to a reader (the downloaded notebook
  keeps them).

The lessons themselves stay as they are: all of this is added to the documents Sphinx reads from them.
"""

import html
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

SOLUTIONS = "solutions/"
COMPANION_CLASS = "dfcore-companion"
SOLUTIONS_TITLE_PREFIX = "Solutions: "
# doctree-read handlers run by priority (lower first); Sphinx's title collector has the default, 500.
TITLE_PRIORITY = 400
_NBVAL_MARKER = re.compile(r"^# ?NBVAL_\w+[ \t]*\n?", re.MULTILINE)
_SOLUTIONS_FILE = re.compile(rf"^{re.escape(SOLUTIONS)}([\w.-]+)\.ipynb$")


def doc_link(target: str, text: str, *children: nodes.Node) -> addnodes.pending_xref:
    """A link to the document ``target`` (a docname), showing ``children`` or else ``text``."""
    link = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{target}", refexplicit=True,
                                 refwarn=True)
    link += children or (nodes.inline(text, text),)
    return link


def companion_line(docname: str, found: set[str]) -> nodes.paragraph | None:
    """The paragraph that links ``docname``'s companion (its solutions, or the lesson it solves); None if it has
    none among the ``found`` documents."""
    if docname.startswith(SOLUTIONS):
        lesson = docname.removeprefix(SOLUTIONS)
        if lesson not in found:
            return None
        line = nodes.paragraph("", "", classes=[COMPANION_CLASS])
        line += [nodes.Text("The completed exercises of "), doc_link(lesson, "this lesson"), nodes.Text(".")]
        return line
    if SOLUTIONS + docname not in found:
        return None
    line = nodes.paragraph("", "", classes=[COMPANION_CLASS])
    line += [nodes.Text("The exercises' solutions are on "), doc_link(SOLUTIONS + docname, "their own page"),
             nodes.Text(".")]
    return line


def link_lesson_and_solutions(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read`` (before Sphinx records the page's title): put the companion line under the page's title,
    mark a solutions page's title, and link the mentions of solutions notebooks."""
    found = app.env.found_docs
    line = companion_line(app.env.docname, found)
    section = next(iter(doctree.findall(nodes.section)), None)
    if line is not None and section is not None and isinstance(section[0], nodes.title):
        section.insert(1, line)
        if app.env.docname.startswith(SOLUTIONS):
            section[0].insert(0, nodes.Text(SOLUTIONS_TITLE_PREFIX))
    for literal in list(doctree.findall(nodes.literal)):
        match = _SOLUTIONS_FILE.match(literal.astext())
        if match and SOLUTIONS + match.group(1) in found and not isinstance(literal.parent, nodes.reference):
            literal.replace_self(doc_link(SOLUTIONS + match.group(1), "", literal.deepcopy()))


def repository_link(app: Sphinx, link: addnodes.pending_xref) -> nodes.Element | None:
    """What replaces MyST's unresolved local ``link`` (a relative path): a link to the repository file it names
    on the web host, or to the lesson a solutions page means; None (MyST then warns) if neither exists."""
    path, _, anchor = link["reftarget"].partition("#")
    if not path or "://" in path:
        return None
    sources = Path(app.config.dfcore_sources_folder)
    repository = Path(app.config.dfcore_repository_folder)
    target = (sources / link["refdoc"]).parent.joinpath(path).resolve()
    if target.is_file() and target.is_relative_to(repository):
        url = f"{app.config.dfcore_blob_url}/{target.relative_to(repository).as_posix()}"
        reference = nodes.reference("", "", refuri=url + (f"#{anchor}" if anchor else ""), internal=False)
        reference += link.children
        return reference
    lesson = Path(path).stem
    if link["refdoc"].startswith(SOLUTIONS) and Path(path).name == path and lesson in app.env.found_docs:
        return doc_link(lesson, lesson, *link.children)
    return None


def resolve_repository_links(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: replace each of MyST's unresolved local links that :func:`repository_link` resolves."""
    for link in list(doctree.findall(addnodes.pending_xref)):
        if link.get("reftype") == "myst" and link.get("refdomain") is None:
            replacement = repository_link(app, link)
            if replacement is not None:
                link.replace_self(replacement)


def drop_test_markers(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: remove nbval's marker lines from the code of each cell (myst-nb's ``cell_input``)."""
    for cell in doctree.findall(nodes.container):
        if "cell_input" not in cell["classes"]:
            continue
        for block in cell.findall(nodes.literal_block):
            code = block.astext()
            kept = _NBVAL_MARKER.sub("", code)
            if kept != code:
                block.rawsource = kept
                block[:] = [nodes.Text(kept)]


def complete_root_redirect(app: Sphinx, error: Exception | None) -> None:
    """``build-finished``, after sphinx-external-toc: its ``index.html`` is a bare ``<meta>`` redirect to the
    landing page; make it a whole page that names the site's icon (a page without one makes the browser ask for
    ``/favicon.ico``, a 404 and a console error) and links the landing page for a reader without redirects."""
    index = Path(app.outdir) / "index.html"
    if error is not None or not index.is_file():
        return
    match = re.fullmatch(r'<meta http-equiv="Refresh" content="0; url=([^"]+)" />\s*', index.read_text())
    if match is None:
        return
    target, title = html.escape(match.group(1)), html.escape(app.config.html_title)
    icon = f'<link rel="icon" href="_static/{Path(app.config.html_favicon).name}">' if app.config.html_favicon else ""
    index.write_text(f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{icon}'
                     f'<meta http-equiv="Refresh" content="0; url={target}"><title>{title}</title></head>'
                     f'<body><a href="{target}">{title}</a></body></html>\n')


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the configuration values and the hooks (Sphinx's extension entry point)."""
    app.add_config_value("dfcore_repository_folder", "", "env", str)
    app.add_config_value("dfcore_sources_folder", "", "env", str)
    app.add_config_value("dfcore_blob_url", "", "env", str)
    app.connect("doctree-read", link_lesson_and_solutions, priority=TITLE_PRIORITY)
    app.connect("doctree-read", resolve_repository_links)
    app.connect("doctree-read", drop_test_markers)
    app.connect("build-finished", complete_root_redirect, priority=900)  # after sphinx-external-toc's (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
