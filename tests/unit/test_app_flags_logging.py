"""tf.app.run, tf.app.flags / tf.flags (absl's, as in TF 1.x) and tf.logging, as classic programs use them."""

import logging
import subprocess
import sys
import textwrap

import dfcore as tf

PROGRAM = textwrap.dedent("""
    import dfcore as tf

    tf.app.flags.DEFINE_integer("steps", 3, "how many steps")
    tf.flags.DEFINE_string("job_name", "worker", "ps or worker")
    FLAGS = tf.app.flags.FLAGS

    def main(argv):
        tf.logging.set_verbosity(tf.logging.INFO)
        tf.logging.info("steps=%d job=%s rest=%s", FLAGS.steps, FLAGS.job_name, argv[1:])
        return 3

    if __name__ == "__main__":
        tf.app.run()
""")


def run_program(tmp_path, *args):
    path = tmp_path / "trainer.py"
    path.write_text(PROGRAM)
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=120)


def test_app_run_parses_flags_leaves_unknown_ones_and_exits_with_mains_result(tmp_path):
    done = run_program(tmp_path, "--steps=5", "--job_name", "ps", "--data_dir=/tmp/x", "extra")
    assert done.returncode == 3, done.stderr
    # absl's app.run logs in absl's format, naming the program's line, as under TF 1.x
    assert "trainer.py:10] steps=5 job=ps rest=['--data_dir=/tmp/x', 'extra']" in done.stderr


def test_a_bad_flag_value_is_reported_by_absl(tmp_path):
    done = run_program(tmp_path, "--steps=many")
    assert done.returncode == 1
    assert "flag --steps=many: invalid literal for int()" in done.stderr


def test_tf_flags_are_absls():
    from absl import flags

    assert tf.flags is flags and tf.app.flags is flags


def test_logging_levels_and_every_n(caplog):
    with caplog.at_level(logging.DEBUG, logger="dfcore"):
        tf.logging.set_verbosity(tf.logging.WARN)
        tf.logging.info("hidden")
        tf.logging.warn("shown %d", 1)
        assert tf.logging.get_verbosity() == tf.logging.WARN
        tf.logging.set_verbosity(tf.logging.INFO)
        for i in range(7):
            tf.logging.log_every_n(tf.logging.INFO, "every third %d", 3, i)
            tf.logging.log_first_n(tf.logging.INFO, "first two %d", 2, i)
    messages = [r.getMessage() for r in caplog.records]
    assert "hidden" not in messages and "shown 1" in messages
    assert [m for m in messages if m.startswith("every")] == ["every third 0", "every third 3", "every third 6"]
    assert [m for m in messages if m.startswith("first")] == ["first two 0", "first two 1"]
