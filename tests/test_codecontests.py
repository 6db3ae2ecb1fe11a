"""CodeContests (`deepmind/code_contests`): the real test-split rows with every test set and their human solutions,
the test sets that count, per-problem limits, the tester's output comparison, the human Python solutions passing
under its judge and the incorrect ones failing, and the dataset by name from the hub's Parquet layout."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import UNUSED_PLUGINS
from fakehub import served

from pytest_apps import Evaluator, load_problems
from pytest_apps.core.outcome import PASS, RUN_EXITED, RUNTIME_ERROR, WRONG_ANSWER, Outcome
from pytest_apps.dataset import codecontests
from pytest_apps.dataset.rows import DatasetError
from pytest_apps.judge import codecontests as cc_judge

CC_SHA = "c" * 40
IDS = ["1575_A", "1575_B", "1575_C", "1575_D", "1575_E"]
WRONG_SAMPLED = 7  # incorrect programs tried per problem (each stops at its first failing test; of 1575_D's
# first seven, one passes 110 tests before it fails)


def cc_rows(shared: Path) -> list[dict]:
    return [json.loads(line) for line in (shared / "code_contests" / "rows.jsonl").read_text().splitlines() if line]


def test_real_rows_load_with_their_limits_tiers_and_the_hidden_tests_by_default(shared_datasets):
    path = str(shared_datasets / "code_contests" / "rows.jsonl")
    problems = load_problems(path, max_tests=0)
    assert [p.id for p in problems] == IDS and problems.source["test_sets"] == "private,generated"
    first = problems[0]
    assert (first.difficulty, first.fmt, first.time_limit, first.memory_limit) == ("codeforces", "stdin", 2.0,
                                                                                  512000000)
    assert first.skills == ("rating 1100",) and "strings" in first.tags
    assert first.n_cases == 0 + 200  # no private test, 200 generated
    public = load_problems(path, max_tests=0, test_sets="public")
    assert [p.n_cases for p in public] == [1, 2, 3, 5, 2] and public.source["test_sets"] == "public"
    every = load_problems(path, max_tests=0, test_sets=["public", "private", "generated"])
    assert every[1].n_cases == 2 + 7 + 200


def test_test_sets_that_do_not_exist_or_do_not_apply_are_one_line(shared_datasets, tmp_path):
    path = str(shared_datasets / "code_contests" / "rows.jsonl")
    with pytest.raises(DatasetError, match=r"^--apps-test-sets=hidden: CodeContests rows hold the test sets public, "
                                           r"private, generated; give one or more"):
        load_problems(path, test_sets="hidden")
    with pytest.raises(DatasetError, match="does not apply: sample holds APPS rows"):
        load_problems("sample", test_sets="public")


def test_a_row_missing_a_field_or_with_uneven_tests_is_skipped_with_its_reason(shared_datasets, tmp_path):
    row = cc_rows(shared_datasets)[0]
    uneven = {**row, "name": "9_Z. Uneven", "generated_tests": {"input": ["1\n"], "output": []}}
    nameless = {k: v for k, v in row.items() if k != "name"}
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (row, uneven, nameless)))
    problems = load_problems(str(path), max_tests=1)
    reasons = {s.problem_id: s.reason for s in problems.skipped}
    assert [p.id for p in problems] == ["1575_A"]
    assert reasons["9_Z"] == "generated_tests has 1 input and 0 outputs"
    assert reasons["2"].startswith(f"{path} line 3: a CodeContests row without name (it holds cf_contest_id")


def exited(stdout: str, code: int = 0) -> Outcome:
    return Outcome(RUN_EXITED, exit_code=code, stdout=stdout)


def test_the_testers_comparison_tokens_case_and_a_small_absolute_tolerance():
    assert cc_judge.judge("stdin", "YES\n1 2\n", exited("yes 1\t2")).step == "tokens"
    assert cc_judge.judge("stdin", "0.5\n", exited("0.500009\n")).step == "numbers"
    assert cc_judge.judge("stdin", "0.5\n", exited("0.50002\n")).kind == WRONG_ANSWER
    assert cc_judge.judge("stdin", "1000000\n", exited("1e6\n")).kind == PASS  # both read as doubles
    assert cc_judge.judge("stdin", "nan\n", exited("nan\n")).kind == PASS  # equal tokens, before numbers
    assert cc_judge.judge("stdin", "nan 1\n", exited("nan 2\n")).kind == WRONG_ANSWER
    assert cc_judge.judge("stdin", "1 2\n", exited("1 2 3\n")).kind == WRONG_ANSWER
    assert cc_judge.judge("stdin", "1\n", exited("1\n", code=1)).kind == RUNTIME_ERROR


def test_human_python_solutions_pass_under_its_judge_and_incorrect_ones_fail(shared_datasets):
    """The Python 3 solutions of the problems that have some (1575_A and 1575_D: the others hold C++ and Java only)
    pass the first 30 hidden tests under its judge (the private ones and the first generated ones: every test,
    some 470 a program, took two minutes of the suite for the same finding), or fail only by time: the comparison
    accepts every accepted program's output, and a few of 1575_D's need more than 4 s of CPython on a test whose
    row allows 2 s (Codeforces timed them on its own machines, PyPy among its Pythons). The Python 3 programs the
    dataset labels incorrect each fail a test (of all of them: some pass the first 30)."""
    rows = cc_rows(shared_datasets)
    path = str(shared_datasets / "code_contests" / "rows.jsonl")
    first, every = load_problems(path, max_tests=30), load_problems(path, max_tests=0)
    with_python = [(p, q, r) for p, q, r in zip(first, every, rows) if json.loads(codecontests.solutions(r))]
    assert [p.id for p, _, _ in with_python] == ["1575_A", "1575_D"]
    with Evaluator(workers=2, judge="codecontests", fail_fast=True) as ev:
        for problem, whole, row in with_python:
            right = json.loads(codecontests.solutions(row))
            results = ev.score_many([(problem, program) for program in right])
            failing = [r.reason for r in results if not r.passed]
            assert all(": timeout (" in reason for reason in failing), (problem.id, failing)
            assert len(failing) < len(results) / 2, (problem.id, failing)
            wrong = codecontests.wrong_solutions(row)[:WRONG_SAMPLED]
            assert wrong and not any(r.passed for r in ev.score_many([(whole, p) for p in wrong])), problem.id


def test_the_plugin_runs_deepmind_code_contests_by_name_from_the_hub(shared_datasets, tmp_path, pytester,
                                                                    monkeypatch):
    """`--apps-dataset=deepmind/code_contests` on the hub's Parquet layout, the references as candidates, with
    xdist: the report names the test sets and each problem's limits."""
    buffer = io.BytesIO()
    rows = cc_rows(shared_datasets)
    pq.write_table(pa.Table.from_pylist([rows[0], rows[3]]), buffer)  # the two with Python 3 solutions
    files = {"README.md": b"---\n---\n", "data/test-00000-of-00001.parquet": buffer.getvalue()}
    with served(monkeypatch, tmp_path / "hf", "deepmind/code_contests", CC_SHA, files):
        result = pytester.runpytest_subprocess(*UNUSED_PLUGINS, "--apps-dataset=deepmind/code_contests",
                                               "--apps-candidates=reference", "--apps-samples=1",
                                               "--apps-max-tests=5", "--apps-judge=codecontests",
                                               "--apps-limits=row", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["apps: dataset deepmind/code_contests split test test sets private,generated "
                                 "revision cccc*"])
    report = json.loads((pytester.path / "reports" / "apps-report.json").read_text())
    assert report["source"]["test_sets"] == "private,generated" and report["source"]["resolved_revision"] == CC_SHA
    assert [p["id"] for p in report["problems"]] == ["1575_A", "1575_D"]
    assert report["problems"][0]["limits"]["mode"] == "row" and report["problems"][0]["limits"]["time"] == 2.0
