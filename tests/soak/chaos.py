"""The seeded chaos: which fault each job carries, and the thread that signals a rank from outside.

A fault is planned per job (:func:`plan_fault`) from the driver's ``random.Random(seed)``: its kind,
the rank whose local step count triggers it (``rank``, a rank that counts steps), that step
(``step``, 1-based within the job), and for signals the rank to hit (``victim``, any rank) and a
delay after the step (``delay_s``). In-rank faults (``op_exception``, ``ps_mid_apply``,
``worker_mid_push``) are carried out by the ranks themselves (:mod:`fault_op`); ``sigkill`` and
``sigterm`` by :class:`Injector`, a driver thread that waits for the step in ``progress.<rank>``
and signals the victim's pid from ``pid.<victim>``.
"""

import os
import signal
import threading
import time

import jobfiles
from invariants import command_line

#: Faults the driver sends from outside, with their signal.
SIGNALS = {"sigkill": signal.SIGKILL, "sigterm": signal.SIGTERM}
#: One job in this many carries no fault (a clean run must lose nothing either).
CLEAN_ONE_IN = 8
_POLL_S = 0.005
_MAX_DELAY_S = 0.05


def plan_fault(rng, faults, trigger_ranks, victims, local_steps) -> dict:
    """The fault of one job: ``{"fault", "rank", "step", "victim", "where", "delay_s"}``.

    ``faults``: the kinds this job can carry; ``trigger_ranks``: ranks that count steps; ``victims``:
    ranks a signal may hit; ``local_steps``: steps each trigger rank runs in the job (the fault lands
    in ``[2, local_steps - 2]``, after the first step and before the job's last moments).
    """
    fault = "none" if rng.randrange(CLEAN_ONE_IN) == 0 else rng.choice(faults)
    return {"fault": fault, "rank": rng.choice(trigger_ranks), "step": rng.randint(2, local_steps - 2),
            "victim": rng.choice(victims), "where": rng.choice(("ps", "worker")),
            "delay_s": rng.uniform(0.0, _MAX_DELAY_S)}


class Injector:
    """Signals ``plan["victim"]`` once ``plan["rank"]`` has completed ``plan["step"]`` steps (signal faults only).

    Every wait is bounded by :meth:`stop` (called when the job has ended). ``injected_at`` is the
    ``time.time()`` just before the signal, or None if it was never sent (the job ended first).
    """

    def __init__(self, job_dir: str, plan: dict):
        self.job_dir, self.plan = job_dir, plan
        self.injected_at = None
        self._stop = threading.Event()
        self._thread = None
        if plan["fault"] in SIGNALS:
            self._thread = threading.Thread(target=self._run, name="soak-injector", daemon=True)
            self._thread.start()

    def _run(self):
        plan = self.plan
        progress = os.path.join(self.job_dir, f"progress.{plan['rank']}")
        while not self._stop.is_set():
            text = jobfiles.read_text(progress)
            if text is not None and int(text) >= plan["step"]:
                break
            self._stop.wait(_POLL_S)
        if self._stop.wait(plan["delay_s"]):
            return
        pid = jobfiles.read_text(os.path.join(self.job_dir, f"pid.{plan['victim']}"))
        if pid is None or self.job_dir.encode() not in command_line(int(pid)):  # gone (or its pid reused)
            return
        self.injected_at = time.time()
        try:
            os.kill(int(pid), SIGNALS[plan["fault"]])
        except ProcessLookupError:
            self.injected_at = None

    def stop(self) -> None:
        """End the thread (the job is over) and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
