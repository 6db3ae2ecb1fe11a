"""Candidate sources end to end: pytest runs (real subprocesses) on generations files, samples, the
dataset's reference solutions and the real model output in the shared APPS data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import read_report, run

import pytest_apps

SAMPLE = Path(pytest_apps.__file__).parent / "data" / "sample.jsonl"
F = "```"


def solution(pid: str) -> str:
    for line in SAMPLE.read_text().splitlines():
        row = json.loads(line)
        if str(row["problem_id"]) == pid:
            return json.loads(row["solutions"])[0]
    raise KeyError(pid)


def write_gens(path: Path) -> None:
    rows = [
        {"problem_id": 900001, "code": [solution("900001"), "print(0)", f"Answer:\n{F}python\n{solution('900001')}{F}"]},
        {"problem_id": 900003, "raw": f"<think>{F}python\nprint(1)\n{F}</think>\n{F}python\n{solution('900003')}{F}"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_generations_file_with_samples(pytester: pytest.Pytester):
    write_gens(pytester.path / "gens.jsonl")
    args = ("--apps-dataset", "sample", "--apps-only", "900001,900003", "--apps-candidates", "gens.jsonl",
            "-p", "no:cacheprovider")
    result = run(pytester, *args, "-v")
    result.stdout.fnmatch_lines([
        "gens.jsonl::900001::sample_0::test_0 PASSED*",
        "gens.jsonl::900001::sample_1::test_0 FAILED*",
        "gens.jsonl::900003::test_0 PASSED*",
        "*samples per problem: 1 to 3; pass@1 83.33%*",
    ])
    # with samples the headline says it estimates pass@1, and from what; the failure names the sample
    result.stdout.fnmatch_lines(["strict accuracy: 83.33% (pass@1 estimate: 3 of 4 samples passing, 2 problems), "
                                 "95% CI *"])
    result.stdout.fnmatch_lines(["APPS problem 900001 sample_1 test 0: wrong answer*"])
    report = read_report(pytester)
    assert "strict accuracy: " + report["summary"]["figure_texts"]["strict_accuracy"] in result.stdout.lines
    assert report["summary"]["pass_at_k"] == {"pass@1": round((2 / 3 + 1) / 2, 6)}
    assert report["summary"]["strict_accuracy"] == round((2 / 3 + 1) / 2, 6)
    p1, p3 = report["problems"]
    assert (p1["verdict"], p1["samples"], p1["samples_passed"]) == ("fail", 3, 2)
    assert [s["verdict"] for s in p1["sample_results"]] == ["pass", "fail", "pass"]
    assert p1["first_failure"] == "gens.jsonl::900001::sample_1::test_0" and p1["program"] == "print(0)"
    assert p3["verdict"] == "pass" and p3["samples"] == 1

    # the same figures with two xdist workers
    run(pytester, *args, "-n", "2")
    assert read_report(pytester)["summary"]["pass_at_k"] == report["summary"]["pass_at_k"]

    # one failing sample's case alone, by its node id
    alone = run(pytester, "gens.jsonl::900001::sample_1::test_2", *args)
    alone.assert_outcomes(failed=1)


def test_most_common_selection_runs_one_program(pytester: pytest.Pytester):
    good = solution("900001")
    rows = [{"problem_id": 900001, "code": ["print(0)", good, "print(0)  ", good.replace("\n", "\n\n"), good]}]
    (pytester.path / "g.jsonl").write_text(json.dumps(rows[0]) + "\n")
    result = run(pytester, "--apps-dataset", "sample", "--apps-only", "900001", "--apps-candidates", "g.jsonl",
                 "--apps-select", "most-common", "-v", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["g.jsonl::900001::sample_1::test_0 PASSED*"])
    assert read_report(pytester)["summary"]["strict_accuracy"] == 1.0


def test_reference_solutions_check_dataset_and_harness(pytester: pytest.Pytester):
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()][:3]
    rows[1]["solutions"] = json.dumps(["print('wrong')", json.loads(rows[1]["solutions"])[0]])
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run(pytester, "--apps-dataset", "rows.jsonl", "--apps-candidates", "reference", "-v",
                 "-p", "no:cacheprovider")
    bad = rows[1]["problem_id"]
    result.stdout.fnmatch_lines([
        f"apps-generations/reference/{bad}/solution_0.py::test_0 FAILED*",
        f"apps-generations/reference/{bad}/solution_1.py::test_0 PASSED*",
        f"*reference solutions failing (a broken problem or a harness bug): {bad}*",
    ])
    verdicts = {p["id"]: p["verdict"] for p in read_report(pytester)["problems"]}
    assert verdicts == {str(rows[0]["problem_id"]): "pass", str(bad): "fail", str(rows[2]["problem_id"]): "pass"}


def test_bad_generations_file_is_a_usage_error(pytester: pytest.Pytester):
    (pytester.path / "g.jsonl").write_text('{"problem_id": 900001, "answer": "x"}\n')
    result = run(pytester, "--apps-dataset", "sample", "--apps-candidates", "g.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*g.jsonl:1: no program for problem 900001; looked for code, completion*"])


def test_real_model_output_with_pass_at_k(pytester: pytest.Pytester, shared_data: Path):
    """The shared folder's LLM programs (12 samples on these problems) evaluate with pass@1, 5, 10."""
    result = run(pytester, "--apps-dataset", str(shared_data / "apps_test_rows.jsonl"),
                 "--apps-candidates", str(shared_data / "candidates.jsonl"), "--apps-only", "747,3177,4559",
                 "--apps-max-tests", "2", "-p", "no:cacheprovider",
                 # option values that are paths would make pytest pick the shared folder as rootdir
                 # (and write reports there): pin it to the test's own folder
                 "--rootdir", str(pytester.path))
    result.stdout.fnmatch_lines(["*samples per problem: 12; pass@1 *, pass@5 *, pass@10 *"])
    figures = read_report(pytester)["summary"]
    assert set(figures["pass_at_k"]) == {"pass@1", "pass@5", "pass@10"}
    assert figures["samples"] == {"min": 12, "max": 12, "total": 36}
    assert figures["pass_at_k"]["pass@1"] <= figures["pass_at_k"]["pass@5"] <= figures["pass_at_k"]["pass@10"]
    assert figures["pass_at_k"]["pass@1"] == figures["strict_accuracy"]
    problems = {p["id"]: p for p in read_report(pytester)["problems"]}
    assert problems["3177"]["samples_passed"] == 12


