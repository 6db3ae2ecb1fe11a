"""Counts read right: `1 test`, `2 tests`, in the terminal, the JSON, HTML and Markdown reports, and one helper
(`core.wording.counted`) that every such message is built with."""

from __future__ import annotations

import re

import pytest

from conftest import read_report, run

from pytest_apps.core.wording import counted

NOUNS = r"(?:problems|tests|cases|rows|samples|records|cells|ids|verdicts|workers|programs)"
ONE_WITH_A_PLURAL = re.compile(rf"(?<![\d.@/-])\b1 (?:[a-z-]+ )?{NOUNS}\b")
TWO_WITH_A_SINGULAR = re.compile(r"(?<![\d.@/-])\b2 (?:[a-z-]+ )?(?:problem|test|case|row|sample|record|cell)\b(?!s)")


def test_a_count_of_one_takes_the_singular_and_any_other_the_plural() -> None:
    assert [counted(n, "test") for n in (0, 1, 2)] == ["0 tests", "1 test", "2 tests"]
    assert counted(1, "more skipped row") == "1 more skipped row"
    assert [counted(n, "child", "children") for n in (1, 2)] == ["1 child", "2 children"]


def outputs(pytester: pytest.Pytester, result: pytest.RunResult) -> str:
    names = ("reports/apps-report.json", "r.html", "r.md")
    return "\n".join([result.stdout.str()] + [(pytester.path / name).read_text() for name in names])


@pytest.mark.parametrize("count", [1, 2])
def test_the_run_and_its_reports_say_one_test_and_two_tests(sample_project: pytest.Pytester, count: int) -> None:
    """`count` tests of each of `count` problems selected, with a problem left without the last of its tests
    (`--deselect`): what did not run, how many problems and test cells there are, read right for 1 and for 2."""
    only = ",".join(["900001", "900002"][:count])
    result = run(sample_project, "--apps-dataset=sample", f"--apps-only={only}", f"--apps-max-tests={count}",
                 f"--deselect=solutions/900001.py::test_{count - 1}", "--apps-html=r.html", "--apps-markdown=r.md",
                 "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    text = outputs(sample_project, result)
    assert ONE_WITH_A_PLURAL.findall(text) == [] and TWO_WITH_A_SINGULAR.findall(text) == []
    [problem] = [p for p in read_report(sample_project)["problems"] if p["id"] == "900001"]
    assert problem["reason"] == f"1 of {counted(count, 'test')} did not run"
    assert f"1 of {count * count} selected test{'s' if count > 1 else ''} did not run" in result.stdout.str()
    assert f">{count} problem{'s' if count > 1 else ''}, " in text
