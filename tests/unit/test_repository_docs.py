"""What the repository says about itself is true: one Python version everywhere it is named, and a design
(``docs/architecture.md``) that names what exists, covers every package and is what docstrings cite."""

import importlib
import pathlib
import re
import subprocess
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


# -- the design lives in the repository: docs/architecture.md ------------------------------------------------------

ARCHITECTURE = REPO / "docs" / "architecture.md"
# (logs: TensorBoard runs the lessons write when they run, git-ignored)
_SKIPPED_DIRS = {".git", ".venv", "build", "node_modules", "vendor", "screenshots", "__pycache__", ".pytest_cache",
                 "logs"}
# Written in two pieces so that this file does not match itself: a design section outside the repository, the folder
# the design once lived in next to it, and its reference notes.
_OUTSIDE_DESIGN = re.compile("DESIGN" + r" §|\.\./" + "shared|" + r"\bshared/" + "reference/")
_ANCHOR = re.compile(r"architecture\.md#([A-Za-z0-9_-]+)")
_DOC_PATH = re.compile(r"`((?:dfcore|widgets|tests|tools|binder|notebooks|docs)/[^`\s]*)`")
_DOC_NAME = re.compile(r"`((?:dfcore|widgets)(?:\.[A-Za-z_]\w*)+)`")


def _tracked_text_files():
    """The repository's tracked files (``git ls-files``; outside a git checkout, every file but build outputs)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60)
        paths = [REPO / name for name in listed.stdout.decode("utf-8").split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        paths = [p for p in REPO.rglob("*") if not _SKIPPED_DIRS.intersection(p.relative_to(REPO).parts)]
    for path in paths:
        if path.is_file() and "vendor" not in path.relative_to(REPO).parts:
            try:
                yield path, path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # binary


def _slug(heading):
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def _resolve(dotted):
    """The object a dotted name names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(dotted)


def test_slug_follows_github():
    assert _slug("The path of one step") == "the-path-of-one-step"
    assert _slug("Where each TF format is built") == "where-each-tf-format-is-built"
    assert _slug("Errors and faults") == "errors-and-faults"


def test_no_file_cites_a_design_outside_the_repository():
    found = [f"{path.relative_to(REPO)}:{n}" for path, text in _tracked_text_files()
             for n, line in enumerate(text.splitlines(), 1) if _OUTSIDE_DESIGN.search(line)]
    assert not found, f"cite docs/architecture.md (and its section) instead: {found}"


def test_every_reference_to_the_architecture_names_a_section_it_has():
    anchors = _anchors()
    found = {m.group(1) for _, text in _tracked_text_files() for m in _ANCHOR.finditer(text)}
    assert found, "no file points to a section of docs/architecture.md"
    assert found <= anchors, f"sections docs/architecture.md lacks: {sorted(found - anchors)}; it has {sorted(anchors)}"


def test_every_path_the_architecture_names_exists():
    named = set(_DOC_PATH.findall(ARCHITECTURE.read_text(encoding="utf-8")))
    missing = [p for p in sorted(named) if not (list(REPO.glob(p.rstrip("/"))) if "*" in p else (REPO / p).exists())]
    assert len(named) > 40
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_module_and_function_the_architecture_names_exists():
    named = sorted(set(_DOC_NAME.findall(ARCHITECTURE.read_text(encoding="utf-8"))))
    missing = []
    for dotted in named:
        try:
            _resolve(dotted)
        except (ImportError, AttributeError) as error:
            missing.append(f"{dotted} ({error})")
    assert len(named) > 40
    assert not missing, f"docs/architecture.md names what the code lacks: {missing}"


def _packages():
    """The packages of dfcore (relative to it, ``runtime/grappler``) and the folders of tests/ and notebooks/."""
    dfcore = sorted(str(p.parent.relative_to(REPO / "dfcore")) for p in (REPO / "dfcore").rglob("__init__.py")
                    if p.parent != REPO / "dfcore")
    folders = sorted(str(p.relative_to(REPO)) for top in ("tests", "notebooks") for p in (REPO / top).iterdir()
                     if p.is_dir() and p.name not in _SKIPPED_DIRS and not p.name.startswith("."))
    return dfcore, folders


def test_the_architecture_describes_every_package():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    dfcore, folders = _packages()
    missing = [f"dfcore/{p}/" for p in dfcore
               if f"`dfcore/{p}/`" not in text and f"`{p.rpartition('/')[2]}/`" not in text]
    missing += [f"{p}/" for p in folders if f"`{p}/`" not in text]
    missing += [f"{p}/" for p in ("widgets", "binder", "tools") if f"`{p}/`" not in text]
    assert not missing, f"docs/architecture.md's package table lacks: {missing}"


def test_the_readme_layout_lists_every_package_and_links_the_architecture():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout"):]
    layout = layout[:layout.find("\n## ", 1)]
    dfcore, folders = _packages()
    top = [p for p in dfcore if "/" not in p]
    missing = [f"dfcore/{p}/" for p in top if f"`dfcore/{p}/`" not in layout]
    missing += [p for p in folders if p.startswith("tests/") and f"`{p.partition('/')[2]}/`" not in layout]
    missing += [f"{p}/" for p in ("widgets", "notebooks", "tests", "docs", "tools", "binder")
                if f"`{p}/`" not in layout]
    assert not missing, f"README.md's Layout lacks: {missing}"
    assert "(docs/architecture.md)" in layout
