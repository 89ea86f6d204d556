"""Run the corpus programs of ``manifest.toml`` under TensorFlow and under dfcore, and print the table.

    python tests/corpus/run_corpus.py --src DIR --data DIR --tf PYTHON [--stubs DIR] [--only NAME ...]

``--src`` holds the fetched programs (``<src>/<program.dir>/<file>``, never in this repository), ``--data``
the stand-ins of :mod:`standins`. Each program is copied to a scratch directory, its engine import swapped
(``import tensorflow as tf`` becomes ``import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()`` or
``import dfcore as tf``), its data import pointed at the stand-ins and its step counts cut by the manifest's
``replace`` pairs (the same for both engines), then run one at a time with a timeout. A result is the last
line the program printed, or its first error (the last line of the traceback).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENGINE_IMPORT = {"tf": r"\1import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()",
                 "dfcore": r"\1import dfcore as tf"}
COMMON = [(r"(?m)^(\s*)import tensorflow as tf\s*$", None),
          (r"from tensorflow.examples.tutorials.mnist import input_data", "import mnist_input_data as input_data"),
          (r"import tensorflow.examples.tutorials.mnist.input_data as input_data",
           "import mnist_input_data as input_data"),
          (r"from tensorflow.contrib import rnn", "import contrib_rnn as rnn")]


def prepare(program: dict, src: Path, scratch: Path, engine: str) -> Path:
    """Copy the program's files into ``scratch`` with the swaps applied; returns the main file."""
    for name in program.get("files", [program["main"]]):
        text = (src / program["dir"] / name).read_text(encoding="utf-8")
        for pattern, replacement in COMMON:
            text = re.sub(pattern, ENGINE_IMPORT[engine] if replacement is None else replacement, text)
        for old, new in program.get("replace", []):
            if old not in text and name == program["main"]:
                raise SystemExit(f"{program['name']}: {old!r} not found in {name}")
            text = text.replace(old, new)
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_text(text, encoding="utf-8")
    return scratch / program["main"]


def outcome(proc: subprocess.CompletedProcess | None, seconds: float) -> tuple[str, str]:
    """``(result, first error)`` of a run."""
    if proc is None:
        return f"timeout after {seconds:.0f} s", "timeout"
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    errors = [line for line in proc.stderr.splitlines() if re.match(r"^[A-Za-z_.]*(Error|Exception|Exit)\b", line)]
    if proc.returncode != 0:
        return f"fails (rc {proc.returncode}, {seconds:.0f} s)", errors[-1] if errors else proc.stderr[-300:]
    return f"ok ({seconds:.0f} s): {lines[-1][:90] if lines else ''}", ""


def run(program: dict, engine: str, args: argparse.Namespace) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix=f"corpus-{engine}-") as scratch:
        main = prepare(program, Path(args.src), Path(scratch), engine)
        if program.get("data") == "text8":
            shutil.copy(Path(args.data) / "text8.zip", Path(scratch) / "text8.zip")
        paths = [args.stubs, str(HERE)] + ([str(HERE.parents[1])] if engine == "dfcore" else [])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), CORPUS_ENGINE=engine, MPLBACKEND="Agg",
                   CORPUS_MNIST=str(Path(args.data) / "mnist"), CORPUS_DATA=args.data, TF_CPP_MIN_LOG_LEVEL="3",
                   TF_USE_LEGACY_KERAS="1", OMP_NUM_THREADS="1", TF_NUM_INTEROP_THREADS="1",
                   TF_NUM_INTRAOP_THREADS="1", PYTHONHASHSEED="0")
        python = args.tf if engine == "tf" else sys.executable
        argv = [a.replace("{data}", args.data) for a in program.get("args", [])]
        start = time.monotonic()
        try:
            proc = subprocess.run([python, main.name, *argv], cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=args.timeout)
        except subprocess.TimeoutExpired:
            proc = None
        return outcome(proc, time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--tf", required=True, help="the Python of a TensorFlow environment")
    parser.add_argument("--stubs", default="", help="a directory put first on PYTHONPATH (e.g. a no-op matplotlib)")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--engines", nargs="*", default=["tf", "dfcore"])
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    programs = tomllib.loads((HERE / "manifest.toml").read_text(encoding="utf-8"))["program"]
    print("| program | exercises | TF | dfcore | first error (dfcore) |\n|---|---|---|---|---|", flush=True)
    for program in programs:
        if args.only and program["name"] not in args.only:
            continue
        results = {engine: run(program, engine, args) for engine in args.engines}
        tf_result = results.get("tf", ("-", ""))
        df_result = results.get("dfcore", ("-", ""))
        error = "; ".join(part for part in (df_result[1], tf_result[1] and f"TF: {tf_result[1]}") if part)
        print(f"| {program['name']} | {program['exercises']} | {tf_result[0]} | {df_result[0]} | {error} |",
              flush=True)


if __name__ == "__main__":
    main()
