"""Task program for the gRPC launcher's tests: what a task was told, then a chosen behaviour.

Usage: ``launched_task.py BEHAVIOUR [MARKER] [launcher flags ...]``. Every task prints and reports its
``TF_CONFIG`` task, the cluster and its extra command-line words, and reports progress 1/1. Then, by
BEHAVIOUR: ``end`` — every task ends, the chief (worker 0) once every task has reported; ``serve`` —
ps tasks wait (60 s at most, as a ps in ``join``) and workers end, the chief once every task has printed
(and it removes their files); ``raise`` — worker 1 raises ValueError once every task has reported, the
others wait; ``hang`` — every task waits. MARKER, an unused word, lets a test find the processes.
"""

import os
import sys
import tempfile
import time

import dfcore as tf
from dfcore.mpi.report import progress, report

behaviour = sys.argv[1]
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
print(f"I am {resolver.task_type}:{resolver.task_id} at {resolver.master()}", flush=True)
# a file per task that has printed (named by MARKER), so that a chief in ``serve`` can wait for the others
marker = sys.argv[2] if len(sys.argv) > 2 else "no-marker"
seen = os.path.join(tempfile.gettempdir(), f"{marker}-{resolver.task_type}-{resolver.task_id}")
if behaviour == "serve":
    open(seen, "w").close()
report(task=(resolver.task_type, resolver.task_id), cluster=resolver.cluster_spec().as_dict(), argv=sys.argv[2:],
       pid=os.getpid())
progress(1, 1, "tasks")
everyone = sum(len(tasks) for tasks in resolver.cluster_spec().as_dict().values())
results = os.environ.get("DFCORE_RESULTS_DIR")


def wait_for_every_report() -> None:
    """Wait (30 s at most) until every task's report file is in the launcher's results directory."""
    give_up = time.monotonic() + 30.0
    while results and sum(name.endswith(".pkl") for name in os.listdir(results)) < everyone and \
            time.monotonic() < give_up:
        time.sleep(0.02)


if behaviour == "raise" and (resolver.task_type, resolver.task_id) == ("worker", 1):
    wait_for_every_report()  # so that the launcher's partial reports hold every other task's
    raise ValueError("launched_task: worker 1 fails on purpose")
if behaviour == "end" and (resolver.task_type, resolver.task_id) == ("worker", 0):
    wait_for_every_report()
give_up = time.monotonic() + 30.0
chief = (resolver.task_type, resolver.task_id) == ("worker", 0)
tasks = [(job, i) for job, addresses in resolver.cluster_spec().as_dict().items() for i in range(len(addresses))]
while behaviour == "serve" and chief and time.monotonic() < give_up and not all(
        os.path.exists(os.path.join(tempfile.gettempdir(), f"{marker}-{job}-{i}")) for job, i in tasks):
    time.sleep(0.02)
if behaviour == "serve" and chief:
    for job, i in tasks:
        try:
            os.remove(os.path.join(tempfile.gettempdir(), f"{marker}-{job}-{i}"))
        except FileNotFoundError:
            pass
waits = {"serve": resolver.task_type == "ps", "raise": True, "hang": True, "end": False}[behaviour]
give_up = time.monotonic() + 60.0
while waits and time.monotonic() < give_up:
    time.sleep(0.05)
