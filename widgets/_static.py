"""A widget's static picture: the HTML (its SVGs as images) that stands in for it where no kernel runs.

A committed lesson keeps no widget state (``tests/notebooks/strip_widget_state.py``), so GitHub,
nbviewer and ``nbconvert --to html`` can only show what a widget's display bundle carries besides its
widget view. :class:`StaticPicture` (mixed into every widget class) adds a ``text/html`` part to that
bundle. A live JupyterLab still shows the widget alone: its widget manager ranks the widget-view mime
type first and renders only the richest type it can.

The picture is built here, once, by walking the widget tree with renderers keyed by widget class:
``HTML`` gives its value, boxes lay their children out, controls become one muted line, and a
``Stack`` shows its selected page. What drives a ``Stack`` is read from the ``jslink`` s the widgets
keep in their ``links`` attribute: a stack that a slider steps through (a step-through) is drawn by
:func:`widgets._stepper.stepper`, as a filmstrip for readers that run no script (GitHub, nbviewer, an
untrusted notebook in JupyterLab) and as every frame for ``widgets/static/dfcore_static.js`` (the course
website), which steps them one at a time under a slider. A stack overlaid on a base picture in a one-area
``GridBox`` (the timeline's frames) is drawn with that base in every filmstrip frame, and as layers over
one base for the script. Each SVG becomes an ``<img>`` (:func:`svg_images`), which sanitizing readers keep.
A widget may override :meth:`StaticPicture.static_html` (a quiz, a what-if).
"""

import html
import re
from collections.abc import Callable, Iterable

import ipywidgets as widgets
from ipywidgets.widgets.widget_link import Link

from ._html import FONT, NOTE
from ._stepper import stepper

STATIC_CLASS = "dfcore-static"
CHOICES_BUDGET = 150_000
_STEPPERS = (widgets.IntSlider, widgets.Play)
_OVERLAY = "position:relative;display:inline-block;max-width:100%"
_LAYER = "position:absolute;top:0;left:0;right:0"
_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
_SVG_STYLE = re.compile(r'^(<svg\b[^>]*?) style="[^"]*"')
_SVG_NOISE = re.compile(r'<title>.*?</title>|<!--.*?-->|\sxlink:title="[^"]*"', re.DOTALL)
_GEOMETRY = re.compile(r'(\s(?:points|d|x|y|x1|x2|y1|y2|cx|cy|r|rx|ry|width|height|viewBox|transform)=")([^"]*)"')
_DECIMALS = re.compile(r"\d+\.\d{2,}")
# In a single-quoted attribute holding a data: URL: URL escapes first (%), then the HTML escape (&).
_URL_ESCAPES = (("%", "%25"), ("#", "%23"), ("'", "%27"), ("\n", "%0A"), ("\t", "%09"), ("&", "&amp;"))
SVG_URL_PREFIX = "data:image/svg+xml,"


def wrap(widget_name: str, body: str) -> str:
    """The ``text/html`` part of a widget's bundle: ``body`` in a ``div.dfcore-static`` and a one-line note.

    nbval's sanitize file (``notebooks/nbval_sanitize.cfg``) masks everything from the opening tag on,
    so the static copy is never compared (the widget's ``text/plain`` repr is).
    Each inline ``<svg>`` becomes an ``<img>`` of it (:func:`svg_images`).
    """
    return (f'<div class="{STATIC_CLASS}" data-widget="{html.escape(widget_name)}">{svg_images(body)}'
            f'<div style="{NOTE}">static picture of {html.escape(widget_name)}: run the notebook '
            "to use its controls</div></div>")


