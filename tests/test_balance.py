"""Work stealing end to end: a slow candidate's cases split across real xdist workers, with the same reports
as a serial run (real subprocesses, real workers, the real executor)."""

from __future__ import annotations

import json

import pytest

from conftest import read_report, run, verdict_outline

HEAVY_CASES = 14
# Problem 1's candidate takes 0.2 s a case (well under the 4 s limit) and is wrong on its last case, in
# dataset order and in fail-fast's cheapest-first order alike; the light candidates are quick.
HEAVY = "import time\ntime.sleep(0.2)\nk = int(input())\nprint(k if k < {last} else -1)\n".format(
    last=HEAVY_CASES - 1)
LIGHT = {
    "2": "print(int(input()))\n",
    "3": "print(int(input()) + 1)\n",  # wrong answer
    "4": "print(int(input()))\n",
    "5": "import sys\nsys.exit(3)\n",  # runtime error
    "6": "print(int(input()))\n",
    "7": "print(int(input()))\n",
}


@pytest.fixture
def heavy_project(pytester: pytest.Pytester) -> pytest.Pytester:
    rows = []
    for pid, cases in [("1", HEAVY_CASES), *((p, 4) for p in LIGHT)]:
        io = {"inputs": [f"{k}\n" for k in range(cases)], "outputs": [f"{k}\n" for k in range(cases)]}
        rows.append({"problem_id": int(pid), "question": f"Echo the number ({pid}).", "solutions": "",
                     "input_output": json.dumps(io), "difficulty": "interview", "url": "", "starter_code": ""})
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    folder = pytester.path / "solutions"
    folder.mkdir()
    (folder / "1.py").write_text(HEAVY)
    for pid, code in LIGHT.items():
        (folder / f"{pid}.py").write_text(code)
    return pytester


def workers_of(result: pytest.RunResult) -> dict[str, set[str]]:
    """Node id -> the workers that reported it, from `-v` lines such as `[gw1] [ 40%] PASSED <node id>`."""
    out: dict[str, set[str]] = {}
    for line in result.stdout.lines:
        if line.startswith("[gw") and ("PASSED" in line or "FAILED" in line or "SKIPPED" in line):
            out.setdefault(line.split()[-1], set()).add(line.split("]")[0][1:])
    return out


def heavy_workers(result: pytest.RunResult) -> set[str]:
    return set().union(*(w for nodeid, w in workers_of(result).items() if nodeid.startswith("solutions/1.py::")))


def test_a_slow_candidate_is_split_across_workers_with_the_serial_report(heavy_project: pytest.Pytester) -> None:
    base = ("--apps-dataset", "rows.jsonl")
    serial = run(heavy_project, *base, "-n", "0", "--apps-report", "reports/serial.json")
    split = run(heavy_project, *base, "-n", "2", "-v", "--apps-report", "reports/split.json")
    whole = run(heavy_project, *base, "-n", "2", "-v", "--apps-work-stealing", "off",
                "--apps-report", "reports/whole.json")
    assert serial.ret == split.ret == whole.ret == 1
    assert heavy_workers(split) == {"gw0", "gw1"}  # the slow candidate's cases ran on both workers
    assert len(heavy_workers(whole)) == 1  # without stealing, on one
    assert all(len(w) == 1 for w in workers_of(split).values())  # every case ran once
    reports = [verdict_outline(read_report(heavy_project, f"reports/{name}.json")) for name in ("serial", "split", "whole")]
    assert reports[0] == reports[1] == reports[2]
    problems = {p["id"]: p for p in reports[0]["problems"]}
    assert problems["1"]["verdict"] == "fail" and problems["1"]["tests_passed"] == HEAVY_CASES - 1
    assert problems["1"]["kinds"][-1] == "wrong_answer"
    split.stdout.fnmatch_lines([f"*FAILED solutions/1.py::test_{HEAVY_CASES - 1}*"])


def test_fail_fast_verdicts_are_the_serial_ones_when_a_candidate_is_split(heavy_project: pytest.Pytester) -> None:
    base = ("--apps-dataset", "rows.jsonl", "--apps-fail-fast")
    serial = run(heavy_project, *base, "-n", "0", "--apps-report", "reports/serial.json")
    split = run(heavy_project, *base, "-n", "2", "-v", "--apps-report", "reports/split.json")
    assert serial.ret == split.ret == 1
    assert heavy_workers(split) == {"gw0", "gw1"}
    a, b = read_report(heavy_project, "reports/serial.json"), read_report(heavy_project, "reports/split.json")
    assert [(p["id"], p["verdict"]) for p in a["problems"]] == [(p["id"], p["verdict"]) for p in b["problems"]]
    for key in ("strict_accuracy", "strict_accuracy_with_code", "problem_verdicts", "per_tier", "pass_at_k"):
        assert a["summary"].get(key) == b["summary"].get(key), key
    # a failed light candidate is never split: it ran one case and skipped the rest, as in the serial run
    for pid in ("3", "5"):
        assert [p["tests_run"] for p in b["problems"] if p["id"] == pid] == [1]


def test_node_ids_k_and_lf_with_stealing(heavy_project: pytest.Pytester) -> None:
    base = ("--apps-dataset", "rows.jsonl", "-n", "2")
    only = run(heavy_project, *base, "-k", "1.py", "-v")  # one candidate, two workers: split from the start
    only.assert_outcomes(passed=HEAVY_CASES - 1, failed=1)  # (xdist does not count deselected items)
    assert heavy_workers(only) == {"gw0", "gw1"}
    again = run(heavy_project, *base, "--lf", "-v")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines([f"*FAILED solutions/1.py::test_{HEAVY_CASES - 1}*"])
    one = run(heavy_project, *base, "solutions/1.py::test_3", "-v")
    one.assert_outcomes(passed=1)
    rerun = read_report(heavy_project)["run"]  # merged into the earlier runs' records: only test 3 ran again
    assert rerun["executed"] == 1 and rerun["rerun"] == ["solutions/1.py::test_3"]
