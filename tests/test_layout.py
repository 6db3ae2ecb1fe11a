"""The package's shape holds: layers import only downwards, no import cycles, no module uses another's private
names, nothing outside `plugin/` imports pytest, and no function or class grows past what one reader holds in mind.
Read from the source (every import, lazy ones too)."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_apps"

# What each layer may import, besides itself (bottom to top). The front ends (plugin, api, __main__) sit side
# by side at the top and never import each other; `agents` is the ready agents' public name; `rewards` (the
# trainers' reward functions) sits on the api's Evaluator and adds extraction and reward shapes; `serve` (the HTTP
# server) runs the engine on its own executors and builds problems from rows through the api.
ALLOWED = {
    "core": set(),
    "dataset": {"core"},
    "executor": {"core"},
    "judge": {"core"},
    "candidates": {"core", "dataset", "executor"},
    "engine": {"core", "dataset", "executor", "judge", "candidates"},
    "report": {"core", "dataset"},
    "plugin": {"core", "dataset", "executor", "judge", "candidates", "engine", "report"},
    "api": {"core", "dataset", "executor", "judge", "candidates", "engine", "report"},
    "__main__": {"core", "dataset", "executor", "judge", "candidates", "engine", "report", "serve"},
    "agents": {"candidates"},
    "rewards": {"api", "core", "dataset", "candidates", "report"},
    "serve": {"api", "core", "dataset", "executor", "judge", "candidates", "engine", "report"},
    "__init__": {"api", "core", "dataset", "report"},
}
PYTEST_ONLY_IN = {"plugin"}
PYTEST_MODULES = {"pytest", "_pytest", "xdist", "pluggy", "execnet"}


def modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `package`."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, str, int]]:
    """(imported module, imported name or "", line) for every import in the module, lazy ones included."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                if f"{module}.{alias.name}" in known:  # a module imported from its package
                    yield f"{module}.{alias.name}", "", node.lineno
                else:
                    yield module, alias.name, node.lineno


def layer(module: str, root: str) -> str:
    parts = module.split(".")
    return "__init__" if parts == [root] else parts[1]


def owner(module: str, known: dict[str, Path]) -> str | None:
    """The package module an imported name belongs to (the longest known prefix)."""
    parts = module.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return None


def problems_of(package: Path, allowed: dict[str, set[str]]) -> list[str]:
    known = modules(package)
    root = package.name
    found: list[str] = []
    graph: dict[str, set[str]] = {m: set() for m in known}
    for name, path in known.items():
        mine = layer(name, root)
        where = f"{path.relative_to(package.parent)}"
        for module, imported, line in imports(name, path, known):
            top = module.split(".")[0]
            if top in PYTEST_MODULES and mine not in PYTEST_ONLY_IN:
                found.append(f"{where}:{line}: imports {module} outside plugin/")
            target = owner(module, known)
            if target is None:
                continue
            if target != name:
                graph[name].add(target)
            theirs = layer(target, root)
            if theirs != mine and theirs not in allowed.get(mine, set()):
                found.append(f"{where}:{line}: layer {mine} imports {target} (layer {theirs})")
            if imported.startswith("_") and not imported.startswith("__") and target != name:
                found.append(f"{where}:{line}: imports private name {imported} from {target}")
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_package_keeps_its_layers_and_has_no_cycles_or_private_imports() -> None:
    assert problems_of(PACKAGE, ALLOWED) == []