def svg_images(fragment: str) -> str:
    """``fragment`` with each ``<svg>…</svg>`` replaced by an ``<img>`` showing it from a ``data:`` URL.

    Readers sanitize a notebook's HTML before showing it: JupyterLab (an untrusted notebook, as every
    freshly opened one is) drops ``<svg>`` tags and keeps their text, but keeps ``<img>`` with a ``data:``
    source. The image keeps the SVG's own size (``width``/``height``), shrunk to the output's width when
    wider; a ``style`` on the ``<svg>`` tag is dropped. Each SVG must be a standalone document (``xmlns``,
    XML entities only), as ``widgets._svg.document`` and Graphviz make them. The SVG is made smaller first
    (:func:`compact_svg`) and written as UTF-8 text in the URL (only ``%``, ``#``, ``'``, ``&`` and line
    breaks escaped), not base64, which would add a third.
    """
    def image(match: re.Match) -> str:
        svg = compact_svg(_SVG_STYLE.sub(r"\1", match.group(0), count=1))
        for char, code in _URL_ESCAPES:
            svg = svg.replace(char, code)
        return f"<img alt='picture' style='max-width:100%;height:auto' src='{SVG_URL_PREFIX}{svg}'>"

    return _SVG.sub(image, fragment)


def compact_svg(svg: str) -> str:
    """``svg`` without what an image never shows (``<title>`` tooltips, comments, ``xlink:title``) and with its
    geometry (coordinates, sizes, paths, transforms) rounded to one decimal, which is under a tenth of a pixel.

    >>> compact_svg('<rect x="10.257" y="3" width="0.04"><title>a: 10.257 µs</title></rect><!-- a -->')
    '<rect x="10.3" y="3" width="0.0"></rect>'
    """
    svg = _SVG_NOISE.sub("", svg)
    return _GEOMETRY.sub(lambda m: m.group(1) + _DECIMALS.sub(_round, m.group(2)) + '"', svg)


def _round(match: re.Match) -> str:
    return f"{float(match.group(0)):.1f}"


def details(summary: str, body: str, open_: bool = False) -> str:
    """A ``<details>`` block (collapsed unless ``open_``) with a plain-text ``summary`` and an HTML ``body``."""
    return (f'<details{" open" if open_ else ""} style="{FONT};font-size:12px;margin:2px 0">'
            f"<summary>{html.escape(summary)}</summary>{body}</details>")


def options_line(labels: Iterable[str], lead: str = "options", listed: bool = False) -> str:
    """Muted text listing ``labels`` (a question's choices, a slider's values), none marked as picked: on one
    line, or with ``listed`` one per line (labels that hold commas stay readable)."""
    labels = [html.escape(str(label)) for label in labels]
    if listed:
        items = "".join(f"<li>{label}</li>" for label in labels)
        return (f'<div style="{NOTE}">{html.escape(lead)}:'
                f'<ul style="margin:0 0 0 4px;padding-left:18px">{items}</ul></div>')
    return f'<div style="{NOTE}">{html.escape(lead)}: {" · ".join(labels)}</div>'


def choices(shown: tuple[str, str], others: Iterable[tuple[str, str]], budget: int = CHOICES_BUDGET) -> str:
    """A precomputed choice's static form: the ``shown`` ``(caption, HTML)`` pane, then the ``others`` in one
    collapsed ``<details>``, in order until their HTML reaches ``budget`` characters (the rest are counted)."""
    caption, body = shown
    kept, size, others = [], 0, list(others)
    for other_caption, other_body in others:
        if size + len(other_body) > budget:
            break
        kept.append(f'<div style="{NOTE}">{html.escape(other_caption)}</div>{other_body}')
        size += len(other_body)
    out = f'<div style="{NOTE}">{html.escape(caption)}</div>{body}'
    if others:
        left = f" ({len(kept)} shown; run the notebook for the other {len(others) - len(kept)})" \
            if len(kept) < len(others) else ""
        out += details(f"the other {len(others)} choices{left}", "".join(kept))
    return out


