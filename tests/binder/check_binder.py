"""Build the environment as Binder builds it, from ``binder/`` alone, and run every lesson in it under nbval.

Binder (repo2docker) installs ``apt.txt`` with apt, puts the repository in the home directory of an
unprivileged user (``jovyan``), creates the Python that ``runtime.txt`` names and runs ``pip install -r
binder/requirements.txt`` from the repository root; it never runs ``make``. This script does the same
here, as far as it can without containers:

1. the system packages of ``apt.txt`` must be installed here (``dot`` comes from the system, as there);
2. as root, it creates (once) the unprivileged user ``dfcore-binder`` and drops to it for every step
   below; otherwise it runs as the current user;
3. it copies the repository's files (``git ls-files``: tracked, plus untracked ones not ignored) into a
   fresh temporary directory owned by that user;
4. it creates a virtual environment with ``runtime.txt``'s Python (``python3.X`` on ``PATH``) and runs
   ``pip install -r binder/requirements.txt`` in it, from the copy's root, nothing else;
5. it checks that every module each lesson and solution needs is installed there
   (``lesson_imports.py``), naming the lesson, the module and the import chain when one is missing;
6. it runs every lesson under nbval with the Makefile's options, in a kernel of that environment;
   pytest and nbval live in a second environment, so they cannot supply a module the lessons import.
   The solutions are not run again here: each is its lesson plus the answers, and `make test` runs them
   under nbval; step 5 checks what they import.

pip's cache stays in the user's home (``~/.cache/pip``), so a second run downloads nothing. Exit status
0 when every notebook passes; 1 with the reason otherwise. Usage::

    python3 tests/binder/check_binder.py            # what `make binder-check` runs
    python3 tests/binder/check_binder.py --keep     # keep the build directory to look around
    python3 tests/binder/check_binder.py notebooks/solutions/05_ring_allreduce.ipynb   # run these instead
"""

import argparse
import json
import os
import pathlib
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import binder_spec

REPO = binder_spec.REPO
#: The unprivileged user the check runs as when started as root (Binder's is ``jovyan``).
CHECK_USER = "dfcore-binder"
#: The Makefile's nbval options (NBVAL_ARGS), with the Binder environment's kernel instead of --nbval-current-env.
NBVAL_CELL_TIMEOUT_S = 300
TEST_TIMEOUT_S = 600
KERNEL_NAME = "dfcore-binder"
#: The test tools, installed in their own environment from the versions pyproject.toml's `test` extra gives.
TEST_TOOLS = ("pytest", "pytest-timeout", "nbval")
#: Environment variables passed on to the unprivileged steps: pip's configuration, proxies, CA bundles.
PASSED_ON = re.compile(r"PIP_\w+|(?i:https?_proxy|no_proxy)|SSL_CERT_\w+|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|CI|TERM")
INSTALL_TIMEOUT_S = 1800
NBVAL_TIMEOUT_S = 3600


class CheckFailed(Exception):
    """A step failed; the message says which and what to do."""


def log(message):
    print(f"[binder-check] {message}", flush=True)


def python_candidates(version):
    """Every ``pythonX.Y`` on ``PATH`` and in the system's directories, as real paths, in search order."""
    directories = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/bin", "/usr/bin"]
    found = [os.path.realpath(os.path.join(d, f"python{version}")) for d in directories if d]
    return list(dict.fromkeys(p for p in found if os.path.isfile(p) and os.access(p, os.X_OK)))


def find_python(version, runner, cwd):
    """The first ``pythonX.Y`` (``runtime.txt``'s version) that the check's user can run and make venvs with.

    A root-only interpreter (pyenv's under /root) is passed over, as Binder's user could not run it either.
    """
    for candidate in python_candidates(version):
        try:
            runner.run([candidate, "-c", "import ensurepip, venv"], cwd, 60, quiet=True)
            return candidate
        except CheckFailed:
            continue
    raise CheckFailed(f"binder/runtime.txt names python-{version}, but no python{version} that the user "
                      f"{runner.env['USER']} can run (with venv and ensurepip) is on PATH or in /usr/bin: install "
                      f"it (Debian: apt-get install python{version} python{version}-venv)")


def check_apt_packages(packages):
    """Fail unless every package of ``apt.txt`` is installed here (what Binder's apt step provides)."""
    if not shutil.which("dpkg-query"):
        log(f"no dpkg-query here: not checking that apt.txt's packages ({', '.join(packages)}) are installed")
        return
    for package in packages:
        result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True,
                                check=False)
        if result.stdout.strip() != "install ok installed":
            raise CheckFailed(f"binder/apt.txt installs `{package}` on Binder, but it is not installed here: "
                              f"apt-get install -y {package} (as root), then run the check again")
    if "graphviz" in packages and not shutil.which("dot", path="/usr/local/bin:/usr/bin:/bin"):
        raise CheckFailed("graphviz is installed but `dot` is not on the system PATH")


