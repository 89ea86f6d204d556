"""What the Binder files say, read the way repo2docker reads them (standard library only).

``binder/runtime.txt`` names the Python (``python-3.11``), ``binder/apt.txt`` the Debian/Ubuntu
packages (one a line), ``binder/requirements.txt`` what pip installs from the repository root
(``-e .[lab,mpi]``: this project with extras from ``pyproject.toml``). Source: repo2docker's
configuration-file reference (https://repo2docker.readthedocs.io/en/latest/configuration/).
"""

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"

_PROJECT_LINE = re.compile(r"(?:-e\s+|--editable\s+)?\.(?:\[(?P<extras>[^\]]*)\])?")


def _lines(path):
    """The file's lines without comments and blank lines."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def runtime_python(binder=BINDER):
    """The ``X.Y`` that ``runtime.txt`` names (``python-3.11`` -> ``"3.11"``).

    Raises:
        ValueError: the file is not one ``python-X.Y`` line.
    """
    lines = _lines(pathlib.Path(binder) / "runtime.txt")
    match = re.fullmatch(r"python-(\d+\.\d+)", lines[0]) if len(lines) == 1 else None
    if not match:
        raise ValueError(f"{binder}/runtime.txt must be one line `python-X.Y` (repo2docker's format), got {lines}")
    return match.group(1)


def apt_packages(binder=BINDER):
    """The packages ``apt.txt`` installs, in file order."""
    return _lines(pathlib.Path(binder) / "apt.txt")


def requirement_lines(binder=BINDER):
    """The requirement lines of ``requirements.txt`` (comments and blank lines dropped)."""
    return _lines(pathlib.Path(binder) / "requirements.txt")


def project_extras(line):
    """For a line installing this project (``-e .[lab,mpi]``, ``.[lab]``, ``.``): its extras; else None."""
    match = _PROJECT_LINE.fullmatch(line.strip())
    if not match:
        return None
    return tuple(e.strip() for e in (match.group("extras") or "").split(",") if e.strip())


def pyproject(repo=REPO):
    """``pyproject.toml`` as a dict (tomllib; tomli on Python 3.10, which JupyterLab brings there)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(pathlib.Path(repo) / "pyproject.toml", "rb") as file:
        return tomllib.load(file)
