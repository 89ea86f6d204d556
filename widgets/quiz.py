"""Answer widgets for "Check your understanding": pick or type an answer, open "Check", open "Show answer".

- :class:`Choice`: multiple choice (``RadioButtons``, or ``ToggleButtons`` for short labels).
- :class:`SliderQuestion`: pick a value on a ``SelectionSlider`` over a fixed grid; the feedback names the value
  picked and says "too low" or "too high" (so neighbouring values never show the same pane).
- :class:`NumberQuestion`: type a number (``FloatText``), right within a relative tolerance.

Each has two collapsible bars under the question: **Check** (feedback on the current answer: "right", or a
hint that names what to look at, never the answer) and **Show answer** (the answer and why; closed until the
student opens it). The answer is given by the lesson, computed from the engine (a value, or a callable
called once here), never typed as a literal.

Choice and slider questions need no kernel: one feedback pane per option is computed when the cell runs,
put in a ``Stack``, and the choice's ``index`` is ``jslink``-ed to the stack's ``selected_index``; the bars
are ``Accordion``s, which open in the browser. They keep working in a live JupyterLab whose kernel died
(as :class:`~widgets.TimelineView`'s step-through does). :class:`NumberQuestion` needs the kernel to check.
"""

import html
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets

from . import _static
from ._html import FONT

_RIGHT, _WRONG, _MUTED = "#1B7837", "#B2182B", "#555555"


def _pane(mark: str, color: str, text: str) -> str:
    return (f'<div style="font-size:13px;{FONT};margin:2px 0 2px 4px">'
            f'<b style="color:{color}">{html.escape(mark)}</b> {html.escape(text)}</div>')


def right_pane(explain: str) -> str:
    """The feedback HTML for a right answer: a green tick, ``Right.`` and the explanation."""
    return _pane("✓ Right.", _RIGHT, explain)


def hint_pane(verdict: str, hint: str) -> str:
    """The feedback HTML for a wrong answer: a red cross, ``verdict`` (``Not this one.``, ``Too low.``) and the
    hint."""
    return _pane(f"✗ {verdict}", _WRONG, f"Hint: {hint}")


def answer_pane(answer_text: str, explain: str) -> str:
    """The revealed answer's HTML: the answer, then why."""
    return _pane(f"Answer: {answer_text}.", _MUTED, explain)


def _resolve(answer):
    return answer() if callable(answer) else answer


def _check_hint(owner: str, hint: str, answer_text: str) -> None:
    """A hint must not give the answer away: it may not contain the answer's text as a word."""
    if re.search(rf"(?<![\w.]){re.escape(answer_text)}(?!\w|\.\d)", hint):
        raise ValueError(f"{owner}: the hint {hint!r} contains the answer {answer_text!r}")


class _Question(_static.StaticPicture, widgets.VBox):
    """The parts every question shares: the question, the answer control, the Check and Show-answer bars."""

    def __init__(self, question: str, control: widgets.Widget, check_body: widgets.Widget, answer_html: str,
                 **kwargs):
        self.question = question
        self.check_bar = widgets.Accordion([check_body], titles=("Check",), selected_index=None)
        self.answer_bar = widgets.Accordion([widgets.HTML(answer_html)], titles=("Show answer",),
                                            selected_index=None)
        text = widgets.HTML(f'<div style="font-size:13px;{FONT};margin:4px 0"><b>Question.</b> '
                            f"{html.escape(question)}</div>")
        super().__init__([text, control, self.check_bar, self.answer_bar], **kwargs)

    def static_html(self) -> str:
        """The question, its options, and the hint and the answer in collapsed ``<details>`` (no kernel needed)."""
        hints = [self.hint] + [f"({option}) {text}" for option, text in getattr(self, "hints", {}).items()]
        hint_html = "".join(f'<div style="font-size:13px;{FONT};margin:2px 0 2px 4px">{html.escape(h)}</div>'
                            for h in hints)
        return (self.children[0].value + self._static_options() + _static.details("Hint", hint_html)
                + _static.details("Show answer", self.answer_bar.children[0].value))

    def _static_options(self) -> str:
        return _static.options_line(self.control.options, listed=isinstance(self, Choice))

    def check(self) -> str:
        """Open the Check bar (as a click on it does) and return the feedback it shows, as plain text."""
        self.check_bar.selected_index = 0
        return self.feedback_text()

    def show_answer(self) -> str:
        """Open the Show-answer bar (as a click on it does) and return the answer it shows, as plain text."""
        self.answer_bar.selected_index = 0
        return _plain(self.answer_bar.children[0].value)

    def feedback_text(self) -> str:
        """What the Check bar shows now, as plain text ("" before an answer is picked)."""
        raise NotImplementedError

    def _short_question(self) -> str:
        return self.question if len(self.question) <= 50 else self.question[:47] + "..."


