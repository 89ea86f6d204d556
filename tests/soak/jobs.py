"""The two kinds of job the soak runs, and what each one's checkpoints and update logs must show.

Each kind gives its rank program and layout, the faults it can carry, the plan parameters of one job,
and two checks (lists of problems, empty when all is well): :meth:`checkpoint_problems` for one
checkpoint file, :meth:`applied_problems` for the update lines its ranks wrote in one job
(``applied.<rank>``, :mod:`jobfiles`). The checks shared by both kinds are in :mod:`invariants`.
"""

import os

import numpy as np
import ps_job
import ring_job

HERE = os.path.dirname(os.path.abspath(__file__))


class PSJob:
    """1 ps + 2 workers training asynchronously (:mod:`ps_job`); a checkpoint every ``2 * round_steps`` steps."""

    name = "ps"
    program = os.path.join(HERE, "ps_job.py")
    layout = {"ps": 1, "workers": 2}
    faults = ps_job.PS_FAULTS
    trigger_ranks = (1, 2)  # the workers count steps
    victims = (0, 1, 2)
    workers = 2

    def __init__(self, rounds: int = 5, round_steps: int = 10):
        self.rounds, self.round_steps = rounds, round_steps
        self.local_steps = rounds * round_steps
        self.checkpoint_every = self.workers * round_steps
        self.steps_per_job = self.workers * self.local_steps

    def plan_params(self) -> dict:
        return {"rounds": self.rounds, "round_steps": self.round_steps}

    def checkpoint_problems(self, path: str, step: int) -> list:
        values = ps_job.checkpoint_values(path)
        problems = []
        if not int(values["global_step"]) == int(values["applied_updates"]) == step:
            problems.append(f"{path}: global_step {values['global_step']} and applied_updates "
                            f"{values['applied_updates']} differ from the checkpoint's step {step}")
        if step % self.checkpoint_every:
            problems.append(f"{path}: step {step} is not a multiple of the interval {self.checkpoint_every}")
        if not (np.isfinite(values["w"]).all() and np.isfinite(values["b"]).all()):
            problems.append(f"{path}: w or b is not finite")
        return problems

    def applied_problems(self, rows, restored_step: int, completed: bool) -> list:
        """A completed job ran exactly ``steps_per_job`` updates, a failed one at most that; every update
        returned counters after the restored step and within this job's updates.

        The values one update returns need not be unique: dfcore fetches what the step computed, and
        when two workers' updates meet on the ps the later commit re-applies its increment to the newer
        value (no update lost, ``dfcore/runtime/variable_store.py``), so both may return the same number, as
        TF's fetched refs may too. That no update was lost or applied twice is checked on the counters
        themselves: in each checkpoint (:meth:`checkpoint_problems`) and, for a completed job, by the
        step of its last checkpoint (``run_soak``)."""
        problems = []
        if len(rows) > self.steps_per_job or (completed and len(rows) != self.steps_per_job):
            problems.append(f"{len(rows)} updates ran, {'exactly' if completed else 'at most'} "
                            f"{self.steps_per_job} expected")
        for column, name in enumerate(("global_step", "applied_updates")):
            values = [row[column] for row in rows]
            outside = sorted(v for v in values if not restored_step < v <= restored_step + self.steps_per_job)
            if outside:
                problems.append(f"updates returned {name} {outside[:5]}, outside ({restored_step}, "
                                f"{restored_step + self.steps_per_job}]: counted from a wrong base")
        return problems


class RingJob:
    """``ranks`` ranks all-reducing (:mod:`ring_job`); a checkpoint every ``checkpoint_every`` steps."""

    name = "ring"
    program = os.path.join(HERE, "ring_job.py")
    faults = ring_job.RING_FAULTS

    def __init__(self, ranks: int = 3, steps: int = 200, checkpoint_every: int = 20, seed: int = 0):
        self.layout = {"ranks": ranks}
        self.trigger_ranks = self.victims = tuple(range(ranks))
        self.local_steps = self.steps_per_job = steps
        self.checkpoint_every, self.seed, self.ranks = checkpoint_every, seed, ranks
        self._sum = (0, np.zeros(ring_job.ELEMENTS))  # (step, the exact acc after it)

    def plan_params(self) -> dict:
        return {"steps": self.local_steps, "checkpoint_every": self.checkpoint_every}

    def expected_acc(self, step: int) -> np.ndarray:
        """The sum of the numpy references of steps 1..``step`` (what ``acc`` must hold after it).

        Kept as one running sum (checkpoints are checked in step order), so the driver's memory
        stays flat however long it soaks; an earlier step is summed again from the start."""
        done, acc = self._sum if self._sum[0] <= step else (0, np.zeros(ring_job.ELEMENTS))
        for s in range(done + 1, step + 1):
            acc = acc + ring_job.reference(self.seed, self.ranks, s)
        self._sum = (step, acc)
        return acc

    def checkpoint_problems(self, path: str, step: int) -> list:
        values = ring_job.checkpoint_values(path)
        problems = []
        if int(values["step"]) != step:
            problems.append(f"{path}: holds step {values['step']}, its name says {step}")
        if not np.allclose(values["acc"], self.expected_acc(step), rtol=1e-9, atol=1e-9):
            problems.append(f"{path}: acc differs from the sum of the reference results of steps 1..{step} "
                            "(a step counted twice or lost)")
        return problems

    def applied_problems(self, rows, restored_step: int, completed: bool) -> list:
        """Rank 0 applied steps ``restored_step + 1, + 2, ...`` in order, each once; all of them if completed."""
        steps = [row[0] for row in rows]
        top = restored_step + self.steps_per_job if completed else restored_step + len(steps)
        if steps != list(range(restored_step + 1, top + 1)):
            return [f"rank 0 applied steps {steps[:3]}...{steps[-3:]}, expected {restored_step + 1}..{top} once each"]
        return []
