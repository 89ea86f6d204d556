"""The chaos soak: train parameter-server and ring all-reduce MPI jobs, and parameter-server jobs over gRPC
(:mod:`grpc_kind`: the ps or a worker killed), while a seeded driver breaks them.

    python tests/soak/run_soak.py --duration-s 600 --seed 0      (make soak; CI: make soak SOAK_S=120)

Jobs of the two kinds (:mod:`jobs`) run one after the other through ``dfcore.mpi.run_job``, each
with one fault planned by :func:`chaos.plan_fault` (SIGKILL or SIGTERM of a random rank, an exception
inside an op, a ps killed between its apply and its counters, a worker killed before its push; one
job in eight runs clean). A job that fails is started again at once from its kind's latest
checkpoint (that is the recovery); a job that completes, or that restart whatever its end, hands over
to the next kind (so that every kind runs within a short soak though most jobs carry a fault). After every
job the driver checks the invariants (:mod:`invariants`, :mod:`jobs`): the job restored the latest
checkpoint and ``global_step`` never went backwards; no update applied twice, none lost beyond the
in-flight ones the mode allows; every new checkpoint restores and holds what it should; no process
of the job and no driver thread outlives it; the driver's memory stays flat. It prints one table —
faults injected, recoveries, time to detect (fault to ``run_job`` raising) and to recover (fault to
the restarted job's first step), p50/p99 — and exits 1 on any invariant violation. Beside the MPI jobs, for
the same duration and in its own process, tf.data pipelines are broken (:mod:`data_job`); their rounds and
violations join the table.
"""

import argparse
import collections
import os
import random
import shutil
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import chaos
import data_job
import invariants
import jobfiles
from grpc_kind import GrpcJobError, GrpcPSJob
from jobs import PSJob, RingJob

import dfcore as tf
from dfcore.errors import DeadlineExceededError
from dfcore.mpi import MPIJobError, run_job

JOB_TIMEOUT_S = 120.0
#: How many times in a row a job that Open MPI failed to start at all is started again.
LAUNCH_RETRIES = 3
#: A job needing this long past the deadline of the soak is not started.
MIN_JOB_S = 5.0


class KindState:
    """What the driver remembers of one kind across its jobs."""

    def __init__(self, kind, root: str):
        self.kind = kind
        self.state_dir = os.path.join(root, kind.name, "state")
        os.makedirs(self.state_dir)
        self.restored_step = 0
        self.checked = set()
        self.pending_fault_at = None  # time.time() of the fault the next job of this kind recovers from


