"""A run against a baseline, end to end (real pytest subprocesses, xdist workers and executor): one problem
breaks and one is fixed; the exit status with and without --apps-fail-on-regression; the JSON, HTML and
Markdown reports; a mismatched or missing baseline; and `python -m pytest_apps diff` on the saved reports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SOLUTIONS, read_report, run, run_in

WRONG_SUM = "a, b = map(int, input().split())\nprint(a - b)\n"  # 900001 reads two numbers and prints their sum
WRONG_900005 = "print(0)\n"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The baseline report: the sample's solutions but 900005's, which fails (made once for the module)."""
    folder = tmp_path_factory.mktemp("baseline")
    shutil.copytree(SOLUTIONS, folder / "solutions")
    (folder / "solutions" / "900005.py").write_text(WRONG_900005)
    done = run_in(folder, "--apps-dataset", "sample", "--apps-report", "reports/base.json")
    assert done.returncode == 1, done.stdout[-3000:]
    report = (folder / "reports" / "base.json").read_bytes()
    assert [p["id"] for p in json.loads(report)["problems"] if p["verdict"] != "pass"] == ["900005"]
    return report


@pytest.fixture
def changed(sample_project: pytest.Pytester, baseline: bytes) -> pytest.Pytester:
    """A baseline report (reports/base.json) where 900005 fails and the rest pass; then the candidates change:
    900001 breaks and 900005 is fixed."""
    (sample_project.path / "reports").mkdir()
    (sample_project.path / "reports" / "base.json").write_bytes(baseline)
    (sample_project.path / "solutions" / "900001.py").write_text(WRONG_SUM)
    return sample_project


def summary_section(result: pytest.RunResult) -> list[str]:
    """The lines of the `APPS summary` section (colour codes kept, if any)."""
    lines = result.stdout.lines
    plain = [plain_text(line) for line in lines]
    start = next(i for i, line in enumerate(plain) if "APPS summary" in line)
    end = next(i for i in range(start + 1, len(plain)) if plain[i].startswith("="))
    return lines[start + 1:end]


