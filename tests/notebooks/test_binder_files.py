"""The Binder files install what the lessons need, and nothing they do not: checked without building.

Every module a lesson or solution imports, followed through the project's own code (see
``tests/binder/lesson_imports.py``), must come from a distribution that ``binder/requirements.txt``
installs, directly or as a dependency (read from the installed packages' metadata); every extra it
installs beyond ``lab`` (JupyterLab itself) must bring something a lesson needs. The full check, a
fresh Binder-like build running every lesson, is ``make binder-check`` (``tests/binder/check_binder.py``).
"""

import collections
import importlib.metadata
import json
import pathlib
import re
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "binder"))

import binder_spec
import check_binder
import lesson_imports

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "notebooks" / "solutions").glob("*.ipynb"))
PROJECT = lesson_imports.ProjectModules(REPO)
#: The extra every Binder build needs whatever the lessons import: JupyterLab, which serves them.
SERVER_EXTRA = "lab"


def _project_requirements(extras):
    """``pyproject.toml``'s requirements of the project installed with ``extras``, as ``Requirement`` objects."""
    project = binder_spec.pyproject(REPO)["project"]
    specs = list(project.get("dependencies", []))
    for extra in extras:
        specs += project.get("optional-dependencies", {}).get(extra, [])
    return [Requirement(spec) for spec in specs]


def _applies(requirement, extras=()):
    return requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in ("", *extras))


def installed_distributions(lines):
    """Canonical names of every distribution pip installs for these requirement lines, dependencies included.

    Dependencies are read from the metadata of the distributions installed here (``make`` installs a
    superset of Binder's); one that is not installed here adds itself but none of its dependencies.
    """
    todo = []
    for line in lines:
        extras = binder_spec.project_extras(line)
        todo += _project_requirements(extras) if extras is not None else [Requirement(line)]
    todo = [r for r in todo if _applies(r)]
    extras_seen = {}
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in extras_seen and set(requirement.extras) <= extras_seen[name]:
            continue
        extras_seen.setdefault(name, set()).update(requirement.extras)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [r for r in map(Requirement, requires) if _applies(r, requirement.extras)]
    return set(extras_seen)


def _module_distributions():
    mapping = collections.defaultdict(set)
    for module, distributions in importlib.metadata.packages_distributions().items():
        mapping[module].update(canonicalize_name(d) for d in distributions)
    return mapping


def _extras_declaring(distribution):
    optional = binder_spec.pyproject(REPO)["project"].get("optional-dependencies", {})
    return sorted(extra for extra, specs in optional.items()
                  if any(canonicalize_name(Requirement(s).name) == distribution for s in specs))


def binder_problems(notebooks, lines):
    """One message per module a notebook needs that these requirement lines do not install."""
    installed = installed_distributions(lines)
    providers = _module_distributions()
    problems = []
    for notebook in notebooks:
        for need in lesson_imports.lesson_needs(notebook, PROJECT).values():
            distributions = providers.get(need.module, set())
            if distributions & installed:
                continue
            where = notebook.relative_to(REPO)
            if not distributions:
                problems.append(f"{where} needs {need.describe()}: no distribution installed here provides "
                                f"it, so binder/requirements.txt cannot either")
                continue
            extras = sorted({e for d in distributions for e in _extras_declaring(d)})
            fix = (f"install the extra(s) {', '.join(extras)} of pyproject.toml there" if extras
                   else "declare it in an extra of pyproject.toml that binder/requirements.txt installs")
            problems.append(f"{where} needs {need.describe()}, from {', '.join(sorted(distributions))}, which "
                            f"binder/requirements.txt ({'; '.join(lines)}) does not install: {fix}")
    return problems


def needed_distributions(notebooks):
    """Canonical names of the distributions providing the modules the notebooks need."""
    providers = _module_distributions()
    return {d for nb in notebooks for need in lesson_imports.lesson_needs(nb, PROJECT).values()
            for d in providers.get(need.module, ())}


def unneeded_extras(notebooks, lines):
    """The extras these lines install that bring no distribution a notebook needs (``lab`` always needed)."""
    installed_extras = [e for line in lines for e in (binder_spec.project_extras(line) or ())]
    base = {canonicalize_name(r.name) for r in _project_requirements([SERVER_EXTRA])}
    needed = needed_distributions(notebooks) - base
    return [extra for extra in installed_extras if extra != SERVER_EXTRA
            and not {canonicalize_name(r.name) for r in _project_requirements([extra])} & needed]


