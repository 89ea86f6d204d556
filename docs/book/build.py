"""Build the course website: ``python docs/book/build.py [--out build/book]`` (``make book`` runs it).

Sphinx reads its documents from one folder, so the committed lessons (``notebooks/``: the lessons, their
figures and ``solutions/``) are copied to ``<out>-src`` first; generated pages (the API reference) are written
there too, never into the repository. Then ``sphinx-build -b html`` runs with ``docs/book`` as its configuration
folder, every document read afresh (``-E``: the site's own extensions change what a page holds, which Sphinx's
cache would not notice; the doctrees go to ``<out>-doctrees``, outside the site) and every warning an error.
Nothing is executed and nothing is fetched from the network.
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NOTEBOOKS = REPO / "notebooks"
DEFAULT_OUT = REPO / "build" / "book"


def stage(source_dir: Path) -> None:
    """Copy the lessons, their figures and solutions to ``source_dir`` (emptied first); times are kept, so
    Sphinx sees an unchanged lesson as unchanged."""
    shutil.rmtree(source_dir, ignore_errors=True)
    shutil.copytree(NOTEBOOKS, source_dir, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))


def build(out: Path) -> subprocess.CompletedProcess:
    """Stage the sources next to ``out`` and build the HTML site into ``out``; the completed ``sphinx-build``
    (its output captured)."""
    source_dir, doctrees = out.with_name(out.name + "-src"), out.with_name(out.name + "-doctrees")
    stage(source_dir)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-W", "--keep-going", "-c", str(HERE),
               "-D", f"dfcore_sources_folder={NOTEBOOKS}",
               "-d", str(doctrees), str(source_dir), str(out)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder (default: build/book)")
    result = build(parser.parse_args().out.resolve())
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
