"""Which third-party modules a lesson needs, found by reading it and the project's code (nothing runs).

A lesson's imports are followed through the project's own modules (the repository's top-level
packages, ``dfcore`` and ``widgets``, and ``.py`` files next to the notebook), module-level and
function-level imports alike: ``dfcore.mpi`` imports ``mpi4py`` only inside its functions, and a
lesson that calls them needs it all the same. Imports inside ``try: ... except ImportError:`` are
optional by design (the code says what is missing and goes on) and are not counted. What is left,
minus the standard library, is what the environment must install.

Used by ``tests/notebooks/test_binder_files.py`` (mapped onto what ``binder/requirements.txt``
installs) and, as a script, by ``check_binder.py`` inside the freshly built Binder environment::

    python tests/binder/lesson_imports.py notebooks/*.ipynb   # exit 1 naming each module not installed

Standard library only, so it runs in any environment the project supports (Python 3.11+).
"""

import argparse
import ast
import collections
import importlib.util
import json
import pathlib
import sys
from dataclasses import dataclass

REPO = pathlib.Path(__file__).resolve().parents[2]
#: Exceptions whose handler makes the imports in its ``try`` body optional.
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
#: Cell magics whose body is Python (``%%time`` and friends); any other cell magic's body is not parsed.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun"}


@dataclass(frozen=True)
class Need:
    """A third-party top-level module a lesson needs, and how the lesson reaches it.

    ``chain`` reads from the lesson's cell to the import itself, e.g. ``("08_...ipynb::Cell 4: import
    dfcore.mpi", "dfcore/mpi/__init__.py:9: from .job import run_job", "dfcore/mpi/world.py:131:
    import mpi4py")``.
    """

    module: str
    chain: tuple

    def describe(self):
        """One line: the module, then the chain joined by arrows."""
        return f"`{self.module}` ({' -> '.join(self.chain)})"


@dataclass(frozen=True)
class _Import:
    line: int
    module: str        # absolute dotted name
    names: tuple       # for ``from module import a, b``: ("a", "b"), which may be submodules
    text: str          # the statement as written, for messages


def _catches_import_error(handler):
    if handler.type is None:
        return False
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in _IMPORT_ERRORS for t in types)


class _ImportCollector(ast.NodeVisitor):
    """Every import statement that is not optional, with relative imports made absolute."""

    def __init__(self, package):
        self.package = package    # the dotted package the code lives in ("" for a notebook or a top-level file)
        self.found = []

    def visit_Try(self, node):
        if not any(_catches_import_error(h) for h in node.handlers):
            self.generic_visit(node)
            return
        for child in node.handlers + node.orelse + node.finalbody:
            self.visit(child)

    def visit_Import(self, node):
        for alias in node.names:
            self.found.append(_Import(node.lineno, alias.name, (), f"import {alias.name}"))

    def visit_ImportFrom(self, node):
        names = tuple(alias.name for alias in node.names if alias.name != "*")
        dots = "." * node.level
        text = f"from {dots}{node.module or ''} import {', '.join(a.name for a in node.names)}"
        if node.level:
            base = self.package.split(".") if self.package else []
            base = base[:len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module
        self.found.append(_Import(node.lineno, module, names, text))


def python_imports(source, package=""):
    """The non-optional imports in ``source`` (Python code), absolute, in source order.

    Raises:
        SyntaxError: ``source`` is not valid Python.
    """
    collector = _ImportCollector(package)
    collector.visit(ast.parse(source))
    return collector.found


def _cell_python(source):
    """A code cell's Python, with IPython's line magics and shell escapes blanked (line numbers kept)."""
    lines = source.splitlines()
    if lines and lines[0].startswith("%%"):
        magic = lines[0][2:].split(maxsplit=1)[0] if lines[0][2:].strip() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return ""
        lines[0] = ""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)