def stack_roles(links: Iterable[Link]) -> dict[int, str]:
    """``{id(stack): "frames"}`` for each ``Stack`` whose ``selected_index`` a slider or Play drives through ``links``,
    and ``{id(slider): "stepper"}`` for each of those sliders and Plays.

    A chain counts (``Play`` → ``IntSlider`` → ``Stack``). Stacks driven by a picker (``ToggleButtons``,
    ``Dropdown``) or by nothing are absent: they show their selected page.
    """
    pairs = [(link.source[0], link.target[0]) for link in links]
    steppers = {id(w) for pair in pairs for w in pair if isinstance(w, _STEPPERS)}
    frames = {id(w): "frames" for pair in pairs if any(id(x) in steppers for x in pair)
              for w in pair if isinstance(w, widgets.Stack)}
    return (dict.fromkeys(steppers, "stepper") if frames else {}) | frames


def collect_links(widget: widgets.Widget) -> list[Link]:
    """The ``links`` attributes of ``widget`` and of every widget below it (children of boxes and stacks)."""
    found, todo = [], [widget]
    while todo:
        current = todo.pop()
        found += list(getattr(current, "links", ()) or ())
        todo += list(getattr(current, "children", ()) or ())
    return found


def render(widget: widgets.Widget) -> str:
    """The static HTML of ``widget``'s tree as it now stands (selected pages, current frames)."""
    return _Walk(stack_roles(collect_links(widget))).html(widget)


class _Walk:
    """One rendering pass: ``roles`` from :func:`stack_roles`; ``forced`` pins a step-through to a frame."""

    def __init__(self, roles: dict[int, str]):
        self.roles, self.forced = roles, dict[int, int]()

    def html(self, widget: widgets.Widget) -> str:
        if isinstance(widget, StaticPicture) and type(widget).static_html is not StaticPicture.static_html:
            return widget.static_html()  # a widget with its own static form (a question, a what-if)
        for cls in type(widget).__mro__:
            renderer = _RENDERERS.get(cls)
            if renderer is not None:
                return renderer(self, widget)
        return ""

    def page(self, stack: widgets.Stack) -> str:
        index = self.forced.get(id(stack), stack.selected_index)
        children = stack.children
        return self.html(children[index]) if index is not None and 0 <= index < len(children) else ""

    def stack(self, stack: widgets.Stack) -> str:
        if self.roles.get(id(stack)) == "frames" and id(stack) not in self.forced:
            return stepper(self.each_frame(stack, lambda: self.page(stack)), stack.selected_index or 0)
        return self.page(stack)

    def grid(self, box: widgets.GridBox) -> str:
        """A one-area grid as its children drawn over the first (positioned, not a CSS grid: JupyterLab's
        sanitizer drops grid properties); a stepped child is stepped over that base. Other grids: a box."""
        if len(set((box.layout.grid_template_areas or "").replace('"', " ").split())) != 1:
            return self.box(box)
        frames = [c for c in box.children if self.roles.get(id(c)) == "frames"]
        if not frames or id(frames[0]) in self.forced:
            return _overlay([self.html(child) for child in box.children])
        stack = frames[0]
        drawn = self.each_frame(stack, lambda: _overlay([self.html(child) for child in box.children]))
        layers = self.each_frame(stack, lambda: self.html(stack))
        return stepper(drawn, stack.selected_index or 0, lambda frames: _overlay(
            [frames if child is stack else self.html(child) for child in box.children]), layers)

    def each_frame(self, stack: widgets.Stack, draw: Callable[[], str]) -> list[str]:
        """``draw()`` with ``stack`` pinned to each of its frames in turn (the widget itself never moves)."""
        drawn = []
        try:
            for index in range(len(stack.children)):
                self.forced[id(stack)] = index
                drawn.append(draw())
        finally:
            del self.forced[id(stack)]
        return drawn

    def accordion(self, accordion: widgets.Accordion) -> str:
        return "".join(details(accordion.get_title(i) or f"part {i}", self.html(child),
                               open_=i == accordion.selected_index) for i, child in enumerate(accordion.children))

    def tab(self, tab: widgets.Tab) -> str:
        """The selected tab's picture under the row of titles (the others are named, not drawn: size)."""
        titles = [tab.get_title(i) or f"tab {i}" for i in range(len(tab.children))]
        line = " · ".join(f"[{t}]" if i == tab.selected_index else t for i, t in enumerate(titles))
        page = tab.children[tab.selected_index] if tab.selected_index is not None and tab.children else None
        return (f'<div style="{NOTE}">tabs: {html.escape(line)}</div>'
                + (self.html(page) if page is not None else ""))

    def box(self, box: widgets.Box) -> str:
        inner = "".join(self.html(child) for child in box.children)
        if isinstance(box, widgets.HBox):
            return f'<div style="display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start">{inner}</div>'
        return f"<div>{inner}</div>"

    def control(self, control: widgets.DOMWidget) -> str:
        label = f"{control.description}: " if getattr(control, "description", "") else ""
        if isinstance(control, widgets.Play):
            return ""
        if isinstance(control, widgets.IntSlider):
            text = f"{label}{control.value} (of {control.min}–{control.max})"
        elif isinstance(control, widgets.ToggleButtons | widgets.RadioButtons):
            text = label + " · ".join(f"[{o}]" if i == control.index else o
                                      for i, o in enumerate(control._options_labels))
        elif isinstance(control, widgets.Button):
            text = f"[{control.description}]"
        else:
            text = f"{label}{getattr(control, 'label', None) or getattr(control, 'value', '')}"
        # a step-through's slider: dfcore_static.js hides this line where it puts its own slider
        marked = ' class="dfcore-step-value"' if self.roles.get(id(control)) == "stepper" else ""
        return f'<div{marked} style="{NOTE}">{html.escape(str(text))}</div>'


