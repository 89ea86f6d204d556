"""One synchronous parameter-server step vs the data movement it cannot avoid, in plain numpy.

The engine side: N workers (between-graph, one graph and session each) on an in-process
cluster with one ps task push a float32 gradient of S bytes into the variable's
``ConditionalAccumulator`` (``SyncReplicasOptimizer``'s worker push ops, gradient fed),
the chief runs the sync op (take the average, apply SGD, increment the global step,
enqueue N tokens) and every worker takes its token. The reference: N × (one copy of the
gradient, as the transfer to the ps, + one in-place add into an accumulator) in numpy.
Ratio of paired, interleaved samples (target ≤ 1.5×); never a pass/fail on time.

Also one ``async`` and one ``ssp`` update of the digits MLP in the simulated driver
(:func:`dfcore.distribute.parameter_server.train`, 4 workers): µs of Python per update, as the
difference of a run of 2K and one of K updates over K (the cluster, graphs and final evaluation
cancel out), median of paired samples.
"""

import statistics

import numpy as np
from _timing import interleaved_samples_s, median_ratio, one_blas_thread, report

import dfcore as tf
from dfcore.distribute import parameter_server

REPEATS = 15
TARGET_RATIO = 1.5
CPU_ONLY = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})


def ps_step(num_workers, num_elements, run_id):
    """A no-argument callable running one sync step, and a cleanup callable."""
    spec = tf.train.ClusterSpec({"ps": [f"ps.bench{run_id}:1"],
                                 "worker": [f"w{i}.bench{run_id}:1" for i in range(num_workers)]})
    servers = [tf.train.Server(spec, "ps", 0, config=CPU_ONLY)]
    servers += [tf.train.Server(spec, "worker", i, config=CPU_ONLY) for i in range(num_workers)]
    rng = np.random.default_rng(0)
    workers = []
    for i in range(num_workers):
        graph = tf.Graph()
        with graph.as_default(), tf.device(tf.train.replica_device_setter(
                cluster=spec, worker_device=f"/job:worker/task:{i}")):
            step = tf.train.get_or_create_global_step()
            w = tf.Variable(tf.zeros([num_elements]), name="w")
            grad = tf.placeholder(tf.float32, [num_elements], name="grad")
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.01), num_workers)
            opt.apply_gradients([(grad, w)], global_step=step)
            with tf.device(step.device):
                token = tf.assign(opt.local_step, opt.sync_token_queue.dequeue())
            init, local_init = tf.global_variables_initializer(), tf.local_variables_initializer()
        sess = tf.Session(servers[1 + i].target, graph=graph)
        workers.append(dict(sess=sess, opt=opt, grad=grad, token=token, init=init, local_init=local_init,
                            value=rng.standard_normal(num_elements).astype(np.float32)))
    chief = workers[0]
    chief["sess"].run(chief["init"])
    for worker in workers:
        worker["sess"].run(worker["local_init"])
    chief["sess"].run(chief["opt"].chief_init_op)
    pushes = [(wk["sess"], wk["opt"].worker_push_ops, {wk["grad"]: wk["value"]}) for wk in workers]

    def run():
        for sess, push, feed in pushes:
            sess.run(push, feed)
        chief["sess"].run(chief["opt"].sync_op)
        for worker in workers:
            worker["sess"].run(worker["token"])

    def close():
        for worker in workers:
            worker["sess"].close()
        for server in servers:
            server.stop()

    return run, close


def numpy_step(num_workers, num_elements):
    """N × (copy the gradient, add it in place into the accumulator)."""
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(num_elements).astype(np.float32) for _ in range(num_workers)]
    accumulator = np.zeros(num_elements, np.float32)

    def run():
        for g in grads:
            received = g.copy()
            np.add(accumulator, received, out=accumulator)

    return run


def simulated_update_us(mode, updates=60, repeats=3, **kwargs):
    """µs per update of ``mode`` in the simulated driver: (run of 2K updates − run of K) / K, median of pairs."""
    def run(steps):
        return lambda: parameter_server.train(mode=mode, steps=steps, eval_every=0, **kwargs)

    short, long = interleaved_samples_s([run(updates), run(2 * updates)], repeats, warmup=1)
    return statistics.median((b - a) / updates for a, b in zip(short, long)) * 1e6


def main():
    """Print the step times and their paired ratio for a few sizes and worker counts, then the simulated
    driver's async and SSP updates."""
    rows = []
    for run_id, (num_workers, nbytes) in enumerate([(4, 16 * 2**20), (4, 4 * 2**20), (8, 4 * 2**20)]):
        n = nbytes // 4
        engine, close = ps_step(num_workers, n, run_id)
        reference = numpy_step(num_workers, n)
        try:
            engine_t, numpy_t = interleaved_samples_s([engine, reference], REPEATS, warmup=2)
        finally:
            close()
        label = f"{num_workers} workers, {nbytes // 2**20} MiB"
        rows += [(f"{label}: sync PS step", statistics.median(engine_t) * 1e3, "ms"),
                 (f"{label}: numpy N x (copy + add)", statistics.median(numpy_t) * 1e3, "ms"),
                 (f"{label}: ratio (paired; target <= {TARGET_RATIO})", median_ratio(engine_t, numpy_t), "x")]
    print(f"one synchronous PS step (push, take + apply, tokens); median of {REPEATS} interleaved rounds")
    report(rows)
    print("one update of the digits MLP in the simulated driver (4 workers, 1 ps): Python per update")
    report([("async update", simulated_update_us("async"), "us"),
            ("ssp update (s = 1)", simulated_update_us("ssp", staleness=1), "us")])


if __name__ == "__main__":
    with one_blas_thread():
        main()
