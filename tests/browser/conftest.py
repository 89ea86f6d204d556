"""Fixtures for the browser smoke tests: headless Debian Chromium driven by Playwright's Python
package (never Playwright's own browser build), a private JupyterLab server, and a temporary copy of
the lessons to run. See ``browser_harness.py`` for the rules they follow."""

import os
import shutil

import pytest
from _requirements import require, require_module
from browser_harness import (
    BROWSER_LAUNCH_TIMEOUT_S,
    CHROMIUM,
    CHROMIUM_ARGS,
    CHROMIUM_INSTALL,
    NOTEBOOKS_DIR,
    SCREENSHOTS_DIR,
    running_jupyter_lab,
)


@pytest.fixture(scope="session")
def browser():
    """A headless ``/usr/bin/chromium`` launched by Playwright; closed (and the driver stopped) at the end."""
    require(os.path.exists(CHROMIUM), "Chromium", f"no {CHROMIUM}; install it with: {CHROMIUM_INSTALL}")
    sync_api = require_module("playwright.sync_api", "the playwright package")
    playwright = sync_api.sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                                              timeout=BROWSER_LAUNCH_TIMEOUT_S * 1000)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()


@pytest.fixture(scope="session")
def lesson_root(tmp_path_factory):
    """A temporary folder holding a copy of ``notebooks/`` as ``notebooks/``: runs never touch the repo."""
    root = tmp_path_factory.mktemp("lessons")
    shutil.copytree(NOTEBOOKS_DIR, root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return root


@pytest.fixture(scope="session")
def jupyter_lab(lesson_root, tmp_path_factory):
    """``jupyter lab`` on a free 127.0.0.1 port with a random token, serving ``lesson_root``."""
    with running_jupyter_lab(lesson_root, tmp_path_factory.mktemp("jupyter-lab")) as server:
        yield server


@pytest.fixture
def screenshots_dir():
    """``tests/browser/screenshots/`` (git-ignored), created on demand."""
    SCREENSHOTS_DIR.mkdir(exist_ok=True)
    return SCREENSHOTS_DIR