def plain_text(line: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", line)


def test_a_run_against_its_baseline_lists_the_broken_and_the_fixed_problem(changed: pytest.Pytester) -> None:
    base = ("--apps-dataset", "sample", "--apps-baseline", "reports/base.json", "-n", "2")
    result = run(changed, *base, "--apps-html", "reports/apps.html")
    assert result.ret == 1  # cases failed and no gate was asked for: pytest's own status
    section = summary_section(result)
    assert section[0] == "strict accuracy: 83.33% (5/6 problems), 95% CI 35.9-99.6%"
    i = section.index("baseline reports/base.json: 6 problems in both runs")
    assert section[i + 1] == ("strict accuracy then 83.33% (5/6), now 83.33% (5/6): +0.00 points, "
                              "95% CI -44.5 to +44.5 points (Newcombe hybrid score)")
    assert section[i + 2] == "verdicts changed: 1 newly failing, 1 newly passing; exact McNemar p = 1"
    assert ("  introductory: then 100.00% (2/2), now 50.00% (1/2): -50.00 points, 95% CI -90.5 to +27.3 points; "
            "1 newly failing, 0 newly passing") in section
    assert section[-3:] == ["newly passing (1): 900005", "newly failing (1): 900001",
                            "  pytest --apps-dataset=sample --apps-html=reports/apps.html solutions/900001.py::test_0"]

    report = read_report(changed)
    assert list(report)[:8] == ["version", "run", "settings", "source", "summary", "isolation", "machine",
                                "baseline"]
    b = report["baseline"]
    assert b["baseline_report"] == "reports/base.json" and b["problems"] == 6 and b["differences"] == []
    assert [(x["id"], x["then"], x["now"], x["first_failure"]) for x in b["newly_failing_problems"]] == [
        ("900001", "pass", "fail", "solutions/900001.py::test_0")]
    assert [(x["id"], x["then"], x["now"]) for x in b["newly_passing_problems"]] == [("900005", "fail", "pass")]
    assert b["mcnemar_p"] == 1.0 and b["method"] == "newcombe"
    assert b["per_tier"]["competition"]["newly_passing"] == 1 and b["per_tier"]["interview"]["newly_failing"] == 0
    assert report["summary"]["intervals"]["strict_accuracy"] == {"low": 0.358765, "high": 0.995789,
                                                                  "method": "clopper-pearson"}

    page = (changed.path / "reports" / "apps.html").read_text()
    assert '<details class="fail" id="p-900001" data-kind="wrong_answer" data-id="900001" data-change="newly_failing">' in page
    assert '<li data-change="newly_passing" data-id="900005">' in page


def test_exit_status_with_and_without_the_regression_gate(changed: pytest.Pytester) -> None:
    base = ("--apps-dataset", "sample", "--apps-baseline", "reports/base.json")
    assert run(changed, *base, "--apps-fail-under", "50").ret == 0  # 83% meets it; no regression gate
    gated = run(changed, *base, "--apps-fail-under", "50", "--apps-fail-on-regression", "--color=yes", "-rN")
    assert gated.ret == 1  # the regression gate fails, though --apps-fail-under passes
    section = [plain_text(line) for line in summary_section(gated)]
    assert section[-4:] == [
        "strict accuracy 83.33% meets --apps-fail-under 50%",
        "FAIL: 1 problem that passed in the baseline fails now (--apps-fail-on-regression)",
        "newly failing (1): 900001",
        "  pytest --apps-dataset=sample solutions/900001.py::test_0",
    ]
    raw = "\n".join(gated.stdout.lines)
    assert re.search(r"\x1b\[1m[^\n]*newly failing \(1\): 900001", raw)  # printed last, in bold
    # against a baseline it does not regress from (this run's own report), the gate passes though cases failed
    shutil.copy(changed.path / "reports/apps-report.json", changed.path / "reports/now.json")
    again = ("--apps-dataset", "sample", "--apps-baseline", "reports/now.json", "--apps-fail-on-regression")
    result = run(changed, *again)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["no problem that passed in the baseline fails now (--apps-fail-on-regression)",
                                 "newly failing (0): none"])
    assert run(changed, *again, "--apps-fail-under", "90").ret == 1  # either failing fails the run


def test_a_mismatched_or_missing_baseline_is_refused_before_anything_runs(changed: pytest.Pytester) -> None:
    result = run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/base.json", "--apps-max-tests", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: apps: --apps-baseline reports/base.json: not comparable with this run: "
                                 "max_tests 20 tests there, 2 tests here; give --apps-baseline-any to compare anyway"])
    assert "passed" not in result.stdout.str() and "APPS summary" not in result.stdout.str()

    report = json.loads((changed.path / "reports/base.json").read_text())
    report["settings"]["judge"] = "apps"
    (changed.path / "reports/apps-judge.json").write_text(json.dumps(report))
    result = run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/apps-judge.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*reports/apps-judge.json: not comparable with this run: judge apps there, seed here;*"])

    anyway = run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/base.json", "--apps-max-tests", "2",
                 "--apps-baseline-any")
    assert anyway.ret == 1
    anyway.stdout.fnmatch_lines(["compared anyway (--apps-baseline-any): max_tests 20 tests there, 2 tests here"])
    assert read_report(changed)["baseline"]["differences"] == [{"setting": "max_tests", "then": "20 tests",
                                                                "now": "2 tests"}]

    missing = run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/nope.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["ERROR: apps: --apps-baseline reports/nope.json: no such file; *"])
    gate_alone = run(changed, "--apps-dataset", "sample", "--apps-fail-on-regression")
    assert gate_alone.ret == pytest.ExitCode.USAGE_ERROR
    gate_alone.stderr.fnmatch_lines(["*--apps-fail-on-regression: give --apps-baseline=PATH*"])


