"""Smoke tests in a real browser: each lesson runs top to bottom in JupyterLab and every widget renders.

For each ``notebooks/*.ipynb`` (run from a temporary copy): open it in JupyterLab in headless
Chromium and wait for its kernel; check that every widget output shows its static picture before the lesson runs
(JupyterLab sanitizes the HTML of a notebook it has not run: ``static_pictures.py``); Run All Cells, wait for the
kernel to go idle, then check that
- every non-empty code cell ran, and none has an error output (unless tagged ``raises-exception``);
- every widget output area rendered: no "Error displaying widget", a visible view and not its static
  picture (``widgets/_static.py``: JupyterLab shows only the widget-view part of the bundle), and for the
  project's own widgets (classes exported by ``widgets``) at least one visible SVG drawing or table
  (``DeviceLog`` is tables; a graph view whose ``dot`` failed shows DOT text, and fails here);
and save ``tests/browser/screenshots/<lesson>.png`` (the whole notebook) plus one PNG per widget.
"""

import re

import nbformat
import pytest
from browser_harness import LESSONS, WIDGET_VIEW_MIME, lesson_ids
from static_pictures import IMAGES_SETTLED_JS, STATIC_REPORT_JS, picture_problems, widget_class_names, widget_outputs

PAGE_LOAD_TIMEOUT_S = 60
KERNEL_READY_TIMEOUT_S = 60
RUN_ALL_TIMEOUT_S = 240
WIDGETS_SETTLE_TIMEOUT_S = 30
PICTURES_TIMEOUT_S = 120  # JupyterLab drawing a 60-widget lesson on a loaded 2-core machine took over 60 s once
SCREENSHOT_MAX_HEIGHT_PX = 16000
VIEWPORT = {"width": 1280, "height": 900}

KERNEL_IDLE_JS = """(path) => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.context && panel.context.path === path && panel.sessionContext
    && panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle'
    && panel.content.widgets.length > 0;
}"""

# Runs all cells of the lesson at `path`, which must be the current tab before and after. The notebook is focused
# through the API, not by a click: a click lands in the middle of the first cell, and where a link sits there (lesson
# 04's "lesson 1's opening") it opened another lesson, whose cells Run All then ran (issue 15).
RUN_ALL_JS = """async ([path, timeoutMs]) => {
  const app = window.jupyterapp;
  const current = () => app.shell.currentWidget && app.shell.currentWidget.context
    && app.shell.currentWidget.context.path;
  const panel = app.shell.currentWidget;
  if (current() !== path) throw new Error(`Run All Cells: the current tab is ${current()}, not ${path}`);
  app.shell.activateById(panel.id);
  panel.content.activeCellIndex = 0;
  panel.content.mode = 'command';
  const timeout = new Promise((_, reject) => setTimeout(
      () => reject(new Error(`Run All Cells did not finish within ${timeoutMs} ms`)), timeoutMs));
  await Promise.race([app.commands.execute('notebook:run-all-cells'), timeout]);
  if (current() !== path) throw new Error(`Run All Cells: the current tab became ${current()}, not ${path}`);
}"""

# Pairs each output of each code cell (from the notebook model) with its DOM element, and tags the
# elements of widget outputs with ``data-smoke-widget`` (their order), for the screenshots.
CELL_OUTPUTS_JS = """
  const panel = window.jupyterapp.shell.currentWidget;
  const widgetMime = 'application/vnd.jupyter.widget-view+json';
  let widgetCount = 0;
  const cells = panel.content.widgets.map((cell, index) => {
    const model = cell.model;
    const record = {index, type: model.type, source: model.sharedModel.getSource(),
                    tags: model.getMetadata('tags') || [], outputs: []};
    if (model.type !== 'code') return record;
    record.executionCount = model.executionCount;
    const children = [...cell.outputArea.node.querySelectorAll(':scope > .jp-OutputArea-child')];
    record.outputs = model.outputs.toJSON().map((output, i) => {
      const el = children[i] && children[i].querySelector('.jp-OutputArea-output');
      if (el && output.data && widgetMime in output.data) el.dataset.smokeWidget = String(widgetCount++);
      return {output, el};
    });
    return record;
  });
"""

WIDGETS_SETTLED_JS = "() => {" + CELL_OUTPUTS_JS + """
  return cells.every(cell => cell.outputs.every(({output, el}) => !(output.data && widgetMime in output.data)
    || (el && (el.querySelector('.jupyter-widgets') || el.innerText.includes('Error displaying widget')))));
}"""

