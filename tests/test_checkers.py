"""Checkers: trusted per-problem code that decides the tests of problems with several right answers."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest

from conftest import permutation_project, read_report, run
from pytest_apps.core.errors import HarnessError
from pytest_apps.judge import checkers as checkers_module
from pytest_apps.judge.checkers import BUILTIN_FOLDER, Checkers, bounded_call


def folder_with(tmp_path: Path, **files: str) -> Checkers:
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
    return Checkers(tmp_path)


def test_a_checker_decides_with_a_bool_or_a_message(tmp_path: Path):
    found = folder_with(tmp_path, **{
        "7": "def check(input, expected, got):\n    return sorted(got.split()) == sorted(expected.split())\n",
        "8": "def check(args, expected, got):\n    return got == args[0] * 2, f'{got} is not twice {args[0]}'\n",
    })
    assert found.problem_ids == ["7", "8"] and "7" in found and "9" not in found
    assert found.bind("9", "", "") is None
    assert found.bind("7", "3\n", "1 2 3\n")("3 1 2\n") == (True, "")
    assert found.bind("7", "3\n", "1 2 3\n")("3 1 1\n") == (False, "")
    assert found.bind("8", [4], [8])(8) == (True, "8 is not twice 4")
    assert found.bind("8", [4], [8])(9) == (False, "9 is not twice 4")


@pytest.mark.parametrize(("text", "message"), [
    ("def check(i, e, g):\n    raise KeyError('x')\n", "raised KeyError: 'x'"),
    ("def check(i, e, g):\n    return 1\n", "returned 1; return True/False or (bool, message)"),
    ("def check(i, e, g):\n    return (None, 'why')\n", "returned (None, 'why')"),
    ("def check(:\n", "cannot be loaded: SyntaxError"),
    ("CHECK = 1\n", "defines no check(input, expected, got) function"),
])
def test_a_faulty_checker_is_a_harness_error_naming_its_file(tmp_path: Path, text: str, message: str):
    found = folder_with(tmp_path, **{"5": text})
    with pytest.raises(HarnessError) as info:
        found.bind("5", "", "")("")
    assert str(tmp_path / "5.py") in str(info.value) and message in str(info.value)


def test_a_checker_that_overruns_is_stopped_even_if_it_catches_exceptions(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(checkers_module, "CHECKER_TIMEOUT", 0.3)
    found = folder_with(tmp_path, **{"5": "def check(i, e, g):\n    while True:\n        try:\n"
                                          "            sum(range(10**6))\n        except Exception:\n"
                                          "            pass\n"})
    start = time.monotonic()
    with pytest.raises(HarnessError, match="took longer than 0.3 s"):
        found.bind("5", "", "")("")
    assert time.monotonic() - start < 3


def test_the_time_bound_keeps_an_earlier_timer_and_its_handler():
    """pytest-timeout's signal method arms the same timer: a checker call leaves it armed, with its handler."""
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        assert bounded_call(lambda x: x + 1, (1,), 5.0) == 2
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 1.0 < left <= 2.0
        signal.setitimer(signal.ITIMER_REAL, 0.2)  # now the earlier deadline is the other one: its handler runs
        assert bounded_call(lambda: time.sleep(0.5) or "done", (), 5.0) == "done"
        assert len(fired) == 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_the_time_bound_outside_the_main_thread(monkeypatch):
    box = {}

    def call():
        try:
            bounded_call(time.sleep, (5,), 0.2)
        except BaseException as exc:  # noqa: BLE001
            box["error"] = type(exc).__name__
        box["value"] = bounded_call(lambda: 3, (), 1.0)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join(10)
    assert box == {"error": "_Overrun", "value": 3}


def test_the_builtin_checkers_load_and_accept_the_stored_answers(shared_data: Path):
    rows = {str(r["problem_id"]): r for r in map(json.loads, (shared_data / "apps_test_rows.jsonl").open())}
    builtin = Checkers(BUILTIN_FOLDER)
    assert builtin.problem_ids == ["4001", "4003"]
    for pid in builtin.problem_ids:
        io = json.loads(rows[pid]["input_output"])
        for given, expected in zip(io["inputs"], io["outputs"]):
            assert builtin.bind(pid, given, expected)(expected)[0], (pid, given)


