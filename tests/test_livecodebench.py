"""LiveCodeBench (`livecodebench/code_generation_lite`): real rows (a Codeforces row with its encoded private tests,
LeetCode functional rows), the restricted decoder of private tests, releases from a folder and from the hub's
layout by name, the contest-date window, bad rows, LiveCodeBench's own verdicts, and a functional and a stdin
problem end to end in the plugin."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest
from conftest import run
from fakehub import FakeHub, run_isolated
from test_dataset_table import encode_private

from pytest_apps import Evaluator, load_problems
from pytest_apps.core.outcome import PASS, RUN_EXITED, RUNTIME_ERROR, WRONG_ANSWER, Outcome
from pytest_apps.dataset.livecodebench import decode_private, release_splits
from pytest_apps.dataset.loading import open_rows
from pytest_apps.dataset.model import DataOptions
from pytest_apps.dataset.problems import Selection, select
from pytest_apps.dataset.rows import DatasetError
from pytest_apps.judge import livecodebench as lcb_judge

SHORT_SORT = ("for _ in range(int(input())):\n    s = input().strip()\n"
              "    print('YES' if sum(a != b for a, b in zip(s, 'abc')) in (0, 2) else 'NO')\n")
MAX_DIFFERENCE = ("from collections import Counter\n\nclass Solution:\n    def maxDifference(self, s: str) -> int:\n"
                  "        c = Counter(s).values()\n"
                  "        return max(v for v in c if v % 2) - min(v for v in c if v % 2 == 0)\n")
LCB_SHA = "5" * 40


def lcb_rows(shared: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (shared / "lcb" / name).read_text().splitlines() if line.strip()]


def test_the_real_codeforces_row_decodes_its_private_tests_without_unpickling(shared_datasets):
    parsed = select(open_rows(str(shared_datasets / "lcb" / "rows.jsonl"))[1], Selection(), 0)
    (problem,) = parsed.problems
    assert (problem.id, problem.difficulty, problem.fmt, problem.tags) == ("1873_A", "easy", "stdin", ("codeforces",))
    assert problem.n_cases_total == 5 and problem.date.startswith("2023-08-21") and problem.time_limit == 6.0
    assert parsed.cases["1873_A"].inputs[1] == "1\nabc\n" and parsed.cases["1873_A"].outputs[1] == "YES\n"


def test_leetcode_rows_are_call_based_with_one_json_argument_per_line(shared_datasets):
    parsed = select(open_rows(str(shared_datasets / "lcb" / "rows_public_only.jsonl"))[1], Selection(), 0)
    assert [p.id for p in parsed.problems] == ["3748", "3753", "3754", "3777", "3799", "3801"]
    by_id = {p.id: p for p in parsed.problems}
    assert by_id["3753"].fmt == "call" and by_id["3753"].fn_name == "maxDifference"
    assert parsed.cases["3753"].inputs[0] == ["aaaaabbc"] and parsed.cases["3753"].outputs[0] == 3
    assert {p.difficulty for p in parsed.problems} == {"easy", "medium", "hard"}


def test_the_restricted_decoder_reads_only_a_pickled_string(tmp_path):
    tests = [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
    assert decode_private(encode_private(tests)) == tests
    assert decode_private(json.dumps(tests)) == tests  # plain JSON, as some copies store it
    for protocol in range(0, 6):
        blob = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests), protocol=protocol))).decode()
        assert decode_private(blob) == tests
    witness = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (witness,))

    evil = base64.b64encode(zlib.compress(pickle.dumps(Payload()))).decode()
    with pytest.raises(ValueError, match="opcode, not only a string"):
        decode_private(evil)
    assert not witness.exists()  # nothing of the data ran
    a_list = base64.b64encode(zlib.compress(pickle.dumps(tests))).decode()
    with pytest.raises(ValueError, match="only a pickled string"):
        decode_private(a_list)
    with pytest.raises(ValueError, match="neither JSON nor base64"):
        decode_private("not base64 at all!")
    with pytest.raises(ValueError, match="base64 but not zlib"):
        decode_private(base64.b64encode(b"plain bytes").decode())


def test_a_row_whose_tests_do_not_decode_is_skipped_with_its_reason(shared_datasets, tmp_path):
    row = lcb_rows(shared_datasets, "rows.jsonl")[0]
    bad = {**row, "question_id": "bad", "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps([1]))).decode()}
    missing = {k: v for k, v in row.items() if k != "question_id"}
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (row, bad, missing)))
    parsed = select(open_rows(str(path))[1], Selection(), 0)
    assert [p.id for p in parsed.problems] == ["1873_A"]
    reasons = {s.problem_id: s.reason for s in parsed.skipped}
    assert "the pickle holds a" in reasons["bad"] and "only a pickled string is read" in reasons["bad"]
    assert reasons["2"].startswith(f"{path} line 3: a LiveCodeBench row without question_id (it holds contest_date")


def release_folder(root: Path) -> Path:
    base = {"question_title": "t", "platform": "atcoder", "contest_id": "c", "starter_code": "", "metadata": "{}",
            "difficulty": "easy", "private_test_cases": "",
            "public_test_cases": json.dumps([{"input": "1\n", "output": "2\n", "testtype": "stdin"}])}
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 7):
        row = {**base, "question_id": f"q{n}", "question_content": f"release {n}",
               "contest_date": f"2024-0{n}-15T12:00:00"}
        (root / ("test.jsonl" if n == 1 else f"test{n}.jsonl")).write_text(json.dumps(row) + "\n")
    return root


def ids_of(dataset: str, **options) -> tuple[dict, list[str]]:
    source, rows = open_rows(dataset, options=DataOptions(**options))
    return source.to_dict(), [r["question_id"] for r in rows]


def test_a_release_reads_its_files_of_a_folder_and_is_named_in_the_source(tmp_path):
    folder = str(release_folder(tmp_path / "lcb"))
    assert ids_of(folder, release="release_v3")[1] == ["q1", "q2", "q3"]
    assert ids_of(folder, release="v2")[1] == ["q2"] and ids_of(folder, release="v2_v4")[1] == ["q2", "q3", "q4"]
    source, ids = ids_of(folder, release="release_latest")
    assert ids == [f"q{n}" for n in range(1, 7)] and source["release"] == "release_latest"
    assert "release" not in ids_of(folder)[0] and ids_of(folder)[1] == ["q1"]  # no release: the split's file
    assert release_splits("release_v2") == ["test", "test2"]
    with pytest.raises(DatasetError, match=r"^--apps-release=release_v9: not a LiveCodeBench release; give release_v1"):
        ids_of(folder, release="release_v9")
    with pytest.raises(DatasetError, match="does not apply: .*one file"):
        ids_of(str(tmp_path / "lcb" / "test2.jsonl"), release="v2")


def test_the_hub_layout_by_name_reads_the_latest_release(tmp_path):
    folder = release_folder(tmp_path / "files")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    files["code_generation_lite.py"] = b"# loading script\n"
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("livecodebench/code_generation_lite", LCB_SHA, files)
        got, _ = run_isolated(home, "livecodebench/code_generation_lite", "test", None, None, offline=False,
                              endpoint=hub.endpoint)
    assert isinstance(got, dict), got
    assert got["source"]["release"] == "release_latest" and got["source"]["resolved_revision"] == LCB_SHA
    assert [r["question_id"] for r in got["rows"]] == [f"q{n}" for n in range(1, 7)]


def test_the_contest_date_window_selects_as_livecodebench_does(tmp_path):
    folder = str(release_folder(tmp_path / "lcb"))
    chosen = load_problems(folder, release="release_v6", since="2024-02-01", until="2024-04-15")
    assert [p.id for p in chosen] == ["q2", "q3"]  # q4's contest is at noon of the 15th: past midnight
    with pytest.raises(ValueError, match="no problem of .* has a contest date in that window; its contest dates run "
                                         "from 2024-01-15 to 2024-06-15"):
        load_problems(folder, release="release_v6", since="2025-01-01")


def outcome(stdout: str = "", value=None, exit_code: int = 0, error: str = "") -> Outcome:
    return Outcome(RUN_EXITED, exit_code=exit_code, stdout=stdout, error=error,
                   value_json=None if value is None else json.dumps(value))


def test_livecodebench_verdicts_compare_lines_and_decimals_and_values_strictly():
    assert lcb_judge.judge("stdin", "1 2\n3\n", outcome(" 1 2 \n3")).kind == PASS
    assert lcb_judge.judge("stdin", "1.0 2\n", outcome("1 2.00\n")).step == "decimal"
    assert lcb_judge.judge("stdin", "1\n2\n", outcome("1 2\n")).kind == WRONG_ANSWER  # line counts differ
    assert lcb_judge.judge("stdin", "0.5\n", outcome("0.5000001\n")).kind == WRONG_ANSWER  # no tolerance
    assert lcb_judge.judge("stdin", "YES\n", outcome("YES\n", exit_code=3)).kind == PASS  # SystemExit is caught
    assert lcb_judge.judge("stdin", "YES\n", outcome("YES\n", exit_code=1, error="ValueError: x")).kind == RUNTIME_ERROR
    assert lcb_judge.judge("call", [1, 2], outcome(value=[1, 2])).kind == PASS
    assert lcb_judge.judge("call", 3, outcome(value=3.0)).kind == PASS  # Python's ==
    assert lcb_judge.judge("call", [3], outcome(value=3)).kind == WRONG_ANSWER  # no one-element leniency


def test_a_program_with_a_main_block_passes_as_livecodebench_passes_it(shared_datasets):
    problems = load_problems(str(shared_datasets / "lcb" / "rows.jsonl"), max_tests=0)
    main_block = "def main():\n" + "".join("    " + line + "\n" for line in SHORT_SORT.splitlines()) + \
        "\nif __name__ == '__main__':\n    main()\n"
    with Evaluator(workers=1, judge="lcb") as ev:
        assert ev.score(problems[0], main_block).passed
        assert ev.score(problems[0], SHORT_SORT).passed
        assert not ev.score(problems[0], SHORT_SORT.replace("(0, 2)", "(0,)")).passed


def test_a_functional_and_a_stdin_problem_run_end_to_end_with_xdist(shared_datasets, pytester):
    rows = lcb_rows(shared_datasets, "rows.jsonl") + [
        r for r in lcb_rows(shared_datasets, "rows_public_only.jsonl") if r["question_id"] == "3753"]
    (pytester.path / "lcb.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (pytester.path / "cands").mkdir()
    (pytester.path / "cands" / "1873_A.py").write_text(SHORT_SORT)
    (pytester.path / "cands" / "3753.py").write_text(MAX_DIFFERENCE)
    result = run(pytester, "--apps-dataset=lcb.jsonl", "--apps-candidates=cands", "--apps-judge=lcb",
                 "--apps-limits=row", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "reports" / "apps-report.json").read_text())
    figures = report["summary"]
    assert report["problems"][0]["limits"]["mode"] == "row" and report["problems"][0]["limits"]["time"] == 6.0
    assert figures["strict_accuracy"] == 1.0 and set(figures["per_tier"]) >= {"easy", "medium", "hard"}
    assert figures["per_tier"]["easy"]["problems"] == 2


def test_an_empty_date_window_is_one_line_and_keeps_the_earlier_report(tmp_path, pytester):
    folder = release_folder(pytester.path / "lcb")
    (pytester.path / "cands").mkdir()
    (pytester.path / "cands" / "q1.py").write_text("print(2)\n")
    first = run(pytester, f"--apps-dataset={folder}", "--apps-release=v1", "--apps-candidates=cands", "-p",
                "no:cacheprovider")
    assert first.ret == 0, first.stdout.str()[-2000:]
    first.stdout.fnmatch_lines(["apps: dataset * split test release v1 (*"])
    report = pytester.path / "reports" / "apps-report.json"
    before = report.read_bytes()
    result = run(pytester, f"--apps-dataset={folder}", "--apps-release=release_v6", "--apps-since=2030-01-01",
                 "--apps-candidates=cands", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--apps-since=2030-01-01 selects none; the dataset * holds 6 problems "
                                 "(ids q1-q6; tiers easy; contest dates 2024-01-15 to 2024-06-15)*"])
    assert report.read_bytes() == before
    unknown = run(pytester, f"--apps-dataset={folder}", "--apps-release=release_v9", "--apps-candidates=cands",
                  "-p", "no:cacheprovider")
    unknown.stderr.fnmatch_lines(["*--apps-release=release_v9: not a LiveCodeBench release*"])
    assert report.read_bytes() == before