def check_user():
    """``(uid, gid, home)`` of the user the build runs as: ``dfcore-binder`` (created if needed) under root."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return entry.pw_uid, entry.pw_gid, entry.pw_dir
    try:
        entry = pwd.getpwnam(CHECK_USER)
    except KeyError:
        log(f"creating the unprivileged user {CHECK_USER}")
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", CHECK_USER], check=True)
        entry = pwd.getpwnam(CHECK_USER)
    return entry.pw_uid, entry.pw_gid, entry.pw_dir


def repository_files():
    """The repository's files as a fresh clone (and Binder) would have them, relative to the root."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        raise CheckFailed(f"cannot list the repository's files with git in {REPO}: {error}") from None
    return sorted({name for name in listed.decode().split("\0") if name and (REPO / name).is_file()})


def copy_repository(destination, uid, gid):
    """Copy the repository's files to ``destination``, owned by ``uid:gid`` (as Binder's copy is jovyan's)."""
    for name in repository_files():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    for path in [destination, *destination.rglob("*")]:
        os.chown(path, uid, gid, follow_symlinks=False)


def tool_requirements():
    """``pytest``, ``pytest-timeout`` and ``nbval`` with the versions pyproject.toml's `test` extra asks for."""
    specs = binder_spec.pyproject(REPO)["project"]["optional-dependencies"]["test"]
    wanted = [s for s in specs if re.split(r"[\s<>=!~;\[]", s, maxsplit=1)[0].lower() in TEST_TOOLS]
    return [s.split("#")[0].strip() for s in wanted]


def _descendants(pid):
    """The ids of every process below ``pid`` (from /proc): kernels start their own sessions, so the
    step's process group alone would miss them."""
    children = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # it ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(pid):
    """SIGKILL ``pid``'s process group and every process below it, with their groups."""
    for target in [pid, *_descendants(pid)]:
        for kill in (os.killpg, os.kill):
            try:
                kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):  # already gone, or not a group leader's id
                pass


class Runner:
    """Runs the steps as the check's user, in a clean environment, printing their output as it comes."""

    def __init__(self, uid, gid, home, path_first):
        self.user = None if uid == os.geteuid() else (uid, gid)
        self.env = {name: value for name, value in os.environ.items() if PASSED_ON.fullmatch(name)}
        self.env.update(HOME=home, LANG="C.UTF-8", PATH=f"{path_first}:/usr/local/bin:/usr/bin:/bin",
                        USER=pwd.getpwuid(uid).pw_name, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
                        PIP_PROGRESS_BAR="off")

    def run(self, command, cwd, timeout_s, extra_env=None, quiet=False):
        """Run ``command``, printing its output unless ``quiet``; return the output.

        Raises:
            CheckFailed: a non-zero exit (``args[1]`` is the output) or ``timeout_s`` passed (the
                command and its children are killed).
        """
        if not quiet:
            log("$ " + " ".join(map(str, command)))
        privileges = {"user": self.user[0], "group": self.user[1], "extra_groups": []} if self.user else {}
        try:
            process = subprocess.Popen([str(c) for c in command], cwd=cwd, env={**self.env, **(extra_env or {})},
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       start_new_session=True, **privileges)
        except OSError as error:  # not executable by this user, or missing
            raise CheckFailed(f"cannot run {command[0]} as {self.env['USER']}: {error}", "") from None
        watchdog = threading.Timer(timeout_s, _kill_tree, (process.pid,))
        watchdog.start()
        lines = []
        try:
            for line in process.stdout:
                if not quiet:
                    print(line, end="", flush=True)
                lines.append(line)
            process.wait()
        finally:
            timed_out = not watchdog.is_alive()
            watchdog.cancel()
        output = "".join(lines)
        if timed_out:
            raise CheckFailed(f"`{command[0]} ...` ran past {timeout_s} s and was killed", output)
        if process.returncode != 0:
            raise CheckFailed(f"`{' '.join(map(str, command[:4]))} ...` exited with {process.returncode}", output)
        return output


