"""The hooks a conftest or another plugin implements (plugin/hookspecs.py): each used by a conftest in a real run
with xdist workers, where it must be called in the controller only; and the plain functions behind them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_problem, read_report, run
from pytest_apps.candidates.origins import PROVIDED, provided_candidates
from pytest_apps.candidates.sources import CandidateError
from pytest_apps.core.errors import HarnessError
from pytest_apps.dataset.problems import Problem
from pytest_apps.judge.checkers import Checkers
from pytest_apps.plugin.plan import HookError, Plan, plan_data, plan_from_data, provided_checkers
from pytest_apps.plugin.writers import added_header_lines

# Where a hook ran: an xdist worker's config has `workerinput`, the controller's has not.
NOTE = """\
import json

ROLE = []


def pytest_configure(config):
    ROLE.append(config.workerinput["workerid"] if hasattr(config, "workerinput") else "controller")


def note(*what):
    with open("calls.jsonl", "a") as fh:
        fh.write(json.dumps([ROLE[0], *what]) + "\\n")


"""


def calls(pytester: pytest.Pytester) -> list[list[str]]:
    path = pytester.path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def conftest(pytester: pytest.Pytester, body: str) -> None:
    pytester.makeconftest(NOTE + textwrap.dedent(body))


def test_a_conftest_provides_candidates_on_the_controller_and_they_run_fenced(
    sample_project: pytest.Pytester,
) -> None:
    conftest(sample_project, '''
        def pytest_apps_candidates(problem):
            note(problem.id)
            if problem.id == "900001":  # wrong on purpose: the hook's program is the one that runs
                return "a, b = map(int, input().split())\\nprint(a - b)\\n"
            if problem.id == "900002":  # two samples, one of them model text
                right = "def reverse_words(s):\\n    return ' '.join(reversed(s.split()))\\n"
                return [right, "Here it is:\\n```python\\ndef reverse_words(s):\\n    return s\\n```\\n"]
            return None  # the others: from --apps-candidates (solutions/)
    ''')
    result = run(sample_project, "--apps-dataset", "sample", "-n", "2")
    assert sorted(calls(sample_project)) == [["controller", f"90000{i}"] for i in range(1, 7)]
    report = read_report(sample_project)
    by_id = {p["id"]: p for p in report["problems"]}
    hook = sample_project.path / "apps-generations" / PROVIDED
    assert by_id["900001"]["candidate"] == str(hook / "900001.py")
    assert by_id["900001"]["verdict"] == "fail"
    assert [t["kind"] for t in by_id["900001"]["tests"]].count("wrong_answer") == 4  # (0 0 passes a - b)
    assert (by_id["900002"]["samples"], by_id["900002"]["samples_passed"]) == (2, 1)
    assert sorted(p.name for p in (hook / "900002").iterdir()) == ["sample_0.py", "sample_1.md"]
    assert all(by_id[f"90000{i}"]["verdict"] == "pass" for i in range(3, 7))
    result.stdout.fnmatch_lines(["*apps-generations/hook/900001.py::test_0*"])
    # a node id of the hook's file reruns that very case
    (sample_project.path / "calls.jsonl").unlink()
    rerun = run(sample_project, "--apps-dataset", "sample", "apps-generations/hook/900001.py::test_0")
    rerun.assert_outcomes(failed=1)
    assert len(calls(sample_project)) == 6


def test_a_conftest_provides_checkers_that_every_worker_uses(sample_project: pytest.Pytester) -> None:
    (sample_project.path / "solutions" / "900003.py").write_text("input()\ninput()\nprint(0)\n")  # wrong
    conftest(sample_project, '''
        def pytest_apps_checker(problem):
            note(problem.id)
            if problem.id == "900003":
                return "def check(input, expected, got):\\n    return True\\n"
            if problem.id == "900006":
                return "def check(args, expected, got):\\n    return False, 'never right'\\n"
            return None
    ''')
    result = run(sample_project, "--apps-dataset", "sample", "-n", "2")
    assert sorted(calls(sample_project)) == [["controller", f"90000{i}"] for i in range(1, 7)]
    result.stdout.fnmatch_lines(["*judge seed*; checkers pytest_apps_checker (2: 900003, 900006)"])
    by_id = {p["id"]: p for p in read_report(sample_project)["problems"]}
    assert by_id["900003"]["verdict"] == "pass"
    assert {t["step"] for t in by_id["900003"]["tests"]} == {"checker"}
    assert by_id["900006"]["verdict"] == "fail"
    assert "never right" in json.dumps(by_id["900006"]["first_failure_detail"])
    assert read_report(sample_project)["summary"]["checker_tests"]["problems"] == ["900003", "900006"]


def test_a_conftest_receives_the_finished_summary_and_records_once_on_the_controller(
    sample_project: pytest.Pytester,
) -> None:
    conftest(sample_project, '''
        def pytest_apps_summary(summary, records):
            note(summary["summary"]["strict_accuracy"], sorted(r.nodeid for r in records),
                 sorted({r.kind for r in records}))
    ''')
    run(sample_project, "--apps-dataset", "sample", "--apps-only", "900001,900002", "-n", "2")
    report = read_report(sample_project)
    [(where, accuracy, nodeids, kinds)] = calls(sample_project)
    assert where == "controller"
    assert accuracy == report["summary"]["strict_accuracy"] == 1.0
    assert len(nodeids) == report["summary"]["tests_run"] == 9
    assert nodeids[0] == "solutions/900001.py::test_0" and nodeids[-1] == "solutions/900002.py::test_3"
    assert kinds == ["pass"]


def test_a_conftest_adds_header_lines_on_the_controller(sample_project: pytest.Pytester) -> None:
    conftest(sample_project, '''
        def pytest_apps_report_header(settings):
            note(settings.judge)
            return [f"tracker: judged by {settings.judge}", "tracker: run 42"]
    ''')
    result = run(sample_project, "--apps-dataset", "sample", "--apps-only", "900001", "-n", "2")
    result.stdout.fnmatch_lines(["apps: judge seed*", "tracker: judged by seed", "tracker: run 42"])
    assert calls(sample_project) == [["controller", "seed"]]


# -- the plain functions behind the hooks ------------------------------------------------------------


def problem(pid: str, broken: str = "") -> Problem:
    return make_problem(pid, broken=broken)


def test_provided_candidates_are_written_where_node_ids_start_and_replace_what_was_there(tmp_path: Path) -> None:
    answers = {"1": "print(1)\n", "2": ["print(2)\n", "```python\nprint(22)\n```\n"], "3": None}
    (tmp_path / "1").mkdir(parents=True)  # an earlier run's samples of problem 1
    (tmp_path / "1" / "sample_0.py").write_text("old")
    found = provided_candidates(lambda p: answers.get(p.id), [problem("1"), problem("2"), problem("3"),
                                                               problem("4", broken="no tests")], tmp_path)
    assert sorted(found) == ["1", "2"]
    assert not (tmp_path / "1").exists()
    assert [(c.code, c.origin, Path(c.file).name) for c in found["1"]] == [("print(1)\n", PROVIDED, "1.py")]
    assert [c.code for c in found["2"]] == ["print(2)\n", "print(22)"]
    with pytest.raises(CandidateError, match=r"problem 5 .* returned dict; return a program's text"):
        provided_candidates(lambda p: {"code": "x"}, [problem("5")], tmp_path)
    with pytest.raises(CandidateError, match="non-empty list"):
        provided_candidates(lambda p: [], [problem("5")], tmp_path)


def test_provided_checkers_are_texts_or_files_by_problem(tmp_path: Path) -> None:
    file = tmp_path / "c.py"
    file.write_text("def check(i, e, g):\n    return True\n")
    answers = {"1": "def check(i, e, g):\n    return False\n", "2": file}
    assert provided_checkers(lambda p: answers.get(p.id), [problem("1"), problem("2"), problem("3")]) == {
        "1": answers["1"], "2": file.read_text()}
    with pytest.raises(HookError, match=r"problem 1 .* returned int"):
        provided_checkers(lambda p: 7, [problem("1")])
    with pytest.raises(HookError, match="cannot read"):
        provided_checkers(lambda p: tmp_path / "missing.py", [problem("1")])


def test_a_checker_given_as_text_is_preferred_to_a_file_and_named_in_errors(tmp_path: Path) -> None:
    (tmp_path / "1.py").write_text("def check(i, e, g):\n    return False\n")
    (tmp_path / "2.py").write_text("def check(i, e, g):\n    return True\n")
    checkers = Checkers(tmp_path, {"1": "def check(i, e, g):\n    return g == e\n", "3": "x = 1\n"})
    assert checkers.problem_ids == ["1", "2", "3"] and "3" in checkers
    assert checkers.bind("1", "in", "5")("5") == (True, "")
    assert checkers.bind("2", "in", "5")("6") == (True, "")
    with pytest.raises(HarnessError, match=r"pytest_apps_checker\(problem 3\) defines no check"):
        checkers.bind("3", "in", "5")("5")
    assert Checkers.from_setting(None, sources={}) is None
    assert Checkers.from_setting(None, sources={"1": "x"}).problem_ids == ["1"]


def test_header_lines_from_the_hook_may_be_a_line_a_list_or_nothing() -> None:
    assert added_header_lines([None, "one", ["two", "three"], []]) == ["one", "two", "three"]


def test_checker_texts_travel_in_the_plan_to_local_and_remote_workers(tmp_path: Path) -> None:
    plan = Plan(folder=tmp_path, settings={}, source={}, problems=[], skipped=[], missing=[], candidates={},
                checker_code={"7": "def check(i, e, g):\n    return True\n"})
    for full in (True, False):  # the plan file of local workers, and what a remote worker receives
        assert plan_from_data(tmp_path, json.loads(json.dumps(plan_data(plan, full=full)))).checker_code == \
            plan.checker_code