def notebook_imports(path):
    """``[(cell_index, _Import)]`` for the notebook at ``path``; ``cell_index`` counts code cells from 0, as
    nbval's test names do (``lesson.ipynb::Cell 3``).

    Raises:
        SyntaxError: a code cell is not valid Python; the message names the notebook and the cell.
    """
    notebook = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    code_cells = [cell for cell in notebook.get("cells", []) if cell.get("cell_type") == "code"]
    found = []
    for index, cell in enumerate(code_cells):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        try:
            found += [(index, imp) for imp in python_imports(_cell_python(source))]
        except SyntaxError as error:
            raise SyntaxError(f"{pathlib.Path(path).name} cell {index}: {error.msg} (line {error.lineno})") from None
    return found


class ProjectModules:
    """Finds the project's own modules: the repository's top-level packages and files beside a notebook."""

    def __init__(self, repo=REPO):
        self.repo = pathlib.Path(repo)
        self.packages = {p.parent.name for p in self.repo.glob("*/__init__.py")}
        self._imports = {}

    def imports(self, path, package):
        """The non-optional imports of the module at ``path`` (parsed once per instance)."""
        if path not in self._imports:
            self._imports[path] = python_imports(path.read_text(encoding="utf-8"), package)
        return self._imports[path]

    def find(self, module, notebook_dir):
        """The source file of ``module`` when it is the project's own, else None.

        Returns ``(path, is_package)``, or None for the standard library and third-party modules.
        """
        parts = module.split(".")
        if parts[0] in self.packages:
            base = self.repo.joinpath(*parts)
        elif (notebook_dir / f"{parts[0]}.py").is_file() or (notebook_dir / parts[0] / "__init__.py").is_file():
            base = notebook_dir.joinpath(*parts)
        else:
            return None
        if (base / "__init__.py").is_file():
            return base / "__init__.py", True
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py"), False
        return None

    def is_own(self, module, notebook_dir):
        """True when the top-level name of ``module`` is the project's (even if the submodule is missing)."""
        top = module.split(".")[0]
        return top in self.packages or self.find(top, notebook_dir) is not None

    def display(self, path):
        """``path`` relative to the repository, for messages."""
        path = pathlib.Path(path)
        return str(path.relative_to(self.repo)) if path.is_relative_to(self.repo) else path.name


def _modules_executed(imp):
    """Every dotted module an import statement may execute: its parents, itself, and ``from`` names."""
    parts = imp.module.split(".") if imp.module else []
    chain = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return chain + [f"{imp.module}.{name}" for name in imp.names]


def lesson_needs(notebook, project=None):
    """The third-party top-level modules the notebook at ``notebook`` needs: ``{module: Need}``.

    Breadth-first from the notebook's cells through the project's modules, so each ``Need.chain``
    is a shortest way the lesson reaches the import. Standard-library modules are left out.

    Raises:
        SyntaxError: a cell or a project module does not parse.
    """
    notebook = pathlib.Path(notebook).resolve()
    project = project or ProjectModules()
    notebook_dir = notebook.parent
    needs = {}
    visited = set()
    queue = collections.deque()

    def consider(imp, chain):
        for module in _modules_executed(imp):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            if not project.is_own(module, notebook_dir):
                needs.setdefault(top, Need(top, chain))
                continue
            found = project.find(module, notebook_dir)
            if found and module not in visited:
                visited.add(module)
                queue.append((module, found, chain))

    for cell_index, imp in notebook_imports(notebook):
        consider(imp, (f"{notebook.name}::Cell {cell_index}: {imp.text}",))
    while queue:
        module, (path, is_package), chain = queue.popleft()
        package = module if is_package else module.rpartition(".")[0]
        for imp in project.imports(path, package):
            consider(imp, chain + (f"{project.display(path)}:{imp.line}: {imp.text}",))
    return needs


def missing_modules(notebooks):
    """``[(notebook, Need)]`` for every module a notebook needs that this interpreter cannot find."""
    project = ProjectModules()
    return [(nb, need) for nb in notebooks for need in lesson_needs(nb, project).values()
            if importlib.util.find_spec(need.module) is None]


def main(argv=None):
    """Exit 1, naming lesson, module and import chain, when a notebook needs a module not installed here."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    args = parser.parse_args(argv)
    missing = missing_modules(args.notebooks)
    for notebook, need in missing:
        print(f"{notebook}: needs {need.describe()}, which is not installed in {sys.prefix}")
    if missing:
        return 1
    print(f"every module the {len(args.notebooks)} notebooks import is installed in {sys.prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
