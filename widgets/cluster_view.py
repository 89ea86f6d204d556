"""``ClusterView``: the jobs, tasks and devices of a cluster, and where the variables live.

Takes a ``ClusterSpec`` (or its dict), a running ``tf.train.Server``, or a ``Session``: a
session on a cluster target (``Session(server.target)``) shows the whole in-process
cluster, its own task outlined, and the variables of its graph on the tasks they were
placed on (assigned devices after a run, requested ones before); a local session shows
its one task. A graph built under ``replica_device_setter`` may be passed with a spec.

The picture (SVG) has one column per job and one box per task: its address, whether a
server runs it, its devices, and the variables it holds with their bytes; every worker
is joined to every ps task (they push gradients to and pull parameters from all of
them). Below: tables of tasks and of variables, and the ps load bars.
"""

import dataclasses

import ipywidgets as widgets

from dfcore.distribute import cluster_runtime
from dfcore.errors import UnavailableError
from dfcore.framework.device import DeviceSpec
from dfcore.train.cluster_spec import ClusterSpec
from dfcore.train.device_setter import STANDARD_PS_OPS, byte_size_load_fn, ps_load_table

from . import _check, _html, _palette, _ps_charts, _svg
from ._format import count, format_bytes
from ._static import StaticPicture

_BOX_W, _GAP_X, _GAP_Y, _LINE, _MAX_VARS = 250, 70, 12, 15, 6


@dataclasses.dataclass(frozen=True)
class VariablePlacement:
    """One variable op: name, type, shape (a list, None for unknown dims), dtype name, bytes
    (None if its shape is not fully known), requested and assigned device, and its task."""

    name: str
    op_type: str
    shape: tuple[int | None, ...]
    dtype: str
    nbytes: int | None
    requested_device: str
    assigned_device: str
    task: str