class Soak:
    """Runs the jobs and keeps the tallies the table is made of."""

    def __init__(self, seed: int, root: str):
        self.rng = random.Random(seed)
        self.seed, self.root = seed, root
        self.kinds = [KindState(PSJob(), root), KindState(RingJob(seed=seed), root), KindState(GrpcPSJob(), root)]
        self.jobs_of = collections.Counter()
        self.injected = collections.Counter()
        self.not_injected = collections.Counter()
        self.recoveries = 0
        self.detect_s, self.recover_s = [], []
        self.violations = []
        self.rss = []
        self.launch_failures = []
        self.jobs = 0
        self.thread_baseline = threading.active_count()
        self.extra_rows = []  # (label, value) of kinds run beside the MPI jobs (data_job)

    def run(self, duration_s: float) -> None:
        end = time.monotonic() + duration_s
        started = time.monotonic()
        current, restarting = 0, False
        while time.monotonic() + MIN_JOB_S < end:
            state = self.kinds[current]
            failed = self.run_one(state)
            print(f"[{time.monotonic() - started:6.1f} s] {self.summary_line()}", flush=True)
            restarting = failed and not restarting
            if not restarting:
                state.pending_fault_at = None  # a recovery is timed by the restart that follows its fault
                current = (current + 1) % len(self.kinds)

    def run_one(self, state: KindState) -> bool:
        """Run one job of ``state``'s kind; True if it failed (the next job recovers it)."""
        kind = state.kind
        self.jobs += 1
        self.jobs_of[kind.name] += 1
        job_dir = os.path.join(self.root, kind.name, f"job{self.jobs:04d}")
        os.makedirs(job_dir)
        latest = tf.train.latest_checkpoint(state.state_dir)
        expected_step = invariants.checkpoint_step(latest) if latest else 0
        plan = chaos.plan_fault(self.rng, kind.faults, kind.trigger_ranks, kind.victims, kind.local_steps)
        plan.update(kind.plan_params(), state_dir=state.state_dir, seed=self.seed, timeout_s=JOB_TIMEOUT_S)
        jobfiles.write_json(os.path.join(job_dir, jobfiles.PLAN), plan)

        error, ended_at, injected_at = self._launch(kind, job_dir, plan)

        fault_at = injected_at or _float_or_none(jobfiles.read_text(os.path.join(job_dir, jobfiles.FAULT_AT)))
        self._record_recovery(state, job_dir)
        self._check(state, job_dir, plan, expected_step, error)
        if fault_at is not None:
            self.injected[plan["fault"]] += 1
            if error is not None:
                self.detect_s.append(ended_at - fault_at)
                state.pending_fault_at = fault_at
        else:
            self.not_injected[plan["fault"]] += 1
            if error is not None:
                self.violations.append(f"job {job_dir} ({plan['fault']} never injected) failed: {error}")
        self.last = (kind.name, plan, error, fault_at, ended_at)
        return error is not None

    def _launch(self, kind, job_dir: str, plan: dict):
        """Run the job with its fault injector: ``(error or None, time.time() at its end, time.time() of the
        injected signal or None)``.

        A job that Open MPI could not start (no rank began, none named as failing: e.g. "The PMIx server's
        listener thread failed to start") is started again and counted — the launcher's failure, not one
        the soak injected or dfcore caused — up to :data:`LAUNCH_RETRIES` times in a row; then the failure
        stands (and is a violation)."""
        retries = 0
        while True:
            injector = chaos.Injector(job_dir, plan)
            error = None
            try:
                if hasattr(kind, "run"):  # not an MPI job (grpc_kind)
                    kind.run(job_dir, JOB_TIMEOUT_S)
                else:
                    run_job(kind.program, args=[job_dir], timeout_s=JOB_TIMEOUT_S, progress=False, **kind.layout)
            except (MPIJobError, DeadlineExceededError, GrpcJobError) as caught:
                error = caught
            ended_at = time.time()
            injector.stop()
            never_started = (isinstance(error, MPIJobError) and error.rank is None
                             and not jobfiles.rank_values(job_dir, "pid"))
            if not never_started or retries == LAUNCH_RETRIES:
                return error, ended_at, injector.injected_at
            retries += 1
            self.launch_failures.append(str(error))

    def _record_recovery(self, state: KindState, job_dir: str) -> None:
        if state.pending_fault_at is None:
            return
        firsts = [float(t) for t in jobfiles.rank_values(job_dir, "first_step").values() if t]
        if firsts:
            self.recoveries += 1
            self.recover_s.append(min(firsts) - state.pending_fault_at)
            state.pending_fault_at = None

    def _check(self, state: KindState, job_dir: str, plan: dict, expected_step: int, error) -> None:
        kind = state.kind
        problems = []
        restored = jobfiles.read_json(os.path.join(job_dir, jobfiles.RESTORED))
        problems += invariants.restore_problems(restored, expected_step, state.restored_step)
        if restored is not None:
            state.restored_step = int(restored["step"])
            problems += kind.applied_problems(jobfiles.applied_lines(job_dir), state.restored_step, error is None)
        latest = tf.train.latest_checkpoint(state.state_dir)
        if error is None and restored is not None:
            problems += invariants.completed_problems(latest, state.restored_step + kind.steps_per_job)
        checkpoints = invariants.unchecked_checkpoints(tf.train.get_checkpoint_state(state.state_dir), state.checked)
        for path in checkpoints:
            problems += invariants.checkpoint_restore_problems(path, kind.checkpoint_problems)
            state.checked.add(path)
        problems += getattr(kind, "job_problems", lambda _: [])(job_dir)
        problems += invariants.leftover_problems(job_dir)
        problems += invariants.thread_problems(self.thread_baseline)
        self.rss.append(invariants.rss_bytes())
        self.violations += [f"job {os.path.basename(job_dir)} ({kind.name}, {plan['fault']}): {p}" for p in problems]
        if not problems and error is None:
            shutil.rmtree(job_dir, ignore_errors=True)

    def summary_line(self) -> str:
        name, plan, error, fault_at, ended_at = self.last
        outcome = "failed" if error is not None else "completed"
        detected = f", detected in {ended_at - fault_at:.2f} s" if error is not None and fault_at else ""
        return (f"job {self.jobs} {name}: {plan['fault']} (rank {plan['rank']}, step {plan['step']}) -> {outcome}"
                f"{detected}; recoveries {self.recoveries}, violations {len(self.violations)}")

    def table(self, duration_s: float) -> str:
        rows = [("faults injected", ", ".join(f"{k} {v}" for k, v in sorted(self.injected.items())) or "0"),
                ("clean jobs (no fault planned)", str(self.not_injected["none"])),
                ("fault planned, job ended first", ", ".join(f"{k} {v}" for k, v in sorted(self.not_injected.items())
                                                             if k != "none") or "0"),
                ("jobs run", f"{self.jobs} ({', '.join(f'{k} {v}' for k, v in sorted(self.jobs_of.items()))})"),
                ("jobs Open MPI failed to start (started again)", str(len(self.launch_failures))),
                ("recoveries (restart from the latest checkpoint)", str(self.recoveries)),
                ("time to detect, p50 / p99", _percentiles(self.detect_s)),
                ("time to recover, p50 / p99", _percentiles(self.recover_s)),
                ("driver RSS first / last job", _rss_range(self.rss)),
                *self.extra_rows,
                ("invariant violations", str(len(self.violations)))]
        width = max(len(label) for label, _ in rows)
        lines = [f"chaos soak: {duration_s:g} s, seed {self.seed}", "-" * (width + 40)]
        lines += [f"{label:<{width}}  {value}" for label, value in rows]
        return "\n".join(lines + self.violations[:20])

    def finish(self) -> None:
        self.violations += invariants.memory_problems(self.rss)


