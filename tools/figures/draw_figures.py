"""Draw each lesson's figure: its central idea as a Graphviz diagram, written to ``notebooks/figures/``.

Usage: ``python tools/figures/draw_figures.py [NAME ...]`` (all figures by default; needs Graphviz's ``dot``).
The colours are the widgets' (``widgets/_palette.py``): a device keeps its hue in every figure and every
widget, vermillion marks transfers. The output is deterministic: Graphviz's comments (its version, the
graph's title) are removed, so re-drawing an unchanged figure reproduces its bytes
(``tests/notebooks/test_figures.py`` checks it).
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from widgets import _palette  # noqa: E402  (the repository root goes on the path first)

FIGURES = REPO / "notebooks" / "figures"
CPU, GPU0, GPU1, GPU2, GPU3 = (_palette.device_color(d) for d in
                               ("/device:CPU:0", "/device:GPU:0", "/device:GPU:1", "/device:GPU:2", "/device:GPU:3"))
GPUS = (GPU0, GPU1, GPU2, GPU3)
SEND = _palette.TRANSFER
INK = _palette.INK
HEAD = (f'  graph [fontname="Helvetica", fontsize=12, nodesep=0.3, ranksep=0.4, pad=0.2, labelloc=t, '
        f'fontcolor="{INK}"];\n'
        f'  node [fontname="Helvetica", fontsize=11, shape=box, style="rounded,filled", fillcolor=white, '
        f'color="{INK}", fontcolor="{INK}", height=0.3, margin="0.1,0.04", penwidth=1.2];\n'
        f'  edge [fontname="Helvetica", fontsize=10, color="#555555", fontcolor="#333333", arrowsize=0.7];\n')


def tint(color: str) -> str:
    """A light fill of a device colour."""
    return _palette.tint(color, 0.85)


def digraph(body: str, rankdir: str = "LR") -> str:
    return f"digraph G {{\n  rankdir={rankdir};\n{HEAD}{body}\n}}\n"


def device(name: str, label: str, color: str, body: str, style: str = "rounded") -> str:
    return (f'  subgraph cluster_{name} {{ label="{label}"; style="{style},filled"; color="{color}"; '
            f'fillcolor="{tint(color)}"; fontcolor="{INK}"; penwidth=1.5;\n{body}\n  }}\n')


def course_map() -> str:
    groups = [("one", "one process, many devices", ["01 dataflow graph", "02 placement", "03 partitioning, Send/Recv",
                                                   "04 towers", "05 ring all-reduce"]),
              ("many", "many tasks: parameter servers and clusters",
               ["06a sync and async PS", "06b SSP, bounded delay", "07 in-graph, between-graph",
                "08 processes over MPI", "09 servers over gRPC"]),
              ("deep", "inside the engine", ["10 placement by cost, model parallelism", "11 input pipelines",
                                             "12 control flow as dataflow"])]
    body, previous = [], None
    for index, (name, label, lessons) in enumerate(groups):
        nodes = "\n".join(f'    l_{name}_{i} [label="{lesson}"];' for i, lesson in enumerate(lessons))
        chain = " -> ".join(f"l_{name}_{i}" for i in range(len(lessons)))
        body.append(device(name, label, (CPU, GPU0, GPU2)[index], f"{nodes}\n    {chain};"))
        if previous:
            body.append(f"  {previous} -> l_{name}_0 [constraint=false];")
        previous = f"l_{name}_{len(lessons) - 1}"
    return digraph("\n".join(body), rankdir="TB")


def dataflow_graph() -> str:
    return digraph(f"""
  x [label="x (placeholder)", shape=ellipse];
  w1 [label="w1 (variable)", shape=ellipse]; w2 [label="w2 (variable)", shape=ellipse];
  m1 [label="MatMul", fillcolor="{tint(GPU0)}"]; m2 [label="MatMul_1", fillcolor="{tint(GPU1)}"];
  add [label="Add"]; fetch [label="fetch: sess.run(add)", shape=note];
  x -> m1; w1 -> m1; x -> m2; w2 -> m2; m1 -> add; m2 -> add; add -> fetch;
  note [shape=plaintext, style="", label="MatMul and MatMul_1 do not depend on each other:\\n"
        + "once x is fed, the executor may run them at the same time\\non two inter-op threads"];
  {{rank=same; m2; note}}
  m2 -> note [style=invis];""")


def placement() -> str:
    cpu = device("cpu", "/job:worker/task:0/device:CPU:0", CPU, f"""
    subgraph cluster_coloc {{ label="colocation group (loc:@w)"; style=dashed; color="{INK}"; fillcolor=white;
      w [label="w (VariableV2)"]; assign [label="w/Assign"]; read [label="w/read"]; }}
    x [label="x (Placeholder)"];""")
    gpu = device("gpu", "/job:worker/task:0/device:GPU:0", GPU0, """
    mm [label="MatMul"]; relu [label="Relu"];""")
    return digraph(f"""{cpu}{gpu}
  x -> mm [color="{SEND}", penwidth=1.6, label="crosses devices"]; read -> mm [color="{SEND}", penwidth=1.6];
  w -> read; w -> assign [dir=back]; mm -> relu;""")


def partitioning() -> str:
    before = device("before", "the graph as built", "#A6A6A6", f"""
    a [label="a (on CPU:0)", fillcolor="{tint(CPU)}"]; b [label="b (on GPU:0)", fillcolor="{tint(GPU0)}"];
    a -> b [color="{SEND}", penwidth=1.6];""")
    cpu = device("p_cpu", "partition of CPU:0", CPU, f"""
    a2 [label="a"]; send [label="_Send\\ntensor_name=edge_3_a", color="{SEND}", penwidth=2];
    a2 -> send;""")
    gpu = device("p_gpu", "partition of GPU:0", GPU0, f"""
    recv [label="_Recv\\ntensor_name=edge_3_a", color="{SEND}", penwidth=2]; b2 [label="b"];
    recv -> b2;""")
    return digraph(f"""{before}{cpu}{gpu}
  rendezvous [shape=cylinder, label="rendezvous\\nkey: CPU:0;<incarnation>;GPU:0;edge_3_a;0:0",
              fillcolor="#FFF4E5", color="{SEND}"];
  b -> a2 [style=invis]; send -> rendezvous [color="{SEND}", label="puts"];
  rendezvous -> recv [color="{SEND}", label="takes"];""", rankdir="TB")


def towers() -> str:
    cpu = device("cpu", "CPU:0", CPU, """
    batch [label="batch (4 slices)"];""")
    reduce = device("cpu2", "CPU:0", CPU, """
    avg [label="average_gradients"]; apply [label="apply_gradients"]; vars [label="variables"];""")
    parts = []
    for i, color in enumerate(GPUS):
        parts.append(device(f"g{i}", f"GPU:{i}", color, f'    t{i} [label="tower {i}: loss and gradients"];'))
    edges = "\n".join(f"  batch -> t{i} [label=\"slice {i}\"]; t{i} -> avg [color=\"{SEND}\"];" for i in range(4))
    return digraph(cpu + "".join(parts) + reduce + edges + '\n  avg -> apply -> vars;'
                   '\n  note [shape=note, label="every tower reads the variables on CPU:0"];'
                   '\n  vars -> note [style=invis];',
                   rankdir="TB")


def ring() -> str:
    def table(title: str, rows: list[list[str]]) -> str:
        head = "".join(f'<TD><B>chunk {c}</B></TD>' for c in range(4))
        body = "".join(f'<TR><TD BGCOLOR="{tint(GPUS[g])}"><B>GPU:{g}</B></TD>'
                       + "".join(f'<TD BGCOLOR="{"#FBE3D1" if cell == "sum" else "white"}">{cell}</TD>'
                                 for cell in row) + "</TR>" for g, row in enumerate(rows))
        return (f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">'
                f'<TR><TD COLSPAN="5"><B>{title}</B></TD></TR><TR><TD></TD>{head}</TR>{body}</TABLE>>')
    own = [["sum" if (c == (g + 1) % 4) else "part" for c in range(4)] for g in range(4)]
    full = [["sum"] * 4 for _ in range(4)]
    start = [[f"g{g}[{c}]" for c in range(4)] for g in range(4)]
    return digraph(f"""
  s0 [shape=plaintext, style="", label={table("before: each GPU holds its gradient", start)}];
  s1 [shape=plaintext, style="", label={table("after scatter-reduce (N−1 steps)", own)}];
  s2 [shape=plaintext, style="", label={table("after allgather (N−1 steps)", full)}];
  s0 -> s1 [label="  step s: GPU i sends chunk (i−s) mod N\\n  to GPU i+1, which adds it", color="{SEND}"];
  s1 -> s2 [label="  the reduced chunks go round\\n  the ring once more", color="{SEND}"];""", rankdir="TB")


def sync_replicas() -> str:
    ps = device("ps", "/job:ps/task:0", CPU, """
    acc [label="ConditionalAccumulator per variable\\n(drops gradients older than global_step)"];
    take [label="chief: take_grad(N) → apply_gradients\\nglobal_step + 1"];
    tokens [label="sync_token_q (FIFOQueue)\\nN tokens = new global_step"];
    acc -> take -> tokens;""")
    workers = "".join(device(f"w{i}", f"/job:worker/task:{i}", GPUS[i], f'    w{i}s [label="compute gradients"];')
                      for i in range(2))
    return digraph(f"""{ps}{workers}
  w0s -> acc [label="1. apply_grad(local_step)", color="{SEND}"]; w1s -> acc [color="{SEND}"];
  tokens -> w0s [label="2. then dequeue a token\\n→ local_step", style=dashed];
  tokens -> w1s [style=dashed];""", rankdir="TB")


def ssp_window() -> str:
    clocks = 8
    done = {0: 6, 1: 5, 2: 4, 3: 3}
    rows = []
    for w in range(4):
        cells = "".join(f'<TD BGCOLOR="{tint(GPUS[w]) if c < done[w] else "white"}">'
                        f'{"✓" if c < done[w] else ""}</TD>' for c in range(clocks))
        rows.append(f'<TR><TD><B>worker {w}</B></TD>{cells}</TR>')
    head = "".join(f"<TD><B>{c}</B></TD>" for c in range(clocks))
    label = (f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="5"><TR><TD>clock</TD>{head}</TR>'
             f'{"".join(rows)}</TABLE>>')
    return digraph(f"""
  t [shape=plaintext, style="", label={label}];
  n [shape=note, label="SSP, s = 3: worker 0 has finished clock 5; it may start clock 6 once the slowest\\n"
     + "(worker 3) has finished clock 6 − 3 − 1 = 2: done.\\n"
     + "It may not start clock 7 until worker 3 finishes clock 3.\\n"
     + "It reads every update older than its clock − s, and maybe newer ones."];
  t -> n [style=invis];""", rankdir="TB")


def replication() -> str:
    ps = device("ps", "/job:ps/task:0", CPU, '    v [label="variables"];')
    left = device("in", "in-graph: one client, one graph", "#A6A6A6", f"""
    client [label="client (one Python process)"];
    t0 [label="tower on worker 0", fillcolor="{tint(GPU0)}"]; t1 [label="tower on worker 1", fillcolor="{tint(GPU1)}"];
    client -> t0; client -> t1;""")
    right = device("between", "between-graph: a client and a graph per worker", "#A6A6A6", f"""
    c0 [label="worker 0's program\\n(replica_device_setter)", fillcolor="{tint(GPU0)}"];
    c1 [label="worker 1's program\\n(replica_device_setter)", fillcolor="{tint(GPU1)}"];""")
    return digraph(f"""{left}{right}{ps}
  t0 -> v [color="{SEND}", dir=both]; t1 -> v [color="{SEND}", dir=both];
  c0 -> v [color="{SEND}", dir=both, label="pull / push"]; c1 -> v [color="{SEND}", dir=both];""", rankdir="TB")


def mpi_job() -> str:
    ranks = [("ps", "/job:ps/task:0", CPU), ("w0", "/job:worker/task:0", GPU0), ("w1", "/job:worker/task:1", GPU1)]
    body = "".join(device(name, f"rank {r}: {task}", color,
                          f'    {name}p [label="python -m mpi4py train.py\\n(tf.train.Server)"];')
                   for r, (name, task, color) in enumerate(ranks))
    return digraph(f"""
  mpiexec [label="python -m dfcore.launch --ps 1 --workers 2\\n→ mpiexec -n 3", shape=box];
{body}
  mpiexec -> psp; mpiexec -> w0p; mpiexec -> w1p;
  w0p -> psp [color="{SEND}", label="_Send/_Recv = one MPI message\\n(same rendezvous key)", dir=both];
  w1p -> psp [color="{SEND}", dir=both];
  w0p -> w1p [color="{SEND}", style=dashed, label="Allreduce on the\\nworkers' communicator", dir=both];""",
                   rankdir="TB")


def grpc_cluster() -> str:
    return digraph(f"""
  cfg [shape=note, label="TF_CONFIG, or --ps_hosts,\\n--worker_hosts, --job_name,\\n--task_index"];
  master [label="worker 0 process (127.0.0.1:2223)\\n"
          + "Session(server.target): its master\\nprunes, places and partitions",
          fillcolor="{tint(GPU0)}"];
  w0w [label="worker 0's WorkerService", fillcolor="{tint(GPU0)}"];
  psw [label="ps process (127.0.0.1:2222)\\ntf.train.Server: WorkerService", fillcolor="{tint(CPU)}"];
  cfg -> master [style=dashed];
  master -> psw [color="{SEND}", label="gRPC: RegisterGraph,\\nRunGraph (its partition)"];
  master -> w0w [label="RunGraph"];
  w0w -> psw [color="{SEND}", label="RecvTensor\\n(the tensor comes back)"];""", rankdir="TB")


def model_parallel() -> str:
    layer = "".join(device(f"l{i}", f"GPU:{i}", GPUS[i], f'    layer{i} [label="layer {i + 1}"];') for i in range(4))
    column = (device("c0", "GPU:0", GPU0, '    y0 [label="x · W[:, :n/2]"];')
              + device("c1", "GPU:1", GPU1, '    y1 [label="x · W[:, n/2:]"];'))
    row = (device("r0", "GPU:2", GPU2, '    p0 [label="x[:, :k/2] · W[:k/2, :]"];')
           + device("r1", "GPU:3", GPU3, '    p1 [label="x[:, k/2:] · W[k/2:, :]"];'))
    return digraph(f"""
  subgraph cluster_layer {{ label="layer split: whole layers on each device"; style=dashed;
{layer}  }}
  subgraph cluster_tensor {{ label="tensor split (Megatron-LM): one layer's W across devices"; style=dashed;
{column}{row}
    concat [label="concat / all-gather\\n(column split)"]; allreduce [label="all-reduce (sum)\\n(row split)"];
  }}
  layer0 -> layer1 -> layer2 -> layer3 [color="{SEND}", label="activations"];
  y0 -> concat [color="{SEND}"]; y1 -> concat [color="{SEND}"];
  p0 -> allreduce [color="{SEND}"]; p1 -> allreduce [color="{SEND}"];""", rankdir="LR")


def input_pipeline() -> str:
    cpu = device("cpu", "CPU: tf.data, in the background", CPU, """
    read [label="read files"]; map [label="map(decode)\\nnum_parallel_calls = P"]; batch [label="batch"];
    prefetch [label="prefetch buffer", shape=cylinder];
    read -> map -> batch -> prefetch;""")
    gpu = device("gpu", "GPU: the training step", GPU0, '    step [label="get_next → step"];')
    return digraph(f"""{cpu}{gpu}
  prefetch -> step [color="{SEND}", label="copy"];
  note [shape=note, label="overlapped, the period is max(m / P, copy + s) instead of m + copy + s:\\n"
        + "the next batch is prepared while the step runs"];
  step -> note [style=invis];""", rankdir="TB")


def while_loop() -> str:
    return digraph(f"""
  enter [label="Enter (frame \\"while\\")"]; merge [label="Merge", shape=invtrapezium];
  cond [label="Less (i < n)"]; loopcond [label="LoopCond"]; switch [label="Switch", shape=trapezium];
  body [label="body: Add (i + 1)"]; nextit [label="NextIteration"];
  exit [label="Exit"];
  i0 [label="i = 0", shape=ellipse]; out [label="result", shape=ellipse];
  i0 -> enter -> merge -> switch; merge -> cond -> loopcond; loopcond -> switch [label="pred"];
  switch -> body [label="true"]; body -> nextit; nextit -> merge [label="next iteration", color="{SEND}"];
  switch -> exit [label="false: the loop ends"]; exit -> out;""", rankdir="TB")


#: figure file (without .svg) -> the function drawing it; the leading number is the lesson's.
FIGURES_BY_NAME = {
    "00_course_map": course_map, "01_dataflow_graph": dataflow_graph, "02_placement": placement,
    "03_partitioning": partitioning, "04_towers": towers, "05_ring_all_reduce": ring,
    "06a_sync_replicas": sync_replicas, "06b_ssp_window": ssp_window, "07_replication": replication,
    "08_mpi_job": mpi_job, "09_grpc_cluster": grpc_cluster, "10_model_parallelism": model_parallel,
    "11_input_pipeline": input_pipeline, "12_while_loop": while_loop,
}


def render(dot_source: str) -> bytes:
    """SVG bytes of a DOT graph, without Graphviz's comments (its version and the graph's title)."""
    svg = subprocess.run(["dot", "-Tsvg"], input=dot_source.encode(), capture_output=True, check=True).stdout
    return re.sub(rb"<!--.*?-->\n?", b"", svg, flags=re.DOTALL)


def main(names: list[str]) -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    for name in names or list(FIGURES_BY_NAME):
        (FIGURES / f"{name}.svg").write_bytes(render(FIGURES_BY_NAME[name]()))
        print(f"notebooks/figures/{name}.svg")


if __name__ == "__main__":
    main(sys.argv[1:])
