"""Pictures without a kernel: a committed lesson, exported with ``jupyter nbconvert --to html`` and *not*
executed (as GitHub, nbviewer or a reader without Jupyter sees it), shows every widget's static picture
(``static_pictures.py`` says what that means). The page is opened from a ``file://`` URL and every request off the
machine is refused. (The lesson opened, not run, in JupyterLab, which sanitizes the HTML of a notebook it has not
run, is checked the same way by ``test_lessons_in_jupyterlab.py`` before it runs the lesson.)
"""

import subprocess
import sys

import nbformat
import pytest
from browser_harness import LESSONS, lesson_ids
from static_pictures import STATIC_REPORT_JS, offline, picture_problems, widget_class_names, widget_outputs

EXPORT_TIMEOUT_S = 120
RENDER_TIMEOUT_S = 30


def export_unexecuted(notebook, output_dir):
    """``jupyter nbconvert --to html`` of ``notebook`` as committed (no execution); the HTML's path."""
    command = [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(output_dir), str(notebook)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
    assert result.returncode == 0, f"nbconvert failed on {notebook.name}:\n{result.stderr[-4000:]}"
    return output_dir / f"{notebook.stem}.html"


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids(LESSONS))
def test_committed_lesson_shows_every_widget_picture_without_a_kernel(lesson, browser, tmp_path, screenshots_dir):
    expected = widget_outputs(nbformat.read(lesson, as_version=4), widget_class_names())
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
    problems = picture_problems(expected, shown) + [f"page error: {error}" for error in page_errors]
    assert not problems, f"{lesson.name} exported without executing:\n" + "\n".join(problems)


def test_problems_in_pairs_outputs_with_pictures_in_order():
    image = "<img src='data:image/svg+xml,<svg/>'>"
    picture = '<div class="dfcore-static" data-widget="{}">' + 2 * image + "</div>"
    expected = [(3, "GraphView", picture.format("GraphView")), (5, "DeviceLog", None),
                (7, "TimelineView", picture.format("TimelineView"))]
    good = {"widget": "GraphView", "visible": True, "svgs": 2, "loaded": 2, "visibleGraphics": 2, "filmstrips": 0,
            "frameViews": 0}
    assert picture_problems(expected[:1], [good]) == []
    assert picture_problems(expected, [good, dict(good, widget="TimelineView")]) == [
        "cell 5: DeviceLog has no static picture (text/html); re-run the lesson (make notebooks)"]
    assert picture_problems(expected[2:], [dict(good, visible=False, svgs=1, loaded=0, visibleGraphics=0)]) == [
        "cell 7 (TimelineView): the page's picture is of GraphView",
        "cell 7 (TimelineView): the picture has no size in the page",
        "cell 7 (TimelineView): 2 SVG images in the HTML, 1 in the page",
        "cell 7 (TimelineView): 1 of 1 SVG images did not load",
        "cell 7 (TimelineView): no visible SVG, table or <details>"]
    assert picture_problems(expected[:1], []) == ["1 static pictures in the notebook, 0 in the page"]
    stepped = [(9, "GraphView", picture.format("GraphView") + '<div class="dfcore-frames" hidden></div>')]
    assert picture_problems(stepped, [dict(good, filmstrips=1)]) == []
    assert picture_problems(stepped, [dict(good, filmstrips=1, frameViews=1)]) == [
        "cell 9 (GraphView): 1 step-through frameViews shown without dfcore_static.js"]
    assert picture_problems(stepped, [good], stepper_script=True) == [
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
