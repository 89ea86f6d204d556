"""TensorFlow in a process of its own, timed round by round beside dfcore (never one process for both).

The parent (a benchmark) starts this file under TensorFlow's interpreter: ``$DFCORE_TF_PYTHON`` when set (a
virtual environment holding ``tensorflow``), else the running interpreter when it can import ``tensorflow``;
without either, TF's column is left out. The worker reads one JSON request per line on stdin and answers one
JSON line: ``{"setup": "module:function", "args": [...]}`` imports a module of this folder (one that imports
no dfcore) and calls the function, which returns ``{name: callable}``; ``{"time": name, "inner": n, "clock":
c}`` runs that callable ``n`` times and answers the seconds per call on clock ``c`` (``"wall"``:
``time.perf_counter``; ``"cpu"``: ``time.process_time``, the CPU time of all the process's threads), measured
inside the worker, so the pipe's round trip is not in the figure and the parent can interleave TF's samples
with its own. On a loaded machine wall time mostly measures the scheduler; CPU time much less so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
HERE = pathlib.Path(__file__).resolve().parent
TF_PYTHON_ENV = "DFCORE_TF_PYTHON"


def tf_python() -> str | None:
    """The interpreter that runs TensorFlow's side, or None when there is none."""
    configured = os.environ.get(TF_PYTHON_ENV)
    if configured:
        return configured if pathlib.Path(configured).exists() else None
    return sys.executable if importlib.util.find_spec("tensorflow") is not None else None


def why_no_tf() -> str:
    """Why :func:`tf_python` found no TensorFlow, in a few words for a benchmark's header."""
    configured = os.environ.get(TF_PYTHON_ENV)
    return (f"${TF_PYTHON_ENV}={configured} does not exist" if configured else
            f"tensorflow not importable here and ${TF_PYTHON_ENV} not set")


class TFProcess:
    """A running worker; ``start()`` returns None when TensorFlow is not available (the reason in ``why``)."""

    why = ""

    def __init__(self, python: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(PYTHONPATH=str(HERE), TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1")
        self._log = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen([python, str(pathlib.Path(__file__).resolve())], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, text=True, env=env, cwd=HERE)

    @classmethod
    def start(cls) -> TFProcess | None:
        """A worker under :func:`tf_python`, or None (no TensorFlow)."""
        python = tf_python()
        if python is None:
            cls.why = why_no_tf()
            return None
        return cls(python)

    def _ask(self, request: dict) -> dict:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            self._log.seek(0)
            tail = self._log.read()[-2000:]
            raise RuntimeError(f"the TensorFlow worker died:\n{tail}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"the TensorFlow worker failed: {answer['error']}")
        return answer

    def setup(self, target: str, *args) -> list[str]:
        """Call ``module:function(*args)`` in the worker; returns the names of the callables it made."""
        return self._ask({"setup": target, "args": list(args)})["names"]

    def timer(self, name: str, inner: int = 1, clock: str = "wall"):
        """A callable that runs ``name`` ``inner`` times in the worker and returns the seconds per call on
        ``clock`` (a key of :data:`CLOCKS`)."""
        return lambda: self._ask({"time": name, "inner": inner, "clock": clock})["seconds"]

    def close(self) -> None:
        """Stop the worker (it exits at the end of its input)."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=60)
        self._log.close()

    def __enter__(self) -> TFProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def timer(fn, inner: int = 1, clock: str = "wall"):
    """A callable that runs ``fn`` ``inner`` times here and returns the seconds per call on ``clock`` (as
    :meth:`TFProcess.timer` does in the worker)."""
    now = CLOCKS[clock]

    def timed():
        start = now()
        for _ in range(inner):
            fn()
        return (now() - start) / inner

    return timed


def interleaved_timers(timers, repeats: int, warmup: int = 3) -> list[list[float]]:
    """``repeats`` samples of each of ``timers`` (callables returning their own seconds), taken in alternation
    with a rotating order (as ``_timing.interleaved_samples_s``), after ``warmup`` untimed calls of each."""
    for measure in timers:
        for _ in range(warmup):
            measure()
    samples: list[list[float]] = [[] for _ in timers]
    for r in range(repeats):
        for k in range(len(timers)):
            i = (r + k) % len(timers)
            samples[i].append(timers[i]())
    return samples


def _serve() -> None:
    """The worker's loop (this file run as a script under TensorFlow's interpreter)."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever TF prints, in C or Python, stays out of the protocol
    sys.stdout = sys.stderr
    made: dict = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if "setup" in request:
                module, function = request["setup"].split(":")
                new = getattr(importlib.import_module(module), function)(*request["args"])
                made.update(new)
                answer: dict = {"names": list(new)}
            else:
                answer = {"seconds": timer(made[request["time"]], request["inner"], request["clock"])()}
        except Exception as error:  # reported to the parent, which raises it
            answer = {"error": f"{type(error).__name__}: {error}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    _serve()
