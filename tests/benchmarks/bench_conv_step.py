"""The conv net of issue 32 (:mod:`_conv_net`): each kernel of its SGD step, then the whole step, in dfcore,
in plain numpy and in TensorFlow.

Kernels (CPU time): dfcore's registered kernel called directly (no executor), its plain-numpy reference
(im2col + one GEMM, strided quarters for the pools), the bare GEMM of a convolution's size (the BLAS floor),
and TF's kernel (an eager ``tf.raw_ops`` call, which adds TF's eager dispatch of a few µs). Step: ``Session.run`` of the
``tf.layers`` graph in dfcore and in TF's ``compat.v1`` (one intra- and one inter-op thread), and the
hand-written numpy step (the floor). TF runs in a process of its own (:mod:`_tf_process`); its column is
left out without it. Each side's sample is timed where it runs and the sides alternate round by round,
ratios are medians of paired rounds. The step is timed twice: in wall time, and in CPU time (all threads of
each process), which a shared machine's load disturbs much less (TF hands each step to its inter-op thread
and back, and under load every such hand-off waits for the scheduler). Target (issue 32; printed, never
asserted): the step at most 1.5× TF's.
"""

import statistics

import numpy as np
from _conv_net import build_graph_step, kernel_cases, make_problem, numpy_step
from _tf_process import TFProcess, interleaved_timers, timer
from _timing import checked_graph_step, machine_load, median_ratio, one_blas_thread, report, target_row

import dfcore
from dfcore.framework import registry
from dfcore.ops.op_util import apply_op

KERNEL_ROUNDS, KERNEL_INNER = 21, 10
STEP_ROUNDS = 31
TARGET_VS_TF = 1.5


def dfcore_kernel(op_type, attrs, inputs):
    """dfcore's registered kernel of ``op_type`` built for a node on placeholders like ``inputs``, called on
    them (no executor): a no-argument callable."""
    with dfcore.Graph().as_default():
        placeholders = [dfcore.placeholder(dfcore.as_dtype(a.dtype), a.shape) for a in inputs]
        op = apply_op(op_type, placeholders, dict(attrs), op_type)
    compute = registry.kernel(op_type).build(op)
    return lambda: compute(*inputs)


def kernel_table(tf):
    """Time every kernel case on each side, interleaved, in CPU time; print a row per kernel."""
    cases = kernel_cases()
    if tf is not None:
        tf.setup("_conv_net:tf_kernels")
    timers, columns = [], []
    for label, op_type, attrs, _, inputs, reference, floor in cases:
        kernel = dfcore_kernel(op_type, attrs, inputs)
        np.testing.assert_allclose(kernel(), reference(*inputs), rtol=1e-4, atol=1e-4, err_msg=label)
        sides = {"dfcore": timer(kernel, KERNEL_INNER, "cpu"),
                 "numpy": timer(lambda r=reference, a=inputs: r(*a), KERNEL_INNER, "cpu")}
        if floor is not None:
            sides["gemm"] = timer(floor, KERNEL_INNER, "cpu")
        if tf is not None:
            sides["tf"] = tf.timer(label, KERNEL_INNER, "cpu")
        columns.append(list(sides))
        timers.append(list(sides.values()))
    flat = interleaved_timers([t for row in timers for t in row], KERNEL_ROUNDS)
    header = f"  {'kernel':<28}{'dfcore':>9}{'numpy':>9}{'GEMM':>9}{'TF':>9}{'/numpy':>9}{'/TF':>9}"
    print(f"kernels of the step, CPU µs per call (median of {KERNEL_ROUNDS} interleaved rounds of {KERNEL_INNER} "
          "calls; CPU time of all threads of each process)")
    print(header)
    for (label, *_), names in zip(cases, columns):
        samples = dict(zip(names, (flat.pop(0) for _ in names)))
        cells = [f"{statistics.median(samples[n]) * 1e6:9.1f}" if n in samples else f"{'-':>9}"
                 for n in ("dfcore", "numpy", "gemm", "tf")]
        ratios = [f"{median_ratio(samples['dfcore'], samples[n]):9.2f}" if n in samples else f"{'-':>9}"
                  for n in ("numpy", "tf")]
        print(f"  {label:<28}{''.join(cells)}{''.join(ratios)}")


def step_table(tf):
    """Time the whole step on each side, interleaved, in wall time and then in CPU time; print times and ratios."""
    params, images, labels = make_problem()
    numpy_params = [p.copy() for p in params]
    step, sess = checked_graph_step(dfcore, build_graph_step, numpy_step, params, images, labels, atol=1e-5)
    if tf is not None:
        tf.setup("_conv_net:tf_step")
    names = ("dfcore Session.run step", "numpy hand-written step (floor)", "TensorFlow compat.v1 Session.run step")
    rows = []
    with sess:
        for clock in ("wall", "cpu"):
            timers = [timer(step, clock=clock), timer(lambda: numpy_step(numpy_params, images, labels), clock=clock)]
            if tf is not None:
                timers.append(tf.timer("tf step", clock=clock))
            samples = interleaved_timers(timers, STEP_ROUNDS)
            rows += [(f"{name}, {clock} time", statistics.median(times) * 1e3, "ms")
                     for name, times in zip(names, samples)]
            rows.append(target_row(f"dfcore / numpy floor, {clock} time", median_ratio(samples[0], samples[1])))
            if tf is not None:
                rows.append(target_row(f"dfcore / TensorFlow, {clock} time", median_ratio(samples[0], samples[2]),
                                       TARGET_VS_TF))
    print(f"one SGD step (median of {STEP_ROUNDS} interleaved rounds; CPU time: all threads of each process)")
    report(rows)


def main():
    """Print the kernel table and the step's times and ratios, with the machine's load."""
    print("conv 3x3x16 -> max-pool 2 -> conv 3x3x32 -> max-pool 2 -> dense 10, batch 32, 16x16x1 float32; "
          + machine_load())
    tf = TFProcess.start()
    if tf is None:
        print(f"  (no TensorFlow column: {TFProcess.why})")
    try:
        kernel_table(tf)
        step_table(tf)
    finally:
        if tf is not None:
            tf.close()
    print("  after: " + machine_load())


if __name__ == "__main__":
    with one_blas_thread():
        main()
