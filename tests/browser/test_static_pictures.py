"""Pictures without a kernel: a committed lesson, exported with ``jupyter nbconvert --to html`` and *not*
executed (as GitHub, nbviewer or a reader without Jupyter sees it), shows every widget's static picture.

The committed lessons keep no widget state (``make notebooks`` strips it), so each widget output holds
only its ``text/plain`` repr and the ``text/html`` static picture of ``widgets/_static.py``. For each
lesson the test pairs the widget outputs of the notebook (outputs whose repr names a class of the
``widgets`` package) with the ``div.dfcore-static`` blocks of the page, in order, and checks that each
block is visible, names the same widget, holds one loaded image per SVG its HTML carries (the static
picture draws each SVG as an ``<img>`` of a ``data:image/svg+xml`` URL: an image that fails to parse does
not load), and shows at least one of them, a table, or a ``<details>`` (a question's hint and answer). The
page is opened from a ``file://`` URL and every request off the machine is refused. The same holds for the
lesson opened (not run) in JupyterLab, which sanitizes the HTML of a notebook it has not run.
"""

import re
import subprocess
import sys

import nbformat
import pytest
from browser_harness import LESSONS, lesson_ids

EXPORT_TIMEOUT_S = 120
RENDER_TIMEOUT_S = 30
LAB_TIMEOUT_S = 120  # JupyterLab drawing a 60-widget lesson on a loaded 2-core machine took over 60 s once
REPR_NAME = re.compile(r"<([A-Za-z_]\w*)[:>]")
# A plain ipywidgets container of ours (Tab(children=(<TimelineView: ...>, ...))): named by its class.
CONTAINER_REPR = re.compile(r"([A-Za-z_]\w*)\(children=\(.*?<([A-Za-z_]\w*):", re.S)
SVG_IMAGE = "src='data:image/svg+xml,"

STATIC_REPORT_JS = r"""() => [...document.querySelectorAll('div.dfcore-static')].map(block => {
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const images = [...block.querySelectorAll('img[src^="data:image/svg+xml"]')];
  // JupyterLab's sanitizer drops data-* attributes; the picture's last line names the widget too
  const named = (block.innerText.match(/static picture of (\w+)/) || [])[1];
  return {widget: block.dataset.widget || named, visible: visible(block), svgs: images.length,
          loaded: images.filter(image => image.complete && image.naturalWidth > 0).length,
          visibleGraphics: [...images, ...block.querySelectorAll('table, details')].filter(visible).length,
          // a step-through's two views (widgets/_stepper.py): the filmstrip, and the frames dfcore_static.js steps
          filmstrips: [...block.querySelectorAll('.dfcore-filmstrip')].filter(visible).length,
          frameViews: [...block.querySelectorAll('.dfcore-frames')].filter(visible).length};
})"""


# JupyterLab: the expected number of static pictures are in the page and every SVG image in them has loaded.
IMAGES_SETTLED_JS = """(count) => {
  const blocks = document.querySelectorAll('div.dfcore-static');
  return blocks.length >= count && [...document.querySelectorAll('div.dfcore-static img')].every(i => i.complete);
}"""


def project_widget_names():
    """Names of the widget classes exported by the project's ``widgets`` package."""
    import ipywidgets

    import widgets

    return {name for name in widgets.__all__ if issubclass(getattr(widgets, name), ipywidgets.Widget)}


def widget_outputs(notebook, names):
    """``[(cell index, widget class name, text/html or None)]`` for each output whose repr names one of ``names``,
    or a container (``Tab``) whose first child is one of them."""
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", ()) if cell.cell_type == "code" else ():
            data = output.get("data", {})
            text = data.get("text/plain", "")
            match, container = REPR_NAME.match(text), CONTAINER_REPR.match(text)
            if match and match.group(1) in names:
                found.append((index, match.group(1), data.get("text/html")))
            elif container and container.group(2) in names:
                found.append((index, container.group(1), data.get("text/html")))
    return found


def problems_in(expected, shown, stepper_script=False):
    """What differs between the notebook's widget outputs (``expected``) and the page's static blocks (``shown``).

    A step-through shows its filmstrip in a page without ``dfcore_static.js``, its frames under the script's
    slider in a page that runs it (``stepper_script``), never both."""
    problems = [f"cell {cell}: {name} has no static picture (text/html); re-run the lesson (make notebooks)"
                for cell, name, html in expected if html is None or "dfcore-static" not in html]
    pictured = [(cell, name, html) for cell, name, html in expected if html and "dfcore-static" in html]
    if len(pictured) != len(shown):
        return problems + [f"{len(pictured)} static pictures in the notebook, {len(shown)} in the page"]
    for (cell, name, html), block in zip(pictured, shown):
        where = f"cell {cell} ({name})"
        if block["widget"] != name:
            problems.append(f"{where}: the page's picture is of {block['widget']}")
        if not block["visible"]:
            problems.append(f"{where}: the picture has no size in the page")
        expected_svgs = html.count(SVG_IMAGE)
        if block["svgs"] != expected_svgs:
            problems.append(f"{where}: {expected_svgs} SVG images in the HTML, {block['svgs']} in the page")
        if block["loaded"] != block["svgs"]:
            problems.append(f"{where}: {block['svgs'] - block['loaded']} of {block['svgs']} SVG images did not load")
        if not block["visibleGraphics"]:
            problems.append(f"{where}: no visible SVG, table or <details>")
        hidden_view, shown_view = ("filmstrips", "frameViews") if stepper_script else ("frameViews", "filmstrips")
        if block.get(hidden_view):
            problems.append(f"{where}: {block[hidden_view]} step-through {hidden_view} shown "
                            f"{'with' if stepper_script else 'without'} dfcore_static.js")
        steppers = html.count('class="dfcore-frames"')
        if block.get(shown_view, steppers) != steppers:
            problems.append(f"{where}: {block.get(shown_view)} of {steppers} step-through {shown_view} shown")
    return problems