def _float_or_none(text):
    return None if not text else float(text)


def _percentiles(values) -> str:
    if not values:
        return "-"
    p50, p99 = np.percentile(values, [50, 99])
    return f"{p50:.2f} s / {p99:.2f} s  (n={len(values)})"


def _rss_range(samples) -> str:
    return f"{samples[0] / 2**20:.0f} MiB / {samples[-1] / 2**20:.0f} MiB" if samples else "-"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration-s", type=float, default=600.0, help="how long to keep starting jobs (s)")
    parser.add_argument("--seed", type=int, default=0, help="the chaos driver's seed")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (printed)")
    args = parser.parse_args(argv)
    if not args.duration_s > MIN_JOB_S:
        parser.error(f"--duration-s must be > {MIN_JOB_S:g} seconds, got {args.duration_s:g}")
    root = tempfile.mkdtemp(prefix="dfcore-soak-")
    soak = Soak(args.seed, root)
    data_summary = os.path.join(root, "data_soak.json")
    data = data_job.start(args.duration_s, args.seed, data_summary)
    try:
        soak.run(args.duration_s)
    finally:
        rows, problems = data_job.collect(data, data_summary)
        soak.extra_rows += rows
        soak.violations += problems
        soak.finish()
        print(soak.table(args.duration_s), flush=True)
        if args.keep or soak.violations:
            print(f"work directory kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if soak.violations else 0


if __name__ == "__main__":
    sys.exit(main())
