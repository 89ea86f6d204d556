"""Lessons a teacher can hand out (issue 31): a short opening, short cells, and solutions that say the same.

Words are whitespace-separated tokens of a markdown cell's source (tables and links count too). The opening is
every markdown cell before the first code cell: at most 150 words and at most 5 objectives (numbered or
bulleted lines). No markdown cell of a lesson is over 200 words. A solution notebook's markdown cells equal
the lesson's, in order, so an edit to a lesson's prose reaches its solution.
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
OPENING_WORDS = 150
OBJECTIVES = 5
CELL_WORDS = 200
LIST_ITEM = re.compile(r"^(\d+\.|[-*+])\s", re.MULTILINE)


def cells(path: pathlib.Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def opening(path: pathlib.Path) -> str:
    """The markdown before the first code cell, joined."""
    found = []
    for cell in cells(path):
        if cell["cell_type"] == "code":
            break
        if cell["cell_type"] == "markdown":
            found.append(source(cell))
    return "\n\n".join(found)


def words(text: str) -> int:
    return len(text.split())


def objectives(text: str) -> int:
    """Numbered or bulleted lines: the opening's list of objectives."""
    return len(LIST_ITEM.findall(text))


def lesson_params() -> list:
    return [pytest.param(path, id=path.stem) for path in LESSONS]


def test_there_are_lessons_to_check():
    assert len(LESSONS) >= 13, [p.name for p in LESSONS]


@pytest.mark.parametrize("lesson", lesson_params())
def test_opening_is_short_with_few_objectives(lesson):
    text = opening(lesson)
    assert words(text) <= OPENING_WORDS, f"{lesson.name}: opening has {words(text)} words"
    assert objectives(text) <= OBJECTIVES, f"{lesson.name}: opening lists {objectives(text)} objectives"
    assert "**You need**" in text, f"{lesson.name}: the opening does not say which lessons you need"


@pytest.mark.parametrize("lesson", lesson_params())
def test_no_markdown_cell_is_long(lesson):
    long = [(cell.get("id"), words(source(cell))) for cell in cells(lesson)
            if cell["cell_type"] == "markdown" and words(source(cell)) > CELL_WORDS]
    assert not long, f"{lesson.name}: markdown cells over {CELL_WORDS} words: {long}"


def same_prose(text: str) -> str:
    """A cell's prose without relative-path prefixes: a solution, one folder down, links with ``../``."""
    return text.replace("../", "")


@pytest.mark.parametrize("lesson", [p for p in LESSONS if (NOTEBOOKS / "solutions" / p.name).exists()],
                         ids=lambda p: p.stem)
def test_solution_shares_the_lessons_markdown(lesson):
    """Every markdown cell of the lesson is in its solution, in the same order (the solution may add some;
    cell ids of lessons 1-3's solutions are shifted by their banner, so cells are matched by their prose)."""
    ours = [same_prose(source(c)) for c in cells(lesson) if c["cell_type"] == "markdown"]
    theirs = iter(same_prose(source(c)) for c in cells(NOTEBOOKS / "solutions" / lesson.name)
                  if c["cell_type"] == "markdown")
    missing = [text[:60] for text in ours if not any(text == other for other in theirs)]
    assert not missing, f"{lesson.name}: markdown cells missing from the solution, or out of order: {missing}"


def test_the_counts_catch_a_long_opening_and_a_long_list():
    text = "# Title\n\n" + "\n".join(f"{i}. objective number {i}" for i in range(1, 7)) + "\n- a bullet\n"
    assert objectives(text) == 7
    assert objectives("1.5 GB is not an item\nnor is -3") == 0
    assert words("one two\nthree  | four |") == 6
