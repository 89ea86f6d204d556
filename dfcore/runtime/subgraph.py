"""The client's feed and fetch endpoints of a run: the one place that makes them.

Source: ``tensorflow/core/graph/subgraph.cc`` (``RewriteGraphForExecution`` and its
``ArgFeedRewrite``, ``RetvalFetchRewrite``, ``RecvFeedRewrite``, ``SendFetchRewrite``)
and ``DirectSession::GetOrCreateExecutors`` (``use_function_convention`` is true except
for ``partial_run``). Every endpoint sits on the client device.

- call frame (a normal ``Session.run``): a fed tensor ``<op>:<i>`` becomes
  ``_arg_<op>_<i>_<index>`` (``_Arg``, attrs ``T``, ``index``), a fetched one
  ``_retval_<op>_<i>_<index>`` (``_Retval``, attrs ``T``, ``index``); ``index`` is the
  position among the run's feeds (fetches) sorted by name;
- client-terminated (``partial_run``): ``_recv_<op>_<i>`` (``_Recv``) and
  ``_send_<op>_<i>`` (``_Send``) with ``tensor_name`` = the tensor name, ``send_device`` =
  ``recv_device`` = the client, ``client_terminated=True``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from .device_set import incarnation_of

if TYPE_CHECKING:
    from ..framework.tensor import Tensor

_OP_TYPE = {("feed", True): "_Arg", ("fetch", True): "_Retval", ("feed", False): "_Recv", ("fetch", False): "_Send"}
_PREFIX = {"_Arg": "_arg_", "_Retval": "_retval_", "_Recv": "_recv_", "_Send": "_send_"}
_NAME = re.compile(r"^_(arg|retval|recv|send)_(.+)_(\d+)$")


def endpoint_name(op_type: str, tensor_name: str, index: int | None = None) -> str:
    """The node name of an endpoint: ``_arg_<op>_<output>_<index>`` (``_Arg``, ``_Retval``: ``index``
    required) or ``_recv_<op>_<output>`` (``_Recv``, ``_Send``) for tensor ``<op>:<output>``."""
    op_name, _, output = tensor_name.rpartition(":")
    name = f"{_PREFIX[op_type]}{op_name}_{output}"
    return name if op_type in ("_Recv", "_Send") else f"{name}_{index}"


def parse_endpoint_name(name: str) -> tuple[str, str, int | None] | None:
    """``(op type, tensor name, index or None)`` of an :func:`endpoint_name`; None for any other name."""
    match = _NAME.match(name)
    if match is None:
        return None
    kind, rest, last = match.groups()
    op_type = "_" + kind.capitalize()
    if op_type in ("_Recv", "_Send"):
        return op_type, f"{rest}:{last}", None
    op_name, sep, output = rest.rpartition("_")
    if not sep or not output.isdigit():
        return None
    return op_type, f"{op_name}:{output}", int(last)


def endpoint(role: str, tensor: Tensor, index: int, client: str,
             call_frame: bool = True) -> tuple[str, str, dict[str, Any]]:
    """``(name, op type, attrs)`` of the node on ``client`` through which ``tensor`` is fed (``role="feed"``:
    no inputs) or fetched (``"fetch"``: one input, ``tensor``); ``index``: its position among the run's
    feeds (fetches); ``call_frame`` False: a partial run's client-terminated endpoint."""
    op_type = _OP_TYPE[role, call_frame]
    dtype = tensor.dtype.base_dtype
    if call_frame:
        return endpoint_name(op_type, tensor.name, index), op_type, {"T": dtype, "index": index}
    dtype_attr = "tensor_type" if op_type == "_Recv" else "T"
    return endpoint_name(op_type, tensor.name), op_type, {dtype_attr: dtype,
                                                           **send_recv_attrs(tensor.name, client, client, True)}


def is_client_endpoint(node: Any) -> bool:
    """True for a feed or fetch endpoint (``_Arg``, ``_Retval``, or a client-terminated ``_Send``/``_Recv``)."""
    return node.op in ("_Arg", "_Retval") or bool(node.attrs.get("client_terminated"))


def check_endpoints(feeds: Sequence[Tensor], fetches: Sequence[Tensor]) -> None:
    """Raise ``InvalidArgumentError`` (``subgraph.cc``'s wording) for a feed given twice or a tensor both
    fed and fetched."""
    seen = set()
    for tensor in feeds:
        if tensor in seen:
            raise errors.InvalidArgumentError(None, None, f'Endpoint "{tensor.name}" fed more than once.')
        seen.add(tensor)
    for tensor in fetches:
        if tensor in seen:
            raise errors.InvalidArgumentError(None, None, f"{tensor.name} is both fed and fetched.")


def send_recv_attrs(tensor_name: str, send_device: str, recv_device: str,
                    client_terminated: bool) -> dict[str, Any]:
    """The attrs a ``_Send`` and its ``_Recv`` share (``graph_partition.cc``'s ``SetSendRecvAttrs``,
    ``subgraph.cc``'s client-terminated endpoints): ``tensor_name``, ``send_device``,
    ``send_device_incarnation`` (:func:`~dfcore.runtime.device_set.incarnation_of`), ``recv_device``,
    ``client_terminated``. The rendezvous key of the pair is built from them."""
    return {"tensor_name": tensor_name, "send_device": send_device,
            "send_device_incarnation": incarnation_of(send_device), "recv_device": recv_device,
            "client_terminated": client_terminated}
