"""The roll-up from per-case records to per-problem verdicts and run figures (pure)."""

from conftest import make_problem

from pytest_apps.dataset.problems import SkippedRow
from pytest_apps.core.record import CaseRecord
from pytest_apps.report.rollup import summarize
from pytest_apps.report.terminal import row_lines


def problem(pid, tier="interview", n=3, broken=""):
    return make_problem(pid, tier, n=0 if broken else n, total=n, broken=broken)


def records(pid, kinds):
    return [CaseRecord(problem=pid, case=i, kind=k, nodeid=f"s/{pid}.py::test_{i}") for i, k in enumerate(kinds)]


def test_strict_accuracy_over_all_selected_and_over_problems_with_code():
    problems = [problem("0", "introductory"), problem("1"), problem("2", "competition"), problem("3")]
    cands = {"0": "s/0.py", "1": "s/1.py", "2": "s/2.py", "3": None}
    recs = records("0", ["pass"] * 3) + records("1", ["pass", "wrong_answer", "pass"]) + records(
        "2", ["pass", "pass", "pass"]
    )
    s = summarize(problems, cands, [], recs)
    f = s.figures
    assert [p.verdict for p in s.problems] == ["pass", "fail", "pass", "no_code"]
    assert f["strict_accuracy"] == 0.5 and f["problems"] == 4
    assert f["strict_accuracy_with_code"] == round(2 / 3, 6) and f["problems_with_code"] == 3
    assert f["per_tier"]["introductory"] == {"problems": 1, "passed": 1, "strict_accuracy": 1.0}
    assert f["per_tier"]["interview"] == {"problems": 2, "passed": 0, "strict_accuracy": 0.0}
    assert f["per_tier"]["competition"]["strict_accuracy"] == 1.0
    # test-case average: (1 + 2/3 + 1 + 0) / 4
    assert f["test_case_average"] == round((1 + 2 / 3 + 1 + 0) / 4, 6)
    assert f["outcomes"]["pass"] == 8 and f["outcomes"]["wrong_answer"] == 1 and f["outcomes"]["no_code"] == 3
    assert s.problems[1].first_failure == "s/1.py::test_1"
    assert s.problems[1].reason.startswith("test 1: wrong_answer")


def test_a_problem_whose_cases_did_not_all_run_is_incomplete_never_passed():
    s = summarize([problem("0")], {"0": "s/0.py"}, [], records("0", ["pass", "pass"]))
    assert s.problems[0].verdict == "incomplete"
    assert s.figures["strict_accuracy"] == 0.0
    assert s.figures["incomplete_problems"] == ["0"] and s.figures["test_case_average_partial"]


def test_a_failure_decides_even_when_incomplete():
    s = summarize([problem("0")], {"0": "s/0.py"}, [], records("0", ["timeout"]))
    assert s.problems[0].verdict == "fail"


def test_no_records_at_all_is_incomplete_and_denominator_stays():
    s = summarize([problem("0"), problem("1")], {"0": "s/0.py", "1": "s/1.py"}, [], records("0", ["pass"] * 3))
    assert s.figures["problems"] == 2 and s.figures["strict_accuracy"] == 0.5
    assert s.problems[1].verdict == "incomplete"


def test_broken_problem_scores_zero_with_its_reason():
    s = summarize([problem("0", broken="inputs (3) and outputs (2) differ in length")], {"0": "s/0.py"}, [], [])
    assert s.problems[0].verdict == "broken" and "differ in length" in s.problems[0].reason
    assert s.figures["strict_accuracy"] == 0.0 and s.figures["problems_with_code"] == 0


def test_harness_errors_alone_leave_a_problem_unscored_not_failed():
    recs = records("0", ["pass", "harness_error", "pass"])
    s = summarize([problem("0")], {"0": "s/0.py"}, [], recs)
    assert s.problems[0].verdict == "unscored" and s.figures["harness_errors"] == 1 and s.figures["unscored"] == 1


def test_skipped_rows_are_counted_with_reasons():
    skipped = [SkippedRow(3, "3", "empty question"), SkippedRow(4, "4", "input_output is not JSON (x)")]
    s = summarize([], {}, skipped, [])
    assert s.figures["skipped_rows"] == 2
    assert s.figures["skipped_reasons"] == {"empty question": 1, "input_output is not JSON": 1}
    assert s.figures["strict_accuracy"] is None
    assert s.to_dict()["skipped_rows"][0] == {"index": 3, "problem_id": "3", "reason": "empty question"}


def test_roll_up_is_independent_of_record_order():
    recs = records("0", ["pass", "wrong_answer", "pass"]) + records("1", ["pass"] * 3)
    a = summarize([problem("0"), problem("1")], {"0": "a", "1": "b"}, [], recs)
    b = summarize([problem("0"), problem("1")], {"0": "a", "1": "b"}, [], list(reversed(recs)))
    assert a.to_dict() == b.to_dict()


def test_case_record_travels_as_json_unchanged():
    record = CaseRecord(problem="7", case=3, kind="wrong_answer", sample=2, step="call", reason="line 1",
                        time=0.25, memory=1 << 20, nodeid="s/7.py::sample_2::test_3",
                        detail={"input": "1 2", "expected": "3", "got": "4", "first_diff": "line 1"})
    text = record.to_json()
    assert isinstance(text, str)
    assert CaseRecord.from_json(text) == record
    assert CaseRecord.from_json(CaseRecord(problem="1", case=0, kind="pass").to_json()).detail == {}


def test_each_unusable_row_has_a_line_naming_where_it_is_and_what_to_do():
    skipped = [SkippedRow(4, "4", "rows.jsonl line 5: not JSON (Expecting value)"),
               SkippedRow(6, "6", "empty question"), SkippedRow(7, "6", "duplicate problem_id (first one kept)")]
    lines = row_lines([problem("1"), problem("2", broken="inputs (3) and outputs (2) differ in length")], skipped,
                      "rows.jsonl")
    assert lines == [
        "skipped rows.jsonl line 5: not JSON (Expecting value); fix or remove that line (the rest of the file was read)",
        "skipped row 6 (problem 6) of rows.jsonl: empty question; fix that row (it is left out and counted)",
        "skipped row 7 (problem 6) of rows.jsonl: duplicate problem_id (first one kept); give each row its own "
        "problem_id (it is left out and counted)",
        "problem 2 (row 2 of rows.jsonl) scores 0 and runs nothing: inputs (3) and outputs (2) differ in length; "
        "give its input_output as many outputs as inputs",
    ]
    many = row_lines([], [SkippedRow(i, str(i), "empty question") for i in range(25)], "d", most=10)
    assert len(many) == 11 and many[-1].startswith("and 15 more skipped rows")
