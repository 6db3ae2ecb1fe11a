"""The package's shape holds: layers import only downwards, no import cycles, no module uses another's private
names, and nothing outside `plugin/` imports pytest. Read from the source (every import, lazy ones too)."""

from __future__ import annotations

import ast
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
