"""The import layers of `trainexec`: no import cycles, no lower layer importing a higher one.

The check reads the source of `trainexec/` with `ast` only: nothing is imported, no
TensorFlow loads, it runs in well under a second.

Every module belongs to one layer of `LAYERS`, lowest first. Data flows one way:
environment -> cluster model -> role -> trainer or evaluation engine -> results, so a module
may import its own layer and the layers below it, never one above. Layers of the same rank are
peers that must not import each other (the Estimator and the Keras trainers), and a layer with
`may_import` imports only the layers it names (the launcher needs no trainer).

Editing the table:

* a new module fails `test_every_module_has_a_layer` until you add it to a layer: decide
  where it belongs, do not just append it to the top;
* `"trainexec.x"` names one module (a package name means its `__init__.py`);
  `"trainexec.pkg.*"` is the package and everything under it; the checker lets an exact
  name win over a `.*` entry, but trainexec's table names only root modules
  (`trainexec/x.py`) and whole top-level packages (`test_each_top_level_room_is_one_layer`):
  a module that belongs to another layer than its package moves out of the package;
* a name of a module that does not exist (yet, or any more) is harmless.

What counts as an import of module M by module A (both in `trainexec/`):

* `import trainexec.m`, `from trainexec.m import x`, `from trainexec import m` (`m` a
  submodule), relative imports, `from trainexec.m import *`; at module level or inside a
  function (said so in messages) -- a function-level import is still a dependency;
* `importlib.import_module("trainexec.m")` with the name written out;
* imports under `if TYPE_CHECKING:` count for the layers (a type is a dependency, and
  it is drawn as one by anyone reading the imports) but not for cycles (they never run);
* not: the parent packages Python imports first (`import trainexec.a.b` runs
  `trainexec/__init__.py`); a package `__init__.py` that lazily re-exports (see below) costs
  nothing, and one that imports eagerly shows up as its own imports;
* lazy re-exports (`trainexec.lazy_exports`: `_EXPORTS = {"Name": "trainexec.m"}` handed to
  `lazy_exports(...)`, imported by name on first attribute use) count for the layers, so a
  shim cannot lazily reach upward, but not for cycles: they run after every import is done.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import textwrap
from typing import Iterable, Mapping, Sequence

import pytest

pytestmark = pytest.mark.any_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "trainexec"


@dataclasses.dataclass(frozen=True)
class Layer:
    rank: int  # lower imports nothing higher; equal ranks are peers that import neither way
    name: str
    modules: tuple[str, ...]  # "pkg.mod" exactly, or "pkg.sub.*": the package and all under it
    may_import: tuple[str, ...] | None = None  # None: every lower layer; else only these


# ---------------------------------------------------------------------------------------------
# The layers of trainexec, lowest first.
# ---------------------------------------------------------------------------------------------
LAYERS: tuple[Layer, ...] = (
    # Facts, records and rules with no notion of a cluster or a trainer: exceptions, time,
    # task-type names, the specs and the exporter protocol
    # they check; what a run leaves under model_dir (`records`); what a task tells whoever
    # runs it, and what a Slurm batch script tells its tasks (`contract`).
    Layer(0, "foundation", (
        "trainexec.errors",
        "trainexec.clock",
        "trainexec.env_settings",
        "trainexec.formatting",
        "trainexec.lazy_exports",
        # The record of a private TensorFlow/Keras attribute (each trainer's compat/
        # inventory) and its check.
        "trainexec.internals",
        "trainexec.task_types",
        "trainexec.exporter_protocol",
        "trainexec.specs",
        "trainexec.records.*",
        "trainexec.contract.*",
    )),
    # TF_CONFIG -> ClusterConfig, what a cluster shape can train, starting a task's server.
    Layer(1, "cluster model", (
        "trainexec.cluster.*",
    )),
    # The framework-neutral evaluation engine: it knows a model only through
    # `evaluation.target.EvaluationTarget`, nothing of Estimator or Keras.
    Layer(2, "evaluation engine", (
        "trainexec.evaluation.*",
    )),
    # trainexec's own model_fn Estimator (what `trainexec.estimator` names): a model, like
    # a Keras model, that knows no role, no task and no trainer.
    Layer(3, "estimator engine", (
        "trainexec.estimator_engine.*",
    )),
    # `tasks`: each role's sequence, written once over the hooks a trainer supplies, and
    # the plan it carries out (`tasks.plan.RolePlan`); the Trainer protocol above them.
    Layer(3, "trainer protocol and tasks", (
        "trainexec.trainer",
        "trainexec.tasks.*",
    )),
    # The trainers: peers, neither imports the other.
    Layer(4, "estimator trainer", (
        "trainexec.estimator_trainer.*",
    )),
    Layer(4, "keras trainer", (
        "trainexec.keras.*",
    )),
    # cluster -> role -> trainer.
    Layer(5, "executor", (
        "trainexec.executor",
    )),
    # Job specs: one description of a job's shape (roles, counts, command, env), its TFJob,
    # Vertex AI and Slurm batch script forms, TFJob manifests read and checked. Plain data
    # and pure rules: no cluster model, no trainer, no executor (PyYAML only inside
    # jobs.yaml_text, on use).
    Layer(5, "jobs", (
        "trainexec.jobs.*",
    ), may_import=("foundation",)),
    # The local launcher runs processes; it needs TF_CONFIG, exit codes and the job's shape,
    # never a trainer, the evaluation engine or the executor.
    Layer(6, "launch", (
        "trainexec.launch.*",
    ), may_import=("foundation", "cluster model", "jobs")),
    # The multi-host test bed and its TFJob-like kubelet: users' tests start jobs with
    # it; it runs programs, as the launcher does, and needs no trainer either.
    Layer(6, "testing", (
        "trainexec.testing.*",
    ), may_import=("foundation", "cluster model", "jobs")),
    # Entry points and the public surface. `trainexec/__init__.py`,
    # `trainexec/cluster/__init__.py` and `trainexec/launch/__init__.py` re-export lazily by
    # name (`lazy_exports`); the shims `trainexec.exporters` and `trainexec.keras_strategy`
    # keep documented import paths; `trainexec.estimator` is tf.estimator's names
    # (`train_and_evaluate` among them), re-exported lazily from the layers below.
    Layer(7, "entry points", (
        "trainexec",
        "trainexec.__main__",
        "trainexec.cli.*",
        "trainexec.exporters",
        "trainexec.keras_strategy",
        "trainexec.estimator.*",
        "trainexec.examples.*",
    )),
)


# ---------------------------------------------------------------------------------------------
# The checker (pure: a source tree and a table in, messages out).
# ---------------------------------------------------------------------------------------------
# How an import was written: where the `import` stands, or how the module is named.
MODULE_LEVEL, IN_FUNCTION, BY_NAME, LAZY, TYPES_ONLY = (
    "module level", "in a function", "by name", "lazy re-export", "for type checking")
# Kinds that never run while modules import each other: they count for the layers only.
NOT_RUN_AT_IMPORT = (LAZY, TYPES_ONLY)


@dataclasses.dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: str  # the importer's file, relative to the source root
    line: int
    kind: str  # MODULE_LEVEL, IN_FUNCTION, BY_NAME, LAZY or TYPES_ONLY

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def how(self) -> str:
        return "" if self.kind == MODULE_LEVEL else f" ({self.kind})"


def find_modules(src_root: pathlib.Path, package: str) -> dict[str, pathlib.Path]:
    """Every module of `package` under `src_root`, by dotted name."""
    modules = {}
    for path in sorted((src_root / package).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(src_root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _in_package(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


class _ImportFinder(ast.NodeVisitor):
    """(name, line, kind) of every import in one module (TYPES_ONLY under
    `if TYPE_CHECKING:`)."""

    def __init__(self, module: str, is_package: bool, modules: Mapping[str, pathlib.Path]):
        self.module = module
        self.is_package = is_package
        self.modules = modules
        self.functions = 0
        self.type_checking = 0
        self.found: list[tuple[str, int, str]] = []

    @property
    def kind(self) -> str:
        if self.type_checking:
            return TYPES_ONLY
        return IN_FUNCTION if self.functions else MODULE_LEVEL

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.type_checking += 1
            for child in node.body:
                self.visit(child)
            self.type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _visit_function(self, node: ast.AST) -> None:
        self.functions += 1
        self.generic_visit(node)
        self.functions -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self.kind))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.module.split(".")
            if not self.is_package:
                parts.pop()
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            name = submodule if alias.name != "*" and submodule in self.modules else base
            self.found.append((name, node.lineno, self.kind))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (called == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            self.found.append((node.args[0].value, node.lineno, BY_NAME))
        self.generic_visit(node)


def _lazy_exports(tree: ast.Module) -> list[tuple[str, int]]:
    """(module name, line) of each value of the dict handed to `lazy_exports(...)`."""
    dicts = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    dicts[target.id] = node.value
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and len(node.args) >= 2):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called != "lazy_exports":
            continue
        exports = node.args[1]
        if isinstance(exports, ast.Name):
            exports = dicts.get(exports.id)
        if isinstance(exports, ast.Dict):
            found += [(value.value, value.lineno) for value in exports.values
                      if isinstance(value, ast.Constant) and isinstance(value.value, str)]
    return found


def find_imports(src_root: pathlib.Path, package: str,
                 modules: Mapping[str, pathlib.Path]) -> list[Import]:
    """Every import of one module of `package` by another, in file and line order."""
    imports = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        finder = _ImportFinder(module, path.name == "__init__.py", modules)
        finder.visit(tree)
        found = finder.found + [(name, line, LAZY) for name, line in _lazy_exports(tree)]
        rel = path.relative_to(src_root).as_posix()
        imports += {Import(module, name, rel, line, kind) for name, line, kind in found
                    if _in_package(name, package)}  # one per line, however many names
    return sorted(imports, key=lambda i: (i.path, i.line, i.imported, i.kind))


def layer_of(module: str, layers: Sequence[Layer]) -> Layer | None:
    """The layer naming `module` exactly, else the one with the longest `pkg.*` around it."""
    best, best_length = None, -1
    for layer in layers:
        for entry in layer.modules:
            if entry == module:
                return layer
            if entry.endswith(".*"):
                package = entry[:-2]
                if _in_package(module, package) and len(package) > best_length:
                    best, best_length = layer, len(package)
    return best


def table_problems(layers: Sequence[Layer]) -> list[str]:
    """Mistakes in the table itself: a module twice, an unknown or higher `may_import`."""
    problems = []
    by_name = {layer.name: layer for layer in layers}
    if len(by_name) != len(layers):
        problems.append("two layers have the same name")
    seen: dict[str, str] = {}
    for layer in layers:
        for entry in layer.modules:
            if entry in seen:
                problems.append(f"{entry} is in layer {seen[entry]!r} and in {layer.name!r}")
            seen[entry] = layer.name
        for name in layer.may_import or ():
            other = by_name.get(name)
            if other is None:
                problems.append(f"layer {layer.name!r} may import {name!r}: no such layer")
            elif other.rank >= layer.rank:
                problems.append(f"layer {layer.name!r} may import {name!r}, which is not below it")
    return problems


def unplaced_modules(modules: Mapping[str, pathlib.Path], src_root: pathlib.Path,
                     layers: Sequence[Layer], table: str) -> list[str]:
    """A message for each module that no layer names."""
    return [f"{path.relative_to(src_root).as_posix()}: {module} is in no layer: add it to the "
            f"layer it belongs to in {table} (lowest first; a new module is placed on purpose)"
            for module, path in modules.items() if layer_of(module, layers) is None]


def layering_violations(imports: Iterable[Import], modules: Mapping[str, pathlib.Path],
                        layers: Sequence[Layer]) -> list[str]:
    """A message for each import of a higher layer, a peer, a layer not allowed, or nothing."""
    problems = []
    for imp in imports:
        if imp.imported not in modules:
            problems.append(f"{imp.where}: {imp.importer} imports {imp.imported}{imp.how}, "
                            f"which is no module in the source tree")
            continue
        low, high = layer_of(imp.importer, layers), layer_of(imp.imported, layers)
        if low is None or high is None or low is high:
            continue  # an unplaced module is reported once, by unplaced_modules
        said = (f"{imp.where}: {imp.importer} (layer {low.name!r}, rank {low.rank}) imports "
                f"{imp.imported} (layer {high.name!r}, rank {high.rank}){imp.how}")
        if high.rank > low.rank:
            problems.append(f"{said}: a lower layer imports a higher one")
        elif high.rank == low.rank:
            problems.append(f"{said}: peer layers must not import each other")
        elif low.may_import is not None and high.name not in low.may_import:
            problems.append(f"{said}: layer {low.name!r} may import only "
                            f"{', '.join(repr(name) for name in low.may_import)}")
    return problems


def _strongly_connected(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = lowlink[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = lowlink[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    lowlink[node] = min(lowlink[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _shortest_cycle(start: str, graph: Mapping[str, Sequence[str]], within: set[str]) -> list[str]:
    """start, ..., start: the shortest way round through `within` (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in graph[node]:
                if child not in within:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1] + [start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is on no cycle")


def import_cycles(imports: Iterable[Import], modules: Mapping[str, pathlib.Path]) -> list[str]:
    """A message for each group of modules that import each other round in a circle."""
    edges: dict[tuple[str, str], list[Import]] = {}
    for imp in imports:
        if imp.kind not in NOT_RUN_AT_IMPORT and imp.imported in modules:
            edges.setdefault((imp.importer, imp.imported), []).append(imp)
    graph: dict[str, list[str]] = {module: [] for module in modules}
    for importer, imported in sorted(edges):
        graph[importer].append(imported)
    problems = []
    for component in _strongly_connected(graph):
        start = component[0]
        if len(component) == 1 and start not in graph[start]:
            continue
        cycle = _shortest_cycle(start, graph, set(component))
        steps = []
        for importer, imported in zip(cycle, cycle[1:]):
            imp = edges[(importer, imported)][0]
            steps.append(f"{imp.where} {importer} imports {imported}{imp.how}")
        message = f"import cycle {' -> '.join(cycle)}: " + "; ".join(steps)
        if len(component) > len(cycle) - 1:
            message += f" (all on cycles with each other: {', '.join(component)})"
        problems.append(message)
    return problems


# ---------------------------------------------------------------------------------------------
# trainexec today.
# ---------------------------------------------------------------------------------------------
TABLE = "LAYERS in tests/test_layers.py"


@pytest.fixture(scope="module")
def tree():
    modules = find_modules(ROOT, PACKAGE)
    assert f"{PACKAGE}.executor" in modules, f"no {PACKAGE} source under {ROOT}"
    return modules, find_imports(ROOT, PACKAGE, modules)


def _fail_on(problems: list[str]) -> None:
    if problems:
        pytest.fail(f"{len(problems)} problem(s):\n" + "\n".join(problems), pytrace=False)


def test_the_table_is_consistent():
    _fail_on(table_problems(LAYERS))


def test_every_module_has_a_layer(tree):
    modules, _ = tree
    _fail_on(unplaced_modules(modules, ROOT, LAYERS, TABLE))


def test_the_table_names_root_modules_and_whole_packages():
    """No per-file exceptions: an entry is `trainexec`, a root module `trainexec.x`
    (trainexec/x.py), or a top-level package `trainexec.pkg.*` (its name alone only
    beside that, in the same layer)."""
    problems = []
    for layer in LAYERS:
        for entry in layer.modules:
            parts = entry.split(".")
            if entry == PACKAGE:
                continue
            if len(parts) == 3 and parts[2] == "*":
                if not (ROOT / PACKAGE / parts[1] / "__init__.py").is_file():
                    problems.append(f"{entry} ({layer.name!r}): trainexec/{parts[1]}/ is no "
                                    "package")
            elif len(parts) == 2 and (ROOT / PACKAGE / f"{parts[1]}.py").is_file():
                continue
            elif len(parts) == 2 and (ROOT / PACKAGE / parts[1] / "__init__.py").is_file():
                if f"{entry}.*" not in layer.modules:
                    problems.append(f"{entry} ({layer.name!r}): a package's name without "
                                    f"{entry}.* beside it in the same layer")
            else:
                problems.append(f"{entry} ({layer.name!r}): neither a root module nor a whole "
                                "top-level package: move the module out of its package")
    _fail_on(problems)


def test_each_top_level_room_is_one_layer(tree):
    """Every module sits in the layer of its top-level package (or is a root module)."""
    modules, _ = tree
    problems = []
    for module in modules:
        top = ".".join(module.split(".")[:2])
        own, package = layer_of(module, LAYERS), layer_of(top, LAYERS)
        if own is not package:
            problems.append(f"{module} is in layer {getattr(own, 'name', None)!r} but {top} "
                            f"in {getattr(package, 'name', None)!r}")
    _fail_on(problems)


def test_no_import_cycles(tree):
    modules, imports = tree
    _fail_on(import_cycles(imports, modules))


def test_no_upward_imports(tree):
    modules, imports = tree
    _fail_on(layering_violations(imports, modules, LAYERS))


# ---------------------------------------------------------------------------------------------
# The checker itself, on small trees: it must fail when it should.
# ---------------------------------------------------------------------------------------------
TOY_LAYERS = (
    Layer(0, "low", ("pkg.base", "pkg.util", "pkg.lazy_exports")),
    Layer(1, "mid", ("pkg.mid.*",)),
    Layer(2, "left", ("pkg.left",)),
    Layer(2, "right", ("pkg.right",)),
    Layer(3, "tool", ("pkg.tool",), may_import=("low",)),
    Layer(4, "top", ("pkg", "pkg.cli")),
)

CLEAN = {
    "pkg/__init__.py": """
        from pkg.lazy_exports import lazy_exports
        _EXPORTS = {"Thing": "pkg.mid.thing"}
        __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
        """,
    "pkg/lazy_exports.py": "",  # never run: the checker only reads the source
    "pkg/base.py": """
        from typing import TYPE_CHECKING
        import os
        if TYPE_CHECKING:
            from pkg.util import base
        """,
    "pkg/util.py": """
        from pkg import base
        """,
    "pkg/mid/__init__.py": "",
    "pkg/mid/thing.py": """
        from .. import util
        from ..base import os
        def later():
            import pkg.util
        """,
    "pkg/left.py": "import pkg.mid.thing\n",
    "pkg/right.py": "from pkg.mid import thing\n",
    "pkg/tool.py": "from pkg.util import base\n",
    "pkg/cli.py": """
        import importlib
        from pkg import left, right, tool
        def main():
            return importlib.import_module("pkg.mid.thing")
        """,
}


def _check(tmp_path: pathlib.Path, changes: Mapping[str, str] | None = None) -> list[str]:
    files = {**CLEAN, **(changes or {})}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    modules = find_modules(tmp_path, "pkg")
    imports = find_imports(tmp_path, "pkg", modules)
    return (table_problems(TOY_LAYERS) + unplaced_modules(modules, tmp_path, TOY_LAYERS, "TOY")
            + import_cycles(imports, modules) + layering_violations(imports, modules, TOY_LAYERS))


def test_checker_passes_a_clean_tree(tmp_path):
    assert _check(tmp_path) == []


def test_checker_sees_every_kind_of_import(tmp_path):
    _check(tmp_path)
    modules = find_modules(tmp_path, "pkg")
    seen = {(i.importer, i.imported, i.line, i.kind)
            for i in find_imports(tmp_path, "pkg", modules)}
    assert seen >= {
        ("pkg", "pkg.mid.thing", 2, LAZY),
        ("pkg.util", "pkg.base", 1, MODULE_LEVEL),
        ("pkg.mid.thing", "pkg.util", 1, MODULE_LEVEL),  # from .. import util
        ("pkg.mid.thing", "pkg.base", 2, MODULE_LEVEL),  # from ..base import os
        ("pkg.mid.thing", "pkg.util", 4, IN_FUNCTION),
        ("pkg.left", "pkg.mid.thing", 1, MODULE_LEVEL),
        ("pkg.right", "pkg.mid.thing", 1, MODULE_LEVEL),  # from pkg.mid import thing
        ("pkg.tool", "pkg.util", 1, MODULE_LEVEL),  # base is a name in pkg.util here
        ("pkg.cli", "pkg.mid.thing", 4, BY_NAME),
    }
    assert ("pkg.base", "pkg.util", 4, TYPES_ONLY) in seen


def test_a_type_checking_import_counts_for_layers_not_for_cycles(tmp_path):
    # base <-> util only through a type: no cycle (it never runs), but a type from a
    # higher layer is an upward import.
    assert _check(tmp_path) == []
    problems = _check(tmp_path, {"pkg/base.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pkg.cli import main
        """})
    assert len(problems) == 1 and "pkg.base" in problems[0] and "pkg.cli" in problems[0], \
        problems


@pytest.mark.parametrize("files, cycle", [
    ({"pkg/base.py": """
        import os

        def late():
            from pkg.util import x
        """},
     "import cycle pkg.base -> pkg.util -> pkg.base: "
     "pkg/base.py:4 pkg.base imports pkg.util (in a function); "
     "pkg/util.py:1 pkg.util imports pkg.base"),
    ({"pkg/mid/thing.py": "from pkg.mid import other\n",
      "pkg/mid/other.py": "# line 1\n\nfrom . import third\n",
      "pkg/mid/third.py": "import pkg.mid.thing\n"},
     "import cycle pkg.mid.other -> pkg.mid.third -> pkg.mid.thing -> pkg.mid.other: "
     "pkg/mid/other.py:3 pkg.mid.other imports pkg.mid.third; "
     "pkg/mid/third.py:1 pkg.mid.third imports pkg.mid.thing; "
     "pkg/mid/thing.py:1 pkg.mid.thing imports pkg.mid.other"),
    ({"pkg/left.py": "from pkg import left\n"},
     "import cycle pkg.left -> pkg.left: pkg/left.py:1 pkg.left imports pkg.left"),
], ids=["two-modules-in-a-function", "three-modules-in-order", "a-module-importing-itself"])
def test_checker_names_a_cycle_in_order(tmp_path, files, cycle):
    assert _check(tmp_path, files) == [cycle]


def test_checker_names_both_layers_and_the_line_of_an_upward_import(tmp_path):
    problems = _check(tmp_path, {"pkg/util.py": """
        from pkg import base


        from pkg.mid.thing import something, other
        """})
    assert len(problems) == 2, problems  # one for the line, however many names; and a cycle
    assert ("pkg/util.py:4: pkg.util (layer 'low', rank 0) imports pkg.mid.thing "
            "(layer 'mid', rank 1): a lower layer imports a higher one") in problems


def test_checker_catches_an_upward_import_inside_a_function_and_a_relative_one(tmp_path):
    problems = _check(tmp_path, {
        "pkg/base.py": "def f():\n    import pkg.mid.leaf\n",
        "pkg/mid/leaf.py": "",
        "pkg/mid/other.py": "from ..left import x\n",
    })
    assert problems == [
        "pkg/base.py:2: pkg.base (layer 'low', rank 0) imports pkg.mid.leaf (layer 'mid', "
        "rank 1) (in a function): a lower layer imports a higher one",
        "pkg/mid/other.py:1: pkg.mid.other (layer 'mid', rank 1) imports pkg.left "
        "(layer 'left', rank 2): a lower layer imports a higher one"]


def test_checker_catches_an_upward_lazy_reexport(tmp_path):
    problems = _check(tmp_path, {"pkg/mid/__init__.py": """
        from pkg.lazy_exports import lazy_exports
        __getattr__, __dir__ = lazy_exports(__name__, {"main": "pkg.cli"}, globals())
        """})
    assert problems == [
        "pkg/mid/__init__.py:2: pkg.mid (layer 'mid', rank 1) imports pkg.cli (layer 'top', "
        "rank 4) (lazy re-export): a lower layer imports a higher one"]


def test_checker_keeps_peers_apart(tmp_path):
    problems = _check(tmp_path, {"pkg/left.py": "import pkg.right\n"})
    assert problems == [
        "pkg/left.py:1: pkg.left (layer 'left', rank 2) imports pkg.right (layer 'right', "
        "rank 2): peer layers must not import each other"]


def test_checker_keeps_a_layer_to_what_it_may_import(tmp_path):
    problems = _check(tmp_path, {"pkg/tool.py": "from pkg.mid import thing\n"})
    assert problems == [
        "pkg/tool.py:1: pkg.tool (layer 'tool', rank 3) imports pkg.mid.thing (layer 'mid', "
        "rank 1): layer 'tool' may import only 'low'"]


def test_checker_asks_for_a_new_module_to_be_placed(tmp_path):
    problems = _check(tmp_path, {"pkg/serving.py": "from pkg import base\n"})
    assert problems == ["pkg/serving.py: pkg.serving is in no layer: add it to the layer it "
                        "belongs to in TOY (lowest first; a new module is placed on purpose)"]


def test_checker_reports_an_import_of_a_missing_module(tmp_path):
    problems = _check(tmp_path, {"pkg/cli.py": "from pkg.gone import x\n"})
    assert problems == ["pkg/cli.py:1: pkg.cli imports pkg.gone, which is no module in the "
                        "source tree"]


def test_an_exact_entry_wins_over_a_package_entry():
    layers = (Layer(0, "low", ("pkg.mid.protocol",)), Layer(1, "mid", ("pkg.mid.*",)))
    assert layer_of("pkg.mid.protocol", layers).name == "low"
    assert layer_of("pkg.mid", layers).name == "mid"
    assert layer_of("pkg.mid.thing.deep", layers).name == "mid"
    assert layer_of("pkg.middle", layers) is None


def test_checker_reports_a_broken_table():
    assert table_problems((Layer(0, "a", ("pkg.x",)), Layer(1, "b", ("pkg.x",)),
                           Layer(1, "c", (), may_import=("b", "nope")))) == [
        "pkg.x is in layer 'a' and in 'b'",
        "layer 'c' may import 'b', which is not below it",
        "layer 'c' may import 'nope': no such layer"]


# ---------------------------------------------------------------------------------------------
# PyYAML is the `k8s` extra's: `import trainexec`, the `trainexec` command and the job
# renderers load it only when a manifest is written or read (trainexec.jobs.yaml_text).
# ---------------------------------------------------------------------------------------------
YAML_MODULE = f"{PACKAGE}.jobs.yaml_text"


def test_only_yaml_text_imports_yaml_and_only_on_use(tree):
    modules, _ = tree
    problems = []
    for module, path in modules.items():
        finder = _ImportFinder(module, path.name == "__init__.py", modules)
        finder.visit(ast.parse(path.read_text(encoding="utf-8")))
        for name, line, kind in finder.found:
            if name.split(".")[0] != "yaml":
                continue
            if module != YAML_MODULE:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {module} imports yaml: "
                                f"only {YAML_MODULE} may")
            elif kind == MODULE_LEVEL:
                problems.append(f"{path.relative_to(ROOT)}:{line}: yaml imported at module "
                                "level: import it in the function that needs it")
    _fail_on(problems)


def test_import_trainexec_and_its_command_do_not_load_yaml():
    import subprocess
    import sys
    code = ("import sys, trainexec, trainexec.cli, trainexec.jobs.render, "
            "trainexec.jobs.manifest, trainexec.launch.cluster\n"
            "print(sorted(m for m in sys.modules if m == 'yaml' or m.startswith('yaml.')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", f"yaml was loaded: {done.stdout}"
