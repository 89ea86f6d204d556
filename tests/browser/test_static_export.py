"""Static export: ``jupyter nbconvert --to html --execute`` with ``make html``'s template keeps each lesson's
widget state, and the exported page renders its widgets and steps its step-through views with no kernel at
all; each widget's static picture is hidden once its view is drawn, and shown when the renderer cannot load.

The exported HTML loads require.js and the widget renderer (``@jupyter-widgets/html-manager``) from
CDNs. The test does not change the page: the browser answers those requests with the copies
``make browser-deps`` vendored from the npm registry and refuses every other outside request, so
it runs offline and sees what a reader online would see.
"""

import functools
import json
import re
import subprocess
import sys

import pytest
from _requirements import require
from browser_harness import HTML_MANAGER_DIST, LESSONS, REPO, REQUIRE_JS, lesson_ids

EXPORT_TIMEOUT_S = 300
RENDER_TIMEOUT_S = 30
STEP_TIMEOUT_S = 10
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
HTML_MANAGER_URL = re.compile(r"^https://unpkg\.com/@jupyter-widgets/html-manager@[^/]+/dist/([\w.-]+)$")
REQUIRE_JS_URL = re.compile(r"^https://cdnjs\.cloudflare\.com/ajax/libs/require\.js/[^/]+/require(\.min)?\.js$")
# html-manager's stylesheet asks for its icon fonts relative to the page.
WIDGET_FONT_URL = re.compile(r"^file://.*/@jupyter-widgets/(?:html-manager/dist/)?([0-9a-f]+\.(?:woff2?|ttf|eot|svg))$")

WIDGET_AREAS = "div.jupyter-widgets.jp-OutputArea-output"
# make html's template (Makefile): JupyterLab's, plus each widget's static picture as a fallback.
TEMPLATE_ARGS = [f"--TemplateExporter.extra_template_basedirs={REPO / 'tools' / 'nbconvert'}",
                 "--template", "dfcore_lab"]

# Per widget area: whether its static picture (the template's fallback) is visible; null where it has none.
FALLBACK_SHOWN_JS = """(selector) => [...document.querySelectorAll(selector)].map(area => {
  const fallback = area.querySelector(':scope > .dfcore-static-fallback');
  if (!fallback) return null;
  const r = fallback.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
})"""

RENDERED_JS = """(selector) => [...document.querySelectorAll(selector)].every(
  area => area.querySelector('.widget-subarea > *') || area.innerText.includes('Error'))"""

AREA_REPORT_JS = """(selector) => [...document.querySelectorAll(selector)].map((area, index) => {
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const view = area.querySelector('.widget-subarea > *');
  const script = area.querySelector('script[type="application/vnd.jupyter.widget-view+json"]');
  return {index, rendered: !!view && visible(view), text: area.innerText.slice(0, 200),
          modelId: script ? JSON.parse(script.textContent).model_id : null,
          sliders: area.querySelectorAll('.widget-slider .noUi-handle').length};
})"""

# What the reader sees of a step-through view: the HTML of its visible HTML widgets.
VISIBLE_FRAME_JS = """(area) => [...area.querySelectorAll('.widget-html-content')]
  .filter(el => el.getBoundingClientRect().height > 0).map(el => el.innerHTML).join('\\n')"""


def export_html(notebook, output_dir):
    """Run ``jupyter nbconvert --to html --execute`` on ``notebook`` and return the HTML's path."""
    command = [sys.executable, "-m", "nbconvert", "--to", "html", "--execute",
               "--ExecutePreprocessor.store_widget_state=True", f"--ExecutePreprocessor.timeout={EXPORT_TIMEOUT_S}",
               *TEMPLATE_ARGS, "--output-dir", str(output_dir), str(notebook)]
    result = subprocess.run(command, cwd=notebook.parent, capture_output=True, text=True,
                            timeout=2 * EXPORT_TIMEOUT_S)
    assert result.returncode == 0, f"nbconvert failed on {notebook.name}:\n{result.stderr[-4000:]}"
    return output_dir / f"{notebook.stem}.html"


def widget_state(html):
    """The widget-state JSON embedded in an exported page (``None`` when there is none)."""
    match = re.search(rf'<script type="{re.escape(WIDGET_STATE_MIME)}">\s*(.*?)\s*</script>', html, re.S)
    return json.loads(match.group(1)) if match else None


