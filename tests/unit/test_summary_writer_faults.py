"""FileWriter on a full disk or over a file-size limit: TF's error from the call that can report it.

Reference: TF's ``EventsWriter`` returns a failed write as a Status by errno (``ErrnoToCode``: ``ENOSPC`` ->
RESOURCE_EXHAUSTED, ``EFBIG`` -> OUT_OF_RANGE); dfcore raises it from the next ``add_summary``/``flush``/``close``,
never from a background thread, and says how many events were lost. The file keeps only whole records.
"""

import errno
import os
import subprocess
import sys
import threading

import pytest

import dfcore as tf
from dfcore.data.tfrecord import tf_record_iterator
from dfcore.framework.protos import Event, Summary


def scalar(value):
    return Summary(value=[Summary.Value(tag="loss", simple_value=value)])


class _FullDisk:
    """A raw file that takes ``room`` bytes, then fails with ENOSPC (a partial write first, as write(2) does)."""

    def __init__(self, inner, room):
        self._inner, self._room = inner, room

    def write(self, data):
        if self._room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = self._inner.write(data[:self._room])
        self._room -= n
        return n

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _events(logdir):
    (name,) = os.listdir(logdir)
    return [Event.FromString(r) for r in tf_record_iterator(os.path.join(logdir, name))]


def test_a_full_disk_is_resource_exhausted_from_add_summary_and_counts_the_lost_events(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=5)
    threads = set(threading.enumerate())
    writer._writer._file = _FullDisk(writer._writer._file, room=200)
    raised = []
    for step in range(40):
        try:
            writer.add_summary(scalar(float(step)), step)
        except tf.errors.ResourceExhaustedError as error:
            raised.append(step)
            message = error.message
    assert raised and raised == list(range(raised[0], 40))  # from the failing write on, every add reports it
    assert message.endswith(f"events to {writer._writer.path}; No space left on device")
    assert f"FileWriter could not write {writer.events_lost} of 41 events" in message
    with pytest.raises(tf.errors.ResourceExhaustedError, match=r"could not write \d+ of 41 events"):
        writer.close()
    written = [e.step for e in _events(str(tmp_path)) if e.HasField("summary")]
    assert written == list(range(len(written))) and len(written) + writer.events_lost == 40
    assert set(threading.enumerate()) <= threads  # the timer thread stopped


def test_the_background_flush_keeps_its_error_for_flush(tmp_path, capsys):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=100, flush_secs=0.01)
    writer._writer._file = _FullDisk(writer._writer._file, room=0)
    writer.add_summary(scalar(1.0), 1)
    writer._writer._stop.wait(0.2)  # several periodic flushes fail meanwhile
    with pytest.raises(tf.errors.ResourceExhaustedError, match="could not write 1 of 2 events"):
        writer.flush()
    with pytest.raises(tf.errors.ResourceExhaustedError):
        writer.close()
    assert "Traceback" not in capsys.readouterr().err
    assert [e.file_version for e in _events(str(tmp_path))] == ["brain.Event:2"]


_OVER_LIMIT = """
import resource, sys
import dfcore as tf
from dfcore.framework.protos import Summary
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
writer = tf.summary.FileWriter(sys.argv[1], max_queue=1)
for step in range(500):
    try:
        writer.add_summary(Summary(value=[Summary.Value(tag="loss", simple_value=1.0)]), step)
    except tf.errors.OpError as error:
        print(type(error).__name__, step, writer.events_lost)
        break
try:
    writer.close()
except tf.errors.OpError as error:
    print("close", type(error).__name__, error.message)
"""


def test_over_the_file_size_limit_is_tfs_out_of_range_error_with_whole_records(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", _OVER_LIMIT, str(tmp_path)], capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    first, close = out.stdout.splitlines()
    kind, step, lost = first.split()
    assert kind == "OutOfRangeError" and lost == "1"  # EFBIG is OUT_OF_RANGE in TF's ErrnoToCode
    assert close.startswith(f"close OutOfRangeError FileWriter could not write 1 of {int(step) + 2} events")
    events = _events(str(tmp_path))
    assert [e.step for e in events if e.HasField("summary")] == list(range(int(step)))
    assert os.path.getsize(os.path.join(tmp_path, os.listdir(tmp_path)[0])) <= 4096
