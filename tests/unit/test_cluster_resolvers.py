"""tf.distribute.cluster_resolver: TF_CONFIG, Slurm's variables and hand-given values, against TF's behaviour
(tensorflow/python/distribute/cluster_resolver/*_test.py: the same environments, expectations built by hand)."""

import json
import os

import pytest

import dfcore as tf
from dfcore.distribute.cluster_resolver import (
    SimpleClusterResolver,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    expand_hostlist,
    expand_tasks_per_node,
)

CLUSTER = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]}


def set_tf_config(monkeypatch, config):
    monkeypatch.setenv("TF_CONFIG", config if isinstance(config, str) else json.dumps(config))


def test_tf_config_gives_the_cluster_the_task_and_the_master(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert resolver.cluster_spec() == tf.train.ClusterSpec(CLUSTER)
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == ("worker", 1, "grpc")
    assert resolver.master() == "grpc://w1:2222"
    assert resolver.master("ps", 1) == "grpc://ps1:2222"
    assert resolver.master(rpc_layer="http") == "http://w1:2222"
    assert resolver.num_accelerators() == {}


def test_tf_config_is_read_anew_and_overrides_win(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 0}})
    resolver = TFConfigClusterResolver(task_id=2)
    assert resolver.master() == "w2:2222"  # no rpc_layer: the bare address, as TF
    set_tf_config(monkeypatch, {"cluster": {"worker": ["a:1", "b:2", "c:3"]}, "task": {"type": "ps", "index": 0}})
    assert resolver.task_type == "ps" and resolver.task_id == 2
    resolver.task_type = "worker"
    assert resolver.master() == "c:3"


def test_a_task_outside_the_cluster_or_an_evaluator_has_no_master(monkeypatch):
    set_tf_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}})
    assert TFConfigClusterResolver().master() == ""
    monkeypatch.delenv("TF_CONFIG")
    resolver = TFConfigClusterResolver()
    assert resolver.cluster_spec() == tf.train.ClusterSpec({})
    assert (resolver.task_type, resolver.task_id, resolver.master()) == (None, None, "")


def test_malformed_tf_config_raises_json_errors_as_tf(monkeypatch):
    set_tf_config(monkeypatch, '{"cluster": ')
    with pytest.raises(json.JSONDecodeError):
        TFConfigClusterResolver().cluster_spec()
    set_tf_config(monkeypatch, "[1, 2]")
    with pytest.raises(ValueError, match="TF_CONFIG must be a JSON object"):
        TFConfigClusterResolver().cluster_spec()
    set_tf_config(monkeypatch, {"cluster": {"worker": "w0:2222"}})
    with pytest.raises(TypeError, match="must be a list or a dictionary"):
        TFConfigClusterResolver().cluster_spec()


def test_simple_resolver_answers_what_it_was_given():
    spec = tf.train.ClusterSpec(CLUSTER)
    resolver = SimpleClusterResolver(spec, master="w0:2222", task_type="worker", task_id=0, rpc_layer="grpc",
                                     num_accelerators={"GPU": 2}, environment="google")
    assert resolver.cluster_spec() is spec
    assert resolver.master() == "grpc://w0:2222"
    assert resolver.master("ps", 0) == "grpc://ps0:2222"
    assert (resolver.num_accelerators(), resolver.environment) == ({"GPU": 2}, "google")
    with pytest.raises(ValueError, match="No task with index 9"):
        resolver.master("ps", 9)
    with pytest.raises(TypeError, match="cluster_spec must be a `tf.train.ClusterSpec`"):
        SimpleClusterResolver(CLUSTER)
    with pytest.raises(TypeError, match="master must be a string"):
        SimpleClusterResolver(spec, master=1)


@pytest.mark.parametrize(("hostlist", "hosts"), [
    ("n1", ["n1"]), ("n[1,2]", ["n1", "n2"]), ("n[01-03],m5", ["n01", "n02", "n03", "m5"]),
    ("n[1-2],m5,o[3-4,6,7-9]", ["n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"]),
    ("a[8-10]-ib", ["a8-ib", "a9-ib", "a10-ib"])])
def test_hostlists_expand_in_order(hostlist, hosts):
    assert expand_hostlist(hostlist) == hosts


def test_malformed_hostlists_and_task_counts_are_refused():
    with pytest.raises(ValueError, match="malformed"):
        expand_hostlist("n[3-1]")
    with pytest.raises(ValueError, match="malformed"):
        expand_hostlist("n[1")
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    with pytest.raises(ValueError, match="SLURM_STEP_TASKS_PER_NODE"):
        expand_tasks_per_node("2(3)")


def slurm_environment(monkeypatch, rank, nodes="t02n[13-14],t02n41", tasks="2(x2),1", count=5):
    for name, value in {"PROCID": rank, "STEP_NUM_TASKS": count, "STEP_NODELIST": nodes,
                        "STEP_TASKS_PER_NODE": tasks}.items():
        monkeypatch.setenv(f"SLURM_{name}", str(value))


def test_slurm_tasks_are_packed_node_by_node_and_jobs_in_name_order(monkeypatch):
    slurm_environment(monkeypatch, rank=3)
    resolver = SlurmClusterResolver({"worker": 3, "ps": 2}, port_base=8888)
    assert resolver.cluster_spec().as_dict() == {
        "ps": ["t02n13:8888", "t02n13:8889"], "worker": ["t02n14:8888", "t02n14:8889", "t02n41:8888"]}
    assert resolver.get_task_info() == ("worker", 1)
    assert resolver.master() == "grpc://t02n14:8889"
    assert resolver.master("ps", 1, rpc_layer="http") == "http://t02n13:8889"


def test_slurm_default_job_is_every_task_a_worker_and_gpus_are_handed_out(monkeypatch):
    slurm_environment(monkeypatch, rank=4)
    resolver = SlurmClusterResolver()
    assert resolver.cluster_spec().num_tasks("worker") == 5 and (resolver.task_type, resolver.task_id) == ("worker", 4)
    slurm_environment(monkeypatch, rank=1, nodes="n[1-2]", tasks="2(x2)", count=4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    resolver = SlurmClusterResolver({"worker": 4}, gpus_per_node=4, gpus_per_task=2)
    resolver.cluster_spec()
    assert resolver.num_accelerators() == {"GPU": 2}
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_slurm_errors_say_what_is_wrong(monkeypatch):
    for name in ("PROCID", "STEP_NUM_TASKS", "STEP_NODELIST", "STEP_TASKS_PER_NODE"):
        monkeypatch.delenv(f"SLURM_{name}", raising=False)
    with pytest.raises(RuntimeError, match="SLURM_PROCID not found in environment. Not running inside a SLURM step"):
        SlurmClusterResolver()
    slurm_environment(monkeypatch, rank=0)
    with pytest.raises(RuntimeError, match="Requested 4 tasks but only 5 were assigned"):
        SlurmClusterResolver({"worker": 4})
    with pytest.raises(RuntimeError, match="more GPUs per node"):
        SlurmClusterResolver({"worker": 5}, gpus_per_node=2, gpus_per_task=2)
