"""First ``Session.run`` of a big graph: prune, place, optimize, partition and compile, as the graph grows.

The graphs (issue 32): ``chain``, ``y = y * c + b`` repeated, every 7th step on ``CPU:1`` (so the partitioner
cuts ~2/7 of the steps' edges with a ``_Send``/``_Recv`` pair), 10k and 40k ops (160k with ``--big``: about a
minute); ``gradient``, ``y = y * c`` repeated (5k, 10k and 20k multiplies) and its ``tf.gradients`` with
respect to the input (about 7 ops per multiply in all), where the gradient's build is timed too. Each size
runs in a fresh process (no heap left over from the smaller one). Printed: the first run's wall and CPU
time per size, per op, and the growth exponent between the smallest and the largest size
(``log(t2/t1) / log(n2/n1)``; 1.0 = linear; target <= 1.1); with TensorFlow (``--tf PYTHON``, an interpreter that
imports ``tensorflow``, never a dependency; else ``$DFCORE_TF_PYTHON`` as for the other benchmarks) TF's
``compat.v1`` first run of the same graph, in its own process, and the ratio (target <= 0.5). A third column, the
linear reference (:func:`reference_s`), times a pure-Python workload that is linear by construction at the same
sizes: on a machine whose caches a big heap outgrows, even it grows faster than linearly, and its exponent is the
floor to read the engines' against.
Never a pass/fail on time.

Usage: ``python tests/benchmarks/bench_first_run.py [--big] [--tf PYTHON] [--kind chain|gradient|both]``.
"""

import argparse
import gc
import math
import os
import subprocess
import sys
import time
import types

import _tf_process

SIZES = (10_000, 40_000)
BIG = 160_000
GRADIENT_SIZES = (5_000, 10_000, 20_000)  # multiplies of the gradient kind
REFERENCE_NODES_PER_OP = 3  # the linear reference's objects per op (a compile keeps ~30 small objects per op)
CROSS_EVERY = 7  # every 7th step on the other device


def build(v1, num_ops):
    """The chain in namespace ``v1`` (dfcore or ``tensorflow.compat.v1``): graph, input placeholder, output."""
    import numpy as np

    graph = v1.Graph()
    with graph.as_default():
        c = v1.constant(np.float32(1.0001), name="c")
        b = v1.constant(np.float32(0.5), name="b")
        x = v1.placeholder(v1.float32, [4], name="x")
        y = x
        for step in range(num_ops // 2):
            with v1.device("/cpu:1" if step % CROSS_EVERY == CROSS_EVERY - 1 else "/cpu:0"):
                y = y * c + b
    return graph, x, y


def build_gradient(v1, num_muls):
    """``y = x * c * c * ...`` (``num_muls`` multiplies) and ``dy/dx`` in namespace ``v1``: graph, input, gradient."""
    import numpy as np

    graph = v1.Graph()
    with graph.as_default():
        c = v1.constant(np.float32(1.0001), name="c")
        x = v1.placeholder(v1.float32, [4], name="x")
        y = x
        for _ in range(num_muls):
            y = y * c
        gradient = v1.gradients(y, x)[0]
    return graph, x, gradient


def first_run_s(engine, num_ops, kind="chain"):
    """Wall and CPU seconds of the first ``Session.run`` of the graph ``kind`` of size ``num_ops`` (the chain
    built beforehand; the gradient kind's ``tf.gradients`` call is timed with its run); the CPU time is the
    process's (it grows less with the load of a shared machine)."""
    import numpy as np

    if engine == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow.compat.v1 as v1

        v1.disable_eager_execution()
    else:
        import dfcore as v1
    if kind == "chain":
        graph, x, y = build(v1, num_ops)
        start, start_cpu = time.perf_counter(), time.process_time()
    else:  # the chain's own build is timed with its gradient's (it is small next to it)
        start, start_cpu = time.perf_counter(), time.process_time()
        graph, x, y = build_gradient(v1, num_ops)
    config = v1.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=1,
                            intra_op_parallelism_threads=1)
    with v1.Session(graph=graph, config=config) as sess:
        sess.run(y, {x: np.ones(4, np.float32)})
        return time.perf_counter() - start, time.process_time() - start_cpu