def _plain(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup)).strip()


class _Indexed(_Question):
    """A question whose answer is one of a fixed list: one precomputed feedback pane per option, in a
    ``Stack`` whose ``selected_index`` follows the control's ``index`` through a ``jslink``."""

    def __init__(self, question: str, control: widgets.Widget, panes: Sequence[str], answer_html: str, **kwargs):
        self.control = control
        self.feedback = widgets.Stack([widgets.HTML(p) for p in panes], selected_index=control.index)
        self.links = [widgets.jslink((control, "index"), (self.feedback, "selected_index"))]
        super().__init__(question, control, self.feedback, answer_html, **kwargs)

    def feedback_text(self) -> str:
        index = self.control.index  # what the jslink makes the stack show in the browser
        return "" if index is None else _plain(self.feedback.children[index].value)

    @property
    def is_right(self) -> bool:
        """Whether the option picked now is the right one."""
        return self.control.index == self.answer_index


class Choice(_Indexed):
    """A multiple-choice question that needs no kernel.

    Args:
        question: the question, plain text.
        options: the options (any values; shown with ``label``), at least two, distinct labels.
        answer: the right option, or a callable returning it (computed from the engine by the lesson).
        hint: what to look at, shown for every wrong option; ``hints`` maps an option's label to its own hint.
        explain: why the answer is right (shown with "Right." and under "Show answer").
        label: option → label text (default ``str``); buttons: ``"radio"`` (``RadioButtons``) or ``"toggle"``
            (``ToggleButtons``).

    Attributes:
        control: the ``RadioButtons``/``ToggleButtons`` (nothing picked at first); feedback: the ``Stack`` of
        one pane per option; links: its ``jslink``; check_bar, answer_bar: the ``Accordion`` bars;
        answer_index: the right option's position.

    Raises:
        ValueError: fewer than two options, repeated labels, an answer not among the options, or a hint that
            contains the answer's label.
    """

    def __init__(self, question: str, options: Sequence[Any], answer: Any, hint: str, explain: str = "",
                 hints: dict | None = None, label: Callable[[Any], str] = str, buttons: str = "radio", **kwargs):
        options, answer, hints = list(options), _resolve(answer), dict(hints or {})
        labels = [label(o) for o in options]
        if len(options) < 2 or len(set(labels)) != len(labels):
            raise ValueError(f"Choice {question!r}: needs at least two options with distinct labels, got {labels}")
        matches = [i for i, option in enumerate(options) if _same(option, answer)]
        if not matches:
            raise ValueError(f"Choice {question!r}: the answer {label(answer)!r} is not one of the options {labels}")
        self.answer_index, self.options, self.hint, self.hints = matches[0], options, hint, hints
        answer_text = labels[self.answer_index]
        for text in [hint, *hints.values()]:
            _check_hint(f"Choice {question!r}", text, answer_text)
        panes = [right_pane(explain) if i == self.answer_index
                 else hint_pane("Not this one.", hints.get(labels[i], hint)) for i in range(len(options))]
        kind = {"radio": widgets.RadioButtons, "toggle": widgets.ToggleButtons}[buttons]
        control = kind(options=labels, value=None, layout=widgets.Layout(width="max-content"))
        super().__init__(question, control, panes, answer_pane(answer_text, explain), **kwargs)

    def __repr__(self):
        return f"<Choice: {self._short_question()!r}, {len(self.options)} options>"


def _same(option, answer) -> bool:
    try:
        return bool(option == answer)
    except ValueError:  # numpy arrays compare element-wise
        return False


