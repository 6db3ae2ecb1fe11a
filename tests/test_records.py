"""The controller keeps a failure's detail only for the first failing case of each problem and sample:
the report is the same as from every record, whatever order the workers report in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conftest import make_problem

from pytest_apps.dataset.problems import Problem
from pytest_apps.report.received import CaseRecords
from pytest_apps.core.record import CaseRecord
from pytest_apps.report.rollup import summarize


def record(pid: str, case: int, kind: str, sample: int = 0) -> CaseRecord:
    detail = {} if kind == "pass" else {"input": f"in {pid}/{sample}/{case}", "got": "x", "expected": "y"}
    return CaseRecord(problem=pid, case=case, kind=kind, sample=sample, nodeid=f"s/{pid}_{sample}.py::test_{case}",
                      detail=detail)


def problem(pid: str, n: int) -> Problem:
    return make_problem(pid, n=n)


KINDS = st.sampled_from(["pass", "pass", "wrong_answer", "runtime_error", "timeout"])


@given(st.lists(st.lists(KINDS, min_size=1, max_size=8), min_size=1, max_size=4), st.randoms())
def test_the_report_is_the_same_as_from_every_record(kinds_per_problem, rnd):
    problems = [problem(str(i), len(kinds)) for i, kinds in enumerate(kinds_per_problem)]
    every = [record(p.id, case, kind) for p, kinds in zip(problems, kinds_per_problem) for case, kind in enumerate(kinds)]
    arrived = every[:]
    rnd.shuffle(arrived)
    lean = CaseRecords()
    for r in arrived:
        lean.add(r)
    candidates = {p.id: f"s/{p.id}_0.py" for p in problems}
    full = summarize(problems, candidates, [], every).to_dict()
    assert summarize(problems, candidates, [], lean).to_dict() == full
    assert len(lean) == len(every)
    # at most one detail per problem: the first failure's
    held = [r for r in lean if r.detail]
    assert len(held) == sum(any(k != "pass" for k in kinds) for kinds in kinds_per_problem)


def test_each_sample_keeps_its_own_first_failure():
    lean = CaseRecords()
    for r in [record("1", 3, "wrong_answer", 0), record("1", 2, "timeout", 1), record("1", 1, "wrong_answer", 0),
              record("1", 0, "pass", 1), record("1", 4, "wrong_answer", 1)]:
        lean.add(r)
    held = sorted((r.sample, r.case) for r in lean if r.detail)
    assert held == [(0, 1), (1, 2)]
    assert lean.get("s/1_0.py::test_3").detail == {} and lean.get("s/1_0.py::test_3").kind == "wrong_answer"
    assert "s/1_1.py::test_4" in lean and "s/1_1.py::test_9" not in lean


def test_a_case_reported_again_replaces_its_record():
    lean = CaseRecords()
    lean.add(record("1", 0, "wrong_answer"))
    lean.add(record("1", 2, "wrong_answer"))
    lean.add(record("1", 0, "timeout"))  # e.g. a rerun plugin
    assert len(lean) == 2
    assert lean.get("s/1_0.py::test_0").kind == "timeout" and lean.get("s/1_0.py::test_0").detail
    assert lean.get("s/1_0.py::test_2").detail == {}


def test_a_records_dict_for_the_store_is_its_fields_without_a_deep_copy():
    """The record store writes a dict of every record this run produces: made without copying the record's
    nested dicts (a deep copy per case showed in the controller's profile), with the same fields."""
    from dataclasses import asdict

    from pytest_apps.core.record import CaseRecord

    rec = CaseRecord("7", 2, "wrong_answer", detail={"input": "1\n", "got": "2"}, audit={"digest": "ab"})
    fields = rec.to_dict()
    plain = asdict(rec)
    speed = plain.pop("speed")  # (as its flat fields: see the next test)
    assert fields == {**plain, **{f"speed_{k}": v for k, v in speed.items()}} and CaseRecord.from_dict(fields) == rec
    assert fields["detail"] is rec.detail and fields["audit"] is rec.audit


def test_the_speed_credit_travels_as_one_value_and_as_four_flat_fields_in_plain_data():
    """An outcome's speed credit goes into its case record as one value; the plain forms (the server's answer, a
    record's dict in the store, its JSON from a worker) keep the four flat fields they always had, so a record
    crosses and is stored as before."""
    import json

    from pytest_apps.candidates.sources import Candidate
    from pytest_apps.core.outcome import NOT_MEASURED, RUN_EXITED, Outcome, SpeedCredit, Verdict
    from pytest_apps.engine.result import CaseResult
    from pytest_apps.engine.run import case_record

    credit = SpeedCredit(1.4, 1.2, 1.6, 1.45)
    outcome = Outcome(RUN_EXITED, exit_code=0, own_time=0.5, speed=credit)
    assert Outcome.from_dict(outcome.to_dict()) == outcome
    assert {k: outcome.to_dict()[k] for k in ("speed_factor", "speed_low", "speed_high", "speed_mean")} == \
        {"speed_factor": 1.4, "speed_low": 1.2, "speed_high": 1.6, "speed_mean": 1.45}
    rec = case_record(make_problem("7"), Candidate("7", "7.py", "print(1)"), 0,
                      CaseResult(Verdict("pass"), outcome, "", "1\n"))
    assert rec.speed is credit  # the one value, not copied field by field
    wire = json.loads(rec.to_json())
    assert (wire["speed_factor"], wire["speed_low"], wire["speed_high"], wire["speed_mean"]) == (1.4, 1.2, 1.6, 1.45)
    assert "speed" not in wire and CaseRecord.from_json(rec.to_json()) == rec
    unmeasured = case_record(make_problem("7"), Candidate("7", "7.py", "print(1)"), 0,
                             CaseResult(Verdict("pass"), None, "", "1\n"))
    assert unmeasured.speed == NOT_MEASURED and not unmeasured.speed.measured
    # the server's answer, where it measured nothing, holds None for the range
    assert SpeedCredit.from_dict({"speed_factor": 1.0, "speed_low": None}) == NOT_MEASURED


def test_a_judge_keys_json_is_made_once_for_all_the_cases_sharing_it():
    import json
    from dataclasses import asdict

    from pytest_apps.engine.records import JudgeKey

    key = JudgeKey("seed", False, {"timeout": 4.0, "memory": 2**32})
    assert key.text() is key.text()  # made once
    assert json.loads(key.text()) == asdict(key) and key.text() == json.dumps(asdict(key), sort_keys=True)
