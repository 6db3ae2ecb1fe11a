"""`--apps-judge seed|apps` in a run: recorded everywhere a result goes, passes counted by step, and the real
call-based programs and reference solutions judged as the original harness judged them."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import SOLUTIONS, read_report, run


def test_the_judge_is_recorded_in_the_header_json_html_and_junit(pytester: pytest.Pytester):
    shutil.copytree(SOLUTIONS, pytester.path / "solutions")
    result = run(pytester, "--apps-dataset", "sample", "--apps-judge", "apps", "-n", "2", "--junitxml", "j.xml",
                 "--apps-html", "r.html")
    result.stdout.fnmatch_lines(["apps: judge apps: the original APPS harness's verdicts*"])
    report = read_report(pytester)
    assert report["settings"]["judge"] == "apps"
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert {p.get("name"): p.get("value") for p in suite.find("properties")} == {"apps_judge": "apps"}
    html = (pytester.path / "r.html").read_text()
    assert '<span class="fk">judge</span> <span class="fv">apps</span>' in html
    # passes counted by the step that accepted them, in the JSON and the terminal
    steps = report["summary"]["pass_steps"]
    assert set(steps) <= {"apps:exact", "apps:unwrap"} and sum(steps.values()) == report["summary"]["outcomes"]["pass"]
    result.stdout.fnmatch_lines(["passes by step (apps judge): *"])
    # the sample's Fibonacci program runs under `if __name__ == "__main__":`, which the original never runs
    verdicts = {p["id"]: p["verdict"] for p in report["problems"]}
    assert verdicts["900005"] == "fail" and {v for k, v in verdicts.items() if k != "900005"} == {"pass"}


def test_seed_is_the_default_and_a_rerun_command_names_the_judge(pytester: pytest.Pytester):
    shutil.copytree(SOLUTIONS, pytester.path / "solutions")
    result = run(pytester, "--apps-dataset", "sample", "--junitxml", "j.xml")
    result.stdout.fnmatch_lines(["apps: judge seed: the seed runner's strict cascade*"])
    assert read_report(pytester)["settings"]["judge"] == "seed"
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert [(p.get("name"), p.get("value")) for p in suite.find("properties")] == [("apps_judge", "seed")]
    failing = run(pytester, "--apps-dataset", "sample", "--apps-judge", "apps", "--apps-only", "900005")
    failing.stdout.fnmatch_lines(
        ["rerun: pytest --apps-dataset=sample --apps-only=900005 --apps-judge=apps solutions/900005.py::test_0"])


def test_an_unknown_judge_is_a_one_line_usage_error(pytester: pytest.Pytester):
    result = run(pytester, "--apps-dataset", "sample", "--apps-judge", "hendrycks")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--apps-judge: unknown judge 'hendrycks'; use seed, apps, taco, lcb or codecontests"])


# --------------------------------------------------------------------------------------------------
# the real rows


def test_apps_reproduces_the_reported_results_of_20_call_based_programs(pytester: pytest.Pytester,
                                                                        shared_data: Path):
    """Train problem 4184 and 20 CodeRL programs with the original harness's own verdicts (`reported_result`):
    [True, ...] passed; False, -1 and -2 failed. The kinds follow: -2 a compile error, -1 a runtime error or a
    timeout, False only wrong answers."""
    programs = [json.loads(line) for line in (shared_data / "apps_callbased_candidates.jsonl").open()]
    assert len(programs) == 20
    (pytester.path / "programs.jsonl").write_text("".join(
        json.dumps({"problem_id": p["problem_id"], "code": p["code"]}) + "\n" for p in programs))
    run(pytester, "--apps-dataset", str(shared_data / "apps_callbased_rows.jsonl"), "--apps-only", "4184",
        "--apps-candidates", "programs.jsonl", "--apps-judge", "apps", "--apps-max-tests", "0",
        "--apps-timeout", "1", "-n", "2", "--rootdir", str(pytester.path))
    (problem,) = read_report(pytester)["problems"]
    samples = problem["sample_results"]
    assert len(samples) == 20
    kinds: dict[int, set[str]] = {}
    for test in problem["tests"]:
        kinds.setdefault(test["sample"], set()).add(test["kind"])
    for program, sample in zip(programs, samples):
        reported, why = program["reported_result"]
        assert (sample["verdict"] == "pass") == (reported is True), (sample, reported)
        if reported == -2:
            assert kinds[sample["sample"]] == {"compile_error"}
        elif reported == -1:
            want = "timeout" if why == "timeoutexception" else "runtime_error"
            assert want in kinds[sample["sample"]], (sample["sample"], why, kinds[sample["sample"]])
        elif reported is False:
            assert kinds[sample["sample"]] == {"pass", "wrong_answer"}
    assert problem["samples_passed"] == 1


def test_the_reference_audit_and_the_4003_checker(pytester: pytest.Pytester, shared_data: Path):
    """Problem 4003 accepts any optimal sequence of moves: its references disagree on some tests (the audit lists
    it), and the builtin checker accepts every one of them. Problem 15's first reference uses a top-level
    `return`: it fails under seed and passes under apps (the audit lists it as such)."""
    base = ["--apps-dataset", str(shared_data / "apps_test_rows.jsonl"), "--apps-candidates", "reference",
            "--apps-samples", "5", "--apps-only", "15,4003", "--apps-max-tests", "20", "-n", "2",
            "--rootdir", str(pytester.path)]
    result = run(pytester, *base, "--apps-report", "plain.json")
    plain = read_report(pytester, "plain.json")
    audit = plain["summary"]["reference_audit"]
    (split,) = audit["disagree"]
    assert split["problem"] == "4003" and 3 in split["tests"] and split["references"] == 5 and not split["checker"]
    assert [(o["problem"], o["sample"]) for o in audit["pass_only_under_apps"]] == [("15", 0)]
    result.stdout.fnmatch_lines([
        "references disagree (several right answers? candidates for a checker): 4003 (* tests)",
        "references failing under seed that pass under --apps-judge apps: 15 (sample 0)",
    ])
    by_id = {p["id"]: p for p in plain["problems"]}
    assert by_id["4003"]["samples_passed"] == 4  # one reference prints another valid answer

    result = run(pytester, *base, "--apps-checkers", "builtin", "--apps-report", "checked.json")
    checked = read_report(pytester, "checked.json")
    by_id = {p["id"]: p for p in checked["problems"]}
    assert by_id["4003"]["samples_passed"] == 5
    assert {t["step"] for t in by_id["4003"]["tests"]} == {"checker"}
    assert checked["summary"]["checker_tests"] == {"tests": 100, "passed": 100, "problems": ["4003"]}
    assert checked["summary"]["reference_audit"]["disagree"][0]["checker"] is True
    result.stdout.fnmatch_lines(["*4003 (* tests; has a checker)*"])

    result = run(pytester, *base, "--apps-judge", "apps", "--apps-report", "apps.json")
    under_apps = read_report(pytester, "apps.json")
    assert {p["id"]: p["samples_passed"] for p in under_apps["problems"]} == {"15": 5, "4003": 4}
    assert under_apps["summary"]["reference_audit"]["pass_only_under_seed"] == []
