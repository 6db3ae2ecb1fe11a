"""Reports people read and CI consumes: JSON fields as documented, JUnit, the CI gate, case files."""

from __future__ import annotations

import io
import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, read_report, run
from pytest_apps.core.jsontext import write_laid_out


def documented_fields() -> set[str]:
    """Field names from the JSON report table in docs/reports.md (`a.b`, `a[]`, and the names listed per
    problem)."""
    text = (REPO / "docs" / "reports.md").read_text()
    table = text.split("The JSON report (`--apps-report`) holds:", 1)[1].split("\n\n", 2)[1]
    fields: set[str] = set()
    for line in table.splitlines()[2:]:
        first, rest = line.split("|")[1], "|".join(line.split("|")[2:])
        for name in re.findall(r"`([a-z_.\[\]]+)`", first):
            fields.add(name)
        if first.strip().startswith("`problems[]`"):
            fields.update("problems[]." + n for n in re.findall(r"`([a-z_]+)`", rest) if n not in ("stdin", "call"))
    return fields


def test_json_report_has_exactly_the_documented_fields(broken_project: pytest.Pytester) -> None:
    run(broken_project, "--apps-dataset", "sample", "--apps-timeout", "0.5")
    report = read_report(broken_project)
    documented = documented_fields()
    present = set(report) | {f"summary.{k}" for k in report["summary"]}
    present |= {f"{k}[]" for k, v in report.items() if isinstance(v, list)}
    present |= {f"problems[].{k}" for p in report["problems"] for k in p}
    present |= {f"problems[].{k}" for p in report["problems"] for t in p["tests"] for k in t}
    # per test, only when a problem has several samples; the reference audit, only in reference runs
    conditional = {"problems[].sample", "summary.reference_audit"}
    missing = {f for f in documented if f.split(".")[0].rstrip("[]") in report and f not in present
               and not f.startswith(("settings", "source", "version")) and f not in conditional}
    assert not missing, f"documented but absent: {missing}"
    undocumented = {f for f in present if f.startswith(("summary.", "problems[].")) and f not in documented}
    assert not undocumented, f"in the report but not in docs/reports.md: {undocumented}"
    assert set(report["source"]) == {"dataset", "split", "revision", "resolved_revision", "index"}
    assert report["version"] == 1
    assert "fork-server" in report["isolation"]
    run(broken_project, "--apps-dataset", "sample", "--apps-only", "900006", "-q", "--apps-report", "quiet.json")
    assert read_report(broken_project, "quiet.json")["isolation"] == report["isolation"]  # no header with -q


