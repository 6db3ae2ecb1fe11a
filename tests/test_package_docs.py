"""Each package's docstring is its map: it names every module of the package (as `name`), so a newcomer who
opens a package's __init__.py finds where each job lives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_apps

PACKAGE = Path(pytest_apps.__file__).parent
PACKAGES = sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE and "data" not in p.parts)


def _missing(package: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")
    return [m for m in modules if f"`{m}`" not in doc and f"`{m}.py`" not in doc]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_package_docstring_names_every_module(package: Path) -> None:
    assert _missing(package) == [], f"{package.name}/__init__.py's docstring does not name these modules"


def test_the_check_sees_a_module_left_out(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""Things: `alpha` does one job."""\n')
    (tmp_path / "alpha.py").write_text("")
    (tmp_path / "beta.py").write_text("")
    assert _missing(tmp_path) == ["beta"]
