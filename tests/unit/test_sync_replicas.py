"""SyncReplicasOptimizer: TF1's accumulators, token queue, chief ops, staleness and backup workers."""

import threading

import numpy as np
import pytest

import dfcore as tf

CPU_ONLY = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})


def _model(replicas=2, total=2, worker=0, cluster=None, lr=0.1):
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{worker}") \
            if cluster is not None else None
        with tf.device(setter):
            gs = tf.train.get_or_create_global_step()
            w = tf.Variable([1.0, 2.0], name="w")
            x = tf.placeholder(tf.float32, [2], name="x")
            loss = tf.reduce_sum(w * x)
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(lr), replicas, total)
            train_op = opt.minimize(loss, global_step=gs)
            init, local_init = tf.global_variables_initializer(), tf.local_variables_initializer()
    return dict(graph=graph, gs=gs, w=w, x=x, opt=opt, train=train_op, init=init, local_init=local_init)


def test_errors_use_tf_wording():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(1.0)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
        with pytest.raises(ValueError, match="Should be called after apply_gradients"):
            opt.get_chief_queue_runner()
        with pytest.raises(ValueError, match="should be called after apply_gradients"):
            opt.get_init_tokens_op()
        with pytest.raises(ValueError, match="Global step is required to check staleness"):
            opt.apply_gradients([(tf.constant(1.0), v)])
        with pytest.raises(ValueError, match="Must supply at least one variable"):
            opt.apply_gradients([], global_step=tf.train.get_or_create_global_step())
    m = _model(replicas=3, total=2)
    with m["graph"].as_default(), pytest.raises(ValueError, match=r"Too few tokens to finish the first step: 0 "
                                                                   r"\(given\) vs 1 \(needed\)"):
        m["opt"].get_init_tokens_op(0)


def test_placement_and_names_under_replica_device_setter():
    cluster = {"ps": ["p0:1"], "worker": ["w0:1", "w1:1"]}
    m = _model(cluster=cluster, worker=1)
    opt = m["opt"]
    (accumulator, device), = opt.accumulators
    assert device == "/job:ps/task:0" and accumulator.accumulator_ref.op.device == "/job:ps/task:0"
    assert accumulator.accumulator_ref.op.get_attr("shared_name") == "w:0/grad_accum"
    assert opt.sync_token_queue.queue_ref.op.get_attr("shared_name") == "sync_token_q"
    assert opt.sync_token_queue.queue_ref.op.device == "/job:ps/task:0"
    assert opt.local_step.op.name == "sync_rep_local_step"
    assert opt.local_step.op.device == "/job:worker/task:1"
    assert opt.local_step in m["graph"].get_collection(tf.GraphKeys.LOCAL_VARIABLES)
    assert isinstance(opt.get_chief_queue_runner(), tf.train.QueueRunner)


def test_one_synchronous_update_averages_the_workers_gradients_between_graphs():
    before = set(threading.enumerate())
    spec = tf.train.ClusterSpec({"ps": ["p0:9"], "worker": ["w0:9", "w1:9"]})
    servers = [tf.train.Server(spec, "ps", 0, config=CPU_ONLY)]
    servers += [tf.train.Server(spec, "worker", i, config=CPU_ONLY) for i in range(2)]
    models = [_model(cluster=spec, worker=i) for i in range(2)]
    sessions = [tf.Session(servers[1 + i].target, graph=models[i]["graph"]) for i in range(2)]
    try:
        sessions[0].run(models[0]["init"])
        for sess, m in zip(sessions, models):
            sess.run(m["local_init"])
        sessions[0].run(models[0]["opt"].chief_init_op)
        coord = tf.train.Coordinator()
        chief = models[0]["opt"].get_chief_queue_runner().create_threads(sessions[0], coord=coord, start=True)
        tokens = {}

        def work(i):
            tokens[i] = sessions[i].run(models[i]["train"], {models[i]["x"]: [1.0 + i, 3.0 * i]})

        workers = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in workers:
            t.start()
        for t in workers:
            t.join(10)
        # gradients [1, 0] and [2, 3]: mean [1.5, 1.5]; w = [1, 2] - 0.1 * mean
        np.testing.assert_allclose(sessions[1].run(models[1]["w"]), [0.85, 1.85], rtol=1e-6)
        assert sessions[1].run(models[1]["gs"]) == 1 and tokens == {0: 1, 1: 1}
        coord.request_stop()
    finally:
        for s in sessions:
            s.close()
        for server in servers:
            server.stop()
    for t in chief:
        t.join(5)
    assert set(threading.enumerate()) <= before


def test_stale_gradients_are_dropped_and_tokens_carry_the_new_step():
    m = _model(replicas=2, total=3)
    opt = m["opt"]
    accumulator = opt.accumulators[0][0]
    with m["graph"].as_default():
        count = accumulator.num_accumulated()
        size = opt.sync_token_queue.size()
        local_step = tf.placeholder(tf.int64, [])
        push = accumulator.apply_grad(tf.constant([1.0, 1.0]), local_step=local_step)
    with tf.Session(graph=m["graph"]) as sess:
        sess.run([m["init"], m["local_init"]])
        sess.run(opt.chief_init_op)
        sess.run(push, {local_step: 0})
        sess.run(push, {local_step: 0})
        sess.run(opt.sync_op)
        assert sess.run(m["gs"]) == 1
        assert sess.run(size) == 3  # max(total_num_replicas, replicas_to_aggregate) tokens
        sess.run(push, {local_step: 0})  # a late (backup) worker: dropped
        assert sess.run(count) == 0
        token = sess.run(opt.sync_token_queue.dequeue())
        assert token == 1
        np.testing.assert_allclose(sess.run(m["w"]), [0.9, 1.9], rtol=1e-6)


def test_make_session_run_hook_runs_a_chief_in_a_monitored_session_without_duplicated_ops():
    m = _model(replicas=1, total=1)
    with m["graph"].as_default():
        tokens = m["opt"].get_init_tokens_op()
        hook = m["opt"].make_session_run_hook(is_chief=True)
        hook.begin()
        assert hook._init_tokens_op is tokens and m["opt"].get_init_tokens_op() is tokens  # one op, asked thrice
        final = tf.train.FinalOpsHook(m["w"])
        with tf.train.MonitoredTrainingSession(hooks=[m["opt"].make_session_run_hook(True),
                                                      tf.train.StopAtStepHook(last_step=3), final],
                                               config=CPU_ONLY) as sess:
            fills = [op for op in m["graph"].get_operations() if op.type == "QueueEnqueueManyV2"]
            assert len(fills) == 2 and tokens in fills  # the sync op's refill and the one init-tokens op
            while not sess.should_stop():
                sess.run(m["train"], {m["x"]: np.array([1.0, -1.0], np.float32)})
    # 3 synchronous SGD steps
    np.testing.assert_allclose(final.final_ops_values, [1.0 - 3 * 0.1, 2.0 + 3 * 0.1], rtol=1e-6)


def test_the_hook_needs_apply_gradients_first():
    graph = tf.Graph()
    with graph.as_default():
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
        with pytest.raises(ValueError, match="apply_gradient should be called before using the hook"):
            opt.make_session_run_hook(is_chief=True).begin()