class SliderQuestion(_Indexed):
    """A question answered by picking a value on a slider over a fixed grid; needs no kernel.

    Args:
        question: the question, plain text.
        values: the grid, increasing numbers (at least two).
        answer: the right value, or a callable returning it (computed from the engine); the grid value nearest
            to it is the right pick.
        hint: what to look at, shown after the value picked and "too low" or "too high" (``You chose 2 ms: too
            low.``), so that neighbouring wrong values show different panes.
        explain: why (shown with "Right." and under "Show answer"); unit: appended to each value's label;
        label: value → text (default ``f"{v:g}"``).

    Attributes:
        control: the ``SelectionSlider`` (at the first value); feedback, links, check_bar, answer_bar,
        answer_index, values: as :class:`Choice`.

    Raises:
        ValueError: fewer than two values or values not increasing, an answer outside the grid's range, or a
            hint that contains the answer's label.
    """

    def __init__(self, question: str, values: Sequence[float], answer: float | Callable[[], float], hint: str,
                 explain: str = "", unit: str = "", label: Callable[[float], str] = "{:g}".format, **kwargs):
        self.values, self.hint = [float(v) for v in values], hint
        answer = float(_resolve(answer))
        if len(self.values) < 2 or any(b <= a for a, b in zip(self.values, self.values[1:])):
            raise ValueError(f"SliderQuestion {question!r}: values must be at least two increasing numbers, "
                             f"got {self.values}")
        if not self.values[0] <= answer <= self.values[-1]:
            raise ValueError(f"SliderQuestion {question!r}: the answer {answer:g} is outside the slider's range "
                             f"{self.values[0]:g} to {self.values[-1]:g}")
        self.answer_index = min(range(len(self.values)), key=lambda i: abs(self.values[i] - answer))
        labels = [f"{label(v)} {unit}".strip() for v in self.values]
        _check_hint(f"SliderQuestion {question!r}", hint, label(self.values[self.answer_index]))
        panes = [right_pane(explain) if i == self.answer_index
                 else hint_pane(f"You chose {labels[i]}: too {'low' if i < self.answer_index else 'high'}.", hint)
                 for i in range(len(self.values))]
        control = widgets.SelectionSlider(options=labels, index=0, layout=widgets.Layout(width="480px"))
        super().__init__(question, control, panes, answer_pane(labels[self.answer_index], explain), **kwargs)

    def __repr__(self):
        return f"<SliderQuestion: {self._short_question()!r}, {len(self.values)} values>"


class NumberQuestion(_Question):
    """A question answered by typing a number; checking it needs the kernel.

    Args:
        question: the question, plain text.
        answer: the right number, or a callable returning it (computed from the engine).
        hint: what to look at, shown with "Too low." or "Too high.".
        explain: why (shown with "Right." and under "Show answer").
        rel_tol: an answer within this relative distance of the answer is right (default 2 %); unit: shown
            after the box and the answer; label: number → text for the revealed answer (default ``f"{v:g}"``).

    Attributes:
        control: the ``FloatText`` (empty at first: ``None``); check_bar, answer_bar; answer: the number.

    Raises:
        ValueError: an answer that is not a finite number, or a hint that contains the answer's label.
    """

    def __init__(self, question: str, answer: float | Callable[[], float], hint: str, explain: str = "",
                 rel_tol: float = 0.02, unit: str = "", label: Callable[[float], str] = "{:g}".format, **kwargs):
        self.answer, self.hint, self.explain, self.rel_tol = float(_resolve(answer)), hint, explain, rel_tol
        if not math.isfinite(self.answer):
            raise ValueError(f"NumberQuestion {question!r}: the answer must be a finite number, got {self.answer}")
        answer_text = f"{label(self.answer)} {unit}".strip()
        _check_hint(f"NumberQuestion {question!r}", hint, label(self.answer))
        self.control = widgets.FloatText(value=None, description=unit or "answer",
                                         layout=widgets.Layout(width="260px"))
        self._pane = widgets.HTML(self._feedback_html(None))
        self.control.observe(lambda change: setattr(self._pane, "value", self._feedback_html(change["new"])),
                             "value")
        super().__init__(question, self.control, self._pane, answer_pane(answer_text, explain), **kwargs)

    def _feedback_html(self, value) -> str:
        if value is None:
            return _pane("…", _MUTED, "Type your answer in the box (checking needs a running kernel).")
        if math.isclose(value, self.answer, rel_tol=self.rel_tol, abs_tol=1e-12):
            return right_pane(self.explain)
        return hint_pane("Too low." if value < self.answer else "Too high.", self.hint)

    def feedback_text(self) -> str:
        return _plain(self._pane.value)

    def _static_options(self) -> str:
        return _static.options_line([self.control.description], "type a number")

    @property
    def is_right(self) -> bool:
        """Whether the number in the box now is right (within ``rel_tol``)."""
        value = self.control.value
        return value is not None and math.isclose(value, self.answer, rel_tol=self.rel_tol, abs_tol=1e-12)

    def __repr__(self):
        return f"<NumberQuestion: {self._short_question()!r}>"


class Quiz(_static.StaticPicture, widgets.VBox):
    """Several questions shown together, one under the other (a "Check your understanding" cell).

    Args:
        questions: :class:`Choice`, :class:`SliderQuestion` or :class:`NumberQuestion` instances, at least one.

    Raises:
        TypeError: something that is not one of those questions.
    """

    def __init__(self, *questions: _Question, **kwargs):
        bad = [type(q).__name__ for q in questions if not isinstance(q, _Question)]
        if bad or not questions:
            raise TypeError(f"Quiz expects one or more Choice, SliderQuestion or NumberQuestion, got {bad or 'none'}")
        self.questions = questions
        super().__init__(list(questions), **kwargs)

    def __repr__(self):
        return f"<Quiz: {len(self.questions)} question{'s' if len(self.questions) != 1 else ''}>"
