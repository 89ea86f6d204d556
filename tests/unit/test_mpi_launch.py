"""The launcher's command line, the job layout (ranks ↔ tasks), and import_graph_def — no MPI needed.

Reference: the rank layout of docs/architecture.md#transports (jobs in order, ranks assigned job by job), TF's
``TFConfigClusterResolver`` API, and ``tf.import_graph_def`` (names, devices, control inputs kept).
"""

import os

import numpy as np
import pytest

import dfcore as tf
from dfcore import launch
from dfcore.framework.graph_def import make_graph_def, make_node_def
from dfcore.framework.importer import import_nodes
from dfcore.mpi import env as env_lib, job_command
from dfcore.mpi.world import Layout, MPIClusterResolver


@pytest.mark.parametrize("argv, options, program", [
    (["--ps", "1", "--workers", "3", "train.py", "--steps", "5"], ["--ps", "1", "--workers", "3"],
     ["train.py", "--steps", "5"]),
    (["-n", "4", "-m", "dfcore.bench.all_reduce", "-b", "8"], ["-n", "4"],
     ["-m", "dfcore.bench.all_reduce", "-b", "8"]),
    (["--timeout", "3", "--", "-weird.py"], ["--timeout", "3"], ["-weird.py"]),
    (["--print-command", "x.py", "--ps", "9"], ["--print-command"], ["x.py", "--ps", "9"]),
])
def test_the_program_starts_at_the_first_word_that_is_not_a_launcher_option(argv, options, program):
    assert job_command.split_argv(argv) == (options, program)


def test_the_command_runs_every_rank_under_rank_main_with_the_layout(monkeypatch):
    monkeypatch.setattr(env_lib, "find_mpiexec", lambda path=None: "/opt/mpi/bin/mpiexec")
    monkeypatch.setattr(env_lib, "mpi_flavor", lambda mpiexec: "openmpi")
    command, env, _ = job_command.command_and_env(["--ps", "1", "--workers", "2", "train.py", "--steps", "5"])
    assert command[:3] == ["/opt/mpi/bin/mpiexec", "-n", "3"]
    assert "--oversubscribe" in command
    assert command[-4:] == [env_lib.RANK_MAIN, "train.py", "--steps", "5"]
    assert os.path.isfile(command[-4]) and command[-4].endswith(os.path.join("dfcore", "mpi", "rank_main.py"))
    assert env[env_lib.CLUSTER_ENV] == '{"ps": 1, "worker": 2}'
    assert env["OMPI_MCA_btl_tcp_if_include"] == "lo" and env["OMPI_MCA_btl"] == "self,sm"


@pytest.mark.parametrize("argv", [["--ps", "1", "-n", "3", "--workers", "3", "x.py"], ["--ps", "1"],
                                  ["--workers", "0", "x.py"]])
def test_inconsistent_or_empty_launches_are_usage_errors(argv, monkeypatch):
    monkeypatch.setattr(env_lib, "find_mpiexec", lambda path=None: "/opt/mpi/bin/mpiexec")
    with pytest.raises(SystemExit):
        job_command.command_and_env(argv)


