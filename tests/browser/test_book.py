"""The course website (``make book``) in headless Chromium: ``docs/book/build.py`` builds it once, warnings as
errors, into a temporary folder; a file server on 127.0.0.1 serves it; one browser reads every lesson, solutions
and reference page. On each page every picture has loaded; every kernel-free step-through (``.dfcore-frames``,
stepped by ``widgets/static/dfcore_static.js``) shows its first frame, its second and its last when its slider
and "next frame" button are driven; every answer in an output's ``<details>`` opens; every link into the site
resolves (its page answers 200 and its ``#fragment`` names an element there); the console shows no error; and the
page asks for nothing off the machine. The search page finds a term of the course offline, and the site's root
forwards to the tour.
"""

import contextlib
import functools
import html
import http.server
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest
from _requirements import BOOK_EXTRAS, require_module
from browser_harness import REPO

BUILD_TIMEOUT_S = 300
PAGE_TIMEOUT_S = 60
LESSONS = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
SOLUTIONS = sorted(f"solutions/{p.stem}" for p in (REPO / "notebooks" / "solutions").glob("*.ipynb"))
ROOT_PAGE = "00_start_here"
SEARCH_TERM = "rendezvous"
# The README's Binder badge: owner, repository and ref, which the site's launch buttons and repository links use.
BINDER_BADGE = re.compile(r"https://mybinder\.org/v2/gh/([^/\s]+)/([^/\s]+)/([^/?\s)]+)")

# Loads every picture of the article now (none waits for a scroll) and names those that failed.
BROKEN_IMAGES_JS = """async () => {
  const images = [...document.querySelectorAll('.bd-article img')];
  images.forEach(image => { image.loading = 'eager'; });
  await Promise.all(images.map(image => image.decode().catch(() => null)));
  return images.filter(image => !image.complete || image.naturalWidth === 0)
               .map(image => (image.getAttribute('src') || '').slice(0, 120));
}"""

# Per step-through: how many frames it holds and which of them are shown.
FRAMES_JS = """() => [...document.querySelectorAll('.dfcore-frames')].map(frames => {
  const own = [...frames.querySelectorAll('.dfcore-frame')].filter(f => f.closest('.dfcore-frames') === frames);
  return {count: own.length, shown: own.map((f, i) => f.getBoundingClientRect().height > 0 ? i : -1)
                                       .filter(i => i >= 0)};
})"""

# Clicks the summary of each closed answer in an output, as a reader would, then reports per answer whether it is
# open and something besides its summary is visible.
OPEN_DETAILS_JS = """() => {
  const answers = [...document.querySelectorAll('.cell_output details')];
  answers.filter(d => !d.open).forEach(d => d.querySelector(':scope > summary').click());
  return answers.map(d => ({
    open: d.open,
    shown: [...d.children].some(c => c.tagName !== 'SUMMARY' && c.getBoundingClientRect().height > 0)}));
}"""

LINKS_JS = """() => [...new Set([...document.querySelectorAll('a[href]')].map(a => a.href))]"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(folder):
    """A file server for ``folder`` on a free 127.0.0.1 port, in a thread; yields its base URL (ending in /)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=folder))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's folder (``docs/book/build.py --out``); the build must succeed without a warning."""
    for module in ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx_external_toc"):
        require_module(module, "the book extra (Sphinx, myst-nb, sphinx-book-theme)", BOOK_EXTRAS)
    out = tmp_path_factory.mktemp("book") / "site"
    result = subprocess.run([sys.executable, str(REPO / "docs" / "book" / "build.py"), "--out", str(out)],
                            capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=REPO)
    assert result.returncode == 0, f"the book's build failed or warned:\n{result.stdout}{result.stderr[-6000:]}"
    return out


@pytest.fixture(scope="module")
def base_url(site):
    with serving(site) as url:
        yield url


@pytest.fixture(scope="module")
def book_page(browser, base_url):
    """One page of one browser context for every page of the site: ``book_page.problems`` collects the console
    errors, uncaught exceptions, failed loads and requests off the machine since the last ``problems.clear()``."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.problems = []

    def route(route):
        url = route.request.url
        if url.startswith((base_url, "data:")):
            return route.continue_()
        page.problems.append(f"asked for {url}")
        return route.abort()

    page.route("**/*", route)
    page.on("console", lambda message: message.type == "error" and page.problems.append(f"console: {message.text}"))
    page.on("pageerror", lambda error: page.problems.append(f"uncaught: {error}"))
    page.on("response", lambda response: response.status >= 400
            and page.problems.append(f"{response.status} for {response.url}"))
    try:
        yield page
    finally:
        context.close()


@functools.cache
def fetch(url):
    """``(status, body)`` of a GET of ``url`` on the test's server (body decoded for HTML pages only)."""
    try:
        with urllib.request.urlopen(url, timeout=PAGE_TIMEOUT_S) as response:
            body = response.read()
            return response.status, body.decode("utf-8", "replace") if url.endswith(".html") else ""
    except urllib.error.HTTPError as error:
        return error.code, ""


def broken_links(urls, base_url):
    """The links among ``urls`` into the site whose page does not answer 200 or lacks the ``#fragment`` named."""
    broken = []
    for url in urls:
        if not url.startswith(base_url):
            continue
        address, _, fragment = url.partition("#")
        status, body = fetch(address)
        if status != 200:
            broken.append(f"{url}: {status}")
        elif fragment and address.endswith(".html"):
            anchor = html.escape(urllib.parse.unquote(fragment))
            if not re.search(rf'\b(?:id|name)="{re.escape(anchor)}"', body):
                broken.append(f"{url}: no element with that id")
    return broken