def test_every_layer_package_says_its_job_and_what_it_may_import() -> None:
    for name in ALLOWED:
        init = PACKAGE / name / "__init__.py"
        if init.is_file():
            doc = ast.get_docstring(ast.parse(init.read_text())) or ""
            assert "import" in doc and len(doc) > 80, f"{init}: a paragraph on its job and its imports"


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """A package breaking every rule once."""
    pkg = tmp_path / "toy"
    for sub in ("core", "judge", "plugin", "report"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from ..judge import b\n")  # upwards
    (pkg / "judge" / "b.py").write_text("def f():\n    from ..core.a import x\n")  # a cycle with a, lazily
    (pkg / "report" / "c.py").write_text("import pytest\nfrom ..core.a import _hidden\n")  # pytest; private
    (pkg / "plugin" / "d.py").write_text("import pytest\nfrom ..report.c import shown\n")  # all fine
    return pkg


def test_the_checker_finds_each_kind_of_violation(toy: Path) -> None:
    found = problems_of(toy, ALLOWED)
    assert sorted(found) == sorted([
        "toy/core/a.py:1: layer core imports toy.judge.b (layer judge)",
        "toy/report/c.py:1: imports pytest outside plugin/",
        "toy/report/c.py:2: imports private name _hidden from toy.core.a",
        "import cycle: toy.core.a -> toy.judge.b",
    ])


# How big a function or a class may grow: lines of a function (its decorators aside, its docstring included), methods
# of a class (defined in its body).
MOST_LINES = 60
MOST_METHODS = 20
# Functions and classes still over those limits, each waiting for its split by meaning (helpers that each do one
# thing, a collaborator object that owns a group of methods). This list must shrink to empty: no entry is ever added,
# and an entry that is no longer over the limit fails the test until it is removed.
OVERSIZED_YET: set[str] = set()


def oversized(package: Path) -> dict[str, str]:
    """``file:Qualified.name`` -> what is too big, for every function over `MOST_LINES` lines and every class over
    `MOST_METHODS` methods in `package` (nested functions and methods included)."""
    found: dict[str, str] = {}

    def visit(node: ast.AST, where: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                if isinstance(child, ast.ClassDef):
                    methods = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in child.body)
                    if methods > MOST_METHODS:
                        found[f"{where}:{name}"] = f"{methods} methods"
                elif child.end_lineno - child.lineno + 1 > MOST_LINES:
                    found[f"{where}:{name}"] = f"{child.end_lineno - child.lineno + 1} lines"
                visit(child, where, f"{name}.")
            else:
                visit(child, where, prefix)

    for path in sorted(package.rglob("*.py")):
        visit(ast.parse(path.read_text(), str(path)), path.relative_to(package).as_posix(), "")
    return found


def test_no_function_over_60_lines_and_no_class_over_20_methods() -> None:
    found = oversized(PACKAGE)
    new = {name: size for name, size in found.items() if name not in OVERSIZED_YET}
    assert new == {}, f"split these by meaning (at most {MOST_LINES} lines, {MOST_METHODS} methods): {new}"
    done = sorted(OVERSIZED_YET - set(found))
    assert done == [], f"no longer over the limits: remove them from OVERSIZED_YET: {done}"


def test_the_size_checker_finds_long_functions_and_big_classes_nested_too(tmp_path: Path) -> None:
    pkg = tmp_path / "toy"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MOST_LINES - 1))  # with its def line: exactly the limit
    methods = "".join(f"    def m{i}(self):\n        pass\n" for i in range(MOST_METHODS))
    (pkg / "a.py").write_text(
        f"def fits():\n{body}"
        f"def over():\n{body}    x = 0\n"
        f"class Fits:\n{methods}"
        f"class Over:\n{methods}    def one_more(self):\n        pass\n"
        f"class Outer:\n    def method(self):\n        def inner():\n{textwrap.indent(body, '        ')}"
        f"            x = 0\n"
    )
    assert oversized(pkg) == {"a.py:over": f"{MOST_LINES + 1} lines", "a.py:Over": f"{MOST_METHODS + 1} methods",
                              "a.py:Outer.method": f"{MOST_LINES + 2} lines",
                              "a.py:Outer.method.inner": f"{MOST_LINES + 1} lines"}


# -- one object per role -------------------------------------------------------------------------------------------

