"""Every lesson has its drawn figure: made by ``tools/figures/draw_figures.py``, committed under
``notebooks/figures/``, shown by the lesson, and reproduced byte for byte when drawn again."""

from __future__ import annotations

import json
import pathlib
import sys
import xml.etree.ElementTree as ET

import pytest
from _requirements import require_program

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "figures"))
import draw_figures  # noqa: E402  (the drawing script is not a package)

LESSONS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))


def figure_of(lesson: pathlib.Path) -> str:
    number = lesson.name.split("_", 1)[0]
    names = [name for name in draw_figures.FIGURES_BY_NAME if name.split("_", 1)[0] == number]
    assert len(names) == 1, f"{lesson.name}: {len(names)} figures drawn for lesson {number}"
    return names[0]


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_shows_its_committed_figure(lesson):
    name = figure_of(lesson)
    svg = REPO / "notebooks" / "figures" / f"{name}.svg"
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and svg.stat().st_size < 60_000
    markdown = "\n".join("".join(c["source"]) for c in json.loads(lesson.read_text())["cells"]
                         if c["cell_type"] == "markdown")
    assert f"](figures/{name}.svg)" in markdown, f"{lesson.name} does not show figures/{name}.svg"


@pytest.mark.parametrize("name", sorted(draw_figures.FIGURES_BY_NAME))
def test_figure_is_reproduced_by_its_script(name):
    require_program("dot", "Graphviz's dot", "apt-get install graphviz")
    committed = (REPO / "notebooks" / "figures" / f"{name}.svg").read_bytes()
    assert draw_figures.render(draw_figures.FIGURES_BY_NAME[name]()) == committed, \
        f"run python tools/figures/draw_figures.py {name}"