def test_options_that_do_nothing_and_ids_of_no_problem_are_each_said_in_one_line(pytester: pytest.Pytester):
    """The agent's options without an agent, --apps-samples on a generations file (every sample it holds is
    scored), --apps-split on a single file, and records naming no problem of the data (an id the data does not
    hold, a non-numeric one): one line each, naming it and what to do."""
    write_gens(pytester.path / "gens.jsonl")
    with open(pytester.path / "gens.jsonl", "a") as fh:
        fh.write(json.dumps({"problem_id": "two", "code": "print(2)"}) + "\n")
        fh.write(json.dumps({"problem_id": 7, "code": "print(7)"}) + "\n")
    result = run(pytester, "--apps-dataset=sample", "--apps-split=train", "--apps-candidates=gens.jsonl", "-q",
                 "--apps-samples=1", "--apps-model=m1", "--apps-temperature=0.2", "--apps-regenerate")
    result.stdout.fnmatch_lines_random([
        "--apps-split=train does not apply: sample is one file*; drop --apps-split*",
        "--apps-model does not apply: there is no agent (--apps-agent) to generate programs; drop it, or give "
        "--apps-agent=MODULE:CALLABLE",
        "--apps-temperature does not apply: there is no agent*",
        "--apps-regenerate does not apply: there is no agent*",
        "--apps-samples=1 does not apply: gens.jsonl gives every sample it holds and all of them are scored; drop "
        "it*",
        "gens.jsonl: 2 records name no problem of the data ('two', '7') and are not scored; check their problem "
        "ids against the dataset's",
    ])
    assert read_report(pytester)["problems"][0]["samples"] == 3  # all three samples scored, as the line says
    # with a selection, only an id that cannot be the data's (not a number, where its ids are) is said
    narrow = run(pytester, "--apps-dataset=sample", "--apps-only=900001", "--apps-candidates=gens.jsonl", "-q")
    narrow.stdout.fnmatch_lines(["gens.jsonl: 1 record names no problem of the data ('two') and is not scored*"])
    assert "does not apply" not in narrow.stdout.str()
