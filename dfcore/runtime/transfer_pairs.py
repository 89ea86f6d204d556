"""Which ``_Send`` and ``_Recv`` of a traced step make one transfer, and lanes where spans never overlap.

Source: the rendezvous key of TF's ``Rendezvous::CreateKey`` (``framework/rendezvous.cc``):
``src_device;incarnation;dst_device;tensor_name;frame_id:iter_id``. The step stats do not record the
incarnation; the other parts are in each node's :class:`~dfcore.runtime.step_stats.TimelineLabel`
(``NodeExecStats.detail``): a ``_Send`` on the send device names the tensor and the recv device, a ``_Recv``
on the recv device names the tensor and the send device, and both carry the loop ``frame_iter``. A send and a
recv pair when those parts agree, so inside a ``tf.while_loop`` (which sends the same tensor once per
iteration) each iteration's send pairs with that iteration's recv. Ends that still share a key (a traced
step that ran one node twice outside a loop) pair in start order.

The Chrome trace (:mod:`dfcore.timeline`) and the widgets' timeline both pair transfers here, and both lay
their spans out in lanes with :func:`pack_lanes`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from .step_stats import NodeExecStats

__all__ = ["TRANSFER_ROLES", "TransferKey", "TransferPair", "pack_lanes", "pair_transfers", "transfer_role"]

#: Which end of a transfer each runtime-inserted op type is (TF's ``IsSend``/``IsRecv``).
TRANSFER_ROLES = {"_Send": "send", "_HostSend": "send", "_Recv": "recv", "_HostRecv": "recv"}

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, order=True)
class TransferKey:
    """The parts of a rendezvous key a step's stats record; ``frame_iter`` is ``(0, 0)`` outside loops."""

    tensor_name: str
    src_device: str
    dst_device: str
    frame_iter: tuple[int, int]


@dataclasses.dataclass(frozen=True)
class TransferPair(Generic[T]):
    """One transfer: its key, and the caller's items for its ``_Send`` (``send``) and ``_Recv`` (``recv``)."""

    key: TransferKey
    send: T
    recv: T


def transfer_role(stats: NodeExecStats) -> str | None:
    """``"send"``, ``"recv"`` or None: which end of a transfer the node of ``stats`` is (by op type, when its
    record names a tensor and a peer device; a feed or fetch of the step's call frame is no transfer)."""
    detail = stats.detail
    return TRANSFER_ROLES.get(stats.op_type) if detail is not None and detail.is_transfer else None


def pair_transfers(nodes: Iterable[tuple[str, NodeExecStats, T]],
                   start: Callable[[T], float]) -> list[TransferPair[T]]:
    """Pair the sends and recvs among ``nodes``, ``(device, stats, item)`` triples; sorted by key.

    Args:
        nodes: every node run of a step (others are skipped), with the item the caller lays out for it.
        start: an item's start time (any unit); ends with one key pair in ``(start, node name)`` order.

    Returns:
        One :class:`TransferPair` per send that has a recv of the same key; an end without its peer (a
        transfer cut off by an error, a send whose recv ran on a device the stats leave out) is left out.
    """
    ends: dict[str, dict[TransferKey, list[tuple[NodeExecStats, T]]]] = {"send": {}, "recv": {}}
    for device, stats, item in nodes:
        role = transfer_role(stats)
        if role is None:
            continue
        detail = stats.detail
        assert detail is not None and detail.tensor_name is not None and detail.peer_device is not None
        src, dst = (device, detail.peer_device) if role == "send" else (detail.peer_device, device)
        key = TransferKey(detail.tensor_name, src, dst, detail.frame_iter or (0, 0))
        ends[role].setdefault(key, []).append((stats, item))
    pairs = []
    for key in sorted(ends["send"].keys() & ends["recv"].keys()):
        sends, recvs = (sorted(ends[role][key], key=lambda end: (start(end[1]), end[0].node_name))
                        for role in ("send", "recv"))
        pairs += [TransferPair(key, send, recv) for (_, send), (_, recv) in zip(sends, recvs)]
    return pairs


def pack_lanes(spans: Sequence[tuple[float, float]], max_lanes: int | None = None) -> tuple[list[int], int]:
    """Greedy lanes so that the ``(start, end)`` spans of one lane never overlap (first fit, by start).

    Spans are taken by ``(start, end)``, ties in the given order; each goes to the first lane whose last
    span ended by its start, else to a new lane. With ``max_lanes``, a span that finds no lane goes to the
    last one (which may then overlap).

    Returns:
        ``(lane index per span, in the given order; number of lanes)``; an empty ``spans`` has 0 lanes.
    """
    lane_ends: list[float] = []
    lanes = [0] * len(spans)
    for index in sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1])):
        begin, end = spans[index]
        lane = next((i for i, last in enumerate(lane_ends) if begin >= last), None)
        if lane is None:
            lane = len(lane_ends) if max_lanes is None else min(len(lane_ends), max_lanes - 1)
            if lane == len(lane_ends):
                lane_ends.append(end)
        lane_ends[lane] = max(lane_ends[lane], end)
        lanes[index] = lane
    return lanes, len(lane_ends)
