"""dfcore and TensorFlow in one process (issue 26), for tests/unit/test_protos_beside_tensorflow.py.

Usage: ``beside_tensorflow.py dfcore-first|tensorflow-first`` imports both (dfcore's gRPC messages included) in
that order, then: a GraphDef dfcore built is parsed by TF and one TF built is parsed, imported and run by dfcore;
a ``tf.train.Example`` crosses both ways. Prints one JSON line of what it saw.
"""

import importlib
import json
import sys


def main(order):
    # dfcore's gRPC messages (WorkerService, MasterService) too
    modules = ["dfcore", "dfcore.transport.grpc_server", "tensorflow"]
    for module in modules if order == "dfcore-first" else modules[-1:] + modules[:-1]:
        importlib.import_module(module)
    import tensorflow as tf

    import dfcore as df

    v1 = tf.compat.v1
    with df.Graph().as_default() as graph:
        x = df.placeholder(df.float32, [None, 3], name="x")
        df.nn.relu(df.matmul(x, df.constant([[1.0], [2.0], [3.0]])), name="y")
    parsed_by_tf = v1.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    with tf.Graph().as_default() as tf_graph:
        tf_x = v1.placeholder(tf.float32, [None, 3], name="x")
        tf.nn.relu(tf.matmul(tf_x, tf.constant([[1.0], [2.0], [3.0]])), name="y")
    with df.Graph().as_default():
        df.import_graph_def(df.GraphDef.FromString(tf_graph.as_graph_def().SerializeToString()), name="")
        with df.Session() as sess:
            run_by_dfcore = sess.run("y:0", {"x:0": [[1.0, 1.0, 1.0], [1.0, -1.0, -1.0]]}).tolist()
    example = df.train.Example(features=df.train.Features(
        feature={"a": df.train.Feature(int64_list=df.train.Int64List(value=[1, 2]))}))
    via_tf = tf.train.Example.FromString(example.SerializeToString())
    back = df.train.Example.FromString(via_tf.SerializeToString())
    print(json.dumps({
        "tf_parsed": [[n.name, n.op] for n in parsed_by_tf.node],
        "dfcore_built": [[n.name, n.op] for n in graph.as_graph_def().node],
        "run_by_dfcore": run_by_dfcore,
        "example": [list(via_tf.features.feature["a"].int64_list.value),
                    list(back.features.feature["a"].int64_list.value)],
        "packages": [df.train.Example.DESCRIPTOR.full_name, tf.train.Example.DESCRIPTOR.full_name],
    }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
