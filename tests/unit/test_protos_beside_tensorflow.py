"""dfcore beside TensorFlow in one process (issue 26): dfcore's own copies of TF messages
(``dfcore/framework/tf_protos``) live in a package of dfcore's own (``dfcore.tensorflow``), so ``import dfcore``
and ``import tensorflow`` work in either order, while the wire stays TF's (field numbers, gRPC method paths).

Each check runs in a fresh interpreter (``tests/unit/protobuf_programs/``): what it registers in protobuf's default
descriptor pool stays there for the process's life.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from dfcore.framework.protos import BytesList, Example, Feature, FloatList, Int64List, QueueRunnerDef
from dfcore.framework.tf_protos import worker_pb2
from dfcore.transport.grpc_wire import MASTER_SERVICE, WORKER_SERVICE

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protobuf_programs")


def run_program(name, *args):
    done = subprocess.run([sys.executable, os.path.join(PROGRAMS, name), *args], capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_dfcores_messages_have_a_package_of_their_own_and_tfs_field_numbers_and_method_paths():
    assert Example.DESCRIPTOR.full_name == "dfcore.tensorflow.Example"
    assert QueueRunnerDef.DESCRIPTOR.fields_by_name["queue_closed_exception_types"].enum_type.full_name == \
        "dfcore.tensorflow.error.Code"
    # TF's field numbers (tensorflow/core/example/feature.proto, core/protobuf/worker.proto): the wire is TF's
    assert [(f.name, f.number) for f in Feature.DESCRIPTOR.fields] == [("bytes_list", 1), ("float_list", 2),
                                                                      ("int64_list", 3)]
    assert [BytesList.DESCRIPTOR.fields[0].number, FloatList.DESCRIPTOR.fields[0].number,
            Int64List.DESCRIPTOR.fields[0].number] == [1, 1, 1]
    assert worker_pb2.RunGraphRequest.DESCRIPTOR.fields_by_name["graph_handle"].number == 1
    assert worker_pb2.RecvTensorRequest.DESCRIPTOR.fields_by_name["rendezvous_key"].number == 2
    # the gRPC services keep TF's names (/tensorflow.grpc.WorkerService/RunGraph ...)
    assert (WORKER_SERVICE, MASTER_SERVICE) == ("tensorflow.grpc.WorkerService", "tensorflow.grpc.MasterService")
    # bytes TF writes for Feature(int64_list=Int64List(value=[1, 2])): field 3, length 4, packed field 1 [1, 2]
    assert Feature.FromString(bytes([0x1A, 4, 0x0A, 2, 1, 2])).int64_list.value == [1, 2]


def test_tfs_own_proto_files_register_after_dfcore_without_a_collision():
    assert run_program("tf_package_files.py").split() == [
        "registered", "tensorflow.error.Code", "tensorflow.BytesList", "dfcore.tensorflow.BytesList"]


@pytest.mark.parametrize("order", ["dfcore-first", "tensorflow-first"])
def test_dfcore_and_tensorflow_in_one_process_read_each_others_messages(order):
    if importlib.util.find_spec("tensorflow") is None:  # the project cannot install TF: a skip, in CI too
        pytest.skip("TensorFlow is not installed in this environment (CI does not install it)")
    seen = json.loads(run_program("beside_tensorflow.py", order))
    assert seen["tf_parsed"] == seen["dfcore_built"] == [["x", "Placeholder"], ["Const", "Const"],
                                                         ["MatMul", "MatMul"], ["y", "Relu"]]
    assert seen["run_by_dfcore"] == [[6.0], [0.0]]  # relu(x @ [1, 2, 3]) of TF's graph, run by dfcore
    assert seen["example"] == [[1, 2], [1, 2]]
    assert seen["packages"] == ["dfcore.tensorflow.Example", "tensorflow.Example"]
