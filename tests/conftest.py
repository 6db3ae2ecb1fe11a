"""Fixtures shared by the project's tests: the bundled sample, broken candidates, the shared APPS data."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"


def shared_data_dir() -> Path:
    """Real APPS rows and model candidates, beside the project (override with APPS_SHARED_DATA)."""
    return Path(os.environ.get("APPS_SHARED_DATA", REPO.parent / "shared" / "apps-data"))


@pytest.fixture
def shared_data() -> Path:
    folder = shared_data_dir()
    if not (folder / "apps_test_rows.jsonl").is_file():
        pytest.skip(f"no shared APPS data at {folder} (set APPS_SHARED_DATA to the apps-data folder)")
    return folder


@pytest.fixture
def sample_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project folder holding the sample's correct solutions in solutions/."""
    shutil.copytree(SOLUTIONS, pytester.path / "solutions")
    return pytester


def read_report(pytester: pytest.Pytester, name: str = "reports/apps-report.json") -> dict:
    return json.loads((pytester.path / name).read_text())


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in a real subprocess, as users run it (our plugin from its entry point)."""
    return pytester.runpytest_subprocess("-p", "no:benchmark", *args)