# One record per cell: its model (type, source, tags, execution count, outputs) and, for each output,
# what the DOM shows (widget error text, the view's size, the number of visible SVGs in it).
CELL_REPORT_JS = "() => {" + CELL_OUTPUTS_JS + """
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  return cells.map(cell => Object.assign(cell, {outputs: cell.outputs.map(({output, el}) => {
    const view = el && el.querySelector('.jupyter-widgets');
    return {type: output.output_type, data: output.data || {}, ename: output.ename, evalue: output.evalue,
            widgetError: !!el && el.innerText.includes('Error displaying widget'),
            viewVisible: !!view && visible(view), staticShown: !!el && !!el.querySelector('.dfcore-static'),
            visibleGraphics: el ? [...el.querySelectorAll('svg:not([data-icon]), table')].filter(visible).length
                                : 0};
  })}));
}"""

NOTEBOOK_HEIGHT_JS = """() => {
  const node = window.jupyterapp.shell.currentWidget.content.node;
  const scroller = node.querySelector('.jp-WindowedPanel-outer') || node;
  return scroller.scrollHeight;
}"""

SHUTDOWN_KERNEL_JS = """async (timeoutMs) => {
  const timeout = new Promise(resolve => setTimeout(resolve, timeoutMs));
  await Promise.race([window.jupyterapp.shell.currentWidget.sessionContext.shutdown(), timeout]);
}"""


# The answer widgets are text and buttons (a question, its options, a hint): they draw no SVG or table.
ANSWER_WIDGETS = frozenset({"Choice", "SliderQuestion", "NumberQuestion", "Quiz"})


def project_widget_names():
    """Names of the picture-drawing widget classes exported by the project's ``widgets`` package."""
    import ipywidgets

    import widgets

    return {name for name, obj in vars(widgets).items()
            if isinstance(obj, type) and issubclass(obj, ipywidgets.Widget)} - ANSWER_WIDGETS


def plain_text(output):
    text = output["data"].get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def problems_in(cells, project_widgets):
    """Human-readable problems found in the cell records of one lesson (empty when all is well)."""
    repr_name = re.compile(r"<?\s*([A-Za-z_]\w*)")
    problems = []
    for cell in cells:
        if cell["type"] != "code" or not cell["source"].strip():
            continue
        where = f"cell {cell['index']} ({cell['source'].strip().splitlines()[0][:60]!r})"
        if cell["executionCount"] is None:
            problems.append(f"{where} did not run")
        for output in cell["outputs"]:
            if output["type"] == "error" and "raises-exception" not in cell["tags"]:
                problems.append(f"{where} raised {output['ename']}: {output['evalue']}")
            if WIDGET_VIEW_MIME not in output["data"]:
                continue
            text = plain_text(output)
            match = repr_name.match(text)
            if output["widgetError"]:
                problems.append(f"{where}: 'Error displaying widget' for {text[:80]!r}")
            elif not output["viewVisible"]:
                problems.append(f"{where}: the widget view {text[:80]!r} is missing or has no size")
            elif output["staticShown"]:
                problems.append(f"{where}: the static picture of {text[:80]!r} shows next to its live view")
            elif match and match.group(1) in project_widgets and output["visibleGraphics"] == 0:
                problems.append(f"{where}: no visible SVG or table in {text[:80]!r}")
    return problems


def save_screenshots(page, lesson, screenshots_dir):
    """The whole notebook as one PNG, then one PNG per widget, in a viewport as tall as the notebook."""
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    height = page.evaluate(NOTEBOOK_HEIGHT_JS)
    page.set_viewport_size({"width": VIEWPORT["width"], "height": min(height + 200, SCREENSHOT_MAX_HEIGHT_PX)})
    page.screenshot(path=screenshots_dir / f"{lesson.stem}.png")
    views = page.locator("[data-smoke-widget]")
    for i in range(views.count()):
        views.nth(i).screenshot(path=screenshots_dir / f"{lesson.stem}--widget-{i:02d}.png")
    page.set_viewport_size(VIEWPORT)


def open_notebook(context, jupyter_lab, path):
    """A new page of ``context`` showing the notebook at ``path`` (from the repository root) in JupyterLab, its
    kernel started and idle."""
    page = context.new_page()
    page.set_default_timeout(PAGE_LOAD_TIMEOUT_S * 1000)
    page.goto(f"{jupyter_lab.url}/lab/tree/{path}?reset&token={jupyter_lab.token}")
    page.wait_for_function(KERNEL_IDLE_JS, arg=path, timeout=KERNEL_READY_TIMEOUT_S * 1000)
    return page


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids(LESSONS))
def test_lesson_runs_in_jupyterlab_with_every_widget_rendered(lesson, jupyter_lab, browser, screenshots_dir):
    path = f"notebooks/{lesson.name}"
    pictures = widget_outputs(nbformat.read(lesson, as_version=4), widget_class_names())
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = open_notebook(context, jupyter_lab, path)
        page.wait_for_function(IMAGES_SETTLED_JS, arg=sum(html is not None for _, _, html in pictures),
                               timeout=PICTURES_TIMEOUT_S * 1000)
        before_running = picture_problems(pictures, page.evaluate(STATIC_REPORT_JS))
        page.evaluate(RUN_ALL_JS, [path, RUN_ALL_TIMEOUT_S * 1000])
        page.wait_for_function(KERNEL_IDLE_JS, arg=path, timeout=KERNEL_READY_TIMEOUT_S * 1000)
        page.wait_for_function(WIDGETS_SETTLED_JS, timeout=WIDGETS_SETTLE_TIMEOUT_S * 1000)
        cells = page.evaluate(CELL_REPORT_JS)
        save_screenshots(page, lesson, screenshots_dir)
        page.evaluate(SHUTDOWN_KERNEL_JS, 10_000)
    finally:
        context.close()
    problems = [f"opened, not run: {problem}" for problem in before_running]
    problems += problems_in(cells, project_widget_names())
    assert not problems, f"{lesson.name} in JupyterLab:\n" + "\n".join(problems)


