"""Which chunk moves where, round by round: the schedules of the all-reduce algorithms.

A schedule is pure data (no values): the leaf chunks of the flattened tensor, and an
ordered list of steps, each a :class:`Message` (rank ``src`` sends a contiguous run of
chunks to ``dst``, which adds it to its own — ``op="reduce"`` — or stores it —
``op="copy"``) or a :class:`Finalize` (a rank applies the unary op, e.g. divide by N
for ``mean``, to chunks it fully reduced). The runtime collective
(:mod:`dfcore.distribute.all_reduce`), the graph builders
(:mod:`dfcore.distribute.all_reduce_graph`) and the simulated clock
(:mod:`dfcore.distribute.collective_cost`) all follow the same schedule.

**Chunking rule** (``chunk_layout``): the tensor is flattened to K elements and cut
into ``num_subchunks`` contiguous segments, each segment into ``pieces`` contiguous
chunks (``pieces`` = N for ring, the largest power of two ≤ N for recursive
halving-doubling, 1 for tree and reduce-to-one), both cuts as ``np.array_split`` does:
of ``m`` parts of a length ``L``, the first ``L mod m`` have ``⌈L/m⌉`` elements and the
rest ``⌊L/m⌋``. Chunk id ``s·pieces + j`` is piece ``j`` of segment ``s``. No padding is
sent, so a chunk may be empty (K < N): it still moves, as a 0-byte message. ``num_subchunks``
ranges over ``[1, ⌈K/pieces⌉]`` (at least 1): more segments than a chunk has elements would
only add empty messages, and :func:`check_arguments`, which every entry point calls first,
rejects them (a 10⁹-segment schedule would exhaust memory before the first message).

**Ring, textbook convention** (docs/architecture.md#where-each-tf-format-is-built; Baidu/Horovod): in
scatter-reduce step s (0-based) rank i sends chunk (i−s) mod N to rank (i+1) mod N, which adds it to its own;
after N−1 steps rank i holds the full sum of chunk (i+1) mod N. In allgather step s
rank i sends chunk (i+1−s) mod N, which the receiver stores. **NCCL convention**
(``runRing`` in NCCL's ``all_reduce.h``): every chunk index is one lower — in
scatter-reduce step s rank i sends chunk (i−1−s) mod N and ends owning chunk i; in
allgather step s it sends chunk (i−s) mod N, so it starts the allgather with the
chunk it owns. Same messages, same bytes, relabelled chunks. With ``num_subchunks``
S > 1 every step sends S messages, one per segment.

**Bytes** (ring): in scatter-reduce rank i sends every chunk of a segment except the
one it owns afterwards, (i+1) mod N (textbook); in allgather every chunk except the one
it receives last, (i+2) mod N. Per segment of length L it sends
``2L − |C_(i+1) mod N| − |C_(i+2) mod N|`` elements (for N = 2 that is L), so rank i sends
``itemsize · Σ_segments (2L − |C_(i+1)| − |C_(i+2)|)`` bytes (:func:`ring_bytes_sent`):
exactly ``2(N−1)·K/N·itemsize`` when N·S divides K, never more than
``2(N−1)·S·⌈⌈K/S⌉/N⌉·itemsize``, and summed over the ranks exactly ``2(N−1)·K·itemsize``.
NCCL's convention shifts both chunk indices down by one.

Other algorithms: ``reduce_to_one`` (every rank sends its tensor to ``root``, which adds
them in rank order, then sends the sum back: the parameter-server / TF
``ReductionToOneDevice`` pattern), ``tree`` (binary heap tree rooted at rank 0: children
of rank r are 2r+1 and 2r+2; reduce up one depth per round, deepest first, then
broadcast down one depth per round), ``recursive_halving_doubling`` (Rabenseifner, as
in MPICH and TF's ``build_recursive_hd_all_reduce``: with p the largest power of two ≤
N, ranks p…N−1 first fold their tensor into rank r−p; then log2 p halving rounds at
distances p/2, p/4, …, 1 — the rank whose distance bit is 0 keeps the lower half of its
current block and sends the upper half — leave rank r owning chunk r; log2 p doubling
rounds send the owned blocks back; finally ranks r−p unfold the result to ranks r).
"""

from __future__ import annotations

import dataclasses
import functools

from .arguments import check_count, check_rank

ALGORITHMS = ("ring", "reduce_to_one", "tree", "recursive_halving_doubling")
CONVENTIONS = ("textbook", "nccl")
REDUCTIONS = ("sum", "mean", "max")


