"""Generate ``dfcore/compat/tf_v1_symbols.txt`` from TensorFlow's v1 API golden files.

Source: TensorFlow's ``tensorflow/tools/api/golden/v1/*.pbtxt`` (the API that TF's own
``api_compatibility_test`` checks), read from a git clone of tensorflow/tensorflow at a tag
(default ``v1.15.0``), so neither TensorFlow nor a checkout of it is needed at run time:

    python tools/generate_tf_v1_symbols.py --git-dir /path/to/tensorflow/.git [--rev v1.15.0]

Each ``tensorflow.<namespace>.pbtxt`` that holds a ``tf_module`` lists the module's members
(``member``: classes, constants, submodules) and functions (``member_method``). We keep the
module-level names of the namespaces in :data:`NAMESPACES` and their submodules, and every
member of the top-level ``tf`` module (so ``tf.keras`` itself is listed, its contents are not).
Class members (``tf.Session.run``) are not listed: a program that has the class has them.
"""

import argparse
import re
import subprocess
from pathlib import Path

GOLDEN_DIR = "tensorflow/tools/api/golden/v1"
OUTPUT = Path(__file__).resolve().parent.parent / "dfcore" / "compat" / "tf_v1_symbols.txt"

# The namespaces a TF1 program uses (each with its submodules). Left out: keras, lite, tpu,
# profiler, autograph, feature_column, lookup, ragged, sparse, strings, signal, raw_ops and
# the other specialised modules; their names on ``tf`` itself are still listed. ``tf.flags``
# (absl's flags module) has no golden file: only the name ``tf.flags`` is listed.
NAMESPACES = (
    "tf.app", "tf.compat", "tf.data", "tf.debugging", "tf.distribute", "tf.dtypes", "tf.errors",
    "tf.estimator", "tf.gfile", "tf.image", "tf.initializers", "tf.io", "tf.layers",
    "tf.linalg", "tf.logging", "tf.losses", "tf.math", "tf.metrics", "tf.nn", "tf.queue", "tf.random",
    "tf.saved_model", "tf.summary", "tf.test", "tf.train",
)
# Versioned aliases of the whole API (tf.compat.v1 is tf itself in dfcore).
EXCLUDED = ("tf.compat.v1", "tf.compat.v2")

_PATH = re.compile(r'^path: "tensorflow((?:\.[A-Za-z_][A-Za-z0-9_]*)*)"$')
_NAME = re.compile(r'^\s*name: "([^"]+)"$')
_MTYPE = re.compile(r'^\s*mtype: "(.*)"$')


def _kind(mtype: str) -> str:
    """``module``, ``class`` or ``constant`` from a golden member's ``mtype`` (its Python type)."""
    if mtype == "<type \\'module\\'>":
        return "module"
    if "type \\'type\\'" in mtype or "Meta" in mtype or "GeneratedProtocolMessageType" in mtype:
        return "class"
    return "constant"


def parse_module(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """``(namespace, [(name, kind), ...])`` of one golden file, or None for a class's file."""
    lines = text.splitlines()
    match = _PATH.match(lines[0]) if lines else None
    if match is None or lines[1:2] != ["tf_module {"]:
        return None
    namespace = "tf" + match.group(1)
    members: list[tuple[str, str]] = []
    block, name = None, None
    for line in lines[2:]:
        stripped = line.strip()
        if stripped in ("member {", "member_method {"):
            block, name = stripped[:-2], None
        elif (found := _NAME.match(line)) and block:
            name = found.group(1)
            if block == "member_method":
                members.append((name, "function"))
        elif (found := _MTYPE.match(line)) and block == "member" and name:
            members.append((name, _kind(found.group(1))))
    return namespace, members


def _wanted(namespace: str) -> bool:
    if any(namespace == x or namespace.startswith(x + ".") for x in EXCLUDED):
        return False
    return namespace == "tf" or any(namespace == ns or namespace.startswith(ns + ".") for ns in NAMESPACES)


def collect(git_dir: str, rev: str) -> list[tuple[str, str]]:
    """Every ``(qualified name, kind)`` of the wanted namespaces at ``rev``, sorted by name."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True,
                              text=True).stdout

    symbols = {}
    for path in git("ls-tree", "--name-only", f"{rev}:{GOLDEN_DIR}").split():
        if not path.endswith(".pbtxt") or ".-" in path:  # tensorflow.-session.pbtxt: a class
            continue
        parsed = parse_module(git("show", f"{rev}:{GOLDEN_DIR}/{path}"))
        if parsed is None or not _wanted(parsed[0]):
            continue
        namespace, members = parsed
        for name, kind in members:
            qualified = f"{namespace}.{name}"
            if not any(qualified == x or qualified.startswith(x + ".") for x in EXCLUDED):
                symbols[qualified] = kind
    return sorted(symbols.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True, help="a tensorflow/tensorflow git directory")
    parser.add_argument("--rev", default="v1.15.0", help="tag or commit to read (default v1.15.0)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    commit = subprocess.run(["git", "--git-dir", args.git_dir, "rev-parse", f"{args.rev}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    symbols = collect(args.git_dir, commit)
    header = [
        "# TensorFlow 1.x public API (tf.compat.v1): module-level names and their kind.",
        f"# Source: tensorflow/tensorflow {args.rev} (commit {commit}),",
        f"#   {GOLDEN_DIR}/*.pbtxt (TF's API golden files).",
        "# Generated by tools/generate_tf_v1_symbols.py; do not edit by hand.",
        f"# Namespaces (with their submodules): tf (its own members), {', '.join(NAMESPACES)}.",
        "# Format: <qualified name> <kind: module|class|function|constant>",
    ]
    args.output.write_text("\n".join(header + [f"{name} {kind}" for name, kind in symbols]) + "\n")
    print(f"wrote {len(symbols)} names to {args.output}")


if __name__ == "__main__":
    main()
