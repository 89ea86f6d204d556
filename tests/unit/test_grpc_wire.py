"""What crosses the wire between gRPC tasks: TF's messages, raw tensor bytes, no pickle; strangers and malformed
requests refused with nothing applied.

Specification: issue 16 items 1 and 4 (tensors as raw bytes in ``TensorProto.tensor_content``; a peer must not be
able to run code in another task; a message from a peer that is not in the ClusterSpec, or a malformed request,
is refused with an error and nothing applied). References: tensorboard's ``tensor_util.make_ndarray`` (TF's
decoder), hand-built messages, and a pickle payload that would create a file if anything unpickled it.
"""

import os
import pickle

import numpy as np
import pytest
from _requirements import require_module
from grpc_cluster import Cluster, cluster_dict
from tensorboard.util import tensor_util

import dfcore as tf
from dfcore.framework.protos import GraphDef
from dfcore.framework.tf_protos import worker_pb2
from dfcore.transport import SERVERS_ENV
from dfcore.transport.grpc_wire import CODECS, tensor_from_proto, tensor_to_proto

grpc = require_module("grpc", "grpcio")

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("value", [np.arange(12, dtype=np.float32).reshape(3, 4), np.array([True, False]),
                                   np.arange(5, dtype=np.int64) - 2, np.float64(2.5),
                                   np.array([[1, 2]], dtype=np.uint8), np.zeros((0, 3), np.int32)])
def test_numeric_tensors_travel_as_their_raw_bytes(value):
    proto = tensor_to_proto(value)
    array = np.asarray(value)
    assert proto.tensor_content == array.tobytes()
    assert [d.size for d in proto.tensor_shape.dim] == list(array.shape)
    np.testing.assert_array_equal(tensor_util.make_ndarray(proto), array)  # TF's own decoder reads it
    back = tensor_from_proto(proto)
    np.testing.assert_array_equal(back, array)
    assert back.dtype == array.dtype and back.flags.writeable


def test_string_tensors_travel_as_string_val():
    value = np.array([b"a", b"\x00\xff"], dtype=object)
    proto = tensor_to_proto(value)
    assert list(proto.string_val) == [b"a", b"\x00\xff"]
    assert list(tensor_from_proto(proto)) == [b"a", b"\x00\xff"]


def test_a_malformed_tensor_is_an_invalid_argument():
    proto = tensor_to_proto(np.arange(4, dtype=np.float32))
    proto.tensor_shape.dim[0].size = 5
    with pytest.raises(tf.errors.InvalidArgumentError, match="Malformed TensorProto"):
        tensor_from_proto(proto)
    np.testing.assert_array_equal(tensor_from_proto(tensor_util.make_tensor_proto([1.5, 2.0], np.float32)),
                                  [1.5, 2.0])  # the typed-field form TF also writes
    with pytest.raises(tf.errors.UnimplementedError, match="cannot travel"):
        tensor_to_proto(np.array([object()]))
    with pytest.raises(tf.errors.UnimplementedError, match="cannot travel"):
        tensor_to_proto(np.array([1 + 2j]))  # no complex dtypes in dfcore


class _Trap:
    """Unpickling this creates the file at ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


def _stub(channel, method, response_type):
    return channel.unary_unary(f"/tensorflow.grpc.WorkerService/{method}",
                               request_serializer=lambda m: m if isinstance(m, bytes) else m.SerializeToString(),
                               response_deserializer=response_type.FromString)


def test_peers_cannot_run_code_and_strangers_or_malformed_requests_change_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv(SERVERS_ENV, "grpc")
    trap = tmp_path / "unpickled"
    payload = pickle.dumps(_Trap(str(trap)))
    with Cluster(cluster_dict()) as cluster:
        cluster.start("ps", 0, "serve").ready()
        cluster.start("worker", 0, "serve").ready()
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(1.0, name="v")
            with tf.Session("grpc://" + cluster.address("worker", 0)) as sess:
                sess.run(v.initializer)
                with grpc.insecure_channel(cluster.address("ps", 0)) as channel:
                    as_worker = (("dfcore-task", "/job:worker/replica:0/task:0"),)
                    # a pickle in every bytes field of a peer's RecvTensor reply (what a pulling task decodes):
                    # read as numbers and strings or refused, never unpickled
                    for tensor in (tensor_util.make_tensor_proto(0.0), tensor_util.make_tensor_proto("x")):
                        tensor.tensor_content = payload
                        tensor.string_val.append(payload)
                        reply = worker_pb2.RecvTensorResponse(tensor=tensor)
                        try:
                            CODECS["recv_tensor"].value(None, worker_pb2.RecvTensorResponse.FromString(
                                reply.SerializeToString()))
                        except tf.errors.InvalidArgumentError:
                            pass
                    register = _stub(channel, "RegisterGraph", worker_pb2.RegisterGraphResponse)
                    graph = GraphDef()
                    node = graph.node.add(name="c", op="Const", device="/job:ps/replica:0/task:0/device:CPU:0")
                    node.attr["value"].tensor.CopyFrom(tensor_util.make_tensor_proto(np.array([payload], dtype=object)))
                    node.attr["dtype"].type = tf.string.as_datatype_enum
                    try:
                        register(worker_pb2.RegisterGraphRequest(graph_def=graph, session_graph_def=graph),
                                 metadata=as_worker, timeout=10)
                    except grpc.RpcError:
                        pass  # refusing it is fine too; running code is not
                    cleanup = _stub(channel, "CleanupGraph", worker_pb2.CleanupGraphResponse)
                    # a stranger: no task, a task of another cluster
                    for metadata in ((), (("dfcore-task", "/job:evil/replica:0/task:0"),)):
                        with pytest.raises(grpc.RpcError) as refused:
                            cleanup(worker_pb2.CleanupGraphRequest(step_id=1, commit=True), metadata=metadata,
                                    timeout=10)
                        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
                        assert "ClusterSpec" in refused.value.details()
                    # malformed: bytes that are no message, a graph handle the ps never gave
                    run = _stub(channel, "RunGraph", worker_pb2.RunGraphResponse)
                    with pytest.raises(grpc.RpcError) as malformed:
                        run(b"\xff\xff\xff\xff", metadata=as_worker, timeout=10)
                    assert malformed.value.code() != grpc.StatusCode.OK
                    with pytest.raises(grpc.RpcError) as unknown:
                        run(worker_pb2.RunGraphRequest(graph_handle="nonsense", step_id=7), metadata=as_worker,
                            timeout=10)
                    assert unknown.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    # TF's session methods are served; a RecvTensor with a malformed key is refused in TF's words
                    _stub(channel, "CreateWorkerSession", worker_pb2.CreateWorkerSessionResponse)(
                        worker_pb2.CreateWorkerSessionRequest(session_handle="s"), metadata=as_worker, timeout=10)
                    with pytest.raises(grpc.RpcError) as pull:
                        _stub(channel, "RecvTensor", worker_pb2.RecvTensorResponse)(
                            worker_pb2.RecvTensorRequest(step_id=1, rendezvous_key="k"), metadata=as_worker,
                            timeout=10)
                    assert pull.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    assert pull.value.details() == "Invalid rendezvous key: k"
                # nothing applied: the variable is as it was, and the cluster still runs steps
                assert sess.run(v) == 1.0
                assert sess.run(tf.assign_add(v, 1.0)) == 2.0
    assert not os.path.exists(trap), "a peer's bytes were unpickled"
