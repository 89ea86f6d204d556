"""Issue 32's rows not measured elsewhere, dfcore against TensorFlow and against a numpy floor: the 1,000-add chain
with every rewrite off on both (per-op executor cost; floor: a loop of ``np.add``) and the MLP 784-256-10 step
(batch 64) split over 4 CPU devices with the gradients averaged on CPU:0 (floor: the numpy step on the whole
batch). The MLP step and the conv step have their own files (``bench_mlp_step.py``, ``bench_conv_step.py``).

TF runs in a process of its own (:mod:`_tf_process`); each side's sample is timed where it runs and the sides
alternate round by round, in wall time and then in CPU time (all threads of each process: much less disturbed
by a shared machine's load). Targets (issue 32; printed, never asserted): dfcore / TF at most 1.0 on both.
"""

import statistics

from _mlp_net import make_problem, naive_numpy_step
from _tf_cases import CHAIN_LENGTH, TOWERS, build_chain, chain_config, chain_feed, checked_towers
from _tf_process import TFProcess, interleaved_timers, timer
from _timing import machine_load, median_ratio, one_blas_thread, report, target_row
from bench_executor_overhead import numpy_chain

import dfcore
from dfcore.runtime.grappler import no_rewrite_session_config

REPEATS = 31
TARGET_VS_TF = 1.0


def _rows(title, scale, unit, samples, tf):
    """Report rows: each side's median (times ``scale``) and the paired ratios against the floor and TF."""
    names = ["dfcore", "numpy floor", "TensorFlow (own process)"][:len(samples)]
    rows = [(f"{title}: {name}", statistics.median(times) * scale, unit) for name, times in zip(names, samples)]
    rows.append(target_row(f"{title}: dfcore / numpy floor", median_ratio(samples[0], samples[1])))
    if tf is not None:
        rows.append(target_row(f"{title}: dfcore / TensorFlow", median_ratio(samples[0], samples[2]), TARGET_VS_TF))
    return rows


def main():
    """Measure both cases, TF's side in its worker, and print times and ratios with the machine's load."""
    print(f"dfcore vs TensorFlow 1.x graphs, one BLAS/intra-op thread each; {machine_load()}")
    tf = TFProcess.start()
    if tf is None:
        print(f"  (no TensorFlow column: {TFProcess.why})")
    graph, x, y = build_chain(dfcore)
    chain_sess = dfcore.Session(graph=graph, config=no_rewrite_session_config(chain_config(dfcore)))
    feed, one = {x: chain_feed()}, chain_feed()[0] + 1
    assert chain_sess.run(y, feed)[0] == CHAIN_LENGTH
    towers, towers_sess = checked_towers(dfcore)
    params, inputs, labels = make_problem()
    rows = []
    try:
        if tf is not None:
            tf.setup("_tf_cases:tf_cases")
        with chain_sess, towers_sess:
            for clock in ("wall", "cpu"):
                chain = [timer(lambda: chain_sess.run(y, feed), clock=clock),
                         timer(lambda: numpy_chain(chain_feed(), one), clock=clock)]
                step = [timer(towers, clock=clock),
                        timer(lambda: naive_numpy_step(params, inputs, labels), clock=clock)]
                if tf is not None:
                    chain.append(tf.timer("tf chain", clock=clock))
                    step.append(tf.timer("tf towers", clock=clock))
                rows += _rows(f"{CHAIN_LENGTH}-add chain, rewrites off, per op, {clock} time", 1e6 / CHAIN_LENGTH, "us",
                              interleaved_timers(chain, REPEATS), tf)
                rows += _rows(f"MLP step on {TOWERS} CPU towers, {clock} time", 1e3, "ms",
                              interleaved_timers(step, REPEATS), tf)
    finally:
        if tf is not None:
            tf.close()
    report(rows)
    print("  after: " + machine_load())


if __name__ == "__main__":
    with one_blas_thread():
        main()
