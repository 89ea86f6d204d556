"""``Exercise``: the checker of a lesson's exercise cells, which says what is wrong without giving the answer.

On a wrong answer it names each wrong field and how it is wrong (too high or too low, which items are missing
or extra by count, which key of a dict holds a wrong device) and keeps the expected values to itself; it shows
them when asked (``reveal=True``) or after ``reveal_after`` misses, and says so on every miss. The expected
values are computed from the engine by the lesson's check cell, never typed in.

Example (the check cell; ``exercise1 = Exercise("Exercise 1")`` sits in the exercise's setup cell, so that
its misses are counted across re-runs)::

    exercise1.check({"ops_for_q": ops_for_q}, {"ops_for_q": set(ops_run_for(quiz_sess, q))})
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Requirement:
    """A condition an answer must meet, when there is no single expected value.

    Attributes:
        ok: whether the answer meets it; problem: what is wrong when it does not (no expected value in it);
        answer: one answer that meets it, shown only on reveal.
    """

    ok: bool
    problem: str
    answer: str


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def problems(name: str, got: Any, expected: Any, rel_tol: float = 1e-6) -> list[str]:
    """What is wrong with ``got`` as the answer ``name``, one line per problem ([] when it is right).

    Numbers: ``too high``/``too low`` (within ``rel_tol`` is right); sets: how many items are extra and how
    many missing; dicts: missing or extra keys by name, then each key's value; lists and tuples: the length,
    then each item; arrays: the shape, then how many elements differ; anything else: ``is not right``. The
    expected value is never part of a line.
    """
    if _is_number(expected) and _is_number(got):
        if math.isclose(float(got), float(expected), rel_tol=rel_tol, abs_tol=1e-12):
            return []
        return [f"`{name}` is too {'high' if got > expected else 'low'}"]
    if isinstance(expected, (set, frozenset)) and isinstance(got, (set, frozenset)):
        extra, missing = len(set(got) - set(expected)), len(set(expected) - set(got))
        if not extra and not missing:
            return []
        return [f"`{name}` has {_count(extra, 'item')} that should not be there and misses {_count(missing, 'item')}"]
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        lines = [f"`{name}` has no key {key!r}" for key in expected if key not in got]
        lines += [f"`{name}` has a key {key!r} that should not be there" for key in got if key not in expected]
        for key in expected:
            if key in got:
                lines += problems(f"{name}[{key!r}]", got[key], expected[key], rel_tol)
        return lines
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(got) != len(expected):
            return [f"`{name}` has {_count(len(got), 'item')}, which is not the right number"]
        return [line for i, (g, e) in enumerate(zip(got, expected)) for line in problems(f"{name}[{i}]", g, e, rel_tol)]
    if isinstance(expected, np.ndarray):
        got = np.asarray(got)
        if got.shape != expected.shape:
            return [f"`{name}` has shape {got.shape}, which is not the right shape"]
        wrong = int(np.sum(~np.isclose(got, expected, rtol=rel_tol, atol=1e-12)))
        return [f"`{name}`: {wrong} of {expected.size} elements are wrong"] if wrong else []
    return [] if got == expected else [f"`{name}` is not right"]


class Exercise:
    """The checker of one exercise: call :meth:`check` from its check cell.

    Args:
        title: how messages name it (``"Exercise 1"``).
        reveal_after: after this many misses the expected values are shown with the problems (default 3).

    Attributes:
        misses: how many checks so far found a wrong answer; solved: whether the last check found every answer right.
    """

    def __init__(self, title: str, reveal_after: int = 3):
        if reveal_after < 1:
            raise ValueError(f"Exercise {title!r}: reveal_after must be at least 1, got {reveal_after}")
        self.title, self.reveal_after, self.misses, self.solved = title, reveal_after, 0, False

    def check(self, answers: Mapping[str, Any], expected: Mapping[str, Any] | None = None,
              requirements: Sequence[Requirement] = (), reveal: bool = False, rel_tol: float = 1e-6,
              hint: str = "") -> None:
        """Print whether ``answers`` are right and return it.

        Args:
            answers: the student's answers by name; any ``None`` means the exercise is not done yet (no miss).
            expected: the right values by name (computed from the engine), compared with :func:`problems`.
            requirements: conditions the answers must meet, for exercises without a single right value.
            reveal: show the expected values now, whatever the number of misses.
            rel_tol: relative tolerance for numbers; hint: what to look at, printed on a miss.

        Sets :attr:`solved` (True when every answer is right and every requirement met); returns None, so that a
        check cell shows only the printed lines.
        """
        if any(value is None for value in answers.values()):
            print(f"{self.title} is not done yet.")
            self.solved = False
            return
        expected = dict(expected or {})
        lines = [line for name, value in expected.items() for line in problems(name, answers.get(name), value, rel_tol)]
        lines += [r.problem for r in requirements if not r.ok]
        if not lines:
            print(f"{self.title}: correct.")
            self.solved = True
            return
        self.misses += 1
        shown = reveal or self.misses >= self.reveal_after
        out = [f"{self.title}: not yet (miss {self.misses}).", *(f"  - {line}" for line in lines)]
        if hint:
            out.append(f"  Hint: {hint}")
        if shown:
            out += [f"  Expected {name} = {value!r}" for name, value in expected.items()]
            out += [f"  One answer: {r.answer}" for r in requirements if not r.ok]
        else:
            left = self.reveal_after - self.misses
            more = "1 more miss" if left == 1 else f"{left} more misses"
            out.append(f"  The expected values are shown after {more}, or now with reveal=True.")
        print("\n".join(out))
        self.solved = False

    def __repr__(self):
        return f"<Exercise: {self.title!r}, {self.misses} misses, reveals after {self.reveal_after}>"
