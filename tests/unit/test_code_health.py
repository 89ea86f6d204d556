"""Code-health rules that ruff and mypy do not check (``make lint`` runs those; see pyproject.toml).

* docs/architecture.md#layers: every import of every dfcore module (module level, inside functions and
  classes, relative or absolute) names its own unit or a unit of a lower layer of :data:`LAYERS`; only the lazy
  PEP 562 ``__getattr__`` namespace hooks of :data:`HOOKS` may point up. No import cycle joins two units.
* The public API of the packages in :data:`ANNOTATED_PACKAGES` is annotated: every public function and
  method names its parameter and return types.
"""

import ast
import pathlib

import pytest

DFCORE = pathlib.Path(__file__).resolve().parents[2] / "dfcore"
_EXEMPT_RETURNS = {"__init__"}
_PUBLIC_DUNDERS = {"__init__", "__call__", "__enter__", "__exit__", "__iter__", "__len__", "__getitem__"}


def _unannotated(tree):
    def visit(node, prefix, public):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not (public and (not child.name.startswith("_") or child.name in _PUBLIC_DUNDERS)):
                    continue
                args = child.args
                params = [a for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg not in ("self", "cls")]
                params += [a for a in (args.vararg, args.kwarg) if a is not None]
                missing = [a.arg for a in params if a.annotation is None]
                if child.returns is None and child.name not in _EXEMPT_RETURNS:
                    missing.append("return")
                if missing:
                    yield f"{prefix}{child.name} (line {child.lineno}): {', '.join(missing)}"
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.", public and not child.name.startswith("_"))

    yield from visit(tree, "", True)


# The packages whose public API is annotated (pyproject's [tool.mypy] checks every function body, annotated or not).
ANNOTATED_PACKAGES = ("runtime", "distribute", "transport", "data", "mpi", "train", "ops")


@pytest.mark.parametrize("path", sorted(p for pkg in ANNOTATED_PACKAGES for p in (DFCORE / pkg).rglob("*.py")),
                         ids=lambda p: str(p.relative_to(DFCORE)))
def test_public_api_of_annotated_packages_is_annotated(path):
    missing = list(_unannotated(ast.parse(path.read_text(encoding="utf-8"))))
    assert not missing, f"{path.relative_to(DFCORE)}: unannotated public API: {missing}"


# -- layers: docs/architecture.md#layers ---------------------------------------------------------------------------

#: dfcore's units from the bottom up: a unit is a top-level package or module of dfcore (``dfcore`` is the
#: package's own ``__init__.py``, the namespace ``import dfcore as tf`` sees). A module may import its own unit and
#: the units of lower layers; units of one layer may import each other as long as no import cycle joins them.
#: widgets/ sits above every layer: no dfcore module imports it.
LAYERS = (
    # TF's error classes; the array modules under the kernels; TF's logging and file API (they need errors only)
    {"errors", "backends", "tf_logging", "gfile"},
    # Graph, Operation, Tensor, dtypes, devices, the registries, the default graph and session, rendezvous keys
    {"framework"},
    # op constructors, shape functions, kernels, gradients, costs; they register Tensor's operators and conversions
    {"ops"},
    # Session: prune, place, optimize, partition, execute, rendezvous, trace
    {"runtime"},
    # what one Session runs: tf.data, eager execution, tf.summary, the Chrome trace, the models the drivers share,
    # tf.train (ClusterSpec included) and, above it, collectives, clusters and the parameter-server drivers
    {"data", "eager", "summary", "timeline", "models", "train", "distribute"},
    # the multi-process runtime, written once for every transport
    {"transport"},
    # MPI ranks and jobs; plain-process gRPC jobs (built on MPI's processes and layouts)
    {"mpi", "task_processes"},
    # the public façade: `import dfcore as tf` and the TF namespace modules beside it (tf.nn, tf.math, ...)
    {"dfcore", "app", "debugging", "image", "initializers", "io", "io_gfile", "layers", "linalg", "losses", "math",
     "nest", "nn", "python_io", "queue", "random", "test"},
    # tf.compat: compat.v1 is the façade itself; the API coverage tools read the façade
    {"compat"},
    # programs: the launcher, the benchmarks, the API coverage report
    {"launch", "bench", "compat_report"},
    # the runnable examples: nothing imports them
    {"examples"},
)

#: The only imports that may point up: lazy PEP 562 ``__getattr__`` hooks of namespace modules, which run when a
#: name is looked up, never while dfcore is imported. Imported module -> the units whose hooks may import it
#: (None: any unit). They are left out of the cycle check.
HOOKS = {
    # every TF namespace's hook raises compat.missing's AttributeError for a TF 1.x name dfcore lacks (missing.py
    # needs only compat/symbols.py; compat/__init__.py imports the façade, already loaded when a hook runs)
    "dfcore.compat.missing": None,
    # tf.compat itself: the façade loads it on first use, as compat/ builds on the façade
    "dfcore.compat": {"dfcore"},
    # tf.train.Server: distribute/ defines it on top of train/ (ClusterSpec, replica_device_setter)
    "dfcore.distribute.cluster": {"train"},
}

_LAYER_OF = {unit: index for index, layer in enumerate(LAYERS) for unit in layer}


def _unit(module):
    """The unit of a dotted module name, or None outside dfcore."""
    parts = module.split(".")
    return (parts[1] if len(parts) > 1 else "dfcore") if parts[0] == "dfcore" else None


def _is_module(dotted, root):
    path = root.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


_IMPORT_CALLS = ("importlib.import_module", "import_module")