def export_unexecuted(notebook, output_dir):
    """``jupyter nbconvert --to html`` of ``notebook`` as committed (no execution); the HTML's path."""
    command = [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(output_dir), str(notebook)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
    assert result.returncode == 0, f"nbconvert failed on {notebook.name}:\n{result.stderr[-4000:]}"
    return output_dir / f"{notebook.stem}.html"


def offline(route):
    """Let the page read its own file and inline data; refuse everything else."""
    if route.request.url.startswith(("file://", "data:")):
        return route.continue_()
    return route.abort()


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids(LESSONS))
def test_committed_lesson_shows_every_widget_picture_without_a_kernel(lesson, browser, tmp_path, screenshots_dir):
    expected = widget_outputs(nbformat.read(lesson, as_version=4), project_widget_names())
    page_path = export_unexecuted(lesson, tmp_path)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page_errors = []
        page.on("pageerror", lambda error: page_errors.append(str(error)))
        page.route("**/*", offline)
        page.goto(page_path.as_uri(), wait_until="load", timeout=RENDER_TIMEOUT_S * 1000)
        shown = page.evaluate(STATIC_REPORT_JS)
        blocks = page.locator("div.dfcore-static")
        for i in range(blocks.count()):
            blocks.nth(i).screenshot(path=screenshots_dir / f"{lesson.stem}--picture-{i:02d}.png")
    finally:
        context.close()
    problems = problems_in(expected, shown) + [f"page error: {error}" for error in page_errors]
    assert not problems, f"{lesson.name} exported without executing:\n" + "\n".join(problems)


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids(LESSONS))
def test_committed_lesson_opened_in_jupyterlab_shows_every_widget_picture_before_running(lesson, jupyter_lab,
                                                                                          browser):
    """JupyterLab sanitizes an untrusted notebook's HTML (every notebook it opens fresh): the pictures survive."""
    expected = widget_outputs(nbformat.read(lesson, as_version=4), project_widget_names())
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(LAB_TIMEOUT_S * 1000)
        page.goto(f"{jupyter_lab.url}/lab/tree/notebooks/{lesson.name}?reset&token={jupyter_lab.token}")
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        page.wait_for_function(IMAGES_SETTLED_JS, arg=sum(html is not None for _, _, html in expected))
        shown = page.evaluate(STATIC_REPORT_JS)
    finally:
        context.close()
    problems = problems_in(expected, shown)
    assert not problems, f"{lesson.name} opened in JupyterLab, not run:\n" + "\n".join(problems)


def test_problems_in_pairs_outputs_with_pictures_in_order():
    image = "<img src='data:image/svg+xml,<svg/>'>"
    picture = '<div class="dfcore-static" data-widget="{}">' + 2 * image + "</div>"
    expected = [(3, "GraphView", picture.format("GraphView")), (5, "DeviceLog", None),
                (7, "TimelineView", picture.format("TimelineView"))]
    good = {"widget": "GraphView", "visible": True, "svgs": 2, "loaded": 2, "visibleGraphics": 2, "filmstrips": 0,
            "frameViews": 0}
    assert problems_in(expected[:1], [good]) == []
    assert problems_in(expected, [good, dict(good, widget="TimelineView")]) == [
        "cell 5: DeviceLog has no static picture (text/html); re-run the lesson (make notebooks)"]
    assert problems_in(expected[2:], [dict(good, visible=False, svgs=1, loaded=0, visibleGraphics=0)]) == [
        "cell 7 (TimelineView): the page's picture is of GraphView",
        "cell 7 (TimelineView): the picture has no size in the page",
        "cell 7 (TimelineView): 2 SVG images in the HTML, 1 in the page",
        "cell 7 (TimelineView): 1 of 1 SVG images did not load",
        "cell 7 (TimelineView): no visible SVG, table or <details>"]
    assert problems_in(expected[:1], []) == ["1 static pictures in the notebook, 0 in the page"]
    stepped = [(9, "GraphView", picture.format("GraphView") + '<div class="dfcore-frames" hidden></div>')]
    assert problems_in(stepped, [dict(good, filmstrips=1)]) == []
    assert problems_in(stepped, [dict(good, filmstrips=1, frameViews=1)]) == [
        "cell 9 (GraphView): 1 step-through frameViews shown without dfcore_static.js"]
    assert problems_in(stepped, [good], stepper_script=True) == [
        "cell 9 (GraphView): 0 of 1 step-through frameViews shown"]


def test_widget_outputs_are_found_by_their_repr():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("<GraphView: not an output>"), nbformat.v4.new_code_cell("v", outputs=[
        nbformat.v4.new_output("display_data", data={"text/plain": "<GraphView: 3 ops>", "text/html": "<div>"}),
        nbformat.v4.new_output("execute_result", data={"text/plain": "<Graph object>"}, execution_count=1),
        nbformat.v4.new_output("display_data", data={"text/plain": "Tab(children=(<GraphView: 3 ops>,))"}),
        nbformat.v4.new_output("display_data", data={"text/plain": "VBox(children=(IntSlider(value=0),))"}),
        nbformat.v4.new_output("stream", name="stdout", text="<GraphView: printed>")])]
    assert widget_outputs(nb, {"GraphView"}) == [(1, "GraphView", "<div>"), (1, "Tab", None)]
