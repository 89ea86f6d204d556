"""The suite's one skip policy (``tests/_requirements.py``): a missing component the project installs skips a
test, naming the component, and fails it under ``CI=true``; and no test file writes its own rule."""

import pathlib
import re

import _requirements
import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
_OWN_RULES = re.compile(r"pytest\.importorskip\(|skipif\([^)]*(find_spec|shutil\.which|mpiexec)")


@pytest.fixture(params=["true", "TRUE", "false", ""], ids=["ci", "ci-upper", "not-ci", "unset"])
def ci(request, monkeypatch):
    """``$CI`` set to each value; True where the policy must fail instead of skip."""
    monkeypatch.setenv("CI", request.param)
    return request.param.lower() == "true"


def _outcome(call):
    """``("skip" | "fail", message)`` of a ``require*`` call that does not go on."""
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as info:
        call()
    return ("fail" if info.errisinstance(pytest.fail.Exception) else "skip"), str(info.value)


def test_require_goes_on_when_the_component_is_there(ci):
    assert _requirements.require(True, "Graphviz's dot", "unused") is None


def test_a_missing_component_skips_or_fails_under_ci_with_its_name(ci):
    kind, message = _outcome(lambda: _requirements.require(False, "Graphviz's dot", "no 'dot' on PATH"))
    assert kind == ("fail" if ci else "skip")
    assert message.startswith("Graphviz's dot is missing: no 'dot' on PATH")
    assert ("CI=true" in message) == ci


def test_require_module_returns_the_module_or_names_it(ci):
    assert _requirements.require_module("json.decoder").JSONDecoder is not None
    kind, message = _outcome(lambda: _requirements.require_module("no_such_module_dfcore", "grpcio"))
    assert kind == ("fail" if ci else "skip")
    assert message.startswith("grpcio is missing: no module 'no_such_module_dfcore'")


def test_require_program_returns_its_path_or_names_it(ci, tmp_path, monkeypatch):
    program = tmp_path / "dot"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _requirements.require_program("dot", "Graphviz's dot", "apt-get install graphviz") == str(program)
    program.unlink()
    kind, message = _outcome(lambda: _requirements.require_program("dot", "Graphviz's dot", "apt-get install graphviz"))
    assert kind == ("fail" if ci else "skip")
    assert message.startswith("Graphviz's dot is missing: no 'dot' on PATH; install it with apt-get install graphviz")


def test_require_mpi_names_mpi4py_then_mpiexec(ci, monkeypatch):
    from dfcore.mpi import env

    real_find_spec = _requirements.importlib.util.find_spec
    monkeypatch.setattr(_requirements.importlib.util, "find_spec",
                        lambda name, *args: None if name == "mpi4py" else real_find_spec(name, *args))
    kind, message = _outcome(_requirements.require_mpi)
    assert (kind, message.partition(" is missing")[0]) == ("fail" if ci else "skip", "MPI (mpi4py)")

    monkeypatch.undo()
    monkeypatch.setenv("CI", "true" if ci else "")
    monkeypatch.setattr(_requirements, "require_module", lambda *args: None)  # as if mpi4py imported

    def no_mpiexec(path=None):
        raise FileNotFoundError("No mpiexec found in the venv or on PATH.")

    monkeypatch.setattr(env, "find_mpiexec", no_mpiexec)
    kind, message = _outcome(_requirements.require_mpi)
    assert kind == ("fail" if ci else "skip")
    assert message.startswith("MPI (mpiexec) is missing: No mpiexec found in the venv or on PATH.")


def test_no_test_file_writes_its_own_skip_rule():
    files = [p for p in TESTS.rglob("*.py") if "vendor" not in p.parts and p.name != "test_requirements.py"]
    own = [f"{p.relative_to(TESTS)}:{i}" for p in files
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if _OWN_RULES.search(line)]
    assert not own, f"skip rules outside tests/_requirements.py (use require_module/require_program/require_mpi): {own}"
