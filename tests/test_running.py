"""Running and rerunning as a user does: option spelling and the rootdir, pasted node ids, dormancy, and a
benchmark run inside this checkout (docs/running.md). Real pytest subprocesses, the real executor."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, run

SAMPLE_ROWS = REPO / "pytest_apps" / "data" / "sample.jsonl"


def test_a_benchmark_run_in_the_checkout_keeps_the_users_index_cache(
    sample_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's own test set-up (tests/conftest.py, loaded whenever `tests` is a test path) points the
    index cache at a temporary folder for the project's tests only, not for a benchmark run."""
    (sample_project.path / "tests").mkdir()
    shutil.copy(REPO / "tests" / "conftest.py", sample_project.path / "tests" / "conftest.py")
    sample_project.makeini("[pytest]\ntestpaths = tests\n")
    shutil.copy(SAMPLE_ROWS, sample_project.path / "rows.jsonl")
    cache = tmp_path / "cache"
    monkeypatch.setenv("PYTEST_APPS_CACHE", str(cache))
    first = run(sample_project, "--apps-dataset=rows.jsonl", "--apps-max-tests=1", "-n", "0")
    first.stdout.fnmatch_lines(["apps: dataset *rows.jsonl *, problem index built and cached"])
    second = run(sample_project, "--apps-dataset=rows.jsonl", "--apps-max-tests=1", "-n", "0")
    second.stdout.fnmatch_lines(["apps: dataset *rows.jsonl *, problem index cached"])
    assert any(cache.iterdir())
    second.assert_outcomes(passed=6)
