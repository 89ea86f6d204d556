"""The committed lessons are in the shape nbval and Binder need: run (every checked cell has its
stored output), widget state stripped (``make notebooks``), and reachable from the README's Binder
link. Also specifies ``strip_widget_state.py`` on a small notebook built here."""

import copy
import pathlib
import re

import nbformat
import pytest

from strip_widget_state import WIDGET_VIEW_MIME, strip_widget_state

REPO = pathlib.Path(__file__).resolve().parents[2]
LESSONS = sorted((REPO / "notebooks").glob("*.ipynb"))
CHECK_MARKERS = ("# NBVAL_CHECK_OUTPUT", "nbval-check-output")
STATIC_PICTURE = '<div class="dfcore-static" data-widget="TimelineView"><svg></svg></div>'


def is_checked(cell):
    """True for a code cell nbval compares under ``--nbval-lax`` (marker comment or tag)."""
    return cell.cell_type == "code" and (cell.source.lstrip().startswith(CHECK_MARKERS[0])
                                         or CHECK_MARKERS[1] in cell.metadata.get("tags", []))


@pytest.mark.parametrize("lesson", LESSONS, ids=[path.stem for path in LESSONS])
def test_lesson_is_committed_run_with_widget_state_stripped(lesson):
    nb = nbformat.read(lesson, as_version=4)
    nbformat.validate(nb)
    assert "widgets" not in nb.metadata, f"{lesson.name}: run `make notebooks` to strip the widget state"
    assert strip_widget_state(copy.deepcopy(nb)) == nb, f"{lesson.name}: run `make notebooks` (widget views left)"
    unrun = [i for i, cell in enumerate(nb.cells) if is_checked(cell) and cell.execution_count is None]
    assert not unrun, f"{lesson.name}: checked cells {unrun} have no stored output, so nbval would skip them"


def test_readme_binder_link_opens_the_tour():
    """The badge opens lesson 00, the tour: it says how to run the course and maps the lessons."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"https://mybinder\.org/v2/gh/[^?\s)]+\?urlpath=lab/tree/([^\s)&`]+)", readme)
    assert targets and set(targets) == {"notebooks/00_start_here.ipynb"}, targets
    if not LESSONS:
        pytest.skip("no lessons in notebooks/ yet")
    assert (REPO / targets[0]).is_file(), f"the README's Binder link opens {targets[0]}, which does not exist"


def small_executed_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    view = nbformat.v4.new_output("display_data", data={
        "text/plain": "<TimelineView: 2 devices, 5 ops, simulated>", "text/html": STATIC_PICTURE,
        WIDGET_VIEW_MIME: {"version_major": 2, "version_minor": 0, "model_id": "abc123"}})
    bare_view = nbformat.v4.new_output("display_data", data={WIDGET_VIEW_MIME: {"model_id": "def456"}})
    printed = nbformat.v4.new_output("stream", name="stdout", text="Device mapping:\n")
    cell = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nshow()", execution_count=1,
                                     outputs=[printed, view, bare_view])
    cell.metadata["execution"] = {"iopub.execute_input": "2026-11-22T23:41:07.123Z"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Lesson"), cell]
    return nb


def test_strip_widget_state_keeps_text_outputs_and_static_pictures_and_drops_state_views_and_timestamps():
    nb = strip_widget_state(small_executed_notebook())
    nbformat.validate(nb)
    assert "widgets" not in nb.metadata
    cell = nb.cells[1]
    assert "execution" not in cell.metadata
    assert [output.get("text") or output["data"] for output in cell.outputs] == [
        "Device mapping:\n", {"text/plain": "<TimelineView: 2 devices, 5 ops, simulated>", "text/html": STATIC_PICTURE}]
    assert cell.execution_count == 1
    assert strip_widget_state(copy.deepcopy(nb)) == nb


@pytest.mark.parametrize("lesson", LESSONS, ids=[path.stem for path in LESSONS])
def test_no_answer_is_in_view_before_it_is_tried(lesson):
    """A question cell's code computes its answer (``answer=``): its input is collapsed (JupyterLab's
    ``jupyter.source_hidden``; the ``hide-input`` tag for documentation builds), so a student sees only the
    widget, whose answer shows on request."""
    nb = nbformat.read(lesson, as_version=4)
    shown = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
             and re.search(r"[(,\s]answer=", cell.source)
             and not (cell.metadata.get("jupyter", {}).get("source_hidden")
                      and "hide-input" in cell.metadata.get("tags", []))]
    assert not shown, f"{lesson.name}: question cells {shown} show their answer= code (collapse their input)"


_RELATIVE_LINK = re.compile(r"\]\((?![a-z]+:|#)([^)\s#]+)")
_NOTEBOOKS_AND_SOLUTIONS = LESSONS + sorted((REPO / "notebooks" / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", _NOTEBOOKS_AND_SOLUTIONS,
                         ids=[str(p.relative_to(REPO / "notebooks")) for p in _NOTEBOOKS_AND_SOLUTIONS])
def test_every_relative_link_opens_a_file_and_a_solution_links_lessons_not_solutions(notebook):
    # a solution sits one folder down: its links to other lessons go up (../NN_*.ipynb), else JupyterLab and the
    # website would open that lesson's solutions, or nothing (there is no solutions/00_start_here.ipynb)
    in_solutions = notebook.parent.name == "solutions"
    broken, to_solutions = [], []
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        for target in _RELATIVE_LINK.findall(cell.source):
            if not (notebook.parent / target).exists():
                broken.append(target)
            elif in_solutions and re.fullmatch(r"\d\d[a-z]?_\w+\.ipynb", target):
                to_solutions.append(target)
    assert not broken, f"{notebook.name}: links to missing files: {broken}"
    assert not to_solutions, f"solutions/{notebook.name} links other solutions where it means lessons: {to_solutions}"