PLUGIN = PACKAGE / "plugin"
# each role's class and the module that holds it: the only classes a process registers (one per process)
ROLES = {"LoneController": "controller", "XdistController": "distribution", "LocalWorker": "worker",
         "RemoteWorker": "worker"}
# the modules that may ask which role a process plays: the entry point (is the plugin on, on a remote worker?),
# the one place a role is chosen, and the roles' own
ASKS_THE_ROLE = {"hooks", "roles", "controller", "distribution", "worker"}


def role_classes(plugin: Path) -> dict[str, tuple[str, list[str]]]:
    """Every class of the plugin that derives from `base.Role` (or from a role's state, `ControllerState`):
    name -> (its module, its bases' names)."""
    defined: dict[str, tuple[str, list[str]]] = {}
    for path in sorted(plugin.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
                defined[node.name] = (path.stem, bases)
    found = {"Role", "ControllerState"}
    while True:
        more = {name for name, (_, bases) in defined.items() if found & set(bases)} - found
        if not more:
            return {name: defined[name] for name in found if name in defined}
        found |= more


def role_checks(plugin: Path, roles: set[str]) -> list[str]:
    """Where a module outside `ASKS_THE_ROLE` asks which role its process plays: xdist's `workerinput` (only a
    worker's config has one), whether xdist's DSession is registered (only on its controller), an isinstance
    check on a role's class or state, or a role built (`<Role>.start`)."""
    found = []
    for path in sorted(plugin.glob("*.py")):
        if path.stem in ASKS_THE_ROLE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"plugin/{path.name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Attribute) and node.attr == "workerinput":
                found.append(f"{where}: reads workerinput")
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                texts = {a.value for a in node.args if isinstance(a, ast.Constant)}
                names = {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
                if called in ("getattr", "hasattr") and "workerinput" in texts:
                    found.append(f"{where}: reads workerinput")
                elif called in ("has_plugin", "hasplugin") and "dsession" in texts:
                    found.append(f"{where}: asks whether xdist's DSession is registered")
                elif called == "isinstance" and names & roles:
                    found.append(f"{where}: isinstance on a role")
                elif called == "start" and isinstance(node.func, ast.Attribute) and \
                        {n.id for n in ast.walk(node.func.value) if isinstance(n, ast.Name)} & roles:
                    found.append(f"{where}: builds a role")
    return found


def registrations(plugin: Path) -> list[str]:
    """Every `pluginmanager.register(...)` in the plugin, as `module: the registered expression`."""
    out = []
    for path in sorted(plugin.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register" \
                    and "pluginmanager" in ast.unparse(node.func.value):
                out.append(f"{path.stem}: {ast.unparse(node.args[0])}")
    return out


def test_each_role_is_one_class_built_in_one_place_and_registered_alone() -> None:
    """The controller (alone or under xdist), a local and a remote xdist worker are each one class, holding its
    state and hooks; roles.activate builds the process's one role object and the entry point registers it, and
    nothing else (a second plugin object beside it would split a role again)."""
    classes = role_classes(PLUGIN)
    subclassed = {base for _, bases in classes.values() for base in bases}
    concrete = {name: module for name, (module, _) in classes.items()
                if name not in subclassed and name != "ControllerState"}
    assert concrete == ROLES
    # (beside the role: the module holding the plugin's own implementations of its table hooks, a role of none)
    assert registrations(PLUGIN) == ["hooks: extending", "hooks: activate(config, worker)"]
    assert role_checks(PLUGIN, set(classes)) == []
    tree = ast.parse((PLUGIN / "roles.py").read_text())
    built = {n.id for call in ast.walk(tree) if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
             and call.func.attr == "start" for n in ast.walk(call.func.value) if isinstance(n, ast.Name)}
    assert built & set(classes) == set(ROLES)


def test_the_run_state_asks_no_role() -> None:
    """`RunState` is what every role has: no subclass per worker, nothing about who owns the plan or which role
    the process plays (those are the role objects')."""
    classes = role_classes(PLUGIN)
    assert {name for name, (module, _) in classes.items() if module == "state"} == {"ControllerState"}
    source = (PLUGIN / "state.py").read_text()
    tree = ast.parse(source)
    (run_state,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RunState"]
    names = {n.attr for n in ast.walk(run_state) if isinstance(n, ast.Attribute)} | \
            {n.name for n in ast.walk(run_state) if isinstance(n, ast.FunctionDef)}
    assert not {name for name in names if any(word in name for word in ("owns", "worker_", "controller", "remote"))}


def test_the_role_checker_finds_a_role_asked_outside_the_roles(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "base.py").write_text("class Role:\n    pass\n")
    (plugin / "worker.py").write_text("from .base import Role\nclass LocalWorker(Role):\n    pass\n"
                                      "def mine(config):\n    return config.workerinput\n")
    (plugin / "collect.py").write_text(
        "from .worker import LocalWorker\n"
        "def a(config):\n    return config.workerinput\n"
        "def b(config):\n    return hasattr(config, 'workerinput')\n"
        "def c(config):\n    return config.pluginmanager.has_plugin('dsession')\n"
        "def d(plugin):\n    return isinstance(plugin, LocalWorker)\n"
        "def e(config):\n    return LocalWorker.start(config, {})\n"
        "def f(config):\n    config.pluginmanager.register(object(), 'x')\n")
    classes = role_classes(plugin)
    assert set(classes) == {"Role", "LocalWorker"}
    assert role_checks(plugin, set(classes)) == [
        "plugin/collect.py:3: reads workerinput", "plugin/collect.py:5: reads workerinput",
        "plugin/collect.py:7: asks whether xdist's DSession is registered", "plugin/collect.py:9: isinstance on a role",
        "plugin/collect.py:11: builds a role",
    ]
    assert registrations(plugin) == ["collect: object()"]


# -- core/ knows no other package's vocabulary --------------------------------------------------------------


def vocabulary_in(folder: Path, words: set[str]) -> list[str]:
    """Where a module of `folder` names one of `words` (judge profiles, tiers): a string that is one of them (any
    case), quotes one ('name') or lists one as a choice (a|b), and a module-level name that holds a list of judges
    or a memory floor."""
    lowered = {w.casefold() for w in words}
    found = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value.casefold()
                if text in lowered or any(f"'{w}'" in text or f"{w}|" in text or f"|{w}" in text for w in lowered):
                    found.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
            elif isinstance(node, (ast.FunctionDef, ast.Name)):
                name = node.name if isinstance(node, ast.FunctionDef) else node.id
                if "JUDGES" in name.upper() or "MEMORY_FLOOR" in name.upper() or name.startswith("MIN_MEMORY"):
                    found.append(f"{path.name}:{node.lineno}: {name}")
    return found


def test_core_names_no_judge_profile_no_tier_and_no_memory_floor() -> None:
    """core/ is the ground floor: judge names, tiers and memory floors live with their tables (judge/profiles.py,
    dataset/table.py), which check the options that name them."""
    from pytest_apps.dataset.table import TABLE as DATASETS
    from pytest_apps.judge.profiles import TABLE as PROFILES

    words = set(PROFILES) | {tier for entry in DATASETS.values() for tier in entry.vocabulary()}
    assert {"seed", "taco", "introductory", "interview", "competition"} <= words
    assert vocabulary_in(PACKAGE / "core", words) == []


def test_the_vocabulary_finder_finds_each_kind_of_naming(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('DEFAULT = "seed"\nHELP = "use \'Interview\' tiers"\nMETA = "seed|apps"\n'
                                   'JUDGES = ()\ndef memory_floor(j):\n    return MIN_MEMORY_APPS\nOK = "seeds"\n')
    assert sorted(int(line.split(":")[1]) for line in vocabulary_in(tmp_path, {"seed", "interview"})) == \
        [1, 2, 3, 4, 5, 6]