def test_junit_has_a_case_per_test_with_the_kind_and_no_properties_unless_asked(
    broken_project: pytest.Pytester,
) -> None:
    base = ("--apps-dataset", "sample", "--apps-timeout", "0.5", "--apps-only", "900001,900002,900006")
    run(broken_project, *base, "--junitxml", "plain.xml", "-n", "2")
    root = ET.parse(broken_project.path / "plain.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 5 + 4 + 4
    assert {c.get("classname") for c in cases} == {"solutions.900001", "solutions.900002", "solutions.900006"}
    first = next(c for c in cases if c.get("classname") == "solutions.900001" and c.get("name") == "test_0")
    failure = first.find("failure")  # (-n 2 writes cases in the order they finish)
    assert failure is not None and "wrong answer" in failure.get("message")
    assert len(failure.get("message")) < 4096
    assert root.find(".//testcase/properties") is None
    suite = root.find("testsuite").find("properties")  # the judge is always recorded, as a testsuite property
    assert [(p.get("name"), p.get("value")) for p in suite] == [("apps_judge", "seed")]
    run(broken_project, *base, "--junitxml", "props.xml", "--apps-junit-properties")
    props = ET.parse(broken_project.path / "props.xml").getroot().find(".//testcase/properties")
    assert {p.get("name"): p.get("value") for p in props}["apps_kind"] == "wrong_answer"


@pytest.mark.parametrize("threshold, code", [("0", 0), ("16.6", 0), ("17", 1), ("100", 1)])
def test_fail_under_gates_on_strict_accuracy(broken_project: pytest.Pytester, threshold, code) -> None:
    # one of six problems passes: 16.67%
    result = run(broken_project, "--apps-dataset", "sample", "--apps-timeout", "0.5", "--apps-fail-under", threshold)
    assert result.ret == code
    result.stdout.fnmatch_lines(["*strict accuracy 16.67% * --apps-fail-under*"])


def test_fail_under_fails_a_run_whose_cases_all_passed_when_the_number_is_low(
    broken_project: pytest.Pytester,
) -> None:
    result = run(broken_project, "--apps-dataset", "sample", "--apps-only", "900006", "--apps-fail-under", "50",
                 "-k", "test_0")
    # the one case passed, but the problem is incomplete: strict accuracy 0
    assert result.ret == 1


def test_failing_case_input_is_written_for_debugging_by_hand(broken_project: pytest.Pytester) -> None:
    result = run(broken_project, "--apps-dataset", "sample", "--apps-only", "900001")
    result.stdout.fnmatch_lines(["input written to reports/cases/900001/0.in (expected output beside it)"])
    case = broken_project.path / "reports" / "cases" / "900001"
    assert (case / "0.in").read_text() == "1 2\n"
    assert (case / "0.expected").read_text() == "3\n"


def test_every_option_is_documented_in_the_options_page() -> None:
    """docs/options.md has one row per option, and no row for an option that does not exist."""
    from pytest_apps.core.settings import OPTIONS

    page = (REPO / "docs" / "options.md").read_text()
    rows = re.findall(r"^\| `(--apps[a-z-]*)", page, flags=re.MULTILINE)
    flags = ["--apps"] + [opt.flag for opt in OPTIONS]  # the switch itself is added beside the table
    missing = [flag for flag in flags if flag not in rows]
    assert not missing, f"options missing from the table in docs/options.md: {missing}"
    unknown = [row for row in rows if row not in flags]
    assert not unknown, f"rows in docs/options.md for options that do not exist: {unknown}"
    assert len(rows) == len(set(rows)), "an option has two rows in docs/options.md"


def test_every_option_help_renders(pytester: pytest.Pytester) -> None:
    from pytest_apps.core.settings import OPTIONS

    # argparse formats each help text (a bare % in one breaks `pytest --help` for every project using pytest)
    result = run(pytester, "--help")
    assert result.ret == 0, result.stderr.str()
    shown = result.stdout.str()
    unlisted = [opt.flag for opt in OPTIONS if not re.search(rf"^\s+{re.escape(opt.flag)}[=\s]", shown, re.M)]
    assert not unlisted, f"options missing from pytest --help: {unlisted}"
    assert "difference's 95% interval" in " ".join(shown.split())  # the help text as written, not as a format
    generate = pytester.run(sys.executable, "-m", "pytest_apps", "generate", "--help")
    assert generate.ret == 0, generate.stderr.str()
    assert all(opt.flag in generate.stdout.str() for opt in OPTIONS)


def test_the_json_report_reads_back_as_json_dump_wrote_it_with_each_test_on_one_line(
    broken_project: pytest.Pytester,
) -> None:
    run(broken_project, "--apps-dataset", "sample", "--apps-timeout", "0.5")
    text = (broken_project.path / "reports/apps-report.json").read_text()
    report = json.loads(text)
    tests = [t for p in report["problems"] for t in p["tests"]]
    assert tests
    lines = {line.rstrip(",") for line in text.splitlines()}
    for test in tests:  # one line each, at the depth json.dump(indent=1) puts it
        assert "    " + json.dumps(test) in lines
    # any document reads back the same, non-str keys spelled as json.dump spells them, and with the
    # levels laid out the text is json.dump's own
    odd = {"a": {1: [1.5, None, True], 2.5: {}, None: [], "b": {"c": {"d": {"e": ["deep"]}}}}, "n": 12345}
    for document in (report, odd):
        mine, theirs = io.StringIO(), io.StringIO()
        write_laid_out(document, mine)
        json.dump(document, theirs, indent=1)
        assert json.loads(mine.getvalue()) == json.loads(theirs.getvalue())
    mine = io.StringIO()
    write_laid_out(odd, mine, levels=10)
    assert mine.getvalue() == json.dumps(odd, indent=1)
