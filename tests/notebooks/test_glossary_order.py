"""The lessons never use a glossary term before the lesson that defines it, except in a passage that points forward.

The glossary is ``notebooks/glossary.toml``. Lessons are read in order (lesson 00, the tour, previews everything
and is left out). A passage is a markdown paragraph or a whole code cell; one that uses a term before its
defining lesson must name the defining notebook's file (a link such as ``[lesson 5](05_ring_allreduce.ipynb)``).
"""

from __future__ import annotations

import json
import pathlib
import re
import tomllib

import pytest

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
GLOSSARY = tomllib.loads((NOTEBOOKS / "glossary.toml").read_text())["term"]
LESSONS = sorted(p for p in NOTEBOOKS.glob("[0-9]*.ipynb") if not p.name.startswith("00_"))


def lesson_number(path: pathlib.Path) -> str:
    return path.name.split("_", 1)[0]


def passages(path: pathlib.Path) -> list[tuple[str, str]]:
    """(cell id, text) for every markdown paragraph and every code cell of a notebook."""
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        source = "".join(cell["source"])
        parts = re.split(r"\n\s*\n", source) if cell["cell_type"] == "markdown" else [source]
        found += [(cell.get("id", "?"), part) for part in parts]
    return found


def early_uses(term: dict, lessons: list[pathlib.Path]) -> list[str]:
    """The passages of lessons before the term's defining lesson that use it without pointing forward."""
    numbers = [lesson_number(p) for p in lessons]
    home = next(p for p in lessons if lesson_number(p) == term["lesson"])
    pattern = re.compile(term["pattern"], re.IGNORECASE)
    return [f"lesson {lesson_number(path)}, cell {cell}: {text[:80]!r}"
            for path in lessons[:numbers.index(term["lesson"])]
            for cell, text in passages(path)
            if pattern.search(text) and home.name not in text]


def test_every_term_has_a_defining_lesson_that_uses_it():
    numbers = {lesson_number(p): p for p in LESSONS}
    for term in GLOSSARY:
        assert term["lesson"] in numbers, f"{term['name']}: no lesson {term['lesson']}"
        text = "\n".join(t for _, t in passages(numbers[term["lesson"]]))
        assert re.search(term["pattern"], text, re.IGNORECASE), f"lesson {term['lesson']} never uses {term['name']}"
        assert term["definition"].strip(), term["name"]


@pytest.mark.parametrize("term", GLOSSARY, ids=[t["name"] for t in GLOSSARY])
def test_no_term_is_used_before_the_lesson_that_defines_it(term):
    assert early_uses(term, LESSONS) == []


def test_an_early_use_is_found_and_a_forward_pointer_excuses_it(tmp_path):
    def lesson(name, text):
        cell = {"cell_type": "markdown", "id": "c", "metadata": {}, "source": [text]}
        (tmp_path / name).write_text(json.dumps({"cells": [cell]}))
        return tmp_path / name
    term = {"name": "ring all-reduce", "pattern": "ring all-?reduce", "lesson": "05", "definition": "d"}
    early = lesson("04_towers.ipynb", "Towers.\n\nLater a ring all-reduce replaces the hub.")
    home = lesson("05_ring.ipynb", "The ring all-reduce.")
    assert len(early_uses(term, [early, home])) == 1
    early.write_text(early.read_text().replace("hub.", "hub ([lesson 5](05_ring.ipynb))."))
    assert early_uses(term, [early, home]) == []
