"""``python -m dfcore.compat_report``: how much of TensorFlow 1.x's API dfcore has, per namespace.

The names are TF 1.15's v1 API (``tf.compat.v1``) from TF's API golden files
``tensorflow/tools/api/golden/v1/*.pbtxt`` at tag v1.15.0, commit
590d6eef7e91a6a7392c8ffffb7b58f2e0c8bc6b (``dfcore/compat/tf_v1_symbols.txt``); names dfcore has
only in part, with why, are kept in ``dfcore/compat/partial.txt``.

    python -m dfcore.compat_report                       # summary table, then the missing names
    python -m dfcore.compat_report --namespace tf.train  # the same for tf.train and its submodules
    python -m dfcore.compat_report --missing             # missing names, one a line
    python -m dfcore.compat_report --partial             # partial names and why
    python -m dfcore.compat_report --json                # all of it, for programs
    python -m dfcore.compat_report --check my_model.py   # the TF names a program uses that dfcore lacks

``--check`` reads the program and the local modules it imports (files beside it), lists the names dfcore
lacks or has in part, then the defaults in which dfcore knowingly differs from TF that those names meet
(``dfcore/compat/known_differences.py``). It exits with status 1 when the program uses a name dfcore lacks,
2 when it cannot read it.
"""

import argparse
import dataclasses
import json
import sys
import textwrap
from collections.abc import Sequence

from .compat.check_program import UNKNOWN, NameUse, check_program, runs_unchanged
from .compat.coverage import LACK, PARTIAL, NamespaceCount, Symbol, all_symbols, count_by_namespace
from .compat.known_differences import differences_for
from .compat.symbols import namespace_of, tf_source

_WIDTH = 100


def format_table(counts: list[NamespaceCount]) -> str:
    """The summary table: one row per namespace, then the totals."""
    width = max([len(row.namespace) for row in counts] + [len("namespace")])
    lines = [f"{'namespace':<{width}}  {'have':>5}  {'partial':>7}  {'lack':>5}  {'total':>5}"]
    total = NamespaceCount("total", *(sum(getattr(row, f) for row in counts) for f in ("have", "partial", "lack")))
    for row in [*counts, total]:
        lines.append(f"{row.namespace:<{width}}  {row.have:>5}  {row.partial:>7}  {row.lack:>5}  {row.total:>5}")
    return "\n".join(lines)


def format_missing_grouped(symbols: list[Symbol]) -> str:
    """The missing names, one paragraph per namespace (short names)."""
    groups: dict[str, list[str]] = {}
    for sym in symbols:
        if sym.status == LACK:
            groups.setdefault(namespace_of(sym.name), []).append(sym.name.rpartition(".")[2])
    paragraphs = [textwrap.fill(", ".join(names), _WIDTH, initial_indent="  ", subsequent_indent="  ")
                  for names in groups.values()]
    return "\n".join(f"{ns} ({len(names)} missing):\n{text}"
                     for (ns, names), text in zip(groups.items(), paragraphs, strict=True))


def _use_lines(path: str, uses: list[NameUse]) -> list[str]:
    lines = []
    for use in uses:
        if use.status in (LACK, UNKNOWN, PARTIAL):
            where = ", ".join(str(line) for line in use.lines)
            note = f" ({use.note})" if use.note else ""
            lines.append(f"{path}:{where}: {use.name}: {use.status}{note}")
    return lines


def _verdict(uses: list[NameUse]) -> str:
    lacking = sum(use.status in (LACK, UNKNOWN) for use in uses)
    return "dfcore has every one of them" if runs_unchanged(uses) else f"dfcore lacks {lacking} of them"


def format_program(by_file: dict[str, list[NameUse]]) -> str:
    """``--check``'s report for a program and its local modules: each file's lacking and partial names, the
    known differences its names meet, then one verdict over all files."""
    every = [use for uses in by_file.values() for use in uses]
    lines = [line for path, uses in by_file.items() for line in _use_lines(path, uses)]
    for difference, names in differences_for(sorted({use.name for use in every})):
        lines.append(f"differs from TF ({', '.join(names)}): {difference.what}")
    files = list(by_file)
    also = f" (with its local modules {', '.join(files[1:])})" if len(files) > 1 else ""
    distinct = len({use.name for use in every})
    lines.append(f"{files[0]}{also} uses {distinct} TF names; {_verdict(every)}.")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dfcore.compat_report",
                                     description="How much of TensorFlow 1.x's API (v1.15) dfcore has.")
    parser.add_argument("--namespace", metavar="NS", help="only NS and its submodules, e.g. tf.train")
    parser.add_argument("--missing", action="store_true", help="list the missing names, one a line")
    parser.add_argument("--partial", action="store_true", help="list the names dfcore has in part, and why")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--check", metavar="FILE.py", help="report the TF names a program uses that dfcore lacks")
    return parser


def _check(path: str, as_json: bool) -> int:
    try:
        by_file = check_program(path)
    except (OSError, SyntaxError, UnicodeDecodeError) as error:
        print(f"cannot check {path}: {error}", file=sys.stderr)
        return 2
    every = [use for uses in by_file.values() for use in uses]
    if as_json:
        names = sorted({use.name for use in every})
        print(json.dumps({"file": path, "source": tf_source(), "runs_unchanged": runs_unchanged(every),
                          "files": list(by_file),
                          "uses": [dataclasses.asdict(use) | {"file": file}
                                   for file, uses in by_file.items() for use in uses],
                          "differences": [{"names": found, "what": difference.what}
                                          for difference, found in differences_for(names)]}, indent=1))
    else:
        print(format_program(by_file))
    return 0 if runs_unchanged(every) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the report; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.check:
        return _check(args.check, args.json)
    symbols = all_symbols(args.namespace)
    if not symbols:
        print(f"no TF 1.x names in namespace {args.namespace!r}", file=sys.stderr)
        return 2
    wanted = {status for status, on in ((LACK, args.missing), (PARTIAL, args.partial)) if on}
    listed = [sym for sym in symbols if sym.status in wanted] if wanted else symbols
    if args.json:
        print(json.dumps({"source": tf_source(),
                          "namespaces": [dataclasses.asdict(row) | {"total": row.total}
                                         for row in count_by_namespace(symbols)],
                          "symbols": [dataclasses.asdict(sym) for sym in listed]}, indent=1))
    elif wanted:
        print("\n".join(f"{sym.name}  {sym.reason}".rstrip() for sym in listed))
    else:
        print(f"dfcore's coverage of TensorFlow 1.x's API: {tf_source()}, TF's golden API files\n")
        print(format_table(count_by_namespace(symbols)))
        print("\nMissing names:\n" + format_missing_grouped(symbols))
        print("\nSee --partial for the names dfcore has in part, --check FILE.py for one program.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
