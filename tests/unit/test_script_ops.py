"""tf.py_func: results against numpy, list outputs, TF's exception-to-status mapping, CPU placement, and as a
dataset map's decoder."""

import numpy as np
import pytest

import dfcore as tf


def test_py_func_runs_numpy_and_converts_to_tout():
    x = tf.placeholder(tf.float32, [3])
    y = tf.py_func(lambda a: a.astype(np.float64) ** 2, [x], tf.float32)
    pair = tf.py_func(lambda a: [a + 1, a.sum()], [x], [tf.float32, tf.int64], stateful=False)
    assert y.dtype == tf.float32 and y.shape.ndims is None and y.op.type == "PyFunc"
    assert pair[0].op.type == "PyFuncStateless" and len(pair) == 2
    with tf.Session() as sess:
        value, (plus, total) = sess.run([y, pair], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(value, np.array([1, 4, 9], np.float32))
    assert value.dtype == np.float32 and total.dtype == np.int64 and total == 6
    np.testing.assert_array_equal(plus, [2, 3, 4])


@pytest.mark.parametrize("exception, error", [
    (ValueError("bad value"), tf.errors.InvalidArgumentError),
    (TypeError("bad type"), tf.errors.InvalidArgumentError),
    (StopIteration(), tf.errors.OutOfRangeError),
    (NotImplementedError("later"), tf.errors.UnimplementedError),
    (ZeroDivisionError("division by zero"), tf.errors.UnknownError),
])
def test_a_python_exception_becomes_tfs_status(exception, error):
    def fail(a):
        raise exception

    y = tf.py_func(fail, [tf.constant(1.0)], tf.float32)
    with tf.Session() as sess, pytest.raises(error, match=f"{type(exception).__name__}: "):
        sess.run(y)


def test_the_wrong_number_of_results_is_an_invalid_argument():
    y = tf.py_func(lambda a: [a, a], [tf.constant(1.0)], [tf.float32])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="returns 2 values, but expects"):
        sess.run(y)


def test_py_func_is_placed_on_the_cpu_even_under_a_gpu_scope():
    with tf.device("/gpu:0"):
        y = tf.py_func(np.negative, [tf.constant([1.0])], tf.float32)
    config = tf.ConfigProto(allow_soft_placement=True, device_count={"GPU": 1})
    with tf.Session(config=config) as sess:
        np.testing.assert_array_equal(sess.run(y), [-1.0])
        md = tf.RunMetadata()
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    devices = {ns.node_name: d.device for d in tf.step_records(md).step_stats.dev_stats for ns in d.node_stats}
    assert devices[y.op.name].endswith("device:CPU:0")


def test_py_func_decodes_in_a_parallel_dataset_map():
    def decode(v):
        out = tf.py_func(lambda a: a * 10, [v], tf.int64)
        out.set_shape([])
        return out

    ds = tf.data.Dataset.range(6).map(decode, num_parallel_calls=3).batch(3)
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(element).tolist() == [0, 10, 20] and sess.run(element).tolist() == [30, 40, 50]