def test_markdown_summary_and_the_github_step_summary(changed: pytest.Pytester, monkeypatch, tmp_path: Path) -> None:
    step = tmp_path / "step_summary.md"
    step.write_text("## earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/base.json")  # no --apps-markdown
    assert step.read_text() == "## earlier step\n"  # nothing asked for, nothing written
    result = run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/base.json", "-n", "2",
                 "--apps-markdown", "reports/apps.md")
    assert result.ret == 1
    text = (changed.path / "reports" / "apps.md").read_text()
    assert step.read_text() == "## earlier step\n" + text  # appended, not overwritten
    assert "**Strict accuracy 83.33%** (5/6 problems), 95% CI 35.9-99.6%" in text
    assert "| introductory | 2 | 1 | 50.00% | 1.3-98.7% |" in text
    assert "| all | 6 | 83.33% (5/6) | 83.33% (5/6) | +0.00 points (-44.5 to +44.5) | 1 | 1 |" in text
    assert "**Newly failing (1)**: `900001`" in text and "**Newly passing (1)**: `900005`" in text
    assert "solutions/900001.py::test_0" in text


def diff(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GITHUB_STEP_SUMMARY": ""}
    return subprocess.run([sys.executable, "-m", "pytest_apps", "diff", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_diff_compares_two_saved_reports_as_text_and_json(changed: pytest.Pytester) -> None:
    run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/base.json")
    in_run = read_report(changed)["baseline"]
    text = diff(changed.path, "reports/base.json", "reports/apps-report.json")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "report reports/apps-report.json",
        "baseline reports/base.json: 6 problems in both runs",
        "strict accuracy then 83.33% (5/6), now 83.33% (5/6): +0.00 points, 95% CI -44.5 to +44.5 points "
        "(Newcombe hybrid score)",
        "verdicts changed: 1 newly failing, 1 newly passing; exact McNemar p = 1",
        "  introductory: then 100.00% (2/2), now 50.00% (1/2): -50.00 points, 95% CI -90.5 to +27.3 points; "
        "1 newly failing, 0 newly passing",
        "  interview: then 100.00% (2/2), now 100.00% (2/2): +0.00 points, 95% CI -65.8 to +65.8 points; "
        "0 newly failing, 0 newly passing",
        "  competition: then 50.00% (1/2), now 100.00% (2/2): +50.00 points, 95% CI -27.3 to +90.5 points; "
        "0 newly failing, 1 newly passing",
        "newly passing (1): 900005",
        "newly failing (1): 900001",
        "  pytest --apps-dataset=sample solutions/900001.py::test_0",
    ]
    machine = diff(changed.path, "reports/base.json", "reports/apps-report.json", "--json")
    data = json.loads(machine.stdout)
    assert data == {**in_run, "report": "reports/apps-report.json"}  # the same comparison as the run's own
    gated = diff(changed.path, "reports/base.json", "reports/apps-report.json", "--apps-fail-on-regression")
    assert gated.returncode == 1
    assert gated.stdout.splitlines()[-3:] == [
        "FAIL: 1 problem that passed in the baseline fails now (--apps-fail-on-regression)",
        "newly failing (1): 900001", "  pytest --apps-dataset=sample solutions/900001.py::test_0"]
    backwards = diff(changed.path, "reports/apps-report.json", "reports/base.json", "--apps-markdown", "d.md")
    assert backwards.returncode == 0 and "newly passing (1): 900001" in backwards.stdout
    assert "**Newly failing (1)**: `900005`" in (changed.path / "d.md").read_text()


def test_diff_refuses_unusable_and_mismatched_reports(changed: pytest.Pytester) -> None:
    run(changed, "--apps-dataset", "sample", "--apps-max-tests", "2")
    missing = diff(changed.path, "reports/none.json", "reports/apps-report.json")
    assert missing.returncode == 2 and missing.stderr.strip() == (
        "error: reports/none.json: no such file; give the JSON report of an earlier run (--apps-report writes it)")
    refused = diff(changed.path, "reports/base.json", "reports/apps-report.json")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip() == ("error: reports/base.json: not comparable with this run: max_tests 20 tests "
                                      "there, 2 tests here; give --apps-baseline-any to compare anyway")
    anyway = diff(changed.path, "reports/base.json", "reports/apps-report.json", "--apps-baseline-any", "--json")
    assert anyway.returncode == 0
    assert json.loads(anyway.stdout)["differences"] == [{"setting": "max_tests", "then": "20 tests", "now": "2 tests"}]


def test_diff_never_passes_an_incomplete_report_with_the_regression_gate(changed: pytest.Pytester) -> None:
    """The same report as its own baseline passes the gate; marked incomplete (as an interrupted run writes it),
    the gate fails and says why, as the run's own gate does."""
    base = json.loads((changed.path / "reports" / "base.json").read_text())
    assert base["run"]["complete"]
    same = diff(changed.path, "reports/base.json", "reports/base.json", "--apps-fail-on-regression")
    assert same.returncode == 0, same.stdout + same.stderr
    base["run"].update(complete=False, interrupted="SIGINT", incomplete="interrupted (SIGINT): 12 cases never ran")
    (changed.path / "reports" / "cut.json").write_text(json.dumps(base))
    cut = diff(changed.path, "reports/base.json", "reports/cut.json", "--apps-fail-on-regression")
    assert cut.returncode == 1
    assert ("FAIL: --apps-fail-on-regression cannot pass an incomplete run (interrupted (SIGINT): 12 cases never "
            "ran)") in cut.stdout.splitlines()
    assert diff(changed.path, "reports/base.json", "reports/cut.json").returncode == 0  # (no gate asked for)


def test_diff_into_a_closed_pipe_exits_quietly(changed: pytest.Pytester) -> None:
    """`python -m pytest_apps diff ... --json | head`: the reader goes away before the comparison is printed;
    the command ends without a traceback (as a shell tool does on SIGPIPE)."""
    run(changed, "--apps-dataset", "sample", "--apps-baseline", "reports/base.json")
    proc = subprocess.Popen([sys.executable, "-m", "pytest_apps", "diff", "reports/base.json",
                             "reports/apps-report.json", "--json"], cwd=changed.path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # `head` has read its lines and gone
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


def test_a_newly_failing_line_pastes_as_the_rerun_lines_do_and_never_imports_the_candidate(
        sample_project: pytest.Pytester, baseline: bytes) -> None:
    """Candidates in a folder of their own (not the default `solutions`): a bare node id pasted would have pytest
    import the program as a test module. The line under "newly failing" (the run's and `diff`'s) carries the run's
    options, and pasted as printed it reruns the case fenced, as an APPS item."""
    import shlex

    folder = sample_project.path
    (folder / "reports").mkdir()
    (folder / "reports" / "base.json").write_bytes(baseline)
    shutil.move(folder / "solutions", folder / "cands")
    (folder / "cands" / "900001.py").write_text(WRONG_SUM)
    (folder / "reports" / "base.json").write_text(
        (folder / "reports" / "base.json").read_text().replace("solutions/", "cands/"))
    args = ("--apps-dataset=sample", "--apps-candidates=cands", "--apps-baseline=reports/base.json",
            "--apps-baseline-any")
    result = run(sample_project, *args)
    printed = summary_section(result)[-1].strip()
    assert printed == "pytest --apps-dataset=sample --apps-candidates=cands cands/900001.py::test_0"
    from_diff = diff(folder, "reports/base.json", "reports/apps-report.json").stdout.splitlines()[-1].strip()
    assert from_diff == printed
    pasted = run(sample_project, *shlex.split(printed)[1:], "-v")
    pasted.stdout.fnmatch_lines(["cands/900001.py::test_0 FAILED*", "*APPS problem 900001 test 0: wrong answer*"])
    pasted.assert_outcomes(failed=1)  # (imported by pytest, the program would have failed to collect: no stdin)
    assert "ERROR collecting" not in pasted.stdout.str()
