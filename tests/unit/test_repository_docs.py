"""What the repository says about itself is true: one Python version everywhere it is named."""

import pathlib
import re
import sys
import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]


def _pyproject():
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_one_python_version_everywhere():
    """``requires-python``'s minimum is what Binder runs, ruff targets and mypy checks, and what the READMEs say."""
    config = _pyproject()
    minimum = re.fullmatch(r">=\s*3\.(\d+)", config["project"]["requires-python"])
    assert minimum, f"requires-python should be '>=3.N', not {config['project']['requires-python']!r}"
    version = f"3.{minimum.group(1)}"
    assert (REPO / "binder" / "runtime.txt").read_text(encoding="utf-8").strip() == f"python-{version}"
    assert config["tool"]["ruff"]["target-version"] == f"py3{minimum.group(1)}"
    assert config["tool"]["mypy"]["python_version"] == version
    assert sys.version_info >= (3, int(minimum.group(1)))
    for readme in ("README.md", "binder/README.md"):
        text = (REPO / readme).read_text(encoding="utf-8")
        named = set(re.findall(r"[Pp]ython[ -](3\.\d+)", text))
        assert named == {version}, f"{readme} names Python {sorted(named)}; the project requires {version}"