def reference_pages(site):
    """The generated API reference's pages (none where the reference extension is not in the tree)."""
    return sorted(p.relative_to(site).with_suffix("").as_posix() for p in (site / "reference").glob("**/*.html"))


def step_through(page, index, count):
    """Drive the ``index``-th step-through (``count`` frames) as a reader: its slider to the start (Home), one
    click on "next frame", the slider to the end (End); what went wrong (empty when each showed the right frame,
    alone)."""
    stepper = page.locator(".dfcore-frames").nth(index)
    slider = stepper.locator("input.dfcore-step")
    if slider.count() != 1:
        return [f"step-through {index}: {slider.count()} sliders, not 1 (is dfcore_static.js loaded?)"]
    wrong = []
    steps = [(lambda: slider.press("Home"), 0)]
    if count > 1:
        steps += [(lambda: stepper.get_by_role("button", name="next frame").click(), 1),
                  (lambda: slider.press("End"), count - 1)]
    for action, expected in steps:
        action()
        shown = page.evaluate(FRAMES_JS)[index]["shown"]
        if shown != [expected]:
            wrong.append(f"step-through {index}: frames {shown} shown, not only frame {expected} of {count}")
    return wrong


def check_page(page, base_url, name):
    """Open ``name``'s page and return what is wrong with it (empty when nothing is)."""
    page.problems.clear()
    page.goto(f"{base_url}{name}.html", wait_until="load", timeout=PAGE_TIMEOUT_S * 1000)
    wrong = [f"picture not loaded: {src}" for src in page.evaluate(BROKEN_IMAGES_JS)]
    for index, frames in enumerate(page.evaluate(FRAMES_JS)):
        wrong += step_through(page, index, frames["count"])
    wrong += [f"answer {index} did not open: {state}" for index, state in enumerate(page.evaluate(OPEN_DETAILS_JS))
              if not (state["open"] and state["shown"])]
    wrong += [f"broken link {link}" for link in broken_links(page.evaluate(LINKS_JS), base_url)]
    return wrong + list(page.problems)


def test_every_lesson_solution_and_reference_page_reads_steps_and_links(site, base_url, book_page):
    names = LESSONS + SOLUTIONS + reference_pages(site)
    wrong = {name: check_page(book_page, base_url, name) for name in names}
    assert {name: problems for name, problems in wrong.items() if problems} == {}


def test_each_lesson_links_its_solutions_and_each_solution_its_lesson(site):
    for lesson in (s.removeprefix("solutions/") for s in SOLUTIONS):
        lesson_page = (site / f"{lesson}.html").read_text(encoding="utf-8")
        solution_page = (site / "solutions" / f"{lesson}.html").read_text(encoding="utf-8")
        assert re.search(rf'<p class="dfcore-companion">[^\n]*href="solutions/{lesson}\.html"', lesson_page), lesson
        assert re.search(rf'<p class="dfcore-companion">[^\n]*href="\.\./{lesson}\.html"', solution_page), lesson


def test_pages_offer_binder_and_the_notebook_download(site):
    badge = BINDER_BADGE.search((REPO / "README.md").read_text(encoding="utf-8")).group(0)
    page = (site / "solutions" / "05_ring_allreduce.html").read_text(encoding="utf-8")
    launch = f"{badge}?urlpath=lab/tree/notebooks/solutions/05_ring_allreduce.ipynb"
    assert html.escape(launch) in page or launch in page
    assert 'href="../_sources/solutions/05_ring_allreduce.ipynb"' in page
    assert (site / "_sources" / "solutions" / "05_ring_allreduce.ipynb").is_file()


def test_code_shows_no_test_marker_and_repository_files_open_on_the_web_host(site):
    owner, repository, ref = BINDER_BADGE.search((REPO / "README.md").read_text(encoding="utf-8")).groups()
    pages = {name: (site / f"{name}.html").read_text(encoding="utf-8") for name in LESSONS + SOLUTIONS}
    assert [name for name, page in pages.items() if "NBVAL_" in page] == []
    # lesson 11 and its solutions link ../docs/architecture.md (../../ from solutions/), which the site does not carry
    blob = f"https://github.com/{owner}/{repository}/blob/{ref}/docs/architecture.md#the-simulated-clock"
    for name in ("11_input_pipelines", "solutions/11_input_pipelines"):
        assert f'href="{html.escape(blob)}"' in pages[name] or f'href="{blob}"' in pages[name], name


def test_root_forwards_to_the_tour_and_search_works_offline(base_url, book_page):
    book_page.problems.clear()
    book_page.goto(base_url, wait_until="load", timeout=PAGE_TIMEOUT_S * 1000)
    book_page.wait_for_url(f"{base_url}{ROOT_PAGE}.html", timeout=PAGE_TIMEOUT_S * 1000)
    root = urllib.request.urlopen(base_url, timeout=PAGE_TIMEOUT_S).read().decode()  # the site, on loopback
    assert '<link rel="icon"' in root, "a root page without an icon makes browsers ask for /favicon.ico: a 404"
    book_page.goto(f"{base_url}search.html?q={SEARCH_TERM}", wait_until="load", timeout=PAGE_TIMEOUT_S * 1000)
    results = book_page.locator("ul.search li a")
    results.first.wait_for(timeout=PAGE_TIMEOUT_S * 1000)
    hits = {urllib.parse.urlsplit(href).path.lstrip("/") for href in results.evaluate_all("l => l.map(a => a.href)")}
    assert "03_partitioning_and_send_recv.html" in hits, hits
    assert book_page.problems == []