@dataclasses.dataclass(frozen=True)
class Message:
    """One transfer: ``src`` sends chunks ``chunks`` (consecutive ids, elements
    ``element_range`` = [start, stop)) to ``dst``, which reduces (``"reduce"``) or
    stores (``"copy"``) them; ``round`` and ``phase`` name the algorithm step."""

    round: int
    phase: str
    src: int
    dst: int
    chunks: tuple[int, ...]
    element_range: tuple[int, int]
    op: str


@dataclasses.dataclass(frozen=True)
class Finalize:
    """Rank ``rank`` applies the unary op (mean's division) to ``element_range`` (chunks ``chunks``)."""

    round: int
    rank: int
    chunks: tuple[int, ...]
    element_range: tuple[int, int]


@dataclasses.dataclass(frozen=True, eq=False)
class Schedule:
    """An algorithm's plan for N ranks and K elements: leaf ``chunk_ranges`` and ordered ``steps``.
    Compared and hashed by identity (:func:`build_schedule` caches them), so caches keyed by a
    schedule stay cheap."""

    algorithm: str
    convention: str
    num_ranks: int
    num_elements: int
    num_subchunks: int
    chunk_ranges: tuple[tuple[int, int], ...]
    steps: tuple[Message | Finalize, ...]

    @property
    def messages(self) -> tuple[Message, ...]:
        """The :class:`Message` steps, in order."""
        return tuple(s for s in self.steps if isinstance(s, Message))

    @property
    def num_rounds(self) -> int:
        return 1 + max((s.round for s in self.steps), default=-1)


def chunk_layout(num_elements: int, num_subchunks: int, pieces: int) -> tuple[tuple[int, int], ...]:
    """Leaf chunk ``(start, stop)`` ranges by the module's chunking rule (``num_subchunks·pieces`` of them)."""
    ranges: list[tuple[int, int]] = []
    for seg_start, seg_len in _split(0, num_elements, num_subchunks):
        ranges.extend((a, a + length) for a, length in _split(seg_start, seg_len, pieces))
    return tuple(ranges)


def _split(start, length, parts):
    base, extra = divmod(length, parts)
    out, pos = [], start
    for j in range(parts):
        size = base + (1 if j < extra else 0)
        out.append((pos, size))
        pos += size
    return out


def pieces_per_segment(algorithm: str, num_ranks: int) -> int:
    """Chunks per segment (the module's chunking rule): N for ring, the largest power of two ≤ N for
    recursive halving-doubling, 1 for tree and reduce-to-one."""
    if algorithm == "ring":
        return num_ranks
    if algorithm == "recursive_halving_doubling":
        return _largest_power_of_two(num_ranks)
    return 1


def _largest_power_of_two(n):
    return 1 << (n.bit_length() - 1)


