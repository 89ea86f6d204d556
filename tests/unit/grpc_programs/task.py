"""One task of tests/unit/test_grpc_*.py, as its own process: ``task.py CLUSTER_JSON JOB INDEX MODE [ARG [ARG2]]``.

Modes: ``serve`` (start the server, say ``ready``, join), ``model`` (a worker running the steps of the shared
model ARG, default ``sgd``, of ``grpc_model.MODELS`` and printing their results as JSON), ``train`` (a worker
training until killed or failing, one line per step), ``in_graph`` (the chief of a graph with ops on worker 1:
steps until one fails, which it prints), ``mts`` (a chief counting steps under MonitoredTrainingSession,
checkpointing to ARG every step, until global_step reaches ARG2).
"""

import faulthandler
import json
import os
import signal
import sys
import time

faulthandler.register(signal.SIGUSR1)  # a hung test can ask a task for its stacks

import dfcore as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from grpc_model import MODELS, feed_values  # noqa: E402


def run_until_error(sess, fetch):
    """Run ``fetch`` every 10 ms, printing each value, until a step fails: print that error and return."""
    while True:
        try:
            value = sess.run(fetch)
        except tf.errors.OpError as error:
            print(json.dumps({"error": type(error).__name__, "message": error.message, "t": time.time()}),
                  flush=True)
            return
        print(json.dumps({"step": float(value), "t": time.time()}), flush=True)
        time.sleep(0.01)


def main():
    cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
    job, index, mode = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    print("ready", flush=True)
    if mode == "serve":
        server.join()
        return
    if mode == "model":
        model = MODELS[sys.argv[5] if len(sys.argv) > 5 else "sgd"]()
        with tf.Session(server.target) as sess:
            sess.run(model["init"])
            results = []
            for step in range(3):
                feed = {model["x"]: feed_values(step, model["shape"])}
                results.append(sess.run(model["loss"], feed).item())
                sess.run(model["train"], feed)
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            metadata = tf.RunMetadata()
            final = sess.run(model["w"], options=options, run_metadata=metadata)
        devices = sorted({d.device for d in metadata.step_stats.dev_stats})
        print(json.dumps({"losses": results, "w": final.tolist(), "devices": devices}), flush=True)
        return
    if mode == "train":
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(0.0, name="counter")
        with tf.device(f"/job:worker/task:{index}"):
            bump = tf.assign_add(counter, 1.0)
        # between-graph: each worker talks to the ps and itself only (TF's device_filters)
        config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
        with tf.Session(server.target, config=config) as sess:
            if index == 0:
                sess.run(counter.initializer)
            else:
                time.sleep(0.5)
            run_until_error(sess, bump)
    if mode == "mts":
        with tf.device("/job:ps/task:0"):
            global_step = tf.train.get_or_create_global_step()
            counter = tf.Variable(0, dtype=tf.int64, name="counter")
        with tf.device(f"/job:worker/task:{index}"):
            bump = [tf.assign_add(counter, 1), tf.assign_add(global_step, 1)]  # one step: both or neither
        config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
        with tf.train.MonitoredTrainingSession(master=server.target, is_chief=True, checkpoint_dir=sys.argv[5],
                                               save_checkpoint_steps=1, config=config) as sess:
            while True:
                count, step = sess.run(bump)
                print(json.dumps({"counter": int(count), "global_step": int(step), "t": time.time()}), flush=True)
                if step >= int(sys.argv[6]):
                    return
                time.sleep(0.02)
    if mode == "in_graph":
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(1.0, name="w")
        with tf.device("/job:worker/task:1"):
            remote = w * 2.0
        with tf.device("/job:worker/task:0"):
            total = remote + 1.0
        with tf.Session(server.target) as sess:
            sess.run(w.initializer)
            run_until_error(sess, total)

if __name__ == "__main__":
    main()