class ClusterView(StaticPicture, widgets.VBox):
    """Jobs, tasks and devices of a cluster; with a session or graph, the variables on each task.

    Args:
        cluster_spec_or_session: a ``ClusterSpec``, a dict for one, a ``ClusterDef``, a
            ``tf.train.Server`` or a ``Session``.
        graph: a graph whose variables to place on the tasks (default: a session's graph).
        width_px: width of the picture.

    Attributes:
        spec: the ``ClusterSpec``; tasks: a ``TaskInfo`` per task (job, task_index, address,
        task_name, devices, running); client_task: the session's or server's task (None for a
        spec); variables: a :class:`VariablePlacement` per variable op; ps_load: ``PsLoad`` s
        (empty without a ``ps`` job or variables); picture: the ``HTML`` with the SVG.

    Raises:
        TypeError: anything else, naming what it accepts (or what ``ClusterSpec`` raises for a
            malformed dict); a ``graph`` that is not a Graph.
    """

    def __init__(self, cluster_spec_or_session, graph=None, width_px=960, **kwargs):
        _check.expect("ClusterView", "cluster_spec_or_session", cluster_spec_or_session, _check.CLUSTER)
        _check.expect("ClusterView", "graph", graph, _check.GRAPH, optional=True)
        self.spec, self.tasks, self.client_task, session = _resolve(cluster_spec_or_session)
        if graph is None and session is not None:
            graph = session.graph
        records = {r.node_name: r for r in session.placement_records()} if session is not None else {}
        self.variables = tuple(_variables(graph, records, self.client_task)) if graph is not None else ()
        has_ps = any(t.job == "ps" for t in self.tasks)
        self.ps_load = (ps_load_table(graph, num_tasks=len([t for t in self.tasks if t.job == "ps"]))
                        if graph is not None and has_ps and self.variables else ())
        self.picture = widgets.HTML(self._svg(width_px), layout=widgets.Layout(overflow="auto"))
        parts = [widgets.HTML(self._header_html()), self.picture, widgets.HTML(self._tables_html(width_px))]
        super().__init__(parts, **kwargs)

    # -- pieces ------------------------------------------------------------------------------------
    def _jobs(self):
        jobs = []
        for t in self.tasks:
            if t.job not in jobs:
                jobs.append(t.job)
        return jobs

    def _header_html(self):
        devices = sum(len(t.devices) for t in self.tasks)
        text = (f"{count(len(self._jobs()), 'job')} ({', '.join(self._jobs())}), {count(len(self.tasks), 'task')}, "
                f"{count(devices, 'device')}")
        if self.client_task:
            text += f" · this session's (or server's) task: {self.client_task}"
        running = sum(t.running for t in self.tasks)
        note = (f"{running} of {len(self.tasks)} tasks have a running in-process server." if running else
                "No server runs these tasks yet: each would get the devices of its tf.train.Server's config "
                "(one CPU shown).")
        return _html.heading("cluster: " + text) + _html.note(note)

    def _task_lines(self, task):
        lines = [(f"{task.address} · {'running' if task.running else 'no server'}", "#555555")]
        mine = [v for v in self.variables if v.task == task.task_name]
        for v in mine[:_MAX_VARS]:
            shape = "×".join("?" if d is None else str(d) for d in v.shape) or "scalar"
            size = format_bytes(v.nbytes) if v.nbytes is not None else "? B"
            lines.append((f"{v.name} · {v.dtype} {shape} · {size}", _palette.INK))
        if len(mine) > _MAX_VARS:
            lines.append((f"+ {len(mine) - _MAX_VARS} more", "#555555"))
        if mine:
            total = sum(v.nbytes or 0 for v in mine)
            lines.append((f"{count(len(mine), 'variable')}, {format_bytes(total)}", _palette.INK))
        return lines, mine

    def _svg(self, width_px):
        jobs = self._jobs()
        box_w = min(_BOX_W, max(160, (width_px - _GAP_X * (len(jobs) - 1)) / max(len(jobs), 1)))
        boxes, parts, bottom = {}, [], 0
        for j, job in enumerate(jobs):
            x = j * (box_w + _GAP_X)
            parts.append(_svg.text(x, 14, f"job {job}", size=12, weight="bold"))
            y = 24
            for task in [t for t in self.tasks if t.job == job]:
                lines, _ = self._task_lines(task)
                chip_rows = -(-len(task.devices) // max(1, int((box_w - 12) // 62)))
                h = 22 + _LINE * len(lines) + 20 * chip_rows + 6
                boxes[task.task_name] = (x, y, h)
                parts.append(self._box(task, x, y, box_w, h, lines))
                y += h + _GAP_Y
            bottom = max(bottom, y)
        edges = []
        for ps in [t for t in self.tasks if t.job == "ps"]:
            for w in [t for t in self.tasks if t.job == "worker"]:
                (x1, y1, h1), (x2, y2, h2) = boxes[ps.task_name], boxes[w.task_name]
                a, b = ((x1 + box_w, y1 + h1 / 2), (x2, y2 + h2 / 2)) if x1 < x2 else \
                    ((x2 + box_w, y2 + h2 / 2), (x1, y1 + h1 / 2))
                edges.append(_svg.line(a[0], a[1], b[0], b[1], _palette.tint(_palette.TRANSFER, 0.45), 1.2))
        return _svg.document(len(jobs) * (box_w + _GAP_X) - _GAP_X, bottom, "".join(edges + parts))

    def _box(self, task, x, y, w, h, lines):
        client = task.task_name == self.client_task
        parts = [_svg.rect(x, y, w, h, "#FFFFFF" if task.running else "#F6F6F6", _palette.INK,
                           title=task.task_name, stroke_width=2.5 if client else 1,
                           dash=None if task.running else "4,3", rx=4),
                 _svg.text(x + 8, y + 16, f"{task.job} {task.task_index}", size=12, weight="bold"),
                 _svg.text(x + w - 8, y + 16, task.task_name + (" · this session" if client else ""), size=9,
                           anchor="end", fill="#555555")]
        ty = y + 16 + _LINE
        for content, color in lines:
            parts.append(_svg.text(x + 8, ty, content, size=10.5, fill=color))
            ty += _LINE
        per_row = max(1, int((w - 12) // 62))
        for i, device in enumerate(task.devices):
            cx, cy = x + 8 + (i % per_row) * 62, ty - 8 + (i // per_row) * 20
            label = DeviceSpec.from_string(device)
            parts.append(_svg.rect(cx, cy, 56, 16, _palette.device_fill(device), _palette.device_color(device),
                                   title=device))
            parts.append(_svg.text(cx + 28, cy + 12, f"{label.device_type}:{label.device_index}", size=10,
                                   anchor="middle"))
        return "".join(parts)

    def _tables_html(self, width_px):
        rows = [(t.task_name, t.address, "running" if t.running else "no server",
                 _html.Raw(" ".join(_html.device_chip(d) for d in t.devices))) for t in self.tasks]
        out = _html.heading("tasks") + _html.table(["task", "address", "server", "devices"], rows)
        if self.variables:
            vrows = [(v.name, v.op_type, str(list(v.shape)), v.dtype,
                      f"{v.nbytes:,} B" if v.nbytes is not None else "?", v.requested_device or "none",
                      v.assigned_device or "not placed yet") for v in self.variables]
            out += _html.heading("variables: requested and assigned devices") + _html.table(
                ["variable", "type", "shape", "dtype", "bytes", "requested device", "assigned device"], vrows,
                numeric=(4,), max_height_px=320)
        if self.ps_load:
            out += _ps_charts.ps_load_svg(self.ps_load, width_px)
        return out

    def __repr__(self):
        devices = sum(len(t.devices) for t in self.tasks)
        text = f"<ClusterView: {count(len(self._jobs()), 'job')}, {count(len(self.tasks), 'task')}, " \
               f"{count(devices, 'device')}"
        return text + (f", {count(len(self.variables), 'variable')}>" if self.variables else ">")


def _resolve(source):
    """``(spec, tasks, client task, session or None)`` of what :class:`ClusterView` was given."""
    cluster: cluster_runtime.InProcessCluster | None
    if hasattr(source, "sess_str") and hasattr(source, "list_devices"):
        target = source.sess_str
        if not target:
            devices = tuple(d.name for d in source.list_devices())
            task = cluster_runtime.task_of(devices[0]) if devices else "/job:localhost/replica:0/task:0"
            spec = DeviceSpec.from_string(task)
            info = cluster_runtime.TaskInfo(spec.job, spec.task or 0, "this process", task, devices, True)
            return ClusterSpec({spec.job: ["this process"]}), (info,), task, source
        cluster, task = cluster_runtime.cluster_for_target(target)
        return cluster.spec, cluster.task_info(), task, source
    if hasattr(source, "cluster_spec") and hasattr(source, "task_name"):
        cluster = cluster_runtime.cluster_of(source)
        spec = source.cluster_spec
        tasks = (cluster or cluster_runtime.InProcessCluster(spec)).task_info()
        return spec, tasks, source.task_name, None
    spec = ClusterSpec(source)
    cluster = _running_cluster(spec)
    return spec, (cluster or cluster_runtime.InProcessCluster(spec)).task_info(), None, None


def _running_cluster(spec):
    for job in spec.jobs:
        for index in spec.task_indices(job):
            try:
                cluster, _ = cluster_runtime.cluster_for_target(spec.task_address(job, index))
            except UnavailableError:
                continue
            if cluster.spec == spec:
                return cluster
    return None


def _variables(graph, records, client_task):
    for op in graph.get_operations():
        if op.type not in STANDARD_PS_OPS:
            continue
        record = records.get(op.name)
        assigned = record.assigned_device if record is not None else (op.assigned_device or "")
        where = assigned or op.device or ""
        spec = DeviceSpec.from_string(where)
        task = cluster_runtime.task_of(where) if spec.job else (client_task or "")
        try:
            nbytes = byte_size_load_fn(op)
        except ValueError:
            nbytes = None
        shape = op.outputs[0].shape
        dims = tuple(shape.as_list()) if shape.ndims is not None else ()
        yield VariablePlacement(op.name, op.type, dims, op.outputs[0].dtype.base_dtype.name, nbytes, op.device or "",
                                assigned, task)