def _overlay(layers: list[str]) -> str:
    base, *over = layers
    over_html = "".join(f'<div style="{_LAYER}">{layer}</div>' for layer in over)
    return f'<div style="{_OVERLAY}">{base}{over_html}</div>'


_RENDERERS: dict[type, Callable[[_Walk, widgets.Widget], str]] = {
    widgets.HTML: lambda walk, w: w.value,
    widgets.HTMLMath: lambda walk, w: w.value,
    widgets.Label: lambda walk, w: f"<div>{html.escape(w.value)}</div>",
    widgets.Stack: _Walk.stack,
    widgets.Accordion: _Walk.accordion,
    widgets.Tab: _Walk.tab,
    widgets.GridBox: _Walk.grid,
    widgets.Box: _Walk.box,
    widgets.Output: lambda walk, w: "",
    widgets.DOMWidget: _Walk.control,
}


class StaticPicture:
    """Mixin for a widget class (before the ipywidgets base): its display bundle also carries its static picture.

    ``_repr_mimebundle_`` returns ipywidgets' bundle (``text/plain`` and the widget view) plus
    ``text/html``: :func:`wrap` of :meth:`static_html`.
    """

    def static_html(self) -> str:
        """The picture without a kernel; by default :func:`render` of the widget tree."""
        return render(self)

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]  # a mixin: the ipywidgets base has it
        if bundle is not None:
            bundle["text/html"] = wrap(type(self).__name__, self.static_html())
        return bundle


def container_html(box: widgets.Box) -> str | None:
    """The static picture of a plain ipywidgets container (``Tab``, ``VBox`` …) holding widgets of ours, for
    IPython's ``text/html`` formatter; None for anything else (a widget of ours has its own bundle)."""
    if isinstance(box, StaticPicture):
        return None
    todo, ours = list(box.children), False
    while todo and not ours:
        child = todo.pop()
        ours = isinstance(child, StaticPicture)
        todo += list(getattr(child, "children", ()) or ())
    return wrap(type(box).__name__, render(box)) if ours else None


def register_containers(display_formatter) -> None:
    """Make IPython add :func:`container_html` to the bundle of every ipywidgets container it displays.

    IPython asks its ``text/html`` formatter for what a ``_repr_mimebundle_`` left out, so a ``Tab`` of
    :class:`~widgets.TimelineView` s keeps its widget view and gains a static picture.
    """
    display_formatter.formatters["text/html"].for_type(widgets.Box, container_html)


def register_with_ipython() -> None:
    """:func:`register_containers` with the running IPython's display formatter (nothing outside IPython)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        register_containers(shell.display_formatter)
