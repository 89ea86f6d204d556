"""Execute lessons in place and strip their widget state, so they are committed with outputs only.

Usage (``make notebooks`` runs the first form on every ``notebooks/*.ipynb``)::

    python tests/notebooks/strip_widget_state.py --execute notebooks/01_*.ipynb   # run, then strip
    python tests/notebooks/strip_widget_state.py notebooks/01_*.ipynb             # strip only

``--execute`` runs ``jupyter nbconvert --to notebook --execute --inplace`` on each file, as
``python -m nbconvert`` so that nbconvert and the kernel are this interpreter's (``jupyter nbconvert``
would pick whichever ``jupyter-nbconvert`` is first on PATH); the kernel starts in the notebook's
folder, so ``solutions/`` resolves. Stripping then removes what is either bulky or meaningless
without a live kernel, and keeps every output nbval compares:

- ``metadata.widgets`` (the saved widget-state JSON: every SVG frame of every widget, again);
- the ``application/vnd.jupyter.widget-view+json`` part of each output (a model id that no longer
  exists once the state is gone; it would show "Error displaying widget: model not found"), keeping
  its ``text/plain`` (the widget's stable ``__repr__``), which is what nbval compares, and its
  ``text/html`` (the widget's static picture, ``widgets/_static.py``: inline SVG that GitHub, nbviewer
  and ``nbconvert --to html`` show; nbval masks it, see ``notebooks/nbval_sanitize.cfg``);
- per-cell ``metadata.execution`` timestamps that nbclient records (noise in every diff).

A notebook opened in JupyterLab therefore shows each widget's static picture until its cell is run again.
"""

import argparse
import pathlib
import subprocess
import sys

import nbformat

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
DEFAULT_TIMEOUT_S = 300


def strip_outputs_of_widget_views(outputs):
    """Return ``outputs`` with widget-view parts removed; outputs left with no data are dropped."""
    kept = []
    for output in outputs:
        data = output.get("data")
        if data is not None and WIDGET_VIEW_MIME in data:
            data.pop(WIDGET_VIEW_MIME)
            if not data:
                continue
        kept.append(output)
    return kept


def strip_widget_state(nb):
    """Strip widget state and execution timestamps from a notebook node, in place.

    Args:
        nb: an ``nbformat.NotebookNode`` (nbformat 4).

    Returns:
        ``nb`` itself, for chaining.
    """
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = strip_outputs_of_widget_views(cell.outputs)
    return nb


def execute_in_place(path, timeout_s=DEFAULT_TIMEOUT_S):
    """Run every cell of the notebook at ``path`` with ``jupyter nbconvert --execute --inplace``.

    Raises:
        subprocess.CalledProcessError: a cell raised (and was not tagged ``raises-exception``).
        subprocess.TimeoutExpired: the whole run took longer than ``2 * timeout_s`` seconds.
    """
    path = pathlib.Path(path).resolve()
    command = [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", "--inplace",
               f"--ExecutePreprocessor.timeout={timeout_s}", str(path)]
    subprocess.run(command, cwd=path.parent, check=True, timeout=2 * timeout_s)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("--execute", action="store_true", help="run each notebook in place before stripping")
    parser.add_argument("--timeout-s", type=int, default=DEFAULT_TIMEOUT_S, help="per-cell time limit")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if args.execute:
            print(f"executing {path}", flush=True)
            execute_in_place(path, args.timeout_s)
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        nbformat.write(strip_widget_state(nb), path)
        print(f"stripped widget state from {path}", flush=True)


if __name__ == "__main__":
    main()