def _imports(path, root=DFCORE):
    """``(line, module, in_hook)`` for every import in ``path`` (a module of the package ``root``): ``import a.b``,
    ``from a import b`` (``a.b`` when that is a module, else ``a``), relative ones resolved, and
    ``importlib.import_module("literal", __name__)``, wherever they stand (functions and classes included);
    ``in_hook``: inside the module's ``__getattr__``."""
    package = ".".join(path.relative_to(root.parent).parent.parts)
    name = package if path.name == "__init__.py" else f"{package}.{path.stem}"

    def visit(node, in_hook):
        for child in ast.iter_child_nodes(node):
            hook = in_hook or (node is tree and isinstance(child, ast.FunctionDef) and child.name == "__getattr__")
            if isinstance(child, ast.Import):
                yield from ((child.lineno, alias.name, hook) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - child.level + 1] if child.level else []
                module = ".".join(base + ([child.module] if child.module else []))
                for alias in child.names:
                    full = f"{module}.{alias.name}"
                    yield child.lineno, full if _is_module(full, root) else module, hook
            elif (isinstance(child, ast.Call) and ast.unparse(child.func) in _IMPORT_CALLS and child.args
                  and isinstance(child.args[0], ast.Constant)):
                target = child.args[0].value
                yield child.lineno, name + target if target.startswith(".") else target, hook
            yield from visit(child, hook)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    yield from visit(tree, False)


def _unit_of_path(path, root=DFCORE):
    first = path.relative_to(root).parts[0]
    return "dfcore" if first == "__init__.py" else first.removesuffix(".py")


def _edges(root=DFCORE):
    """``(importing unit, imported unit, where, module, allowed hook)`` for each import of another dfcore unit."""
    for path in sorted(root.rglob("*.py")):
        unit = _unit_of_path(path, root)
        for line, module, in_hook in _imports(path, root):
            target = _unit(module) or (module.split(".")[0] if module.split(".")[0] == "widgets" else None)
            if target is not None and target != unit:
                allowed = HOOKS.get(module, ())
                hook = in_hook and module in HOOKS and (allowed is None or unit in allowed)
                yield unit, target, f"{path.relative_to(root.parent)}:{line}", module, hook


def _layering_violations(root=DFCORE):
    bad = []
    for unit, target, where, module, hook in _edges(root):
        if unit not in _LAYER_OF or target not in _LAYER_OF:
            bad.append(f"{where}: {unit} -> {module}: give {(unit, target)[unit in _LAYER_OF]!r} a layer in LAYERS")
        elif _LAYER_OF[target] > _LAYER_OF[unit] and not hook:
            bad.append(f"{where}: {unit} (layer {_LAYER_OF[unit]}) imports {module} (layer {_LAYER_OF[target]})")
    return bad


def test_every_import_points_down_the_layers():
    bad = _layering_violations()
    assert not bad, "imports that point up the layers (docs/architecture.md#layers):\n" + "\n".join(bad)


def _cycle(graph):
    """One cycle of ``graph`` (``{node: {successors}}``) as a list of nodes, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for successor in sorted(graph.get(node, ())):
            if state.get(successor) == "open":
                return trail[trail.index(successor):] + [successor]
            if successor not in state:
                found = visit(successor, trail + [successor])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def _unit_graph(root=DFCORE):
    """``{unit: {units it imports}}``, the hooks of :data:`HOOKS` left out."""
    graph = {}
    for unit, target, _, _, hook in _edges(root):
        if not hook:
            graph.setdefault(unit, set()).add(target)
    return graph


def test_no_import_cycle_joins_two_units():
    cycle = _cycle(_unit_graph())
    assert cycle is None, f"import cycle between units: {' -> '.join(cycle)}"


def test_the_layering_check_sees_relative_function_level_and_hook_imports(tmp_path):
    """The checks above are not vacuous: they resolve relative imports (from ``__init__.py`` too), see imports in
    functions and methods, allow a hook's import only inside ``__getattr__``, and find a cycle."""
    names = {module for _, module, _ in _imports(DFCORE / "distribute" / "ps_data.py")}
    assert "dfcore.models.digits" in names and "dfcore.distribute.arguments" in names
    root = tmp_path / "dfcore"
    (root / "distribute").mkdir(parents=True)
    (root / "train").mkdir()
    (root / "__init__.py").write_text("")
    (root / "train" / "__init__.py").write_text(
        "from ..distribute import cluster\n"
        "def __getattr__(name):\n    from ..distribute.cluster import Server\n    from ..compat.missing import m\n"
        "def helper():\n    from ..compat.missing import m\n")
    (root / "distribute" / "__init__.py").write_text(
        "from . import cluster\ndef __getattr__(name):\n    return importlib.import_module('.probe', __name__)\n")
    (root / "distribute" / "probe.py").write_text("")
    (root / "distribute" / "cluster.py").write_text(
        "from .. import train\nclass A:\n    def f(self):\n        from ..mpi import world\n"
        "        from . import probe\n")
    found = {(module, hook) for _, module, hook in _imports(root / "train" / "__init__.py", root)}
    assert found == {("dfcore.distribute.cluster", False), ("dfcore.distribute.cluster", True),
                     ("dfcore.compat.missing", True), ("dfcore.compat.missing", False)}
    assert {m for _, m, _ in _imports(root / "distribute" / "cluster.py", root)} == {
        "dfcore.train", "dfcore.mpi", "dfcore.distribute.probe"}
    assert {m for _, m, _ in _imports(root / "distribute" / "__init__.py", root)} == {
        "dfcore.distribute.cluster", "dfcore.distribute.probe"}
    assert sorted(_layering_violations(root)) == [
        "dfcore/distribute/cluster.py:4: distribute (layer 4) imports dfcore.mpi (layer 6)",
        "dfcore/train/__init__.py:6: train (layer 4) imports dfcore.compat.missing (layer 8)"]
    assert _cycle(_unit_graph(root)) == ["distribute", "train", "distribute"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "d": {"a"}}) is None
