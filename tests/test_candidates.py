"""Candidate sources: every shape of issue 4 loads; bad input fails in one line naming file, line, fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_problem

from pytest_apps.candidates.sources import (
    Candidate, CandidateError, load_candidates, most_common, parse_solutions, reference_folder,
)
from pytest_apps.dataset.problems import Problem

F = "```"


def problems(*ids: str) -> list[Problem]:
    return [make_problem(pid, index=i) for i, pid in enumerate(ids)]


def jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# -- folders ------------------------------------------------------------------------------------------


def test_folder_single_programs_model_text_and_sample_folders(tmp_path: Path):
    (tmp_path / "1.py").write_text("print(1)")
    (tmp_path / "2.md").write_text(f"Sure!\n{F}python\nprint(2)\n{F}\n")
    (tmp_path / "3.txt").write_text("I cannot solve this.")
    (tmp_path / "4").mkdir()
    for name in ("s10.py", "s2.py", "s1.md", "notes.json"):
        (tmp_path / "4" / name).write_text(f"{F}python\nprint('{name}')\n{F}" if name.endswith(".md") else f"print('{name}')")
    found = load_candidates(tmp_path, ["1", "2", "3", "4", "5"])
    assert set(found) == {"1", "2", "3", "4"}
    assert found["1"] == [Candidate("1", str(tmp_path / "1.py"), "print(1)")]
    assert found["2"][0].code == "print(2)" and "Sure!" in found["2"][0].raw
    assert found["3"][0].code is None and found["3"][0].raw == "I cannot solve this."
    assert [Path(c.file).name for c in found["4"]] == ["s1.md", "s2.py", "s10.py"]  # natural order
    assert [c.sample for c in found["4"]] == [0, 1, 2]
    assert found["4"][0].code == "print('s1.md')"
    assert all(not c.label and not c.shared for c in found["4"])  # each file names its own sample


def test_missing_path_is_a_one_line_error(tmp_path: Path):
    with pytest.raises(CandidateError, match="does not exist"):
        load_candidates(tmp_path / "nope", ["1"])
    (tmp_path / "x.csv").write_text("a,b")
    with pytest.raises(CandidateError, match="neither a folder nor a .jsonl/.json file"):
        load_candidates(tmp_path / "x.csv", ["1"])


# -- JSONL ---------------------------------------------------------------------------------------------


def test_jsonl_id_and_program_field_names(tmp_path: Path):
    rows = [
        {"problem_id": 1, "code": "print(1)"},
        {"id": "2", "completion": "print(2)"},
        {"task_id": "APPS/3", "solution": "print(3)"},
        {"problem_id": 4, "response": f"text\n{F}py\nprint(4)\n{F}"},
        {"problem_id": 5, "raw": "no code, sorry"},
        {"problem_id": 99, "code": "print(99)"},  # not selected: ignored
    ]
    found = load_candidates(jsonl(tmp_path / "g.jsonl", rows), ["1", "2", "3", "4", "5"])
    assert {pid: c[0].code for pid, c in found.items()} == {
        "1": "print(1)", "2": "print(2)", "3": "print(3)", "4": "print(4)", "5": None}
    assert found["4"][0].raw.startswith("text") and found["1"][0].raw is None
    assert all(c[0].shared and c[0].label == "" and c[0].origin == "jsonl" for c in found.values())


def test_jsonl_samples_from_lists_and_repeated_lines(tmp_path: Path):
    rows = [
        {"problem_id": 7, "code": ["print('a')", "print('b')"]},
        {"problem_id": 7, "code": "print('c')"},
        {"problem_id": 8, "code": "print(8)"},
    ]
    found = load_candidates(jsonl(tmp_path / "g.jsonl", rows), ["7", "8"])
    assert [(c.sample, c.label, c.code) for c in found["7"]] == [
        (0, "sample_0", "print('a')"), (1, "sample_1", "print('b')"), (2, "sample_2", "print('c')")]
    assert found["8"][0].label == ""


def test_code_field_holding_model_text_is_extracted(tmp_path: Path):
    text = f"Here you go:\n{F}python\nprint(1)\n{F}\nHope it helps"
    found = load_candidates(jsonl(tmp_path / "g.jsonl", [{"problem_id": 1, "code": text}]), ["1"])
    assert found["1"][0].code == "print(1)" and found["1"][0].raw == text


def test_mas_promptbench_predictions(tmp_path: Path):
    raw = f"<think>hmm</think>\n{F}python\nprint(int(input())*2)\n{F}"
    rows = [{"id": "15", "predicted_code": "print(int(input())*2)", "raw": raw, "passed": False}]
    found = load_candidates(jsonl(tmp_path / "predictions.jsonl", rows), ["15"])
    assert found["15"][0].code == "print(int(input())*2)" and found["15"][0].raw == raw


@pytest.mark.parametrize("line,message", [
    ({"code": "print(1)"}, r"g\.jsonl:2: no problem id; looked for problem_id, id, task_id \(found code\)"),
    ({"problem_id": 3, "answer": "x"}, r"g\.jsonl:2: no program for problem 3; looked for code, completion, "
                                       r"solution, predicted_code, raw, response \(found problem_id, answer\)"),
    ({"problem_id": 3, "code": 5}, r"g\.jsonl:2: field 'code' holds a int"),
    ([1, 2], r"g\.jsonl:2: a list, not an object"),
])
def test_unknown_shapes_fail_naming_file_line_and_fields(tmp_path: Path, line, message):
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"problem_id": 1, "code": "x"}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(CandidateError, match=message) as info:
        load_candidates(path, ["1", "3"])
    assert "\n" not in str(info.value)


def test_not_json_line(tmp_path: Path):
    path = tmp_path / "g.jsonl"
    path.write_text("{oops\n")
    with pytest.raises(CandidateError, match=r"g\.jsonl:1: not a JSON line"):
        load_candidates(path, ["1"])


# -- JSON ----------------------------------------------------------------------------------------------


def test_json_list_of_records_and_mapping(tmp_path: Path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps([{"problem_id": 1, "code": "print(1)"}, {"id": 2, "code": ["a", "b"]}]))
    found = load_candidates(path, ["1", "2"])
    assert found["1"][0].code == "print(1)" and [c.code for c in found["2"]] == ["a", "b"]
    path.write_text(json.dumps({"1": "print(1)", "2": ["x", "y"], "3": {"completion": "z"}}))
    found = load_candidates(path, ["1", "2", "3"])
    assert [c.code for c in found["2"]] == ["x", "y"] and found["3"][0].code == "z"


def test_list_of_lists_is_in_dataset_order(tmp_path: Path):
    path = tmp_path / "generations.json"
    path.write_text(json.dumps([["print('r0')"], ["print('r1a')", f"{F}python\nprint('r1b')\n{F}"], []]))
    ps = problems("10", "11", "12")
    found = load_candidates(path, ps[1:])  # selection kept rows 1 and 2 only: positions still count rows
    assert [c.code for c in found["11"]] == ["print('r1a')", "print('r1b')"]
    assert "12" not in found


def test_json_of_the_wrong_shape(tmp_path: Path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps([1, 2]))
    with pytest.raises(CandidateError, match="expected a list of records with a problem id"):
        load_candidates(path, ["1"])


# -- several samples -----------------------------------------------------------------------------------


def cands(*codes):
    return [Candidate("1", "f", code, sample=i, label=f"sample_{i}") for i, code in enumerate(codes)]


def test_most_common_collapses_whitespace():
    # "print( 2 )", "print(\t2 )  " and " print( 2 )" are one program (3 votes) against "print(1)" (2)
    chosen = most_common(cands("print(1)", "print( 2 )", "print(1)\n\n", "print(\t2 )  ", " print( 2 )"))
    assert chosen.sample == 1
    chosen = most_common(cands("a = 1", "b  =  2", "b = 2", "a  = 1", "b =\n2"))
    assert chosen.sample == 1


def test_most_common_ties_go_to_lowest_index_and_empty_abstains():
    assert most_common(cands("", "  ", "x = 1", "y = 2")).sample == 2
    assert most_common(cands(None, "", " \n")).sample == 0


def test_select_most_common_keeps_one_candidate(tmp_path: Path):
    rows = [{"problem_id": 1, "code": ["print(2)", "print(1)", "print(1)"]}]
    found = load_candidates(jsonl(tmp_path / "g.jsonl", rows), ["1"], select="most-common")
    assert [(c.sample, c.label) for c in found["1"]] == [(1, "sample_1")]
    with pytest.raises(CandidateError, match="--apps-select"):
        load_candidates(tmp_path / "g.jsonl", ["1"], select="best")


# -- reference ---------------------------------------------------------------------------------------


def test_reference_folder_writes_each_solution(tmp_path: Path):
    sols = {"10": json.dumps(["print(1)", "print(2)"]), "11": "", "12": "not json"}
    reference_folder(tmp_path, problems("10", "11", "12"), sols)
    assert sorted(p.name for p in (tmp_path / "10").iterdir()) == ["solution_0.py", "solution_1.py"]
    assert not (tmp_path / "11").exists() and not (tmp_path / "12").exists()
    reference_folder(tmp_path, problems("10"), sols, most=1)
    assert sorted(p.name for p in (tmp_path / "10").iterdir()) == ["solution_0.py"]
    assert parse_solutions('["a", 3, "  "]') == ["a"]


@pytest.mark.parametrize("name", ["g.jsonl", "g.json"])
def test_a_generations_file_may_start_with_a_utf8_bom(tmp_path: Path, name: str):
    """Editors on Windows write one; the dataset reader accepts it, so do generations files."""
    path = tmp_path / name
    record = {"problem_id": 1, "code": "print(1)"}
    text = json.dumps(record) + "\n" if name.endswith("l") else json.dumps([record])
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert [c.code for c in load_candidates(path, ["1"])["1"]] == ["print(1)"]
