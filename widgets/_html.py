"""Small builders of HTML text for the widgets: tables, legends, notes (pure strings).

Cell contents are escaped here; callers pass plain text (or :class:`Raw` for markup
they built themselves, such as a colour swatch).
"""

import html

from . import _palette
from ._format import short_device

FONT = "font-family:Helvetica,Arial,sans-serif;line-height:1.35"
NOTE = f"font-size:11px;color:#777;{FONT};margin:2px 0"  # a muted one-line note under a picture
_TABLE = f"border-collapse:collapse;font-size:12px;{FONT};margin:2px 0 6px 0"
_CELL = "border-bottom:1px solid #E0E0E0;padding:2px 8px;text-align:left;vertical-align:top"
_HEAD = "border-bottom:2px solid #999;padding:2px 8px;text-align:left;background:#F4F4F4"


class Raw(str):
    """A string that is already HTML (not escaped again by :func:`table`)."""


def cell(value):
    """``value`` as table-cell HTML: :class:`Raw` as is, anything else escaped."""
    return value if isinstance(value, Raw) else html.escape(str(value))


def table(headers, rows, numeric=(), max_height_px=None):
    """An HTML table; columns whose index is in ``numeric`` are right-aligned.

    ``headers`` None gives a table without a header row. With ``max_height_px`` the table
    scrolls inside a box of that height, header kept in view.
    """
    def style(base, index):
        return base.replace("text-align:left", "text-align:right") if index in numeric else base

    head = "".join(f'<th style="{style(_HEAD, i)};position:sticky;top:0">{cell(h)}</th>'
                   for i, h in enumerate(headers or ()))
    head = f"<thead><tr>{head}</tr></thead>" if headers else ""
    body = "".join("<tr>" + "".join(f'<td style="{style(_CELL, i)}">{cell(v)}</td>' for i, v in enumerate(row))
                   + "</tr>" for row in rows)
    out = f'<table style="{_TABLE}">{head}<tbody>{body}</tbody></table>'
    if max_height_px:
        out = f'<div style="max-height:{max_height_px}px;overflow:auto">{out}</div>'
    return out


def swatch(color, border=None):
    """A small filled square of ``color`` (``border`` defaults to the colour itself)."""
    return Raw(f'<span style="display:inline-block;width:11px;height:11px;background:{color};'
               f'border:1.5px solid {border or color};vertical-align:-1px;margin-right:4px"></span>')


def device_chip(device):
    """A swatch in the device's colour and its short name."""
    return Raw(swatch(_palette.device_fill(device), _palette.device_color(device)) + html.escape(short_device(device)))


def legend(devices, extras=()):
    """One line: a chip per device, then ``extras`` (already HTML)."""
    chips = [device_chip(d) for d in devices] + list(extras)
    return (f'<div style="font-size:12px;{FONT};margin:2px 0">'
            + " &nbsp; ".join(chips) + "</div>")


def heading(text):
    """A small section heading."""
    return f'<div style="font-size:13px;font-weight:bold;{FONT};margin:8px 0 2px 0">{html.escape(text)}</div>'


def note(text):
    """A muted explanatory line."""
    return f'<div style="font-size:12px;color:#555;{FONT};margin:2px 0">{html.escape(text)}</div>'


def pre(lines):
    """Lines of log text in a monospace block."""
    return ('<pre style="font-size:11.5px;line-height:1.35;margin:2px 0;padding:4px 6px;background:#F7F7F7;'
            f'overflow-x:auto">{html.escape(chr(10).join(lines))}</pre>')