def test_root_variables_only_for_root_and_user_settings_win(monkeypatch):
    monkeypatch.setattr(env_lib.os, "geteuid", lambda: 1000)
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in env_lib.job_environment({"PATH": "/usr/bin"})
    monkeypatch.setattr(env_lib.os, "geteuid", lambda: 0)
    env = env_lib.job_environment({"PATH": "/usr/bin", "OMPI_MCA_btl": "self,tcp"})
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == env["PRTE_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert env["OMPI_MCA_btl"] == "self,tcp"
    assert env["PATH"].split(":")[0] == env_lib.venv_bin()
    assert "OMPI_MCA_btl_tcp_if_include" not in env_lib.job_environment({"PATH": "/usr/bin"}, loopback=False)


def test_ranks_are_assigned_job_by_job():
    layout = Layout({"ps": 2, "worker": 3})
    assert [layout.task_of_rank(r) for r in range(5)] == [("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1),
                                                        ("worker", 2)]
    assert layout.rank_of("worker", 2) == 4
    assert layout.cluster_dict() == {"ps": ["localhost:2222", "localhost:2223"],
                                     "worker": ["localhost:2224", "localhost:2225", "localhost:2226"]}
    assert Layout.from_json(layout.to_json()) == layout


@pytest.mark.parametrize("bad", [{}, {"ps": 0}, {"worker": "2"}, {"": 1}])
def test_malformed_layouts_are_rejected(bad):
    with pytest.raises(ValueError):
        Layout(bad)


def test_layout_errors_name_the_task_and_the_env_variable():
    with pytest.raises(ValueError, match=r"/job:ps/task:3 is not a task .* DFCORE_CLUSTER"):
        Layout({"ps": 1, "worker": 2}).rank_of("ps", 3)
    with pytest.raises(ValueError, match="DFCORE_CLUSTER must be a JSON object"):
        Layout.from_json("[1, 2]")


def test_the_resolver_speaks_tf_cluster_resolver_api():
    resolver = MPIClusterResolver(Layout({"ps": 1, "worker": 2}), rank=0)
    assert (resolver.task_type, resolver.task_id) == ("ps", 0)
    assert resolver.master("worker", 1) == "grpc://localhost:2224"
    assert resolver.cluster_spec() == tf.train.ClusterSpec({"ps": ["localhost:2222"],
                                                            "worker": ["localhost:2223", "localhost:2224"]})


def test_the_resolver_outside_a_job_says_how_to_start_one(monkeypatch):
    monkeypatch.delenv(env_lib.CLUSTER_ENV, raising=False)
    with pytest.raises(ValueError, match="python -m dfcore.launch"):
        MPIClusterResolver()


def test_import_graph_def_rebuilds_names_devices_control_inputs_and_values():
    source = tf.Graph()
    with source.as_default():
        with tf.device("/device:GPU:1"):
            a = tf.constant([[1.0, 2.0]], name="a")
        b = tf.matmul(a, a, transpose_b=True, name="b")
        with tf.control_dependencies([b.op]):
            tf.identity(a * 3.0, name="c")
    target = tf.Graph()
    ops = import_nodes(source.as_graph_def(), "", target)
    assert sorted(ops) == sorted(op.name for op in source.get_operations())
    assert target.get_operation_by_name("a").device == "/device:GPU:1"
    for op in source.get_operations():
        copy = target.get_operation_by_name(op.name)
        assert (copy.type, [t.name for t in copy.inputs], [c.name for c in copy.control_inputs]) == (
            op.type, [t.name for t in op.inputs], [c.name for c in op.control_inputs])
    assert any(op.control_inputs for op in target.get_operations())
    with tf.Session(graph=target) as sess:
        np.testing.assert_array_equal(sess.run(["b:0", "c:0"])[0], [[5.0]])
        np.testing.assert_array_equal(sess.run("c:0"), [[3.0, 6.0]])
    with target.as_default():
        b_copy, c_copy = tf.import_graph_def(source.as_graph_def(), return_elements=["b", "c:0"], name="copy")
    assert b_copy.name == "copy/b" and b_copy.inputs[0].name == "copy/a:0" and c_copy.name == "copy/c:0"


def test_import_graph_def_rejects_missing_inputs_and_cycles():
    with pytest.raises(ValueError, match="^Node 'y': Unknown input node 'x:0'$"):
        import_nodes(make_graph_def([make_node_def("y", "Identity", ["x:0"], "", {})]), "", tf.Graph())
    loop = make_graph_def([make_node_def("p", "Identity", ["q"], "", {}),
                           make_node_def("q", "Identity", ["p"], "", {})])
    with pytest.raises(ValueError, match="form a cycle"):
        import_nodes(loop, "", tf.Graph())


@pytest.mark.parametrize("argv, message", [
    (["-n", "0", "x.py"], "-n must be >= 1"), (["-n", "-2", "x.py"], "-n must be >= 1"),
    (["--ps", "2", "-n", "2", "x.py"], "-n must be >= 3"),
    (["--ps", "-1", "--workers", "2", "x.py"], "--ps must be >= 0"),
    (["--ps", "0", "--workers", "0", "x.py"], "--workers must be >= 1"),
    (["--timeout", "0", "x.py"], "--timeout must be > 0 seconds, got 0.0"),
    (["--timeout", "-5", "x.py"], "--timeout must be > 0 seconds"),
    (["--exit-grace", "0", "x.py"], "--exit-grace must be > 0 seconds"),
    (["--heartbeat", "-1", "x.py"], "--heartbeat must be >= 0 seconds")])
def test_nonsense_counts_and_seconds_are_usage_errors_naming_the_option_and_its_range(argv, message, monkeypatch,
                                                                                      capsys):
    monkeypatch.setattr(env_lib, "find_mpiexec", lambda path=None: pytest.fail("looked for mpiexec"))
    with pytest.raises(SystemExit) as caught:
        launch.main(argv)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, message", [
    ({"ranks": 0}, "ranks must be >= 1"), ({"ranks": -3}, "ranks must be >= 1"),
    ({"ps": -1, "workers": 2}, "ps must be >= 0"), ({"ps": 0, "workers": 0}, "workers must be >= 1"),
    ({"ranks": 2, "timeout_s": 0}, "timeout_s must be > 0 seconds"),
    ({"ranks": 2, "timeout_s": -1.5}, "timeout_s must be > 0 seconds"),
    ({"ranks": 2, "timeout_s": None}, "timeout_s must be > 0 seconds: run_job always has a deadline"),
    ({"ranks": 2, "exit_grace_s": 0}, "exit_grace_s must be > 0 seconds")])
def test_run_job_refuses_nonsense_counts_and_seconds_before_starting_anything(kwargs, message, monkeypatch):
    from dfcore.mpi import job as job_lib

    monkeypatch.setattr(job_lib, "start_job", lambda *a, **k: pytest.fail("started a job"))
    with pytest.raises(ValueError, match=message):
        job_lib.run_job("x.py", progress=False, **kwargs)
