"""A program that is not there, whichever way: one failing item of kind no code that names the file (or the
generation) and what was looked for, and runs nothing; its tests are counted one way everywhere: as no code,
none as run (terminal summary, JSON report, docs/reports.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import SOLUTIONS, read_report, run

DOCS = Path(__file__).resolve().parent.parent / "docs"
F = "```"


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_missing_program_and_text_without_code_are_the_same_kind_of_item(pytester: pytest.Pytester,
                                                                           workers: str) -> None:
    folder = pytester.path / "s"
    folder.mkdir()
    shutil.copy(SOLUTIONS / "900001.py", folder)
    (folder / "900003.md").write_text("I cannot solve this one.\n")  # model text without a code block
    # 900005: no file at all
    result = run(pytester, "--apps-dataset=sample", "--apps-only=900001,900003,900005", "--apps-candidates=s",
                 "-n", workers, "-rf")
    result.assert_outcomes(passed=5, failed=2)  # one item for each program without code, not one per test
    result.stdout.fnmatch_lines([
        "apps: candidates */s (1 with code);*",
        "APPS problem 900003: no code (s/900003.md: no ```python fenced block; its 5 tests did not run)",
        "tests: 5 run of 15; pass 5; no code 10 (not run)",
    ])
    failed = {line.split(" - ")[0] for line in result.stdout.lines if line.startswith("FAILED ")}
    assert failed == {"FAILED s::900005::no_code", "FAILED s/900003.md::no_code"}
    report = read_report(pytester)
    figures = report["summary"]
    assert figures["tests_run"] == 5 and figures["outcomes"]["no_code"] == 10 == figures["tests_total"] - 5
    assert figures["test_case_average_partial"] is False
    problems = {p["id"]: p for p in report["problems"]}
    assert {pid: p["verdict"] for pid, p in problems.items()} == {"900001": "pass", "900003": "no_code",
                                                                   "900005": "no_code"}
    assert problems["900003"]["reason"] == "s/900003.md: no ```python fenced block"
    assert problems["900005"]["reason"] == "s holds no program for it"
    assert [problems[p]["tests_run"] for p in ("900003", "900005")] == [0, 0]
    assert problems["900003"]["first_failure"] == "s/900003.md::no_code"
    # the docs show the summary line as the terminal prints it
    assert "tests: 5 run of 15; pass 5; no code 10 (not run)" in (DOCS / "reports.md").read_text()


def test_a_generation_without_code_names_the_file_problem_and_sample(pytester: pytest.Pytester) -> None:
    solution = (SOLUTIONS / "900001.py").read_text()
    rows = [{"problem_id": 900001, "raw": [f"{F}python\n{solution}{F}", f"<think>{F}python\nprint(1)\n{F}</think> no"]},
            {"problem_id": 900003, "code": ""}]
    (pytester.path / "gens.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run(pytester, "--apps-dataset=sample", "--apps-only=900001,900003", "--apps-candidates=gens.jsonl")
    result.assert_outcomes(passed=5, failed=2)
    result.stdout.fnmatch_lines([
        "APPS problem 900001: no code (gens.jsonl, problem 900001, sample_1: no ```python fenced block after its "
        "last </think>; its 5 tests did not run)",
    ])
    result.stdout.fnmatch_lines([
        "APPS problem 900003: no code (gens.jsonl, problem 900003: its record's program is empty; its 5 tests did "
        "not run)",
    ])
    report = read_report(pytester)
    first, third = report["problems"]
    assert first["first_failure"] == "gens.jsonl::900001::sample_1::no_code"
    assert [s["verdict"] for s in first["sample_results"]] == ["pass", "no_code"]
    assert third["first_failure"] == "gens.jsonl::900003::no_code"
    figures = report["summary"]
    assert figures["tests_run"] == 5 and figures["outcomes"]["no_code"] == 10
    assert figures["test_case_average_partial"] is False