def test_run_all_refuses_a_tab_that_is_not_the_lesson(jupyter_lab, browser):
    """Following lesson 04's link to lesson 1 (its two clocks, below the imports) opens lesson 01 in a new tab (as
    the old click on the first cell did by accident); Run All then fails at once, naming both notebooks, instead of
    running lesson 01."""
    lesson, linked = "notebooks/04_data_parallel_and_multi_tower.ipynb", "notebooks/01_dataflow_graph_and_session.ipynb"
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = open_notebook(context, jupyter_lab, lesson)
        page.locator(".jp-Notebook .jp-Cell a", has_text=re.compile(r"^lesson 1$")).first.click()
        page.wait_for_function(KERNEL_IDLE_JS, arg=linked, timeout=KERNEL_READY_TIMEOUT_S * 1000)
        with pytest.raises(Exception, match=f"the current tab is {linked}, not {lesson}"):
            page.evaluate(RUN_ALL_JS, [lesson, RUN_ALL_TIMEOUT_S * 1000])
        page.evaluate(SHUTDOWN_KERNEL_JS, 10_000)
    finally:
        context.close()


def test_chromium_renders_an_svg_page(browser):
    """The browser stack itself works (runs even when there is no lesson yet; in CI it must)."""
    page = browser.new_page()
    try:
        page.set_content('<svg width="40" height="20"><rect width="40" height="20" fill="teal"/></svg>')
        box = page.locator("svg").bounding_box(timeout=10_000)
    finally:
        page.close()
    assert box is not None and box["width"] == 40 and box["height"] == 20



def test_problems_in_reports_errors_unrun_cells_and_unrendered_widgets():
    def widget(text, error=False, visible=True, graphics=1, static=False):
        return {"type": "display_data", "data": {"text/plain": text, WIDGET_VIEW_MIME: {"model_id": "m"}},
                "widgetError": error, "viewVisible": visible, "visibleGraphics": graphics, "staticShown": static}

    def code(index, source, outputs=(), count=1, tags=()):
        return {"index": index, "type": "code", "source": source, "tags": list(tags), "executionCount": count,
                "outputs": list(outputs)}

    error = {"type": "error", "data": {}, "ename": "ValueError", "evalue": "bad"}
    cells = [
        {"index": 0, "type": "markdown", "source": "# Lesson", "tags": [], "outputs": []},
        code(1, "ok()", [widget("<TimelineView: 2 devices>"), widget("IntSlider(value=0)", graphics=0)]),
        code(2, "allowed()", [error], tags=["raises-exception"]),
        code(3, "", count=None),
        code(4, "boom()", [error]),
        code(5, "later()", count=None),
        code(6, "broken()", [widget("<GraphView: 3 ops>", error=True)]),
        code(7, "hidden()", [widget("<GraphView: 3 ops>", visible=False)]),
        code(8, "bare()", [widget("<PartitionView: 2 devices>", graphics=0)]),
        code(9, "twice()", [widget("<GraphView: 3 ops>", static=True)]),
    ]
    assert problems_in(cells, {"TimelineView", "GraphView", "PartitionView"}) == [
        "cell 4 ('boom()') raised ValueError: bad",
        "cell 5 ('later()') did not run",
        "cell 6 ('broken()'): 'Error displaying widget' for '<GraphView: 3 ops>'",
        "cell 7 ('hidden()'): the widget view '<GraphView: 3 ops>' is missing or has no size",
        "cell 8 ('bare()'): no visible SVG or table in '<PartitionView: 2 devices>'",
        "cell 9 ('twice()'): the static picture of '<GraphView: 3 ops>' shows next to its live view",
    ]


def test_answer_widgets_are_not_held_to_drawing_a_picture():
    names = project_widget_names()
    assert {"TimelineView", "WhatIf", "PartitionView"} <= names
    assert ANSWER_WIDGETS.isdisjoint(names)
    import widgets

    assert ANSWER_WIDGETS <= set(widgets.__all__)  # the set names real classes