def test_the_4001_checker_accepts_the_pair_in_either_order_only():
    check = Checkers(BUILTIN_FOLDER).bind("4001", "10\n10 2 8 1 2 4 1 20 4 5\n", "20 8\n")
    assert check("20 8\n") == (True, "") and check("8 20") == (True, "")
    assert check("20 4") == (False, "the divisors of 20 and 4 are not the input list")
    assert check("20 3") == (False, "20 and 3 are not both in the input list")
    assert check("20") == (False, "1 token; expected two numbers")
    assert check("20 8 4") == (False, "3 tokens; expected two numbers")


def test_the_4003_checker_accepts_other_optimal_answers_only():
    check = Checkers(BUILTIN_FOLDER).bind("4003", "3\n2 2 2\n", "1\nR\n")
    assert check("1\nL\n") == (True, "")
    assert check("2\nLL\n")[0] is False  # not the longest... and not increasing
    check = Checkers(BUILTIN_FOLDER).bind("4003", "5\n1 2 4 3 2\n", "4\nLRRR\n")
    assert check("4\nLRRR") == (True, "")
    assert check("4\nLRRL") == (False, "move 4 writes 2 after 3: not strictly increasing")
    assert check("3\nLRR") == (False, "length 3; the longest is 4")


# --------------------------------------------------------------------------------------------------
# in a run

@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_checker_turns_valid_other_answers_into_passes(pytester: pytest.Pytester, workers: str):
    base = permutation_project(pytester)
    run(pytester, *base, "-n", workers, "--apps-report", "plain.json")
    plain = read_report(pytester, "plain.json")
    assert plain["problems"][0]["verdict"] == "fail"  # "3 2 1" is not the stored "1 2 3"
    result = run(pytester, *base, "-n", workers, "--apps-checkers", "mine", "--apps-report", "checked.json")
    checked = read_report(pytester, "checked.json")
    assert checked["problems"][0]["verdict"] == "pass"
    assert [t["step"] for t in checked["problems"][0]["tests"]] == ["checker"] * 3
    assert checked["summary"]["checker_tests"] == {"tests": 3, "passed": 3, "problems": ["910001"]}
    assert checked["settings"]["checkers"] == "mine"
    result.stdout.fnmatch_lines(["apps: judge seed:*; checkers mine (1: 910001)",
                                 "decided by checkers: 3 tests (3 passed) of problems 910001"])


def test_a_checker_rejection_is_a_wrong_answer_with_its_message(pytester: pytest.Pytester):
    base = permutation_project(pytester)
    (pytester.path / "cands" / "910001.py").write_text("print(1)\n")
    result = run(pytester, *base, "--apps-checkers", "mine", "--apps-judge", "apps")
    report = read_report(pytester)
    assert [t["kind"] for t in report["problems"][0]["tests"]] == ["wrong_answer", "wrong_answer", "pass"]
    assert report["problems"][0]["first_failure_detail"]["reason"] == "checker: not a permutation: '1\\n'"
    result.stdout.fnmatch_lines(["*wrong answer (checker: not a permutation*"])


def test_a_checker_that_raises_is_a_harness_error_not_a_failure(pytester: pytest.Pytester):
    base = permutation_project(pytester, "def check(input, expected, got):\n    return 1 / 0\n")
    result = run(pytester, *base, "--apps-checkers", "mine")
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", outcomes.get("error")) == 3 and "failed" not in outcomes
    result.stdout.fnmatch_lines(["*HarnessError: checker *mine/910001.py raised ZeroDivisionError: division by zero"])
    assert read_report(pytester)["summary"]["harness_errors"] == 3


def test_a_missing_checker_folder_is_a_one_line_usage_error(pytester: pytest.Pytester):
    base = permutation_project(pytester)
    result = run(pytester, *base, "--apps-checkers", "nowhere")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--apps-checkers: */nowhere is not a folder; give a folder of <problem_id>.py "
                                 "checkers, or 'builtin'"])


def test_the_checker_hook_example_of_the_docs_decides_a_permutation_problem(pytester: pytest.Pytester):
    """docs/extending.md's `pytest_apps_checker` example, as a user's conftest.py, on a problem that accepts any
    permutation: the other valid answer passes, by the checker."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "extending.md").read_text()
    example = next(block for block in text.split("```python\n")[1:] if "def pytest_apps_checker" in block)
    (pytester.path / "conftest.py").write_text(example.split("```")[0])
    base = permutation_project(pytester)
    result = run(pytester, *base)
    problem = read_report(pytester)["problems"][0]
    assert problem["verdict"] == "pass" and {t["step"] for t in problem["tests"]} == {"checker"}, \
        result.stdout.str()[-2000:]