def reference_s(num_ops):
    """Wall and CPU seconds of a linear pure-Python workload sized like a compile of ``num_ops`` ops (the
    reference for what this machine's memory makes of "linear"): ``REFERENCE_NODES_PER_OP`` objects per op,
    each with a name, an input list, a tuple and a dict, and twelve passes that each build a users table and
    a state table over every node (what the graph optimizer's passes do), the collector off."""
    gc.disable()
    start, start_cpu = time.perf_counter(), time.process_time()
    nodes, previous = {}, None
    for i in range(num_ops * REFERENCE_NODES_PER_OP):
        node = types.SimpleNamespace(name=f"node_{i}", inputs=[previous] if previous else [])
        node.extra = (node.name, i, [i], {"i": i})
        nodes[node.name], previous = node, node
    for step in range(12):
        users = {name: set() for name in nodes}
        for name, node in nodes.items():
            for source in node.inputs:
                users[source.name].add(name)
        state = {name: (name, node.inputs, node.extra, step) for name, node in nodes.items()}
    assert len(state) == len(users)
    return time.perf_counter() - start, time.process_time() - start_cpu


def measure(python, engine, num_ops, kind="chain"):
    """Run :func:`first_run_s` in a fresh process of interpreter ``python``: ``(wall s, CPU s)``."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([python, os.path.join(here, "bench_first_run.py"), "--one", engine, str(num_ops), kind],
                         check=True, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                             p for p in (os.environ.get("PYTHONPATH"), here) if p)))
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def exponent(sizes, times):
    """Growth exponent between the first and the last size."""
    return math.log(times[-1] / times[0]) / math.log(sizes[-1] / sizes[0])


def table(kind, sizes, tf_python=None):
    """Print the first-run table of graph ``kind`` at ``sizes`` (dfcore, and TF when ``tf_python`` is given)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    what = (f"y = y*c + b (every {CROSS_EVERY}th step on CPU:1)" if kind == "chain"
            else "y = y*c and tf.gradients(y, x), gradient build included; sizes in multiplies")
    print(f"first Session.run of {what}, each size in a fresh process; "
          f"load average {load:.2f} on {os.cpu_count()} cores")
    engines = [("dfcore", sys.executable)] + ([("TensorFlow", tf_python)] if tf_python else [])
    engines.append(("linear reference", sys.executable))
    times = {name: [] for name, _ in engines}
    for n in sizes:  # the engines alternate, so a busy phase of the machine hits both
        for name, python in engines:
            engine = {"TensorFlow": "tensorflow", "linear reference": "reference"}.get(name, "dfcore")
            times[name].append(measure(python, engine, n, kind))
    for i, n in enumerate(sizes):
        cells = [f"{name} {t[i][0]:7.2f} s wall, {t[i][1]:7.2f} s CPU ({t[i][1] / n * 1e6:5.1f} us/op)"
                 for name, t in times.items()]
        if tf_python:
            cells.append("dfcore/TF {:.2f}x wall, {:.2f}x CPU (target <= 0.5)".format(
                *(times["dfcore"][i][k] / times["TensorFlow"][i][k] for k in (0, 1))))
        print(f"  {n:>7} ops: " + "; ".join(cells))
    for name, t in times.items():
        note = "this machine's floor for linear work" if name == "linear reference" else "target <= 1.1"
        print(f"  growth exponent {sizes[0]} -> {sizes[-1]} ops, {name} ({note}): "
              f"{exponent(sizes, [w for w, _ in t]):.2f} wall, {exponent(sizes, [c for _, c in t]):.2f} CPU")


def main(big=False, tf_python=None, kind="chain"):
    """Print the first-run tables of ``kind`` (``chain``, ``gradient`` or ``both``), with TF's column from
    ``tf_python``, else from ``$DFCORE_TF_PYTHON`` or this interpreter's TensorFlow (``make bench``'s rule)."""
    tf_python = tf_python or _tf_process.tf_python()
    if tf_python is None:
        print(f"(no TensorFlow column: {_tf_process.why_no_tf()}; or pass --tf)")
    if kind in ("chain", "both"):
        table("chain", SIZES + ((BIG,) if big else ()), tf_python)
        if not big:
            print("  (the 160k-op size: --big)")
    if kind in ("gradient", "both"):
        table("gradient", GRADIENT_SIZES, tf_python)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="also 160k ops (about a minute)")
    parser.add_argument("--tf", metavar="PYTHON", help="an interpreter that imports tensorflow: TF's column")
    parser.add_argument("--kind", choices=("chain", "gradient", "both"), default="both",
                        help="which graph: the chain, the multiply chain with its gradient, or both (default)")
    parser.add_argument("--one", nargs=3, metavar=("ENGINE", "OPS", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        engine, ops = args.one[0], int(args.one[1])
        print("{:.6f} {:.6f}".format(*(reference_s(ops) if engine == "reference" else
                                       first_run_s(engine, ops, args.one[2]))))
    else:
        main(args.big, args.tf, args.kind)
