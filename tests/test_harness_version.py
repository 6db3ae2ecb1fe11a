"""The record store's harness version follows what the deciding code does, not how it is written: a docstring or
comment edit keeps every stored record valid, an edit of the code makes every key new."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest_apps
from pytest_apps.engine.records import DECIDING, code_digest

PACKAGE = Path(pytest_apps.__file__).parent


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "pytest_apps"
    for package in DECIDING:
        shutil.copytree(PACKAGE / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_docstring_or_comment_edit_keeps_the_version(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = code_digest(root)
    seed = root / "judge" / "seed.py"
    _edit(seed, '"""The comparison cascades:', '"""The comparison cascades (reworded):')
    _edit(seed, "def judge(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None) -> Verdict:\n"
                '    """Decide one test:',
          "def judge(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None) -> Verdict:\n"
          '    """Decide one test (reworded):')
    _edit(seed, "RTOL = 1e-5\n", "# a comment added\n\n\nRTOL = 1e-5  # and another\n")
    assert code_digest(root) == before


def test_a_code_edit_changes_the_version(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = code_digest(root)
    _edit(root / "judge" / "seed.py", "RTOL = 1e-5\n", "RTOL = 1e-4\n")
    assert code_digest(root) != before


def test_a_new_module_changes_the_version(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = code_digest(root)
    (root / "judge" / "extra.py").write_text('"""Only a docstring."""\n', encoding="utf-8")
    assert code_digest(root) != before
