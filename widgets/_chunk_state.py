"""A collective's trace replayed round by round: what every device holds of every chunk, and the bytes so far.

Pure functions over a :class:`~dfcore.distribute.trace.CollectiveTrace` (no ipywidgets).

Frame 0 is the state before any message (each rank holds its own input); frame
``r + 1`` the state after round ``r``. A device's cell for a chunk holds the chunk's
elements and the set of ranks whose inputs are combined in them (its *contributors*).
Replaying a round applies its messages in trace order: the sender's cell takes the
value it sent (its buffer at that moment, so ``mean``'s division by N shows up when an
owner first sends its chunk), then the receiver's cell takes its partial result after
the message; a ``reduce`` adds the sender's contributors to the receiver's, a ``copy``
replaces them. Without values in the trace (``trace_values=False`` or ``in_place``)
cells carry contributors only.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Cell:
    """One device's copy of one chunk: its elements (None without values) and its contributors."""

    values: np.ndarray | None
    contributors: frozenset[int]


@dataclasses.dataclass(frozen=True)
class Frame:
    """The state after round ``index − 1`` (``index`` 0: before round 0).

    Attributes:
        index: frame number; round: the :class:`~dfcore.distribute.trace.RoundRecord` shown
            (None for frame 0).
        cells: ``cells[rank][chunk]`` → :class:`Cell`.
        sends: ``{rank: ((chunk, dst, op), …)}`` of this round's messages.
        receives: ``{(rank, chunk): ((src, op), …)}`` of this round's messages.
        bytes_sent, bytes_received: per rank, bytes so far (this round included).
        link_bytes: ``{(src rank, dst rank): bytes so far}`` over every link the trace uses.
    """

    index: int
    round: object
    cells: tuple
    sends: dict
    receives: dict
    bytes_sent: tuple
    bytes_received: tuple
    link_bytes: dict


def chunk_slices(trace, chunk_ids, element_range):
    """``[(chunk, lo, hi)]``: where each chunk of a message lies in its value (offsets from the message start)."""
    start = element_range[0]
    return [(c, trace.chunk_ranges[c][0] - start, trace.chunk_ranges[c][1] - start) for c in chunk_ids]


def frames(trace):
    """The :class:`Frame` list of ``trace``: ``trace.num_rounds + 1`` frames (see the module doc)."""
    n, chunks = len(trace.devices), trace.chunk_ranges
    rank_of = {d: i for i, d in enumerate(trace.devices)}
    inputs = trace.inputs
    cells = [[Cell(None if inputs is None else np.asarray(inputs[r][lo:hi]), frozenset((r,)))
              for lo, hi in chunks] for r in range(n)]
    links = {(rank_of[s], rank_of[d]): 0 for s, d in trace.bytes_per_link}
    sent, received = [0] * n, [0] * n
    out = [Frame(0, None, _freeze(cells), {}, {}, tuple(sent), tuple(received), dict(links))]
    for index, record in enumerate(trace.rounds, start=1):
        sends: dict[int, list[tuple[int, int, str]]] = {}
        receives: dict[tuple[int, int], list[tuple[int, str]]] = {}
        for t in record.transfers:
            for c, lo, hi in chunk_slices(trace, t.chunk_ids, t.element_range):
                old = cells[t.src][c]
                src_values = old.values if t.value_sent is None else t.value_sent[lo:hi]
                cells[t.src][c] = Cell(src_values, old.contributors)
                mine = cells[t.dst][c].contributors
                contributors = old.contributors | mine if t.op == "reduce" else old.contributors
                values = None if t.partial_sum_after is None else t.partial_sum_after[lo:hi]
                cells[t.dst][c] = Cell(values, contributors)
                sends.setdefault(t.src, []).append((c, t.dst, t.op))
                receives.setdefault((t.dst, c), []).append((t.src, t.op))
            sent[t.src] += t.nbytes
            received[t.dst] += t.nbytes
            links[(t.src, t.dst)] += t.nbytes
        out.append(Frame(index, record, _freeze(cells), {r: tuple(v) for r, v in sends.items()},
                         {k: tuple(v) for k, v in receives.items()}, tuple(sent), tuple(received), dict(links)))
    return out


def _freeze(cells):
    return tuple(tuple(row) for row in cells)


def format_values(values, max_values=3, digits=3):
    """A chunk's elements as short text: ``[60, 64]``, ``[0.123, -1.5, 2, …]`` (``digits`` significant)."""
    if values is None:
        return ""
    flat = np.asarray(values).reshape(-1)
    shown = ", ".join(_number(v, digits) for v in flat[:max_values])
    more = ", …" if flat.size > max_values else ""
    return f"[{shown}{more}]"


def _number(value, digits):
    value = float(value)
    if value == 0:
        return "0"
    return f"{value:.{digits}g}".replace("e+0", "e").replace("e-0", "e-")


def contributors_text(contributors, num_ranks, reduction="sum", max_listed=6):
    """``Σ 0+1+2`` (ranks combined in a cell), ``Σ all 4`` when complete, ``Σ 3 of 8`` for large N."""
    symbol = "max" if reduction == "max" else "Σ"
    if len(contributors) == num_ranks and num_ranks > 1:
        return f"{symbol} all {num_ranks}"
    if len(contributors) == 1:
        return f"rank {next(iter(contributors))} only"
    if num_ranks <= max_listed:
        return f"{symbol} " + "+".join(str(r) for r in sorted(contributors))
    return f"{symbol} {len(contributors)} of {num_ranks}"


def ring_rule(trace, round_record):
    """The textbook/NCCL rule naming the chunk rank i sends in a ring round, as text ('' for other algorithms)."""
    if trace.algorithm != "ring":
        return ""
    n = len(trace.devices)
    off = 1 if trace.convention == "nccl" else 0
    if round_record.phase == "scatter_reduce":
        s, shift, verb = round_record.round, off, "which adds it to its own"
    else:
        s, shift, verb = round_record.round - (n - 1), off - 1, "which stores it"
    return f"rank i sends chunk {_mod_expr(s + shift, n)} to rank (i+1) mod {n}, {verb}"


def _mod_expr(minus, n):
    if minus == 0:
        return f"i mod {n}" if n > 1 else "0"
    sign = "−" if minus > 0 else "+"
    return f"(i{sign}{abs(minus)}) mod {n}"
