"""The one palette every view shares: device → colour, op kind → shape.

Colours are stable: they depend only on a device's type, index and task, never on
which other devices a session has, so ``GPU:2`` looks the same in every widget and
every lesson. GPU hues come from Okabe & Ito's colour-blind-safe set (then Paul
Tol's), CPUs are greys; yellow and vermillion are kept out of the device hues
because vermillion marks transfers (``_Send``/``_Recv``, flow arrows) and yellow
is unreadable on white.
"""

from dfcore.data.pipeline_run import split_lane_device
from dfcore.framework import registry
from dfcore.framework.device import DeviceSpec

#: Device hues for accelerators, by index (Okabe-Ito blue, orange, bluish green,
#: reddish purple, sky blue; then Tol's indigo, green, wine).
ACCELERATOR_HUES = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#332288", "#117733", "#882255")
#: CPU greys, by index (then task).
CPU_GREYS = ("#6E6E6E", "#8C8C8C", "#505050", "#A6A6A6")
#: Anything not placed yet.
UNPLACED = "#B0B0B0"
#: Transfers: ``_Send``/``_Recv`` outlines, transfer bars and flow arrows (Okabe-Ito vermillion).
TRANSFER = "#D55E00"
#: The client's feed and fetch endpoints: call-frame ``_Arg``/``_Retval`` (``Session.run``) and
#: client-terminated ``_Send``/``_Recv`` (``partial_run``).
CLIENT = "#7F7F7F"
#: An accelerator starved of input: the training side's wait in ``IteratorGetNext`` or for its feed_dict
#: (a dashed outline, so that it never reads as a transfer).
STARVED = "#B2182B"
#: Text and outlines.
INK = "#222222"
#: A node that ran dead in a run (the untaken branch of a ``tf.cond``): light fill, grey ink, dashed outline.
DEAD_FILL, DEAD_INK = "#F2F2F2", "#A6A6A6"

_KIND_BY_TYPE = {
    "_Send": "send", "_HostSend": "send",
    "_Recv": "recv", "_HostRecv": "recv",
    "_Arg": "arg", "_Retval": "retval",
    "VariableV2": "variable", "Variable": "variable", "VarHandleOp": "variable",
    "Const": "const",
    "Placeholder": "input", "PlaceholderWithDefault": "input",
    "NoOp": "control",
}

#: Graphviz node shape and extra style of each op kind. TF's graph visualizer draws every op as an ellipse,
#: so the control-flow shapes are dfcore's choice, after the roles in Yu et al. (EuroSys 2018, Fig. 3):
#: ``Switch`` a decision diamond, ``Merge`` a funnel (inverted triangle), ``Enter`` an arrow into the loop's
#: frame, ``Exit`` an arrow out of it, ``NextIteration`` a hexagon, ``LoopCond`` a marked diamond.
DOT_SHAPES = {
    "compute": ("box", "rounded,filled"),
    "const": ("note", "filled"),
    "variable": ("cylinder", "filled"),
    "input": ("invhouse", "filled"),
    "state": ("box3d", "filled"),
    "control": ("octagon", "filled"),
    "send": ("cds", "filled,bold"),
    "recv": ("box", "filled,bold,diagonals"),
    "arg": ("invtrapezium", "filled,bold"),
    "retval": ("trapezium", "filled,bold"),
    "switch": ("diamond", "filled"),
    "merge": ("invtriangle", "filled"),
    "enter": ("rarrow", "filled"),
    "exit": ("larrow", "filled"),
    "next_iteration": ("hexagon", "filled"),
    "loop_cond": ("Mdiamond", "filled"),
}


def op_kind(op_type):
    """The drawing kind of an op type: one of the keys of :data:`DOT_SHAPES`.

    ``_Send``/``_Recv`` are ``send``/``recv``, the call frame's ``_Arg``/``_Retval``
    ``arg``/``retval``; variables, constants, placeholders and
    ``NoOp`` have their own kinds; the control-flow primitives theirs (``switch``, ``merge``, ``enter``,
    ``exit``, ``next_iteration``, ``loop_cond``; ``ControlTrigger`` is ``control``); an op that updates a
    reference input (``Assign``, ``ApplyGradientDescent``, …) is ``state``; everything else ``compute``.
    """
    kind = _KIND_BY_TYPE.get(op_type)
    if kind is not None:
        return kind
    flow = registry.control_flow_kind(op_type)
    if flow is not None:
        return flow if flow in DOT_SHAPES else "control"
    return "state" if registry.ref_inputs(op_type) else "compute"


def dot_shape(op_type):
    """``(shape, style)`` Graphviz attributes for an op type."""
    return DOT_SHAPES[op_kind(op_type)]


def device_color(device):
    """The strong colour (``#rrggbb``) of a device name; :data:`UNPLACED` for ``""``/None.

    GPUs (and other accelerators) take hue ``(index + 3 * task) mod 8`` of
    :data:`ACCELERATOR_HUES`; CPUs a grey by ``index + task``.
    """
    if not device:
        return UNPLACED
    lane = split_lane_device(device)
    if lane is not None:  # an input-pipeline thread of a host: the host's colour
        return device_color(lane[0])
    spec = DeviceSpec.from_string(device)
    index = (spec.device_index or 0) + 3 * (spec.task or 0)
    if spec.device_type in (None, "CPU"):
        return CPU_GREYS[((spec.device_index or 0) + (spec.task or 0)) % len(CPU_GREYS)]
    return ACCELERATOR_HUES[index % len(ACCELERATOR_HUES)]


def device_fill(device):
    """A light tint of :func:`device_color` for node and bar fills (dark text stays readable)."""
    return tint(device_color(device), 0.72)


def tint(color, amount):
    """Mix ``#rrggbb`` with white; ``amount`` 0 keeps the colour, 1 gives white."""
    rgb = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02X}" for c in rgb)
