"""TF 1.x ref-variable fetch semantics (issue 26): a ``VariableV2`` fetched as is, in a run that updates it, gives
its value at the end of the step.

Reference: TF 2.21's ``tf.compat.v1`` with ``disable_v2_behavior()`` and ``disable_resource_variables()`` (its
variables are ``VariableV2`` refs, as TF 1.x's), on CPU, recorded in a separate process; the recorded values are
written next to each assertion. In TF a fetched ref reads the buffer the step's ``Assign*`` ops updated in place
(``core/common_runtime/direct_session.cc`` copies fetched outputs after the executors finish). Where TF's answer
comes from two ops sharing one buffer (an ``Identity`` of a ref aliases it, so TF's ``read_value()`` ordered
*before* an update also shows the update), dfcore keeps the ``Identity`` a snapshot; these tests stay off that.
"""

import numpy as np

import dfcore as tf

CPU_ONLY = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})


def test_global_step_fetched_with_minimize_is_the_incremented_step():
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(1.0)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w), global_step=global_step)
        with tf.Session(config=CPU_ONLY) as sess:
            sess.run(tf.global_variables_initializer())
            steps = [sess.run([train, global_step])[1] for _ in range(3)]
            weights = [sess.run([train, w])[1] for _ in range(2)]
    assert steps == [1, 2, 3]  # TF 1.x: [1, 2, 3]
    # TF 1.x: [0.4096, 0.32768] (w <- 0.8 w per step: the value after steps 4 and 5)
    np.testing.assert_allclose(weights, [0.8 ** 4, 0.8 ** 5], rtol=1e-6)


def test_assign_add_without_control_dependencies_fetches_the_updated_variable():
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        increment = tf.assign_add(v, 1)
        with tf.Session(config=CPU_ONLY) as sess:
            sess.run(v.initializer)
            fetched = [sess.run([increment, v]) for _ in range(5)]
    assert [int(value) for _, value in fetched] == [1, 2, 3, 4, 5]  # TF 1.x: [1, 2, 3, 4, 5]
    assert all(a == b for a, b in fetched)  # TF 1.x: the assign's output equals the fetched variable (50 runs)


def test_assign_add_with_control_dependencies_reads_after_the_update_and_an_earlier_read_stays_a_snapshot():
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        increment = tf.assign_add(v, 1)
        with tf.control_dependencies([increment]):
            after = v.read_value()
        before = v + 0
        with tf.control_dependencies([before]):
            second = tf.assign_add(v, 1)
        with tf.Session(config=CPU_ONLY) as sess:
            sess.run(v.initializer)
            ordered = sess.run([v, after])
            with_increment = sess.run([increment, v, after])
            sess.run(v.assign(0))
            snapshots = [sess.run([before, second, v]) for _ in range(3)]
    assert [int(x) for x in ordered] == [1, 1]  # TF 1.x: [1, 1]
    assert [int(x) for x in with_increment] == [2, 2, 2]  # TF 1.x (from 1): [2, 2, 2]
    # TF 1.x: [[0, 1, 1], [1, 2, 2], [2, 3, 3]]: v + 0 ran before the update, the fetched v is the step's end
    assert [[int(x) for x in step] for step in snapshots] == [[0, 1, 1], [1, 2, 2], [2, 3, 3]]


def test_a_monitored_training_session_restarted_from_a_checkpoint_counts_on_from_it(tmp_path):
    printed = []
    for run in range(2):
        with tf.Graph().as_default():
            global_step = tf.train.get_or_create_global_step()
            w = tf.Variable(1.0)
            train = tf.train.GradientDescentOptimizer(0.01).minimize(tf.square(w), global_step=global_step)
            steps = []
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=str(tmp_path), save_checkpoint_steps=100, config=CPU_ONLY,
                    hooks=[tf.train.StopAtStepHook(last_step=100 * (run + 1))]) as sess:
                while not sess.should_stop():
                    steps.append(int(sess.run([train, global_step])[1]))
        printed.append((steps[0], steps[-1], len(steps)))
    # TF 1.x: the first run prints 1 .. 100, the run restarted from its checkpoint at 100 prints 101 .. 200
    assert printed == [(1, 100, 100), (101, 200, 100)]


def test_a_ref_fetched_from_another_task_is_read_when_that_task_sends_it():
    # TF 1.x, a ps and a worker server over gRPC, global_step on the ps (replica_device_setter), fetched by the
    # worker with the train op: [0, 1, 2, 3, 4] (the ps sends the step's start value: its increment waits for the
    # worker's gradients) while the weight fetched alike is also the value before that step's update
    cluster = tf.train.ClusterSpec({"ps": ["ps0.example.com:1"], "worker": ["w0.example.com:1"]})
    servers = [tf.train.Server(cluster, job_name=job, task_index=0, config=CPU_ONLY) for job in ("ps", "worker")]
    try:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=cluster)):
                global_step = tf.train.get_or_create_global_step()
                w = tf.Variable(1.0)
                train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w), global_step=global_step)
            with tf.Session(servers[1].target) as sess:
                sess.run(tf.global_variables_initializer())
                steps = [int(sess.run([train, global_step])[1]) for _ in range(5)]
                weights = [sess.run([train, w])[1] for _ in range(2)]
    finally:
        for server in servers:
            server.stop()
    assert steps == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(weights, [0.8 ** 5, 0.8 ** 6], rtol=1e-6)  # TF 1.x: [0.32768, 0.262144]