def stack_links(models):
    """``(source model id, Stack model id)`` of each ``jslink`` that drives a ``Stack``'s ``selected_index``."""
    pairs = []
    for model in models.values():
        if model["model_name"] == "LinkModel":
            (source_id, _), (target_id, trait) = model["state"]["source"], model["state"]["target"]
            target_id = target_id.removeprefix("IPY_MODEL_")
            if trait == "selected_index" and models.get(target_id, {}).get("model_name") == "StackModel":
                pairs.append((source_id.removeprefix("IPY_MODEL_"), target_id))
    return pairs


def linked_stacks(models):
    """Model ids of the ``Stack`` widgets whose ``selected_index`` a ``jslink`` drives."""
    return {stack for _, stack in stack_links(models)}


def linked_menus(models, ids):
    """How many of the models ``ids`` are drop-down menus that drive a ``Stack`` through a ``jslink``."""
    return len({source for source, _ in stack_links(models)
                if source in ids and models[source]["model_name"] == "DropdownModel"})


def referenced_models(models, model_id):
    """``model_id`` and every model it references (children, layouts...), transitively."""
    seen, todo = set(), [model_id]
    while todo:
        current = todo.pop()
        if current in seen or current not in models:
            continue
        seen.add(current)
        todo += re.findall(r"IPY_MODEL_([0-9a-f]+)", json.dumps(models[current]["state"]))
    return seen


def serve_offline(route):
    """Answer the page's CDN requests from the vendored copies; refuse everything else off the machine."""
    url = route.request.url
    for pattern, folder in ((HTML_MANAGER_URL, HTML_MANAGER_DIST), (WIDGET_FONT_URL, HTML_MANAGER_DIST)):
        match = pattern.match(url)
        if match and (folder / match.group(1)).is_file():
            return route.fulfill(path=folder / match.group(1))
    if REQUIRE_JS_URL.match(url):
        return route.fulfill(path=REQUIRE_JS)
    if url.startswith(("file://", "data:")):
        return route.continue_()
    return route.abort()


def no_renderer(route):
    """Refuse everything off the machine, the widget renderer included (a reader offline)."""
    url = route.request.url
    return route.continue_() if url.startswith(("file://", "data:")) else route.abort()


def steps(page, area, menus_linked=0):
    """Open the closed "Check" bars of ``area``'s answer widgets (their feedback is what changes). In a view whose
    drop-down menus all drive stacks through jslinks (``menus_linked`` of them: a ``WhatIf(...,
    picker="dropdown")``), True if *every* menu changes the visible frame: each is set to its next option (the
    previous one at the last), and to its other end if that shows the same frame, so each level of the nested
    stacks is driven by its own jslinks. (A menu that needs the kernel, as ``GraphView``'s node picker, is
    left alone.) Otherwise move each slider one step in turn
    (left when it is at its maximum, else right), and to its other end if one step shows the same frame; in a
    view without sliders, click each unselected toggle button (a run picker) or radio button (an answer). True
    as soon as the visible frame changes. (Clicking a toggle that is not linked in the page can raise 'no comm
    channel defined' without a kernel, as it once did in lesson 12, so toggles are clicked only where no slider
    steps the view.)"""
    bars = area.locator(".jupyter-widget-Collapse:not(.jupyter-widget-Collapse-open) > "
                        ".jupyter-widget-Collapse-header", has_text="Check")
    for i in reversed(range(bars.count())):
        bars.nth(i).click()
    menus = area.locator(".widget-dropdown select")
    if menus.count() and menus.count() == menus_linked:
        return all(menu_changes_frame(page, area, menus.nth(i)) for i in range(menus.count()))
    handles = area.locator(".widget-slider .noUi-handle")
    for i in range(handles.count()):
        handle = handles.nth(i)
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        one_step = functools.partial(handle.press, "ArrowLeft" if at_max else "ArrowRight")
        # a what-if may show the same pane for neighbouring values (a quantity that saturates): try the other end
        # too (an answer slider's panes always differ: each names its value)
        other_end = functools.partial(handle.press, "Home" if at_max else "End")
        if frame_changes(page, area, one_step) or frame_changes(page, area, other_end):
            return True
    if handles.count():
        return False
    buttons = area.locator(".widget-toggle-buttons button:not(.mod-active), .widget-radio-box input:not(:checked)")
    return any(frame_changes(page, area, buttons.nth(i).click) for i in range(buttons.count()))


