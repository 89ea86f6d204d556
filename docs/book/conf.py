"""Sphinx configuration of the course website (``make book``): the committed lessons, never executed here, read
by myst-nb and laid out by sphinx-book-theme; everything a page loads is served from the site (no CDN, no web
font), so the site builds and reads offline. ``docs/book/build.py`` stages the sources and runs Sphinx with this
folder as its configuration directory.
"""

import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE / "_ext"))

# The repository and ref that Binder launches: the README's badge, the one place the launch link is filled in
# (binder/README.md says how), so every page's "launch on Binder" opens what the badge opens.
_BINDER_LINK = re.compile(r"https://mybinder\.org/v2/gh/([^/\s]+)/([^/\s]+)/([^/?\s)]+)")
_badge = _BINDER_LINK.search((REPO / "README.md").read_text(encoding="utf-8"))
if _badge is None:
    raise ValueError("README.md has no Binder badge (https://mybinder.org/v2/gh/<owner>/<repository>/<ref>): the "
                     "site's launch buttons open what it opens")
_owner, _repository, _ref = _badge.groups()

project = "dfcore"
author = "dfcore contributors"
html_title = "Distributed TensorFlow 1, step by step"
html_favicon = "_static/favicon.svg"  # a page that names its icon: no request for /favicon.ico, no 404

extensions = ["myst_nb", "sphinx_external_toc", "dfcore_book"]
if (HERE / "_ext" / "dfcore_reference.py").exists():
    extensions.append("dfcore_reference")

external_toc_path = str(HERE / "_toc.yml")
# The Reference part's pages exist only where dfcore_reference generates them (its toc entry is a glob for that),
# and the reference's index lists its own pages with a toctree. (sphinx-external-toc also writes index.html, which
# forwards to the root page, the tour.)
# A short class name in a signature (``-> QueueBase``) that several namespaces export finds one target per
# namespace (tf.QueueBase, tf.io.QueueBase, ...), all the same class: the link goes to the first, which is right,
# and Sphinx's "more than one target found" (ref.python) says nothing wrong.
suppress_warnings = ["etoc.glob", "etoc.toctree", "ref.python"]
exclude_patterns = ["**.ipynb_checkpoints"]

# dfcore_book: the repository, and where a repository file outside the site is opened (build.py sets
# dfcore_sources_folder, the folder it stages).
dfcore_repository_folder = str(REPO)
dfcore_blob_url = f"https://github.com/{_owner}/{_repository}/blob/{_ref}"

# The lessons are committed executed: the site shows their outputs as they are, and never runs a cell.
nb_execution_mode = "off"
# Committed lessons keep no widget state, so no page needs the widget renderer (which myst-nb would load from
# a CDN); each widget shows its static picture instead.
nb_ipywidgets_js: dict[str, dict[str, str]] = {}

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_css_files = ["dfcore_book.css"]
html_js_files: list[str] = []
# The widgets' kernel-free steppers (each static step-through becomes a slider) where the widgets ship them.
_STEPPER_JS = REPO / "widgets" / "static" / "dfcore_static.js"
if _STEPPER_JS.is_file():
    html_static_path.append(str(_STEPPER_JS))
    html_js_files.append(_STEPPER_JS.name)
# Light, as the widgets' pictures are drawn on white (the reader can still switch); the theme also reports an
# empty mode as a console error on a first visit.
html_context = {"default_mode": "light"}
html_theme_options: dict[str, Any] = {
    "repository_url": f"https://github.com/{_owner}/{_repository}",
    "repository_branch": _ref,
    "path_to_docs": "notebooks",
    "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
    "use_download_button": True,
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    # The sidebar has the search field; pydata-sphinx-theme would otherwise add a second one in a top bar.
    "navbar_persistent": [],
}
