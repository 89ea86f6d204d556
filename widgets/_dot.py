"""Pure functions from dfcore records to Graphviz DOT text (no ipywidgets, no ``dot``).

- :func:`graph_dot`: the user's graph, ops coloured by device, one cluster per
  device, colocation groups outlined (dashed) inside their device's cluster,
  edges that cross devices drawn in the transfer colour, control edges dashed.
- :func:`partition_dot`: one device's partition graph; runtime-inserted
  ``_Send``/``_Recv`` nodes highlighted and labelled with their ``tensor_name``
  and rendezvous key; the nodes and edges of a control-edge pair dashed; the
  client's feed and fetch endpoints (``_Arg``/``_Retval`` of the call frame, or a
  partial run's client-terminated ``_Recv``/``_Send``) in the client grey; the copies of a loop's
  control that partitioning added (``<frame>/_cloop_<device>/…``) boxed as one dotted cluster per frame.
- Both take ``dead``: the names of nodes that ran dead in a run, drawn grey and dashed
  (see :func:`widgets._control_flow.dead_throughout`). Control-flow ops have their own shapes
  (:data:`widgets._palette.DOT_SHAPES`).

Everything is deterministic (op order, sorted devices), so the text can be
asserted in tests and compared across runs. Names are written as DOT quoted
strings through :func:`quote`.
"""

import html

from dfcore.framework.operation import Operation
from dfcore.runtime.partition_control_flow import control_loop_frame
from dfcore.runtime.sendrecv_ops import rendezvous_key
from dfcore.runtime.subgraph import is_client_endpoint, parse_endpoint_name

from . import _palette
from ._format import device_sort_key, short_device

_HEADER = (
    'graph [fontname="Helvetica", fontsize=11, nodesep=0.25, ranksep=0.35, newrank=true, '
    'labelloc=t, labeljust=l, pad=0.15];\n'
    '  node [fontname="Helvetica", fontsize=10, height=0.3, margin="0.08,0.03", penwidth=1.2, '
    f'color="{_palette.INK}", fontcolor="{_palette.INK}"];\n'
    '  edge [color="#555555", arrowsize=0.6, fontname="Helvetica", fontsize=9];'
)