def max_subchunks(algorithm: str, num_ranks: int, num_elements: int) -> int:
    """The largest ``num_subchunks`` for ``num_elements``: one segment per element of a chunk,
    ``⌈K / pieces⌉`` (at least 1, so an empty tensor or one shorter than N still has a segment)."""
    return max(1, -(-num_elements // pieces_per_segment(algorithm, num_ranks)))


def capped_subchunks(algorithm: str, num_ranks: int, num_elements: int, num_subchunks: int) -> int:
    """``num_subchunks`` (checked ≥ 1) capped at :func:`max_subchunks`: for APIs that all-reduce many
    tensors with one setting (``MirroredStrategy``, ``batch_all_reduce``), where it is an upper bound."""
    check_count("num_subchunks", num_subchunks, 1)
    return min(num_subchunks, max_subchunks(algorithm, num_ranks, num_elements))


def check_arguments(algorithm: str, num_ranks: int, num_elements: int | None = None, num_subchunks: int = 1,
                    convention: str = "textbook", root: int = 0, reduction: str | None = None) -> None:
    """The one check of an all-reduce's arguments, before any work (every all-reduce entry point calls it).

    Args:
        algorithm: one of :data:`ALGORITHMS`. num_ranks: devices or MPI ranks, ≥ 1.
        num_elements: elements of the flattened tensor, ≥ 0 (None: not known yet, e.g. a graph
            tensor of unknown shape; the upper bound of ``num_subchunks`` is then not checked).
        num_subchunks: segments per tensor, in ``[1, max_subchunks(algorithm, num_ranks, num_elements)]``.
        convention: one of :data:`CONVENTIONS`. root: a rank in ``[0, num_ranks)``.
        reduction: one of :data:`REDUCTIONS` (None: not checked).

    Raises:
        TypeError: a count that is not an integer.
        ValueError: an unknown algorithm, convention or reduction, or a count out of its range
            (the message names the argument and the range).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"Unknown all-reduce algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}")
    if convention not in CONVENTIONS:
        raise ValueError(f"Unknown ring convention {convention!r}; use 'textbook' or 'nccl'")
    if reduction is not None:
        check_reduction(reduction)
    check_count("num_ranks", num_ranks, 1)
    if num_elements is not None:
        check_count("num_elements", num_elements, 0)
    check_rank("root", root, num_ranks)
    if num_elements is None:
        check_count("num_subchunks", num_subchunks, 1)
        return
    most = max_subchunks(algorithm, num_ranks, num_elements)
    check_count("num_subchunks", num_subchunks, 1, most,
                f"for a {algorithm} all-reduce of {num_elements} elements on {num_ranks} ranks "
                "(at most one segment per element of a chunk)")


def check_reduction(reduction: str) -> None:
    """Raise ValueError unless ``reduction`` is one of :data:`REDUCTIONS`."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"Unknown reduction {reduction!r}; use one of {', '.join(REDUCTIONS)}")


@functools.lru_cache(maxsize=512)
def build_schedule(algorithm: str, num_ranks: int, num_elements: int, num_subchunks: int = 1,
                   convention: str = "textbook", root: int = 0, root_input: bool = True) -> Schedule:
    """The :class:`Schedule` of ``algorithm`` (see the module doc); cached.

    ``root`` (reduce_to_one) is the rank that reduces; with ``root_input=False`` it has no
    tensor of its own (a parameter server): the first message into it per segment is a copy.

    Raises:
        TypeError, ValueError: as :func:`check_arguments` (checked before anything is built).
    """
    check_arguments(algorithm, num_ranks, num_elements, num_subchunks, convention, root)
    builder = {"ring": _ring, "reduce_to_one": _reduce_to_one, "tree": _tree,
               "recursive_halving_doubling": _halving_doubling}[algorithm]
    steps = builder(num_ranks, num_subchunks, convention, root)
    pieces = pieces_per_segment(algorithm, num_ranks)
    if not root_input:
        steps = _root_copies_first(steps, root)
    ranges = chunk_layout(num_elements, num_subchunks, pieces)
    steps = tuple(_resolve(step, ranges) for step in steps)
    return Schedule(algorithm, convention, num_ranks, num_elements, num_subchunks, ranges, steps)


#: A step's element range as its builder makes it, before :func:`_resolve` fills it in.
_UNRESOLVED = (-1, -1)


def _resolve(step, ranges):
    """Fill a step's element range from its chunk ids."""
    rng = (ranges[step.chunks[0]][0], ranges[step.chunks[-1]][1])
    return dataclasses.replace(step, element_range=rng)


def _msg(rnd, phase, src, dst, chunks, op):
    return Message(rnd, phase, src, dst, tuple(chunks), _UNRESOLVED, op)


def _ring(n, subchunks, convention, root):
    off = 1 if convention == "nccl" else 0
    steps = []
    for s in range(n - 1):
        for i in range(n):
            for seg in range(subchunks):
                steps.append(_msg(s, "scatter_reduce", i, (i + 1) % n, [seg * n + (i - s - off) % n], "reduce"))
    for i in range(n):
        for seg in range(subchunks):
            owned = seg * n + (i + 1 - off) % n
            steps.append(Finalize(n - 1, i, (owned,), _UNRESOLVED))
    for s in range(n - 1):
        for i in range(n):
            for seg in range(subchunks):
                steps.append(_msg(n - 1 + s, "allgather", i, (i + 1) % n, [seg * n + (i + 1 - s - off) % n], "copy"))
    return steps


def _whole(subchunks, pieces=1):
    """Chunk id tuples covering each whole segment."""
    return [list(range(seg * pieces, (seg + 1) * pieces)) for seg in range(subchunks)]


def _reduce_to_one(n, subchunks, convention, root):
    steps = []
    others = [r for r in range(n) if r != root]
    for seg in _whole(subchunks):
        for r in others:
            steps.append(_msg(0, "reduce", r, root, seg, "reduce"))
    steps.extend(Finalize(0, root, tuple(seg), _UNRESOLVED) for seg in _whole(subchunks))
    for seg in _whole(subchunks):
        for r in others:
            steps.append(_msg(1, "broadcast", root, r, seg, "copy"))
    return steps


def _root_copies_first(steps, root):
    seen, out = set(), []
    for step in steps:
        if isinstance(step, Message) and step.dst == root and step.op == "reduce" and step.chunks not in seen:
            seen.add(step.chunks)
            step = dataclasses.replace(step, op="copy")
        out.append(step)
    return out


def tree_depth(rank: int) -> int:
    """Depth of ``rank`` in the binary heap tree rooted at rank 0."""
    return (rank + 1).bit_length() - 1


def _tree(n, subchunks, convention, root):
    max_depth = tree_depth(n - 1)
    steps = []
    rnd = 0
    for depth in range(max_depth, 0, -1):
        for seg in _whole(subchunks):
            for r in range(n):
                if tree_depth(r) == depth:
                    steps.append(_msg(rnd, "reduce", r, (r - 1) // 2, seg, "reduce"))
        rnd += 1
    steps.extend(Finalize(max(rnd - 1, 0), 0, tuple(seg), _UNRESOLVED) for seg in _whole(subchunks))
    for depth in range(1, max_depth + 1):
        for seg in _whole(subchunks):
            for r in range(n):
                if tree_depth(r) == depth:
                    steps.append(_msg(rnd, "broadcast", (r - 1) // 2, r, seg, "copy"))
        rnd += 1
    return steps


def _halving_doubling(n, subchunks, convention, root):
    p = _largest_power_of_two(n)
    extra = n - p
    steps = []
    rnd = 0
    if extra:
        for seg in _whole(subchunks, p):
            for r in range(p, n):
                steps.append(_msg(rnd, "fold", r, r - p, seg, "reduce"))
        rnd += 1
    blocks = {r: (0, p) for r in range(p)}
    distance = p // 2
    while distance:
        for r in range(p):
            lo, hi = blocks[r]
            mid = (lo + hi) // 2
            keep, send = ((lo, mid), (mid, hi)) if not r & distance else ((mid, hi), (lo, mid))
            for seg in range(subchunks):
                steps.append(_msg(rnd, "scatter_reduce", r, r ^ distance,
                                  range(seg * p + send[0], seg * p + send[1]), "reduce"))
            blocks[r] = keep
        rnd += 1
        distance //= 2
    steps.extend(Finalize(max(rnd - 1, 0), r, (seg * p + r,), _UNRESOLVED)
                 for r in range(p) for seg in range(subchunks))
    distance = 1
    while distance < p:
        for r in range(p):
            lo, hi = blocks[r]
            for seg in range(subchunks):
                steps.append(_msg(rnd, "allgather", r, r ^ distance, range(seg * p + lo, seg * p + hi), "copy"))
        for r in range(p):
            lo, hi = blocks[r]
            plo, phi = blocks[r ^ distance]
            blocks[r] = (min(lo, plo), max(hi, phi))
        rnd += 1
        distance *= 2
    if extra:
        for seg in _whole(subchunks, p):
            for r in range(p, n):
                steps.append(_msg(rnd, "unfold", r - p, r, seg, "copy"))
    return steps


def bytes_sent_per_rank(schedule: Schedule, itemsize: int) -> dict[int, int]:
    """``{rank: bytes}`` the ranks send under ``schedule`` for elements of ``itemsize`` bytes."""
    sent = dict.fromkeys(range(schedule.num_ranks), 0)
    for m in schedule.messages:
        sent[m.src] += (m.element_range[1] - m.element_range[0]) * itemsize
    return sent


def ring_bytes_sent(rank: int, num_ranks: int, num_elements: int, itemsize: int, num_subchunks: int = 1,
                    convention: str = "textbook") -> int:
    """Closed form of the ring's bytes sent by ``rank`` (the rule in the module doc), for tests and lessons."""
    n = num_ranks
    if n == 1:
        return 0
    off = 1 if convention == "nccl" else 0
    ranges = chunk_layout(num_elements, num_subchunks, n)
    total = 0
    for seg in range(num_subchunks):
        size = [b - a for a, b in ranges[seg * n:(seg + 1) * n]]
        seg_len = sum(size)
        owned, last = (rank + 1 - off) % n, (rank + 2 - off) % n
        total += (seg_len - size[owned]) + (seg_len - size[last])
    return total * itemsize