def menu_changes_frame(page, area, menu):
    """True if choosing ``menu``'s next option (its previous one at the last), or else its option at the other
    end, changes the visible frame of ``area``."""
    last, now = menu.locator("option").count() - 1, menu.evaluate("select => select.selectedIndex")
    at_last = now == last
    one_step = functools.partial(menu.select_option, index=now - 1 if at_last else now + 1)
    other_end = functools.partial(menu.select_option, index=0 if at_last else last)
    return frame_changes(page, area, one_step) or frame_changes(page, area, other_end)


def frame_changes(page, area, action):
    """True if ``action`` changes the visible frame of ``area`` within STEP_TIMEOUT_S."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    before = area.evaluate(VISIBLE_FRAME_JS)
    action()
    try:
        page.wait_for_function(f"([area, before]) => ({VISIBLE_FRAME_JS})(area) !== before",
                               arg=[area.element_handle(), before], timeout=STEP_TIMEOUT_S * 1000)
        return True
    except PlaywrightTimeoutError:
        return False


@pytest.fixture(scope="session")
def vendored_widget_renderer():
    require((HTML_MANAGER_DIST / "embed-amd.js").is_file() and REQUIRE_JS.is_file(), "the vendored widget renderer",
            "run: make browser-deps")


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids(LESSONS))
def test_exported_lesson_keeps_widget_state_and_steps_without_kernel(
        lesson, lesson_root, browser, vendored_widget_renderer, tmp_path, screenshots_dir):
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    page_path = export_html(lesson_root / "notebooks" / lesson.name, tmp_path)
    html = page_path.read_text(encoding="utf-8")
    has_widget_views = "application/vnd.jupyter.widget-view+json" in html
    state = widget_state(html)
    assert state is not None or not has_widget_views, f"{lesson.name}: the export lost its widget state"
    models = state["state"] if state else {}
    stacks = linked_stacks(models)

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page_errors = []
        page.on("pageerror", lambda error: page_errors.append(str(error)))
        page.route("**/*", serve_offline)
        page.goto(page_path.as_uri(), wait_until="load", timeout=RENDER_TIMEOUT_S * 1000)
        try:
            page.wait_for_function(RENDERED_JS, arg=WIDGET_AREAS, timeout=RENDER_TIMEOUT_S * 1000)
        except PlaywrightTimeoutError:
            pass  # the report below names the widgets that did not render
        areas = page.evaluate(AREA_REPORT_JS, WIDGET_AREAS)
        fallbacks_with_views = page.evaluate(FALLBACK_SHOWN_JS, WIDGET_AREAS)
        steppers = [a for a in areas if a["rendered"] and referenced_models(models, a["modelId"]) & stacks]
        stuck = []
        for report in steppers:
            area = page.locator(WIDGET_AREAS).nth(report["index"])
            if not steps(page, area, linked_menus(models, referenced_models(models, report["modelId"]))):
                stuck.append(report["index"])
            area.screenshot(path=screenshots_dir / f"{lesson.stem}--static-{report['index']:02d}.png")
        offline_page = context.new_page()
        offline_page.route("**/*", no_renderer)
        offline_page.goto(page_path.as_uri(), wait_until="load", timeout=RENDER_TIMEOUT_S * 1000)
        fallbacks_offline = offline_page.evaluate(FALLBACK_SHOWN_JS, WIDGET_AREAS)
    finally:
        context.close()

    problems = [f"widget {a['index']} did not render: {a['text']!r}" for a in areas if not a["rendered"]]
    problems += [f"widget {index}: no slider (or not every drop-down menu) changes its visible frame"
                 for index in stuck]
    if stacks and not steppers:
        problems.append(f"{len(stacks)} jslinked Stack(s) in the state, but no view of one rendered in the page")
    problems += [f"widget {i}: its static picture shows next to its rendered view"
                 for i, (shown, area) in enumerate(zip(fallbacks_with_views, areas)) if shown and area["rendered"]]
    problems += [f"widget {i}: its static picture stays hidden when the widget renderer cannot load"
                 for i, shown in enumerate(fallbacks_offline) if shown is False]  # None: not one of ours
    if areas and all(shown is None for shown in fallbacks_offline):
        problems.append("no widget output carries a static picture in the export")
    problems += [f"page error: {error}" for error in page_errors]
    assert not problems, f"{lesson.name} exported to HTML:\n" + "\n".join(problems)