def quote(text):
    """``text`` as a DOT quoted string: backslashes and double quotes escaped, each newline
    written as DOT's centred line break ``\\n``."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\r\n", "\n").replace("\n", "\\n") + '"'


class HtmlLabel(str):
    """The body of a Graphviz HTML-like label, written ``<...>`` instead of quoted."""


def html_lines(lines):
    """An :class:`HtmlLabel`: a borderless table of left-justified rows, each ``(text, point_size, bold)``.

    The text is escaped (``&``, ``<``, ``>``), so any name is safe; ``point_size`` None keeps
    the node's font size.
    """
    rows = []
    for text, size, bold in lines:
        body = html.escape(str(text), quote=False)
        body = f"<B>{body}</B>" if bold else body
        body = f'<FONT POINT-SIZE="{size}">{body}</FONT>' if size else body
        rows.append(f'<TR><TD ALIGN="LEFT">{body}</TD></TR>')
    return HtmlLabel('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">' + "".join(rows)
                     + "</TABLE>")


def _attrs(**attrs):
    """`` [k="v", ...]`` for the attrs that are not None (empty when none are).

    An :class:`HtmlLabel` value is written ``<...>``, anything else through :func:`quote`.
    """
    parts = [f"{k}=<{v}>" if isinstance(v, HtmlLabel) else f"{k}={quote(v)}"
             for k, v in attrs.items() if v is not None]
    return f" [{', '.join(parts)}]" if parts else ""


def _shows_type(name, op_type):
    base = name.rsplit("/", 1)[-1]
    return not (base == op_type or base.startswith(op_type + "_"))


def _node_line(name, op_type, device, label=None, dead=False, **extra):
    """A node statement; the default label is the name, and the type unless the name shows it.

    A ``dead`` node (it ran dead in the run shown) is grey and dashed, whatever ``extra`` says.
    """
    shape, style = _palette.dot_shape(op_type)
    if label is None:
        label = "\n".join([name, op_type] if _shows_type(name, op_type) else [name])
    attrs = {"label": label, "shape": shape, "style": style,
             "fillcolor": _palette.device_fill(device),
             "color": _palette.device_color(device) if device else _palette.INK}
    attrs.update(extra)
    if dead:
        attrs.update(fillcolor=_palette.DEAD_FILL, color=_palette.DEAD_INK, fontcolor=_palette.DEAD_INK,
                     style=style + ",dashed", tooltip=f"{attrs.get('tooltip') or name}: ran dead in this run")
    return f"{quote(name)}{_attrs(**attrs)};"


def _cluster(lines, index, title, color, fill, style, indent="  "):
    out = [f"{indent}subgraph {quote(f'cluster_{index}')} {{",
           f"{indent}  graph{_attrs(label=title, color=color, fillcolor=fill, style=style, fontcolor=color)};"]
    out += [f"{indent}  {line}" for line in lines]
    out.append(f"{indent}}}")
    return out


def _colocation_groups(ops, records):
    """op name → group label, for groups of two or more ops (the placer's, else ``_class`` attrs)."""
    if records:
        return {name: r.colocation_group for name, r in records.items() if r.colocation_group}
    members: dict[str, list[str]] = {}
    for op in ops:
        for group in op.colocation_groups:
            members.setdefault(group, []).append(op.name)
    groups: dict[str, str] = {}
    for group, names in sorted(members.items()):
        if len(names) > 1:
            for name in names:
                groups.setdefault(name, group)
    return groups


def op_device(op, records=None):
    """The device an op is drawn on: its placement record's, else its assigned or requested device."""
    record = (records or {}).get(op.name)
    if record is not None:
        return record.assigned_device
    return op.assigned_device or op.device or ""


def graph_dot(ops, records=None, id_prefix=None, title=None, dead=frozenset()):
    """DOT text of a user graph, one ``cluster_<i>`` per device (devices in reading order).

    Args:
        ops: the Operations to draw, in graph order (``graph.get_operations()``); inputs
            from ops not listed are left out.
        records: ``{op name: PlacementRecord}`` (``session.placement_records()``); without
            them ops sit on their assigned or requested device (``unplaced`` if none).
        id_prefix: when given, node ``i`` gets the SVG id ``<id_prefix><i>``.
        title: an optional graph label.
        dead: names of ops that ran dead in the run shown (grey, dashed; their out-edges grey).
    Returns:
        str: a ``digraph``; each colocation group of two or more ops is a dashed
        ``cluster_<i>_<j>`` inside its device's cluster.
    """
    ops = list(ops)
    records = dict(records or {})
    groups = _colocation_groups(ops, records)
    by_device: dict[str, list[tuple[int, Operation]]] = {}
    for index, op in enumerate(ops):
        by_device.setdefault(op_device(op, records), []).append((index, op))
    lines = []
    for d_index, device in enumerate(sorted(by_device, key=device_sort_key)):
        members = by_device[device]
        node_lines: list[str] = []
        by_group: dict[str, list[str]] = {}
        for index, op in members:
            node_id = f"{id_prefix}{index}" if id_prefix is not None else None
            line = _node_line(op.name, op.type, device, id=node_id, tooltip=f"{op.name} ({op.type}) on {device}",
                              dead=op.name in dead)
            if op.name in groups:
                by_group.setdefault(groups[op.name], []).append(line)
            else:
                node_lines.append(line)
        for g_index, group in enumerate(sorted(by_group)):
            node_lines += _cluster(by_group[group], f"{d_index}_{g_index}", group, _palette.INK, "white",
                                   "dashed,rounded,filled", indent="")
        color = _palette.device_color(device)
        lines += _cluster(node_lines, d_index, short_device(device), color, _palette.tint(color, 0.93),
                          "rounded,filled")
    lines += _edge_lines(ops, records, dead)
    head = f"  graph{_attrs(label=title)};\n" if title else ""
    return "digraph G {\n  " + _HEADER + "\n" + head + "\n".join(lines) + "\n}\n"


def carried_dead(src, src_type, dst, dead):
    """Whether the edge ``src`` → ``dst`` is drawn as carrying dead tensors, given the ``dead`` node names.

    Every output of a dead node is dead. A live ``Switch`` sends a dead tensor out of its untaken port,
    so its edge into a node that ran dead is drawn dead too (the consumers of the taken port ran live).
    """
    return src in dead or (dst in dead and _palette.op_kind(src_type) == "switch")


def _edge_lines(ops, records, dead):
    drawn = {op.name: op_device(op, records) for op in ops}
    lines = []
    for op in ops:
        for tensor in op.inputs:
            src = tensor.op.name
            if src not in drawn:
                continue
            attrs = {"label": f":{tensor.value_index}" if tensor.value_index else None}
            if drawn[src] != drawn[op.name]:
                attrs.update(color=_palette.TRANSFER, penwidth="1.6")
            if carried_dead(src, tensor.op.type, op.name, dead):
                attrs.update(color=_palette.DEAD_INK, style="dashed")
            lines.append(f"  {quote(src)} -> {quote(op.name)}{_attrs(**attrs)};")
        for control in op.control_inputs:
            if control.name in drawn:
                color = _palette.TRANSFER if drawn[control.name] != drawn[op.name] else None
                if carried_dead(control.name, control.type, op.name, dead):
                    color = _palette.DEAD_INK
                lines.append(f"  {quote(control.name)} -> {quote(op.name)}{_attrs(style='dashed', color=color)};")
    return lines


def wrapped_key(key):
    """A rendezvous key broken after each ``;`` (one field per line, nothing dropped)."""
    parts = key.split(";")
    return [part + ";" for part in parts[:-1]] + [parts[-1]]


def control_pair_nodes(partition):
    """Names of the nodes of ``partition`` that carry a control edge across devices.

    A control pair is a runtime-inserted ``Const`` → ``_Send`` on the source device and
    ``_Recv`` → inserted ``Identity`` on the destination (inserted nodes have no
    ``original`` op; a loop-control copy's ``Const`` and ``Identity`` are not a pair's).
    """
    nodes = {node.name: node for node in partition.nodes}
    dummies = {n.name for n in partition.nodes
               if n.original is None and n.op == "Const" and control_loop_frame(n.name) is None}
    names = set(dummies)
    for node in partition.nodes:
        sources = [i.lstrip("^").split(":")[0] for i in node.inputs]
        if node.op == "_Send" and any(s in dummies for s in sources):
            names.add(node.name)
        if node.op == "Identity" and node.original is None and control_loop_frame(node.name) is None:
            names.add(node.name)
            names.update(s for s in sources if s in nodes and nodes[s].op == "_Recv")
    return names


def _transfer_label(node):
    """The label of a ``_Send``/``_Recv`` pair end: name, direction, tensor name, then the key (small)."""
    attrs = node.attrs
    peer = attrs["recv_device"] if node.op == "_Send" else attrs["send_device"]
    arrow = "→" if node.op == "_Send" else "←"
    first, *rest = wrapped_key(rendezvous_key(node))
    return html_lines([(node.name, None, True), (f"{node.op} {arrow} {short_device(peer)}", None, False),
                       (f"tensor_name: {attrs['tensor_name']}", None, False), (f"key: {first}", 8, False),
                       *((f"     {part}", 8, False) for part in rest)])


def endpoint_summary(node):
    """What a client endpoint does, e.g. ``feed x:0 (arg 0)``, ``fetch y:0 (retval 1)``, ``fetch y:0 (rendezvous)``."""
    role = "feed" if node.op in ("_Arg", "_Recv") else "fetch"
    if node.op in ("_Arg", "_Retval"):
        parsed = parse_endpoint_name(node.name)
        tensor = parsed[1] if parsed else node.name
        return f"{role} {tensor} ({node.op[1:].lower()} {node.attrs['index']})"
    return f"{role} {node.attrs['tensor_name']} (rendezvous)"


def _endpoint_label(node):
    return html_lines([(node.name, None, True), (f"{node.op}: {endpoint_summary(node)}", None, False)])


def _is_pair_end(node):
    return node.op in ("_Send", "_Recv") and not node.attrs.get("client_terminated")


def partition_dot(partition, title=None, dead=frozenset()):
    """DOT text of one :class:`~dfcore.runtime.partition.PartitionGraph`.

    ``_Send``/``_Recv`` pair ends get the transfer colour, their ``tensor_name`` and their
    rendezvous key (``dfcore.runtime.sendrecv_ops.rendezvous_key``, one field per line);
    the client's feed/fetch endpoints (``_Arg``/``_Retval``, or client-terminated
    ``_Recv``/``_Send``) the client grey and what they feed or fetch
    (:func:`endpoint_summary`). Nodes and edges of a control pair
    (:func:`control_pair_nodes`) are dashed, as is every control input (``^x``). The nodes of each
    loop-control copy sit in a dotted cluster named after its frame; ``dead`` nodes (names) are grey.
    """
    device = partition.device
    control = control_pair_nodes(partition)
    lines: list[str] = []
    loops: dict[str, list[str]] = {}
    for node in partition.nodes:
        extra = {}
        if is_client_endpoint(node):
            extra = {"label": _endpoint_label(node), "penwidth": "2", "margin": "0.12,0.1",
                     "color": _palette.CLIENT, "tooltip": f"{node.name}: {endpoint_summary(node)}"}
        elif node.op in ("_Send", "_Recv"):
            extra = {"label": _transfer_label(node), "penwidth": "2", "margin": "0.12,0.1",
                     "color": _palette.TRANSFER,
                     "tooltip": f"{node.name}: {node.attrs['tensor_name']} | key {rendezvous_key(node)}"}
        if node.name in control:
            extra["style"] = _palette.dot_shape(node.op)[1] + ",dashed"
        line = _node_line(node.name, node.op, device, dead=node.name in dead, **extra)
        frame = control_loop_frame(node.name)
        if frame is None:
            lines.append("  " + line)
        else:
            loops.setdefault(frame, []).append(line)
    for index, frame in enumerate(sorted(loops)):
        lines += _cluster(loops[frame], f"cloop_{index}", f"control loop of {frame}", _palette.INK, "white",
                          "dotted,rounded")
    nodes = {node.name: node for node in partition.nodes}
    for node in partition.nodes:
        for text in node.inputs:
            is_control = text.startswith("^")
            src, _, index = text.lstrip("^").partition(":")
            if src not in nodes:
                continue
            dashed = is_control or (src in control and node.name in control)
            attrs = {"style": "dashed" if dashed else None, "label": f":{index}" if index else None}
            if _is_pair_end(node) or _is_pair_end(nodes[src]):
                attrs["color"] = _palette.TRANSFER
            if carried_dead(src, nodes[src].op, node.name, dead):
                attrs.update(color=_palette.DEAD_INK, style="dashed")
            lines.append(f"  {quote(src)} -> {quote(node.name)}{_attrs(**attrs)};")
    color = _palette.device_color(device)
    head = _attrs(label=title or short_device(device), fontcolor=color, bgcolor=_palette.tint(color, 0.95))
    return "digraph G {\n  " + _HEADER + f"\n  graph{head};\n" + "\n".join(lines) + "\n}\n"