def write_kernelspec(jupyter_dir, python, uid, gid):
    """A kernelspec running ipykernel in the Binder environment (nbval's --nbval-kernel-name picks it)."""
    spec_dir = jupyter_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {"argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (Binder environment)", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    for path in (jupyter_dir, jupyter_dir / "kernels", spec_dir, spec_dir / "kernel.json"):
        os.chown(path, uid, gid)


def nbval_failures(output):
    """``[(test id, error)]`` for each failed notebook cell in pytest's output, in order; ``error`` is the
    traceback's last ``SomeError: message`` line (None when there is none)."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)    # IPython colours the traceback
    failures = []
    cell_reports = r"_{3,} (\S+\.ipynb::Cell \d+) _{3,}\n(.*?)(?=\n_{3,} |\n={3,} )"
    for test_id, body in re.findall(cell_reports, output, re.DOTALL):
        errors = re.findall(r"^(\w*(?:Error|Exception|Exit|Interrupt)\b.*)$", body, re.MULTILINE)
        failures.append((test_id, errors[-1] if errors else None))
    return failures


def explain(output):
    """What to tell the user about a failed nbval run: each notebook's first failed cell and its error."""
    by_notebook = {}
    for test_id, error in nbval_failures(output):
        by_notebook.setdefault(test_id.partition("::")[0], []).append((test_id, error))
    lines = []
    for failures in by_notebook.values():
        test_id, error = failures[0]
        missing = re.fullmatch(r"ModuleNotFoundError: No module named '(\w+)[\w.]*'", error or "")
        if missing:
            lines.append(f"{test_id}: imports `{missing.group(1)}`, which binder/requirements.txt does not install "
                         f"(add the pyproject.toml extra that provides it)")
        else:
            lines.append(f"{test_id}: {error or 'failed (see its output above)'}")
        if len(failures) > 1:
            lines.append(f"  and {len(failures) - 1} later cell(s) of the same notebook")
    return "\n".join(lines) or "nbval failed (see its output above)"


def check(imported, notebooks, keep):
    """Build the Binder environment in a fresh directory, check that it installs what the notebooks ``imported``
    import, and run ``notebooks`` (paths relative to the root)."""
    started = time.monotonic()
    version = binder_spec.runtime_python()
    check_apt_packages(binder_spec.apt_packages())
    uid, gid, home = check_user()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="dfcore-binder-check-"))
    os.chown(workdir, uid, gid)
    repo, binder_env, tools_env = workdir / "repo", workdir / "binder-venv", workdir / "tools-venv"
    runner = Runner(uid, gid, home, binder_env / "bin")
    try:
        python = find_python(version, runner, workdir)
        log(f"building in {workdir} as {runner.env['USER']} with {python} (runtime.txt: python-{version}); "
            f"pip's cache in {home}/.cache/pip")
        repo.mkdir()
        copy_repository(repo, uid, gid)
        runner.run([python, "-m", "venv", binder_env], repo, 300)
        runner.run([binder_env / "bin" / "python", "-m", "pip", "install", "-r", "binder/requirements.txt"],
                   repo, INSTALL_TIMEOUT_S)
        log(f"Binder environment built after {time.monotonic() - started:.0f} s")
        try:
            runner.run([binder_env / "bin" / "python", "tests/binder/lesson_imports.py", *imported], repo, 300)
        except CheckFailed as failure:
            raise CheckFailed("a notebook needs a module that binder/requirements.txt does not install (add the "
                              "pyproject.toml extra that provides it; `pytest tests/notebooks/test_binder_files.py` "
                              "names it):\n" + failure.args[-1].strip()) from None
        runner.run([python, "-m", "venv", tools_env], repo, 300)
        runner.run([tools_env / "bin" / "python", "-m", "pip", "install", *tool_requirements()],
                   repo, INSTALL_TIMEOUT_S)
        write_kernelspec(workdir / "jupyter", binder_env / "bin" / "python", uid, gid)
        try:
            runner.run([tools_env / "bin" / "python", "-m", "pytest", "-p", "no:cacheprovider",
                        f"--timeout={TEST_TIMEOUT_S}", "--nbval-lax", f"--nbval-kernel-name={KERNEL_NAME}",
                        "--nbval-sanitize-with", "notebooks/nbval_sanitize.cfg",
                        f"--nbval-cell-timeout={NBVAL_CELL_TIMEOUT_S}", *notebooks],
                       repo, NBVAL_TIMEOUT_S, extra_env={"JUPYTER_PATH": str(workdir / "jupyter")})
        except CheckFailed as failure:
            raise CheckFailed(f"{failure.args[0]}\n{explain(failure.args[-1])}") from None
        log(f"every notebook ran in the Binder environment: {len(notebooks)} notebooks, "
            f"{time.monotonic() - started:.0f} s in all")
    finally:
        if keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    """Build the Binder environment from binder/ and run every lesson in it; exit 1 naming what failed."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("notebooks", nargs="*", help="notebooks to run, relative to the repository root "
                        "(default: every lesson; the imports of every lesson and solution are checked)")
    parser.add_argument("--keep", action="store_true", help="keep the build directory")
    args = parser.parse_args(argv)
    lessons = [str(p.relative_to(REPO)) for p in sorted(REPO.glob("notebooks/*.ipynb"))]
    solutions = [str(p.relative_to(REPO)) for p in sorted(REPO.glob("notebooks/solutions/*.ipynb"))]
    notebooks = args.notebooks or lessons
    try:
        check(list(dict.fromkeys(lessons + solutions + notebooks)), notebooks, args.keep)
    except CheckFailed as failure:
        log(f"FAILED: {failure.args[0]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
