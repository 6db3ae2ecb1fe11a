"""Comparing a run with a baseline, from two report documents (pure): which problems, the figures, refusal of
incomparable runs, unusable files, the regression gate, and the comparison in Markdown and HTML."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pytest_apps.report.comparison import BaselineError, compare, facts, load_report
from pytest_apps.report.comparison_text import baseline_lines, newly_failing_lines
from pytest_apps.report.gates import Gate, passed, regression_verdict
from pytest_apps.report.html import render_html
from pytest_apps.report.markdown import markdown_text, write_markdown
from pytest_apps.report.stats import mcnemar_exact, newcombe_paired

HUB = {"dataset": "codeparrot/apps", "split": "test", "revision": None,
       "resolved_revision": "e7ed9f2a4b1c", "index": "cached"}


def doc(verdicts: dict[str, str], tiers: dict[str, str] | None = None, settings: dict | None = None,
        source: dict | None = None, samples: dict[str, tuple[int, int]] | None = None) -> dict:
    """A report document with the given problem verdicts (id -> verdict)."""
    problems = []
    for pid, verdict in verdicts.items():
        n, c = (samples or {}).get(pid, (1, int(verdict == "pass")))
        problems.append({
            "id": pid, "difficulty": (tiers or {}).get(pid, "interview"), "verdict": verdict,
            "samples": n, "samples_passed": c, "score": c / n if n else 0.0,
            "first_failure": "" if verdict == "pass" else f"solutions/{pid}.py::test_0",
            "tests": [{"case": 0, "kind": "pass"}],
        })
    base_settings = {"dataset": "codeparrot/apps", "split": "test", "max_tests": 20, "timeout": 4.0, "memory": None,
                     "limit": len(verdicts), "candidates": "solutions"}
    return {"version": 1, "settings": {**base_settings, **(settings or {})}, "source": {**HUB, **(source or {})},
            "summary": {"strict_accuracy": 0.0}, "problems": problems}


# --------------------------------------------------------------------------------------- comparison


def test_newly_failing_newly_passing_and_the_figures_over_common_problems():
    then = doc({"1": "pass", "2": "pass", "3": "fail", "4": "no_code", "5": "pass", "9": "pass"},
               tiers={"1": "introductory", "2": "introductory", "3": "competition"})
    now = doc({"1": "fail", "2": "pass", "3": "pass", "4": "pass", "5": "incomplete", "6": "pass"},
              tiers={"1": "introductory", "2": "introductory", "3": "competition"})
    c = compare(then, now, baseline_report="base.json", report="new.json")
    assert c.problems == 5 and c.only_in_baseline == ["9"] and c.only_in_run == ["6"]
    assert [x.id for x in c.newly_failing] == ["1", "5"]  # incomplete is not a pass (it scores 0)
    assert [x.id for x in c.newly_passing] == ["3", "4"]
    assert c.newly_failing[0].first_failure == "solutions/1.py::test_0" and c.newly_passing[0].first_failure == ""
    assert (c.newly_failing[1].then, c.newly_failing[1].now) == ("pass", "incomplete")
    f = c.figures
    assert f["then"]["passed"] == 3 and f["now"]["passed"] == 3 and f["difference"]["value"] == 0.0
    # 2x2 over the five common problems: both 1 (2), only now 2 (3, 4), only then 2 (1, 5), neither 0
    assert f["difference"]["interval"] == newcombe_paired(1, 2, 2, 0).to_dict()
    assert f["mcnemar_p"] == mcnemar_exact(2, 2) == 1.0
    # then and now: the interval each run's own headline shows (Clopper-Pearson); the difference: Newcombe
    assert c.method == "newcombe" and f["then"]["interval"]["method"] == "clopper-pearson"
    assert list(c.per_tier) == ["introductory", "interview", "competition"]
    intro = c.per_tier["introductory"]
    assert intro["problems"] == 2 and intro["newly_failing"] == 1 and intro["newly_passing"] == 0
    assert intro["then"]["strict_accuracy"] == 1.0 and intro["now"]["strict_accuracy"] == 0.5
    data = json.loads(json.dumps(c.to_dict()))  # plain data
    assert data["newly_failing_problems"][0]["id"] == "1" and data["only_in_run"] == ["6"]


def test_the_terminal_lines_name_everything_and_newly_failing_come_with_node_ids():
    then = doc({"1": "pass", "2": "pass", "3": "fail", "9": "pass"}, tiers={"3": "competition"})
    now = doc({"1": "fail", "2": "pass", "3": "pass", "6": "fail"}, tiers={"3": "competition"})
    data = compare(then, now, baseline_report="reports/main.json").to_dict()
    lines = baseline_lines(data)
    assert lines[0] == ("baseline reports/main.json: 3 problems in both runs; 1 only in the baseline: 9; "
                        "1 only in this run: 6")
    assert lines[1].startswith("strict accuracy then 66.67% (2/3), now 66.67% (2/3): +0.00 points, 95% CI ")
    assert lines[1].endswith("points (Newcombe hybrid score)")
    assert lines[2] == "verdicts changed: 1 newly failing, 1 newly passing; exact McNemar p = 1"
    assert any(line.startswith("  competition: then 0.00% (0/1), now 100.00% (1/1)") for line in lines)
    assert lines[-1] == "newly passing (1): 3"
    assert newly_failing_lines(data) == ["newly failing (1): 1", "  solutions/1.py::test_0"]


def test_problems_only_in_one_run_are_never_dropped_silently():
    then = doc({str(i): "pass" for i in range(100)})
    now = doc({str(i): "pass" for i in range(50)})
    data = compare(then, now, baseline_report="b.json").to_dict()
    assert data["only_in_baseline"] == [str(i) for i in range(50, 100)]
    assert "50 only in the baseline: 50, 51," in baseline_lines(data)[0]
    assert baseline_lines(data)[0].endswith("and 30 more")


def test_nothing_in_common_is_said_plainly():
    data = compare(doc({"1": "pass"}), doc({"2": "pass"}), baseline_report="b.json").to_dict()
    assert data["problems"] == 0 and data["difference"]["value"] is None
    assert "no problem in common: nothing to compare" in baseline_lines(data)
    assert "Compared on the 0 problems" in markdown_text({**doc({"2": "pass"}), "baseline": data})


def test_with_samples_the_difference_is_square_and_add_and_score_changes_are_listed():
    samples_then = {"1": (10, 9), "2": (10, 10), "3": (10, 2), "4": (10, 0)}
    samples_now = {"1": (10, 1), "2": (10, 10), "3": (10, 6), "4": (10, 10)}
    then = doc({"1": "fail", "2": "pass", "3": "fail", "4": "fail"}, samples=samples_then)
    now = doc({"1": "fail", "2": "pass", "3": "fail", "4": "pass"}, samples=samples_now)
    c = compare(then, now)
    assert c.method == "square-and-add" and c.figures["difference"]["interval"]["method"] == "square-and-add"
    assert (c.figures["then"]["samples"], c.figures["then"]["samples_passing"]) == (40, 21)
    assert (c.figures["now"]["samples"], c.figures["now"]["samples_passing"]) == (40, 27)
    assert c.figures["then"]["strict_accuracy"] == 0.525 and c.figures["now"]["strict_accuracy"] == 0.675
    assert c.figures["difference"]["value"] == 0.15
    assert [x.id for x in c.newly_passing] == ["4"] and not c.newly_failing
    assert [(x.id, x.then_score, x.now_score) for x in c.scores_fell] == [("1", 0.9, 0.1)]
    assert [x.id for x in c.scores_rose] == ["4", "3"]  # largest rise first
    assert compare(then, now).to_dict() == c.to_dict()  # a function of the reports
    assert any(line.startswith("share of passing samples fell (1): 1 (90.00% -> 10.00%)")
               for line in baseline_lines(c.to_dict()))


# ----------------------------------------------------------------------------------- comparable runs


@pytest.mark.parametrize("change, needle", [
    ({"source": {"dataset": "metr-evals/apps"}}, "dataset codeparrot/apps there, metr-evals/apps here"),
    ({"source": {"split": "train"}}, "split test there, train here"),
    ({"source": {"resolved_revision": "0123456789ab"}}, "revision e7ed9f2a4b1c there, 0123456789ab here"),
    ({"settings": {"judge": "apps"}}, "judge seed there, apps here"),
    ({"settings": {"max_tests": 0}}, "max_tests 20 tests there, all tests here"),
    ({"settings": {"timeout": 2.0}}, "timeout 4 s there, 2 s here"),
    ({"settings": {"timeout_scale": 1.5}}, "timeout 4 s there, 6 s here"),  # the limit a test had, scaled
    ({"settings": {"memory": 2**30}}, "memory 4 GiB there, 1 GiB here"),
])
def test_a_baseline_of_other_data_judge_tests_or_limits_is_refused_in_one_line(change, needle):
    then = doc({"1": "pass"})
    now = doc({"1": "pass"}, settings=change.get("settings"), source=change.get("source"))
    with pytest.raises(BaselineError) as err:
        compare(then, now, baseline_report="reports/main.json")
    message = str(err.value)
    assert "\n" not in message and message.startswith("reports/main.json: not comparable with this run: ")
    # the API's caller is told of its keyword, not of the command line's option
    assert needle in message and message.endswith("; pass allow_mismatch=True to compare anyway")
    c = compare(then, now, allow_mismatch=True, baseline_report="reports/main.json")
    assert c.differences and needle in "; ".join(d.text() for d in c.differences)
    assert baseline_lines(c.to_dict())[1].startswith("compared anyway (--apps-baseline-any): ")


def test_what_is_compared_and_the_selection_may_differ():
    then = doc({"1": "pass", "2": "fail"})
    now = doc({"1": "pass"}, settings={"candidates": "other-model", "limit": 1, "only": ["1"], "samples": 5,
                                       "select": "most-common", "fail_fast": True, "agent": "x:y"})
    assert compare(then, now).differences == []


def test_equivalent_spellings_are_the_same_run():
    # no judge recorded = seed; no memory = the 4 GiB default; max_tests 0 or less = every test
    then = doc({"1": "pass"}, settings={"memory": None, "max_tests": 0})
    now = doc({"1": "pass"}, settings={"judge": "seed", "memory": 4 * 2**30, "max_tests": -1})
    assert compare(then, now).differences == []


def test_local_files_are_compared_by_content_not_by_path_or_mtime():
    local = {"dataset": "/home/ci/run1/data/test.jsonl", "revision": None,
             "resolved_revision": "size=33516,mtime=2026-01-01T10:10:35.000000000Z,ends=756b9292df02"}
    moved = {**local, "dataset": "/tmp/checkout/data/test.jsonl",
             "resolved_revision": "size=33516,mtime=2026-03-09T08:00:00.000000000Z,ends=756b9292df02"}
    edited = {**local, "resolved_revision": "size=33517,mtime=2026-01-01T10:10:35.000000000Z,ends=99aa9292df02"}
    assert compare(doc({"1": "pass"}, source=local), doc({"1": "pass"}, source=moved)).differences == []
    with pytest.raises(BaselineError, match="dataset /home/ci/run1/data/test.jsonl .*size=33516,ends=756b9292df02"):
        compare(doc({"1": "pass"}, source=local), doc({"1": "pass"}, source=edited))
    with pytest.raises(BaselineError, match="dataset"):  # the hub's data is not a local file's
        compare(doc({"1": "pass"}), doc({"1": "pass"}, source=local))
    folder = {**local, "resolved_revision": "files=4,size=120,hash=aaaa"}
    checkout = {**local, "resolved_revision": "files=4,size=120,hash=bbbb"}  # the hash mixes mtimes in
    assert facts(doc({}, source=folder))["dataset"][0] == facts(doc({}, source=checkout))["dataset"][0]


# ------------------------------------------------------------------------------------ unusable files


def test_unusable_baseline_files_are_one_line_naming_the_file(tmp_path: Path):
    cases = {
        "missing.json": None,
        "folder": "dir",
        "garbage.json": "{not json",
        "list.json": "[1, 2]",
        "other.json": json.dumps({"summary": {}, "tests": []}),
        "noid.json": json.dumps({"summary": {}, "problems": [{"verdict": "pass"}]}),
    }
    expected = {"missing.json": "no such file", "folder": "is a folder", "garbage.json": "not JSON",
                "list.json": "not a pytest-apps JSON report", "other.json": "not a pytest-apps JSON report",
                "noid.json": "problems[0] has no id or verdict"}
    for name, content in cases.items():
        path = tmp_path / name
        if content == "dir":
            path.mkdir()
        elif content is not None:
            path.write_text(content)
        with pytest.raises(BaselineError) as err:
            load_report(path, shown=name)
        message = str(err.value)
        assert message.startswith(f"{name}: ") and expected[name] in message and "\n" not in message, message


def test_a_loaded_baseline_keeps_only_what_the_comparison_reads(tmp_path: Path):
    full = doc({"1": "pass", "2": "fail"})
    full["problems"][1].update(program="print(1)" * 1000, first_failure_detail={"input": "x" * 1000})
    (tmp_path / "r.json").write_text(json.dumps(full))
    slim = load_report(tmp_path / "r.json")
    assert set(slim["problems"][1]) == {"id", "difficulty", "verdict", "score", "samples", "samples_passed",
                                        "first_failure"}
    assert slim["settings"] == full["settings"] and slim["source"] == full["source"]
    assert compare(slim, full).to_dict() == compare(full, full).to_dict()


# ------------------------------------------------------------------------------------------------ gate


def test_regression_gate_and_its_combination_with_fail_under():
    then, now = doc({"1": "pass", "2": "fail"}), doc({"1": "fail", "2": "pass"})
    c = compare(then, now)
    assert regression_verdict(False, c) is None and regression_verdict(True, None) is None
    gate = regression_verdict(True, c)
    assert not gate.passed and gate.message == (
        "FAIL: 1 problem that passed in the baseline fails now (--apps-fail-on-regression)")
    assert regression_verdict(True, compare(then, then)).passed
    ok, bad = Gate(True, ""), Gate(False, "")
    assert passed([None, None]) is None
    assert passed([ok, None]) is True and passed([ok, ok]) is True
    assert passed([ok, bad]) is False and passed([bad, ok]) is False  # either failing fails the run


# -------------------------------------------------------------------------------------- Markdown, HTML


def _with_baseline(now: dict, then: dict) -> dict:
    now = copy.deepcopy(now)
    now["summary"] = {"problems": len(now["problems"]), "passed": 1, "strict_accuracy": 0.5,
                      "per_tier": {"interview": {"problems": 2, "passed": 1, "strict_accuracy": 0.5}},
                      "samples": {"min": 1, "max": 1, "total": 2}, "pass_at_k": {"pass@1": 0.5},
                      "intervals": {"level": 0.95, "strict_accuracy": {"low": 0.094, "high": 0.906, "method": "wilson"},
                                    "per_tier": {"interview": {"low": 0.094, "high": 0.906, "method": "wilson"}}}}
    now["baseline"] = compare(then, now, baseline_report="reports/main.json").to_dict()
    return now


def test_markdown_summary_holds_the_headline_tiers_comparison_and_ids():
    text = markdown_text(_with_baseline(doc({"1": "fail", "2": "pass"}), doc({"1": "pass", "2": "fail"})))
    assert text.startswith("## APPS benchmark\n")
    assert "**Strict accuracy 50.00%** (1/2 problems), 95% CI 9.4-90.6%" in text
    assert "| interview | 2 | 1 | 50.00% | 9.4-90.6% |" in text
    assert "### Against the baseline" in text
    assert "| all | 2 | 50.00% (1/2) | 50.00% (1/2) | +0.00 points (" in text
    assert "**Newly failing (1)**: `1`" in text and "**Newly passing (1)**: `2`" in text
    assert "```\npytest --apps-limit=2 solutions/1.py::test_0\n```" in text  # as the run's rerun lines paste
    assert "Exact McNemar p = 1" in text


def test_markdown_cannot_be_broken_out_of_by_crafted_ids():
    evil = "7`](http://x) | <script>\n# heading"
    now = doc({evil: "fail"}, tiers={evil: "tier|x"})
    now["problems"][0]["first_failure"] = "a```\n## injected"
    text = markdown_text(_with_baseline(now, doc({evil: "pass"}, tiers={evil: "tier|x"})))
    assert "\n# heading" not in text and "\n## injected" not in text
    assert "`7'](http://x) \\| <script> # heading`" in text
    assert "| tier\\|x |" in text


def test_markdown_is_written_and_appended_to_the_step_summary(tmp_path: Path):
    summary = tmp_path / "step.md"
    summary.write_text("earlier step\n")
    written = write_markdown("## APPS\n", tmp_path / "out" / "apps.md", {"GITHUB_STEP_SUMMARY": str(summary)})
    assert (tmp_path / "out" / "apps.md").read_text() == "## APPS\n"
    assert summary.read_text() == "earlier step\n## APPS\n" and written[-1] == summary
    write_markdown("## again\n", tmp_path / "out" / "apps.md", {})
    assert summary.read_text() == "earlier step\n## APPS\n"  # no variable: the step summary is left alone


def test_html_marks_the_changed_problems_and_shows_the_comparison():
    now = _with_baseline(doc({"1": "fail", "2": "pass"}), doc({"1": "pass", "2": "fail"}))
    now["problems"][0].update(verdict="fail", first_failure_detail={"input": "1", "expected": "2", "got": "3"})
    page = render_html(now)
    assert '<section id="baseline" data-problems="2">' in page
    assert 'data-id="1" data-change="newly_failing">' in page  # the failing problem's details are marked
    assert '<li data-change="newly_failing" data-id="1"><a href="#p-1">1</a>' in page
    assert '<li data-change="newly_passing" data-id="2"><b>2</b>' in page
    assert "Exact McNemar p = 1 " in page and "95% CI 9.4-90.6%" in page
    evil = "<img src=x onerror=alert(1)>"
    page = render_html(_with_baseline(doc({evil: "fail"}), doc({evil: "pass"})))
    assert evil not in page