def test_lesson_imports_follow_project_code_and_skip_optional_ones(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .sub import train\n")
    (tmp_path / "pkg" / "sub.py").write_text(
        "import os\n\ndef train():\n    import needed_in_a_function\n\n"
        "try:\n    import optional_thing\nexcept ImportError:\n    optional_thing = None\n")
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "helper.py").write_text("from needed_by_helper.sub import x\n")
    notebook = tmp_path / "lessons" / "01.ipynb"
    cells = [{"cell_type": "markdown", "source": "import not_code"},
             {"cell_type": "code", "source": ["%matplotlib inline\n", "import json, pkg\n"]},
             {"cell_type": "code", "source": "!pip install nothing\nfrom helper import x"},
             {"cell_type": "code", "source": "%%bash\nimport not_python"}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))

    needs = lesson_imports.lesson_needs(notebook, lesson_imports.ProjectModules(tmp_path))

    assert sorted(needs) == ["needed_by_helper", "needed_in_a_function"]
    assert needs["needed_in_a_function"].chain == (
        "01.ipynb::Cell 0: import pkg",
        "pkg/__init__.py:1: from .sub import train",
        "pkg/sub.py:4: import needed_in_a_function")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[str(p.relative_to(REPO / "notebooks")) for p in NOTEBOOKS])
def test_binder_installs_every_module_the_notebook_needs(notebook):
    problems = binder_problems([notebook], binder_spec.requirement_lines())
    assert not problems, "\n".join(problems)


def test_a_missing_extra_is_reported_with_lesson_module_and_the_extra_to_add():
    lesson = REPO / "notebooks" / "08_multi_process_with_mpi.ipynb"
    if not lesson.is_file():
        pytest.skip("lesson 08 is not in this checkout")
    problems = binder_problems([lesson], ["-e .[lab]"])      # binder/requirements.txt before issue 21
    assert any(p.startswith("notebooks/08_multi_process_with_mpi.ipynb needs `mpi4py`") and "extra(s) mpi" in p
               for p in problems), problems


def test_binder_installs_the_server_extra_and_no_extra_the_lessons_do_not_need():
    lines = binder_spec.requirement_lines()
    assert [line for line in lines if binder_spec.project_extras(line) is not None], \
        f"binder/requirements.txt must install this project from the repository root (`-e .[...]`): {lines}"
    extras = [e for line in lines for e in (binder_spec.project_extras(line) or ())]
    assert SERVER_EXTRA in extras, f"binder/requirements.txt must install the `{SERVER_EXTRA}` extra: {lines}"
    assert unneeded_extras(NOTEBOOKS, lines) == []
    assert unneeded_extras(NOTEBOOKS, lines + ["-e .[test]"]) == ["test"]


def test_runtime_txt_names_a_python_the_project_supports_and_apt_txt_brings_dot():
    version = binder_spec.runtime_python()
    requires = binder_spec.pyproject(REPO)["project"]["requires-python"]
    assert SpecifierSet(requires).contains(version), f"runtime.txt's Python {version} is outside {requires}"
    assert "graphviz" in binder_spec.apt_packages(), "apt.txt must install Debian/Ubuntu's graphviz (`dot`)"


def test_every_binder_link_opens_the_same_repository_and_ref():
    link = re.compile(r"https://mybinder\.org/v2/(gh/[^/\s]+/[^/\s]+/[^/?\s)]+)")
    sources = [REPO / "README.md", *NOTEBOOKS]          # binder/README.md shows the placeholder on purpose
    found = {str(path.relative_to(REPO)): set(link.findall(path.read_text(encoding="utf-8"))) for path in sources}
    repositories = set().union(*found.values())
    assert len(repositories) == 1, f"Binder links disagree (fill in `<owner>` everywhere at once): {found}"


def test_the_parity_check_names_lesson_cell_and_module_from_a_failed_nbval_run(tmp_path):
    cells = [{"cell_type": "code", "id": "a", "execution_count": None, "metadata": {}, "outputs": [], "source": "x = 1"},
             {"cell_type": "code", "id": "b", "execution_count": None, "metadata": {}, "outputs": [],
              "source": "import dfcore_binder_check_absent.sub"}]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "09_lesson.ipynb").write_text(json.dumps(notebook))
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval-lax",
                          "--nbval-current-env", "09_lesson.ipynb"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 1, run.stdout
    assert check_binder.nbval_failures(run.stdout) == [
        ("09_lesson.ipynb::Cell 1", "ModuleNotFoundError: No module named 'dfcore_binder_check_absent'")]
    assert check_binder.explain(run.stdout).startswith(
        "09_lesson.ipynb::Cell 1: imports `dfcore_binder_check_absent`, which binder/requirements.txt does not install")


def _alive(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_a_parity_check_step_past_its_deadline_is_killed_with_the_processes_it_started(tmp_path):
    runner = check_binder.Runner(check_binder.os.geteuid(), check_binder.os.getegid(), str(tmp_path), tmp_path)
    spawn = ("import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', 'import time; "
             "time.sleep(120)'], start_new_session=True); print(child.pid, flush=True); time.sleep(120)")
    started = check_binder.time.monotonic()
    with pytest.raises(check_binder.CheckFailed, match="ran past 2 s and was killed") as failure:
        runner.run([sys.executable, "-c", spawn], tmp_path, timeout_s=2, quiet=True)
    assert check_binder.time.monotonic() - started < 60
    child = int(failure.value.args[1].split()[0])
    deadline = check_binder.time.monotonic() + 10
    while _alive(child) and check_binder.time.monotonic() < deadline:
        check_binder.time.sleep(0.1)
    assert not _alive(child), f"the step's own-session child {child} outlived the step"
