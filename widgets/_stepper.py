"""A step-through's static picture: a filmstrip for readers without scripts, and every frame for
``widgets/static/dfcore_static.js`` (the course website loads it), which steps them one at a time.

:func:`stepper` is called by ``widgets._static`` for each ``Stack`` that a slider or ``Play`` drives, with the
stack's frames drawn. A committed lesson keeps no widget state, so this HTML is all a page without a kernel
has of the step-through.
"""

from collections.abc import Callable

from ._html import NOTE

FILMSTRIP_FRAMES = 6
FILMSTRIP_ZOOM = 0.32
FILMSTRIP_BUDGET = 120_000
FRAMES_BUDGET = 600_000


def stepper(frames: list[str], current: int, around: Callable[[str], str] | None = None,
            layers: list[str] | None = None) -> str:
    """A step-through's picture from its ``frames`` (HTML, one per frame, ``current`` the one shown now).

    Two views, side by side: ``div.dfcore-filmstrip``, for readers without scripts: the current frame, then
    others shrunk in a row (:func:`filmstrip_indices`: up to :data:`FILMSTRIP_FRAMES`, and no more than fit in
    :data:`FILMSTRIP_BUDGET` characters at the current frame's size, but at least the first and the last);
    then ``div.dfcore-frames`` (``hidden``, also by its inline style), for ``dfcore_static.js``: every frame in
    a ``div.dfcore-frame`` (``data-frame``: its index), or evenly spread ones (:func:`kept_frames`) when they
    exceed :data:`FRAMES_BUDGET` characters, with a note saying so. ``data-frames`` counts the frames it
    holds, ``data-count`` the step-through's, ``data-current`` is the frame shown first. With ``layers`` (one
    per frame: what it draws over a base) those divs are drawn as ``around(divs)`` and the budget counts the
    layers. When the filmstrip already shows every frame, its frames are the ``div.dfcore-frame`` s (the
    script moves them) and the container is empty. A single frame is returned as it is.
    """
    count = len(frames)
    if count <= 1:
        return frames[0] if frames else ""
    main = frames[current]
    most = min(FILMSTRIP_FRAMES, 1 + FILMSTRIP_BUDGET // max(len(main), 1))
    others, zoomed = filmstrip_indices(count, current, max(most, 2)), f' style="zoom:{FILMSTRIP_ZOOM}"'
    whole = len(others) == count - 1

    def frame(index: int, style: str = "") -> str:
        return (f'<div class="dfcore-frame" data-frame="{index}"{style}>' if whole else f"<div{style}>") \
            + f"{frames[index]}</div>"

    cells = "".join(f'<div style="flex:none"><div style="{NOTE}">frame {index}</div>'
                    f"{frame(index, zoomed)}</div>" for index in others)
    filmstrip = (f'<div class="dfcore-filmstrip">{frame(current)}<div style="{NOTE}">frame {current} of '
                 f'{count - 1} above; other frames (the slider steps through all {count}):</div>'
                 f'<div style="display:flex;flex-wrap:wrap;gap:6px;align-items:flex-start">{cells}</div></div>')
    shown = layers if layers is not None else frames
    kept = list(range(count)) if whole else kept_frames([len(frame) for frame in shown], current)
    divs = "" if whole else "".join(f'<div class="dfcore-frame" data-frame="{index}">{shown[index]}</div>'
                                    for index in kept)
    note = "" if len(kept) == count else (
        f'<div style="{NOTE}">{len(kept)} of the {count} frames, evenly spread (the picture keeps at most '
        f"{FRAMES_BUDGET // 1000} kB of frames); run the notebook to step through all of them</div>")
    return (f'{filmstrip}<div class="dfcore-frames" data-frames="{len(kept)}" data-count="{count}" '
            f'data-current="{current}" hidden style="display:none">{around(divs) if around and divs else divs}'
            f"{note}</div>")


def kept_frames(sizes: list[int], current: int, budget: int = FRAMES_BUDGET) -> list[int]:
    """Which frames (by index) a step-through's picture keeps for the script: all when their ``sizes`` (characters)
    add up to ``budget`` or less, else as many as fit at their mean size, spread evenly (first and last
    included) and ``current`` added.

    >>> kept_frames([10] * 4, 0, budget=40)
    [0, 1, 2, 3]
    >>> kept_frames([10] * 100, 50, budget=40)
    [0, 33, 50, 66, 99]
    """
    total = sum(sizes)
    if total <= budget:
        return list(range(len(sizes)))
    return sorted(set(spread_indices(len(sizes), max(2, budget * len(sizes) // total))) | {current})


def spread_indices(count: int, most: int) -> list[int]:
    """Up to ``most`` (≥ 2) indices spread evenly over ``0..count-1``, first and last included.

    >>> spread_indices(100, 4)
    [0, 33, 66, 99]
    """
    return sorted({round(k * (count - 1) / (most - 1)) for k in range(most)}) if count > most else list(range(count))


def filmstrip_indices(count: int, current: int, most: int = FILMSTRIP_FRAMES) -> list[int]:
    """Up to ``most`` frame indices spread evenly over ``0..count-1`` (first and last included), ``current`` left out.

    >>> filmstrip_indices(4, 0)
    [1, 2, 3]
    >>> filmstrip_indices(100, 99, most=4)
    [0, 33, 66]
    """
    return [index for index in spread_indices(count, most) if index != current] if count > 1 else []
