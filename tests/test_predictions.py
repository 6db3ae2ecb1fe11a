"""`--apps-predictions`: the MAS-PromptBench APPS runners' predictions.jsonl records, from the report document."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_apps.report.predictions import FIELDS, prediction_records, write_predictions

from conftest import make_problem

QUESTION = "Read two integers and print their sum. " * 20  # 780 characters


def entry(pid, verdict, passed, total, **extra):
    data = {
        "id": pid, "difficulty": "interview", "format": "stdin", "candidate": f"/c/{pid}.py",
        "verdict": verdict, "reason": "", "tests_passed": passed, "tests_run": total, "tests_total": total,
        "first_failure": "", "first_failure_detail": {}, "program": None, "tests": [],
    }
    data.update(extra)
    return data


def doc(*problems):
    return {"version": 1, "settings": {}, "source": {}, "summary": {}, "skipped_rows": [], "problems": list(problems)}


def test_records_have_the_runners_fields_in_their_order_and_types():
    d = doc(
        entry("4000", "pass", 3, 3, program="print(1)\n", question="  " + QUESTION, starter_code="class S:\n  \n",
              raw="```python\nprint(1)\n```", difficulty="introductory"),
        entry("4001", "fail", 1, 4, program="print(2)\n", question="Q", starter_code=""),
        entry("4002", "no_code", 0, 5, candidate=None, question="Q", raw="I cannot solve this."),
    )
    passed, failed, no_code = prediction_records(d)
    assert tuple(passed) == FIELDS == (
        "id", "problem", "starter_code", "predicted_code", "pass", "total", "pass_rate", "em", "difficulty",
        "raw", "error")
    assert passed == {
        "id": "4000", "problem": QUESTION.strip()[:400], "starter_code": "class S:", "predicted_code": "print(1)\n",
        "pass": 3, "total": 3, "pass_rate": 1.0, "em": 1.0, "difficulty": "introductory",
        "raw": "```python\nprint(1)\n```", "error": None,
    }
    assert len(passed["problem"]) == 400
    assert failed["pass"] == 1 and failed["total"] == 4 and failed["pass_rate"] == 0.25 and failed["em"] == 0.0
    assert isinstance(failed["pass"], int) and isinstance(failed["em"], float)
    # no code: predicted_code None, nothing passed, but the tests are still counted (as the runners do)
    assert no_code["predicted_code"] is None and no_code["pass"] == 0 and no_code["total"] == 5
    assert no_code["pass_rate"] == 0.0 and no_code["em"] == 0.0 and no_code["raw"] == "I cannot solve this."


def test_raw_is_cut_to_2000_characters_and_unscorable_problems_say_why_in_error():
    d = doc(
        entry("1", "fail", 0, 2, program="x", raw="y" * 5000),
        entry("2", "broken", 0, 0, reason="inputs (3) and outputs (2) differ in length"),
        entry("3", "incomplete", 1, 2, reason="1 of 2 tests did not run"),
        entry("4", "fail", 0, 2, program="x", error="APIConnectionError: refused"),
    )
    cut, broken, incomplete, errored = prediction_records(d)
    assert len(cut["raw"]) == 2000
    assert broken["error"] == "broken: inputs (3) and outputs (2) differ in length" and broken["pass_rate"] == 0.0
    assert incomplete["error"] == "incomplete: 1 of 2 tests did not run" and incomplete["em"] == 0.0
    assert errored["error"] == "APIConnectionError: refused"


def test_question_starter_code_and_program_fall_back_to_the_plan_and_its_candidates():
    d = doc(entry("7", "pass", 2, 2))  # today's document: no question, no program for a passing problem
    plan = [make_problem("7", index=0, fmt="call", fn_name="f", n=2, question="Write f.",
                         starter_code="def f(x):\n    ")]
    candidates = {"7": [{"problem_id": "7", "file": "/c/7.py", "code": "def f(x):\n    return x\n",
                         "raw": "text", "sample": 0}]}
    (record,) = prediction_records(d, plan, candidates)
    assert record["problem"] == "Write f." and record["starter_code"] == "def f(x):"
    assert record["predicted_code"] == "def f(x):\n    return x\n" and record["raw"] == "text"
    assert record["em"] == 1.0
    # without them, the scores still follow the verdict (the program ran even if its text is absent)
    (bare,) = prediction_records(d)
    assert bare["predicted_code"] is None and bare["pass"] == 2 and bare["em"] == 1.0


def test_written_as_one_json_line_per_problem_atomically(tmp_path: Path):
    records = prediction_records(doc(entry("1", "pass", 1, 1, program="print('é')"), entry("2", "fail", 0, 1)))
    out = write_predictions(records, tmp_path / "out" / "predictions.jsonl")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == records
    assert "\\u00e9" in lines[0]  # json.dumps defaults, as the runners' writer uses them
    assert [p.name for p in out.parent.iterdir()] == ["predictions.jsonl"]


def test_several_samples_give_the_record_of_the_sample_whose_program_is_kept():
    d = doc(entry("9", "fail", 5, 6, program="bad", first_failure="/c/9.py::s1::test_0", sample_results=[
        {"sample": 0, "verdict": "pass", "tests_passed": 3, "tests_run": 3, "first_failure": ""},
        {"sample": 1, "verdict": "fail", "tests_passed": 2, "tests_run": 3, "first_failure": "/c/9.py::s1::test_0"},
    ]))
    (record,) = prediction_records(d)
    assert (record["predicted_code"], record["pass"], record["total"], record["em"]) == ("bad", 2, 3, 0.0)
