"""dfcore's TF 1.x compatibility report: the API data (TF's golden files at v1.15.0), the counts,
the AttributeError for a missing TF name, ``--check`` and ``--json``."""

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dfcore as tf
from dfcore import compat_report
from dfcore.compat.check_program import UNKNOWN, check_source, program_files
from dfcore.compat.coverage import HAVE, LACK, PARTIAL, all_symbols, count_by_namespace, resolves, symbol
from dfcore.compat.known_differences import KNOWN_DIFFERENCES
from dfcore.compat.symbols import namespace_of, partial_symbols, tf_source, tf_v1_symbols

REPO = Path(__file__).resolve().parents[2]
NOT_YET = "is part of TensorFlow 1.x's API but dfcore does not implement it yet (see python -m dfcore.compat_report)"


def test_the_data_file_has_tf_1_15s_names_and_says_where_they_come_from():
    symbols = tf_v1_symbols()
    assert symbols["tf.nn.conv2d"] == "function"
    assert symbols["tf.train.MonitoredTrainingSession"] == "function"
    assert symbols["tf.Session"] == "class"
    assert symbols["tf.layers"] == "module"
    assert symbols["tf.layers.dense"] == "function"
    assert symbols["tf.float32"] == "constant"
    assert set(symbols.values()) == {"module", "class", "function", "constant"}
    assert not any(name.startswith(("tf.contrib", "tf.compat.v1", "tf.keras.")) for name in symbols)
    assert "v1.15.0" in tf_source() and "590d6eef7e91a6a7392c8ffffb7b58f2e0c8bc6b" in tf_source()


def test_every_partial_name_is_a_tf_name_dfcore_has():
    for name, reason in partial_symbols().items():
        assert name in tf_v1_symbols(), name
        assert resolves(name) and reason, name
        assert symbol(name).status == PARTIAL


def test_have_partial_and_lack_add_up_in_every_namespace():
    symbols = all_symbols()
    counts = count_by_namespace(symbols)
    for row in counts:
        assert row.have + row.partial + row.lack == row.total
        assert row.total == sum(namespace_of(name) == row.namespace for name in tf_v1_symbols())
    assert sum(row.total for row in counts) == len(tf_v1_symbols()) == len(symbols)


def test_a_name_dfcore_has_is_present_and_a_missing_one_is_missing():
    assert symbol("tf.nn.relu").status == HAVE
    assert symbol("tf.train.Saver").status == PARTIAL
    assert not hasattr(tf.nn, "ctc_loss")
    assert symbol("tf.nn.ctc_loss").status == LACK


def test_a_missing_tf_name_says_dfcore_does_not_implement_it_yet():
    with pytest.raises(AttributeError) as caught:
        tf.nn.ctc_loss  # noqa: B018 - the attribute access is what raises
    assert str(caught.value) == f"module 'dfcore.nn' has no attribute 'ctc_loss': tf.nn.ctc_loss {NOT_YET}"
    assert caught.value.name == "ctc_loss"
    with pytest.raises(AttributeError, match=re.escape(f"tf.estimator {NOT_YET}")):
        tf.compat.v1.estimator  # noqa: B018 - the attribute access is what raises
    assert not hasattr(tf, "estimator") and not hasattr(tf.train, "ProximalAdagradOptimizer")


def test_every_missing_name_on_a_namespace_dfcore_has_gets_the_message():
    for sym in all_symbols():
        parent = namespace_of(sym.name)
        if sym.status == LACK and resolves(parent):
            with pytest.raises(AttributeError, match=re.escape(f"{sym.name} {NOT_YET}")):
                eval(sym.name, {"tf": tf})


def test_a_name_outside_tfs_api_keeps_pythons_plain_message():
    with pytest.raises(AttributeError) as caught:
        tf.train.Foo  # noqa: B018 - the attribute access is what raises
    assert str(caught.value) == "module 'dfcore.train' has no attribute 'Foo'"
    with pytest.raises(AttributeError, match=r"^module 'dfcore' has no attribute '__wrapped__'$"):
        tf.__wrapped__  # noqa: B018 - the attribute access is what raises
    assert tf.nn.relu.__module__ == "dfcore.ops.nn_ops"  # real attributes are not shadowed


SAMPLE = textwrap.dedent("""
    import tensorflow.compat.v1 as tf
    from tensorflow import nn as N

    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    loss = tf.nn.ctc_loss(labels, y, lengths)
    init = tf.contrib.layers.xavier_initializer()
    dense = tf.keras.layers.Dense(3)
    with tf.Session() as sess:
        sess.run(N.relu(y))
        sess.run(tf.nn.ctc_loss)
""")


def test_check_finds_the_tf_names_a_program_uses():
    uses = {use.name: use for use in check_source(SAMPLE)}
    assert uses["tf.placeholder"].status == HAVE and uses["tf.float32"].status == HAVE
    assert uses["tf.nn.conv2d"].status == PARTIAL and uses["tf.nn.conv2d"].lines == (6,)
    assert uses["tf.nn.ctc_loss"].status == LACK and uses["tf.nn.ctc_loss"].lines == (7, 12)
    assert uses["tf.contrib"].status == UNKNOWN
    assert uses["tf.keras"].status == LACK
    assert uses["tf.Session"].status == HAVE
    assert uses["tf.nn.relu"].status == HAVE and uses["tf.nn"].lines == (3,)


