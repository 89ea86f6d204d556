"""``WhatIf``: "what if this parameter were different?" as pickers over a fixed grid, working without a kernel.

Every pane (an SVG chart or a small table, as HTML) is computed by the engine for every combination of the
grid's values when the cell runs, and kept in nested ``Stack``s: the first parameter's picker selects among
the outer stack's children, the second's among each of those children's children, and so on. Each picker's
``index`` is ``jslink``-ed to the ``selected_index`` of every stack at its depth, so moving any picker shows
the precomputed pane in the browser, with a dead kernel or none (as :class:`~widgets.TimelineView`'s
step-through does). :func:`bars` draws a pane's horizontal bar chart on a scale fixed across panes.
"""

import html
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets

from . import _palette, _svg
from ._html import FONT

_PICKERS = {"slider": widgets.SelectionSlider, "dropdown": widgets.Dropdown}


class WhatIf(widgets.VBox):
    """Pickers over a grid of parameter values and the engine's precomputed pane for each combination.

    Args:
        title: what the control shows, plain text (``"link bandwidth and latency vs transfer time"``).
        grid: parameter name → the values to offer, in order (at least one value each; at most 400
            combinations in all, since each is drawn when the cell runs).
        render: called as ``render(**values)`` once per combination; returns that pane's HTML (an SVG chart or
            a table) computed from the engine.
        start: parameter name → the value picked at first (default: each grid's first value).
        label: value → picker label (default ``str``); picker: ``"slider"`` (``SelectionSlider``) or
            ``"dropdown"`` (``Dropdown``).

    Attributes:
        pickers: ``{name: picker}``; stack: the outer ``Stack``; panes: ``{tuple of values: HTML widget}``;
        links: the ``jslink``s, as ``(picker name, stack)`` pairs in ``link_targets``.

    Raises:
        ValueError: an empty grid or parameter, more than 400 combinations, or a start value not in its grid.
        TypeError: ``render`` does not return a string.
    """

    MAX_PANES = 400

    def __init__(self, title: str, grid: Mapping[str, Sequence[Any]], render: Callable[..., str],
                 start: Mapping[str, Any] | None = None, label: Callable[[Any], str] = str,
                 picker: str = "slider", **kwargs):
        self.title, self.grid = title, {name: list(values) for name, values in grid.items()}
        sizes = [len(values) for values in self.grid.values()]
        if not sizes or 0 in sizes:
            raise ValueError(f"WhatIf {title!r}: every parameter needs at least one value, got {self.grid}")
        if math.prod(sizes) > self.MAX_PANES:
            raise ValueError(f"WhatIf {title!r}: {math.prod(sizes)} combinations, more than {self.MAX_PANES}")
        start = dict(start or {})
        indices = {}
        for name, values in self.grid.items():
            if name in start and start[name] not in values:
                raise ValueError(f"WhatIf {title!r}: start value {start[name]!r} of {name!r} is not in {values}")
            indices[name] = values.index(start[name]) if name in start else 0
        names = list(self.grid)
        self.panes: dict[tuple, widgets.HTML] = {}
        for combination in itertools.product(*self.grid.values()):
            markup = render(**dict(zip(names, combination)))
            if not isinstance(markup, str):
                raise TypeError(f"WhatIf {title!r}: render must return HTML text, got {type(markup).__name__}")
            self.panes[combination] = widgets.HTML(markup)
        kind = _PICKERS[picker]
        self.pickers = {name: kind(options=[label(v) for v in values], index=indices[name], description=name,
                                   style={"description_width": "initial"}, layout=widgets.Layout(width="520px"))
                        for name, values in self.grid.items()}
        levels: list[list[widgets.Stack]] = [[] for _ in names]
        self.stack = self._nest(names, (), levels, indices)
        self.link_targets = [(name, stack) for name, level in zip(names, levels) for stack in level]
        self.links = [widgets.jslink((self.pickers[name], "index"), (stack, "selected_index"))
                      for name, stack in self.link_targets]
        heading = widgets.HTML(f'<div style="font-size:13px;font-weight:bold;{FONT};margin:4px 0">What if: '
                               f"{html.escape(title)}</div>")
        super().__init__([heading, *self.pickers.values(), self.stack], **kwargs)

    def _nest(self, names, prefix, levels, indices):
        depth = len(prefix)
        values = self.grid[names[depth]]
        children = [self.panes[prefix + (v,)] if depth == len(names) - 1
                    else self._nest(names, prefix + (v,), levels, indices) for v in values]
        stack = widgets.Stack(children, selected_index=indices[names[depth]])
        levels[depth].append(stack)
        return stack

    def selected(self) -> tuple:
        """The combination of values the pickers show now."""
        return tuple(self.grid[name][picker.index] for name, picker in self.pickers.items())

    def pane(self) -> str:
        """The HTML of the pane shown for :meth:`selected` (what the jslinks show in the browser)."""
        return self.panes[self.selected()].value

    def __repr__(self):
        sizes = " × ".join(f"{len(v)} {name}" for name, v in self.grid.items())
        return f"<WhatIf: {self.title!r}, {sizes}>"


def bars(items: Sequence[tuple], scale_max: float, unit: str = "µs", color: str = _palette.TRANSFER,
         width_px: int = 520) -> str:
    """A horizontal bar chart as SVG: one ``(label, value)`` or ``(label, value, colour)`` bar per row (``color``
    when a row names none), its value written after it.

    ``scale_max`` fixes the full width, so that the same value has the same length in every pane of a
    :class:`WhatIf` (a bar longer than the scale is clipped at the edge, its value still written). Values are
    printed with ``unit``: whole numbers from 100 up (``1,420 µs``), 3 significant digits below.

    Raises:
        ValueError: ``scale_max`` not positive, or a negative value.
    """
    if not scale_max > 0 or any(item[1] < 0 for item in items):
        raise ValueError(f"bars: scale_max must be positive and values non-negative, got {scale_max}, {list(items)}")
    label_w, value_w, row_h = 190, 90, 20
    plot_w = width_px - label_w - value_w
    body = []
    for row, (label, value, *rest) in enumerate(items):
        y, ink = 4 + row * row_h, rest[0] if rest else color
        length = plot_w * min(value / scale_max, 1.0)
        body.append(_svg.text(label_w - 6, y + 12, label, anchor="end"))
        body.append(_svg.rect(label_w, y + 2, length, row_h - 6, _palette.tint(ink, 0.55), ink))
        shown = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
        body.append(_svg.text(label_w + length + 4, y + 12, f"{shown} {unit}"))
    return _svg.document(width_px, 8 + row_h * len(items), "".join(body))
