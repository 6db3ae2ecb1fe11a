"""Counts read right: `1 test`, `2 tests`, in the terminal, the JSON, HTML and Markdown reports, and one helper
(`core.wording.counted`) that every such message is built with."""

from __future__ import annotations

import re

import pytest

from conftest import read_report, run

from pytest_apps.core.wording import counted

NOUNS = r"(?:problems|tests|cases|rows|samples|records|cells|ids|verdicts|workers|programs)"
ONE_WITH_A_PLURAL = re.compile(rf"(?<![\d.@/-])\b1 (?:[a-z-]+ )?{NOUNS}\b")
# ("2 test cells": a noun before a noun stays singular)
TWO_WITH_A_SINGULAR = re.compile(r"(?<![\d.@/-])\b2 (?:[a-z-]+ )?(?:problem|test|case|row|sample|record|cell)\b"
                                 r"(?!s| cells)")


def test_a_count_of_one_takes_the_singular_and_any_other_the_plural() -> None:
    assert [counted(n, "test") for n in (0, 1, 2)] == ["0 tests", "1 test", "2 tests"]
    assert counted(1, "more skipped row") == "1 more skipped row"
    assert [counted(n, "child", "children") for n in (1, 2)] == ["1 child", "2 children"]


def outputs(pytester: pytest.Pytester, result: pytest.RunResult) -> str:
    names = ("reports/apps-report.json", "r.html", "r.md")
    return "\n".join([result.stdout.str()] + [(pytester.path / name).read_text() for name in names])


@pytest.mark.parametrize("count", [1, 2])
def test_the_run_and_its_reports_say_one_test_and_two_tests(sample_project: pytest.Pytester, count: int) -> None:
    """`count` tests of each problem: first of two problems with the first one's last test left out
    (`--deselect`), then of `count` problems: how many tests did not run, how many problems and test cells
    there are, read right for 1 and for 2."""
    args = ("--apps-dataset=sample", f"--apps-max-tests={count}", "--apps-html=r.html", "--apps-markdown=r.md",
            "-p", "no:cacheprovider", "--apps-records=off")
    partial = run(sample_project, *args, "--apps-only=900001,900002",
                  f"--deselect=solutions/900001.py::test_{count - 1}")
    assert partial.ret == 0, partial.stdout.str()[-3000:]
    text = outputs(sample_project, partial)
    assert ONE_WITH_A_PLURAL.findall(text) == [] and TWO_WITH_A_SINGULAR.findall(text) == []
    [problem] = [p for p in read_report(sample_project)["problems"] if p["id"] == "900001"]
    assert problem["reason"] == f"1 of {counted(count, 'test')} did not run"
    whole = run(sample_project, *args, "--apps-only=" + ",".join(["900001", "900002"][:count]))
    assert whole.ret == 0, whole.stdout.str()[-3000:]
    text = outputs(sample_project, whole)
    assert ONE_WITH_A_PLURAL.findall(text) == [] and TWO_WITH_A_SINGULAR.findall(text) == []
    assert f">{counted(count, 'problem')}, {counted(count * count, 'test cell')}, " in text
    assert f"{count} of {counted(count, 'problem')} pass every test" in text
