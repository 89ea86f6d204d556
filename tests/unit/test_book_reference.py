"""The book's reference section (docs/book/_ext/dfcore_reference*.py): the API pages, the TF-names page, the
glossary page, and the links a lesson page gets to them.

The page generators are checked directly against their sources (glossary.toml, ``python -m dfcore.compat_report
--json``, ``widgets.__all__``); one small Sphinx project in a temporary folder (two lesson pages, the ``tf`` and
``widgets`` API pages) is built once to check what the built HTML links to.
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
import tomllib

import pytest
from _requirements import BOOK_EXTRAS, require_module

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:sphinx.*",  # napoleon's, ipywidgets' via autodoc
                                        "ignore::PendingDeprecationWarning:sphinx.*")
ROOT = pathlib.Path(__file__).resolve().parents[2]
EXT = ROOT / "docs" / "book" / "_ext"
NOTEBOOKS = ROOT / "notebooks"
GLOSSARY = NOTEBOOKS / "glossary.toml"
sys.path.insert(0, str(EXT))

import dfcore_reference_api as api  # noqa: E402
import dfcore_reference_pages as pages  # noqa: E402

import widgets  # noqa: E402
from dfcore import compat_report  # noqa: E402


@pytest.fixture(scope="module")
def links():
    """The links module (it builds docutils nodes: docutils comes with the book's extra)."""
    require_module("docutils", "the book extra (docutils, with Sphinx)", BOOK_EXTRAS)
    import dfcore_reference_links

    return dfcore_reference_links


def test_glossary_page_has_every_term_with_a_link_to_its_lesson():
    terms = tomllib.loads(GLOSSARY.read_text())["term"]
    lessons = pages.lesson_pages(NOTEBOOKS)
    page = pages.glossary_page(pages.read_glossary(GLOSSARY), lessons)
    for term in terms:
        stem = next(p.stem for p in NOTEBOOKS.glob(f"{term['lesson']}_*.ipynb"))
        line = re.escape(term["name"].replace("_", "\\_"))
        entry = re.search(rf"^   {line}\n      (.*)$", page, re.MULTILINE)
        assert entry, term["name"]
        assert " ".join(term["definition"].split()) in entry.group(1)
        assert entry.group(1).endswith(f"Defined in :doc:`../{stem}`."), entry.group(1)
    assert pages.missing_lessons(terms, lessons) == []


def test_glossary_term_without_a_lesson_page_keeps_its_number_and_is_reported():
    terms = [{"name": "busbw", "pattern": "busbw", "lesson": "05", "definition": "bus\n bandwidth."}]
    assert "bus bandwidth. Defined in lesson 05." in pages.glossary_page(terms, {})
    assert pages.missing_lessons(terms, {}) == ["busbw"]


def test_tf_names_page_lists_what_compat_report_lists(capsys):
    assert compat_report.main(["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    page = pages.tf_names_page(documented={"dfcore.device"})
    listed = set(re.findall(r"^\| (?:`|\{py:obj\}`)(tf\.[\w.]+)[^|]* \| \w+ \| (have|partial)", page, re.MULTILINE))
    assert listed == {(s["name"], s["status"]) for s in report["symbols"] if s["status"] != "lack"}
    rows = re.findall(r"^\| `([\w.]+)` \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", page, re.MULTILINE)
    assert rows == [(n["namespace"], *(str(n[k]) for k in ("have", "partial", "lack", "total")))
                    for n in report["namespaces"]]
    assert "| {py:obj}`tf.device <dfcore.device>` | function | have |" in page  # linked to its API entry
    assert "| `tf.Session` | class | have |" in page  # no API entry given: plain code
    partial = next(s for s in report["symbols"] if s["status"] == "partial")
    assert f"partial: {partial['reason'].replace('|', chr(92) + '|')}" in page


def test_api_pages_name_every_public_widget_class_and_leave_out_foreign_names():
    page = api.render_page(api.own_page("widgets"))
    for name in widgets.__all__:
        assert f".. autoclass:: widgets.{name}\n" in page, name
    top = api.api_pages(["tf"])[0].sections[0]
    names = {e.short for e in top.entries}
    assert {"device", "Session", "float32", "FIFOQueue"} <= names
    assert "ConfigProto" in top.foreign and "ConfigProto" not in names  # tensorboard's protocol buffer
    assert "flags" not in names and "nn" not in names  # modules have their own pages
    assert "tf_flags" not in {p.slug for p in api.api_pages()}  # tf.flags is absl's


def test_a_class_exported_twice_is_documented_once_and_aliased():
    entries = {e.name: e for p in api.api_pages() for s in p.sections for e in s.entries}
    assert entries["dfcore.FIFOQueue"].alias_of == ""
    assert entries["dfcore.queue.FIFOQueue"].alias_of == "dfcore.FIFOQueue"
    assert "The same as :py:class:`dfcore.FIFOQueue`." in "\n".join(api.render_entry(entries["dfcore.queue.FIFOQueue"]))


@pytest.mark.parametrize(("code", "target"), [
    ("tf.device", "dfcore.device"),
    ('tf.device("/gpu:0")', "dfcore.device"),
    ("tf.train.replica_device_setter(cluster=...)", "dfcore.train.replica_device_setter"),
    ("replica_device_setter", "dfcore.train.replica_device_setter"),
    ("all_reduce", "dfcore.distribute.all_reduce"),
    ("PartitionView", "widgets.PartitionView"),
    ("Session.run", "dfcore.Session.run"),
    ("with tf.device(...)", None),  # a statement, not a name
    ("c = tf.matmul(a, b)", None),
    ("Switch", None),  # an op type
    ("group", None),  # a plain word
    ("dequeue_many(32)", None),  # a method, named without its class
    ("QueueBase.dequeue_many", "dfcore.QueueBase.dequeue_many"),
    ("tf.no_such_name", None),
])
def test_inline_code_names_the_api_entry_it_uses(links, code, target):
    documented = {"dfcore.device": "function", "dfcore.train.replica_device_setter": "function",
                  "dfcore.distribute.all_reduce": "function", "dfcore.distribute.collective.all_reduce_x": "function",
                  "widgets.PartitionView": "class", "dfcore.Session": "class", "dfcore.Session.run": "method",
                  "dfcore.group": "function", "dfcore.control_flow.Switch": "class", "dfcore.matmul": "function",
                  "dfcore.QueueBase.dequeue_many": "method"}
    assert links.api_target(code, documented, frozenset({"Switch", "MatMul"})) == target


def test_api_target_prefers_the_top_level_namespace(links):
    documented = dict.fromkeys(["dfcore.distribute.ClusterSpec", "dfcore.train.ClusterSpec", "dfcore.Session"], "class")
    assert links.api_target("ClusterSpec", documented, frozenset()) == "dfcore.train.ClusterSpec"
    assert links.api_target("Session", {"dfcore.train.Session": "class", **documented}, frozenset()) == "dfcore.Session"


LESSON = """# Devices

A `tf.device("/gpu:0")` block pins ops; the runtime cuts the graph into partitions.
Later `tf.device` again, and a partition again; `PartitionView` shows it.

## A `tf.device` heading

    `tf.device` in code
"""


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """A tiny book: two lesson pages (one with API names and glossary terms), the tf and widgets API pages,
    the TF-names page and the glossary, built to HTML; (output folder, warnings)."""
    for module in ("sphinx", "myst_nb"):
        require_module(module, "the book extra (Sphinx, myst-nb)", BOOK_EXTRAS)
    from sphinx.cmd.build import build_main

    src = tmp_path_factory.mktemp("book")
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['myst_nb', 'dfcore_reference']\nnb_execution_mode = 'off'\n"
        f"dfcore_reference_glossary = {str(GLOSSARY)!r}\ndfcore_reference_groups = ['tf', 'widgets']\n"
        "html_theme = 'basic'\nexclude_patterns = ['_build']\n")
    for stem in sorted({p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb")}):
        (src / f"{stem}.md").write_text(LESSON if stem.startswith("02_") else f"# Lesson {stem}\n\nText.\n")
    (src / "index.md").write_text("# Book\n\n```{toctree}\n:glob:\n\n0*\n1*\nreference/index\n```\n")
    out, warnings = src / "_build", src / "warnings.txt"
    assert build_main(["-b", "html", "-q", "-w", str(warnings), str(src), str(out)]) == 0
    return out, warnings.read_text()


def test_build_leaves_no_warning(book):
    _, warnings = book
    assert warnings == ""


def test_a_lessons_first_tf_device_links_to_its_api_entry(book):
    out, _ = book
    html = (out / "02_devices_and_placement.html").read_text()
    linked = re.findall(r'<a class="dfcore-api-link reference internal" href="([^"]+)">'
                        r'<code class="docutils literal notranslate"><span class="pre">([^<]*)', html)
    assert ("reference/tf.html#dfcore.device", "tf.device(&quot;/gpu:0&quot;)") in linked
    assert [href for href, _ in linked].count("reference/tf.html#dfcore.device") == 1  # the first use only
    assert ("reference/widgets.html#widgets.PartitionView", "PartitionView") in linked
    assert 'id="dfcore.device"' in (out / "reference" / "tf.html").read_text()


def test_a_lessons_first_glossary_term_links_to_its_entry(book):
    out, _ = book
    html = (out / "02_devices_and_placement.html").read_text()
    assert re.findall(r'class="dfcore-glossary-link[^"]*" href="([^"]+)">([^<]*)', html) == [
        ("reference/glossary.html#term-partition", "partitions")]


def test_built_glossary_links_each_term_to_its_lesson_and_widgets_page_documents_every_widget(book):
    out, _ = book
    html = (out / "reference" / "glossary.html").read_text()
    for term in pages.read_glossary(GLOSSARY):
        stem = pages.lesson_pages(NOTEBOOKS)[term["lesson"]]
        entry = html.split(">" + term["name"] + "<", 1)[1].split("</dd>", 1)[0]
        assert f'href="../{stem}.html"' in entry, term["name"]
    page = (out / "reference" / "widgets.html").read_text()
    for name in widgets.__all__:
        assert f'id="widgets.{name}"' in page, name


def test_built_tf_names_page_links_a_documented_name_to_its_entry(book):
    out, _ = book
    html = (out / "reference" / "tf_names.html").read_text()
    assert re.search(r'<a class="reference internal" href="tf.html#dfcore.device"[^>]*>'
                     r'<code class="xref py py-obj docutils literal notranslate"><span class="pre">tf.device', html)


def test_api_page_lists_module_level_names_not_members_and_leaves_builtin_annotations_unlinked(book):
    out, _ = book
    body, sidebar = (out / "reference" / "tf.html").read_text().split('class="sphinxsidebar"', 1)
    assert 'class="reference internal" href="#dfcore.DeviceSpec"' in sidebar
    assert 'href="#dfcore.DeviceSpec.from_string"' in body and 'href="#dfcore.DeviceSpec.from_string"' not in sidebar
    # `x: bool` in a signature is Python's bool: no link to tf.bool (dfcore.bool), documented on this page
    assert 'id="dfcore.bool"' in body and 'class="reference internal" href="#dfcore.bool"' not in body
    assert re.search(r'<span class="pre">bool</span>', body)