def test_check_command_reports_missing_names_and_fails(tmp_path, capsys):
    program = tmp_path / "model.py"
    program.write_text(SAMPLE)
    assert compat_report.main(["--check", str(program)]) == 1
    out = capsys.readouterr().out
    assert f"{program}:7, 12: tf.nn.ctc_loss: lack" in out
    assert "dfcore lacks 3 of them" in out
    program.write_text("import dfcore as tf\nwith tf.Session() as s:\n    s.run(tf.constant(1))\n")
    assert compat_report.main(["--check", str(program), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs_unchanged"] and {use["name"] for use in report["uses"]} == {"tf.Session", "tf.constant"}
    assert compat_report.main(["--check", str(tmp_path / "absent.py")]) == 2


def test_json_output_parses_and_agrees_with_the_counts(capsys):
    assert compat_report.main(["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["symbols"]) == len(tf_v1_symbols())
    rows = {row["namespace"]: row for row in report["namespaces"]}
    assert rows["tf.nn"]["total"] == rows["tf.nn"]["have"] + rows["tf.nn"]["partial"] + rows["tf.nn"]["lack"]
    assert compat_report.main(["--json", "--missing", "--namespace", "tf.train"]) == 0
    missing = json.loads(capsys.readouterr().out)["symbols"]
    assert missing and all(s["status"] == LACK and s["name"].startswith("tf.train.") for s in missing)
    assert "tf.train.experimental.LossScale" in {s["name"] for s in missing}


def test_plain_report_prints_the_table_then_the_missing_names():
    result = subprocess.run([sys.executable, "-m", "dfcore.compat_report", "--namespace", "tf.nn"],
                            check=False, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:5] == ["namespace", "have", "partial",
                                                                             "lack", "total"])
    assert lines[header + 1].split()[0] == "tf.nn" and lines[header + 2].split()[0] == "tf.nn.rnn_cell"
    assert "tf.nn (" in result.stdout and "ctc_loss" in result.stdout


def test_partial_listing_gives_reasons(capsys):
    assert compat_report.main(["--partial", "--namespace", "tf.nn"]) == 0
    assert "tf.nn.conv2d  use_cudnn_on_gpu is ignored" in capsys.readouterr().out


def test_generator_reads_module_golden_files_and_skips_class_files():
    spec = importlib.util.spec_from_file_location("gen", REPO / "tools" / "generate_tf_v1_symbols.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    module = textwrap.dedent('''\
        path: "tensorflow.nn.rnn_cell"
        tf_module {
          member {
            name: "LSTMCell"
            mtype: "<type \\'type\\'>"
          }
          member {
            name: "experimental"
            mtype: "<type \\'module\\'>"
          }
          member_method {
            name: "static_rnn"
            argspec: "args=[\\'cell\\'], varargs=None, keywords=None, defaults=None"
          }
        }
        ''')
    assert gen.parse_module(module) == ("tf.nn.rnn_cell", [("LSTMCell", "class"), ("experimental", "module"),
                                                           ("static_rnn", "function")])
    assert gen.parse_module('path: "tensorflow.Session"\ntf_class {\n}\n') is None


def test_check_follows_local_imports_and_flags_known_differences(tmp_path, capsys):
    (tmp_path / "main.py").write_text("import tensorflow as tf\nimport model_input\nfrom helpers import util\n"
                                      "import numpy as np\nserver = tf.train.Server\n")
    (tmp_path / "model_input.py").write_text("import tensorflow as tf\nimport model_input\n"
                                             "loss = tf.nn.ctc_loss\nr = tf.FixedLengthRecordReader(4)\n")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("from . import util\n")
    (tmp_path / "helpers" / "util.py").write_text("import tensorflow as tf\ntf.set_random_seed(1)\n")
    (tmp_path / "unused.py").write_text("import tensorflow as tf\ntf.nn.ctc_beam_search_decoder\n")
    main = str(tmp_path / "main.py")
    assert [p.name for p in program_files(main)] == ["main.py", "model_input.py", "__init__.py", "util.py"]
    assert compat_report.main(["--check", main]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path / 'model_input.py'}:3: tf.nn.ctc_loss: lack" in out  # found through the local import
    assert "ctc_beam_search_decoder" not in out  # a file beside it that it does not import
    assert "differs from TF (tf.train.Server): a server listens" in out
    assert "differs from TF (tf.set_random_seed)" in out
    assert out.strip().endswith("uses 4 TF names; dfcore lacks 1 of them.")
    (tmp_path / "model_input.py").write_text("import tensorflow as tf\nr = tf.FixedLengthRecordReader(4)\n")
    assert compat_report.main(["--check", main, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs_unchanged"] and len(report["files"]) == 4
    assert [d["names"] for d in report["differences"]] == [["tf.train.Server"], ["tf.set_random_seed"]]


def test_known_differences_name_tf_names():
    for difference in KNOWN_DIFFERENCES:
        for name in difference.names:
            assert name.rstrip(".") in tf_v1_symbols(), name  # a name, or a namespace ending in "."
