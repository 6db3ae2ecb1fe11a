"""TACO (BAAI/TACO) rows, on the shared real rows and on local files laid out as the hub lays them out:
ids, tiers, tags, selection, row limits, the special-judge kinds, and TACO's judge."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import UNUSED_PLUGINS, make_problem, run
from fakehub import FakeHub, run_isolated, served

from pytest_apps.core.outcome import MEMORY_LIMIT, PASS, RUN_COMPILE_ERROR, RUN_EXITED, WRONG_ANSWER, Outcome, Verdict
from pytest_apps.dataset.loading import open_rows
from pytest_apps.dataset.problems import Selection, select
from pytest_apps.dataset.rows import DatasetError
from pytest_apps.dataset.taco import labels, limit_of, parse_limits, parse_memory, parse_time
from pytest_apps.engine.limits import over_row_memory, problem_limits
from pytest_apps.engine.special import exclude_needing_checker, taco_facts
from pytest_apps.engine.spec import RunSpec
from pytest_apps.executor import Executor, Limits, Program
from pytest_apps.judge import taco
from pytest_apps.judge.profiles import Judging
from pytest_apps.judge.special import SpecialJudges, case_insensitive, stated_tolerance, tolerant
from pytest_apps.report.rollup import summarize
from pytest_apps.report.taco import annotate

TACO_SHA = "7" * 40


def taco_rows(shared: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (shared / "taco" / name).read_text().splitlines() if line.strip()]


def test_real_rows_load_with_index_ids_tiers_tags_and_limits(shared_data):
    parsed = select(open_rows(str(shared_data / "taco" / "taco_train_rows.jsonl"), "train")[1], Selection(), 0)
    assert [p.id for p in parsed.problems] == ["0", "1", "2", "3", "4", "5"] and not parsed.skipped
    first = parsed.problems[0]
    assert first.difficulty == "HARD" and first.skills == ("Sorting",)
    assert first.tags == ("Geometry", "Sorting", "Constructive algorithms")
    assert (first.time_limit, first.memory_limit, first.limit_error) == (2.0, 256 << 20, "")
    assert first.n_cases_total == 134 and first.fmt == "stdin"
    assert all(p.time_limit is None and p.difficulty == "UNKNOWN_DIFFICULTY" for p in parsed.problems[1:])  # null there
    test = select(open_rows(str(shared_data / "taco" / "taco_test_rows.jsonl"))[1], Selection(), 0).problems[0]
    assert (test.id, test.difficulty, test.tags, test.n_cases_total) == ("0", "MEDIUM", ("Combinatorics", "Mathematics"), 209)


def test_selection_by_taco_tier_and_by_tag_or_skill(shared_data):
    path = str(shared_data / "taco" / "taco_train_rows.jsonl")

    def ids(selection):
        return [p.id for p in select(open_rows(path, "train")[1], selection, 5).problems]

    assert ids(Selection(difficulties=["hard"])) == ["0"] == ids(Selection(difficulties=["HARD"]))
    assert ids(Selection(tags=["sorting"])) == ["0"]  # a tag and a skill of row 0, any case
    assert ids(Selection(tags=["constructive ALGORITHMS"])) == ["0"]
    assert ids(Selection(tags=["Graphs"])) == []
    assert ids(Selection(difficulties=["EASY"])) == []
    with pytest.raises(ValueError, match="unknown tier 'expert'.*EASY"):
        ids(Selection(difficulties=["expert"]))


@pytest.mark.parametrize("text, seconds", [("2.0 seconds", 2.0), ("1 second", 1.0), ("0.5 seconds", 0.5),
                                           ("500 ms", 0.5), (None, None), ("", None), ("None", None)])
def test_time_limit_forms(text, seconds):
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text, size", [("256.0 megabytes", 256 << 20), ("64 megabytes", 64 << 20),
                                        ("1024 kilobytes", 1 << 20), (None, None), ("", None)])
def test_memory_limit_forms(text, size):
    assert parse_memory(text) == size


def test_an_unreadable_limit_is_reported_not_guessed():
    limits = parse_limits({"time_limit": "about two seconds", "memory_limit": "256.0 megabytes"})
    assert limits.time is None and limits.memory == 256 << 20
    assert limits.error == "time_limit 'about two seconds' is not a duration such as '2.0 seconds'"
    row = {"question": "q", "input_output": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}),
           "time_limit": "2 fortnights", "memory_limit": None, "skill_types": "[]"}
    problem = select([row], Selection(), 5).problems[0]
    assert problem.time_limit is None and "2 fortnights" in problem.limit_error
    figures = limit_of(problem, True, 4.0, 0)
    assert figures["mode"] == "fixed" and figures["time"] == 4.0 and "2 fortnights" in figures["unreadable"]


def test_labels_read_list_literals():
    assert labels("['Data structures', 'Sorting']") == ("Data structures", "Sorting")
    assert labels('["Amortized analysis"]') == ("Amortized analysis",)
    assert labels("[]") == () == labels(None)


def test_local_arrow_folder_written_by_save_to_disk_and_the_hub_parquet_copy(shared_data, tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = taco_rows(shared_data, "taco_train_rows.jsonl")
    columns = {k: [r.get(k) for r in rows] for k in rows[0]}
    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(columns)}).save_to_disk(str(saved))
    assert (saved / "train" / "state.json").is_file()
    from_arrow = list(open_rows(str(saved), "train")[1])
    from_jsonl = list(open_rows(str(shared_data / "taco" / "taco_train_rows.jsonl"), "train")[1])
    assert from_arrow == from_jsonl and len(from_arrow) == 6
    single = list(open_rows(str(next((saved / "train").glob("*.arrow"))), "train", stop=2)[1])
    assert single == from_jsonl[:2]
    parquet = tmp_path / "ALL" / "train-00000-of-00001.parquet"
    parquet.parent.mkdir()
    pq.write_table(pa.Table.from_pydict(columns), parquet)
    assert list(open_rows(str(tmp_path / "ALL"), "train")[1]) == from_jsonl


def test_a_file_that_is_not_arrow_is_one_line(tmp_path):
    bad = tmp_path / "data-00000-of-00001.arrow"
    bad.write_bytes(b"not arrow at all")
    with pytest.raises(DatasetError, match="is not a readable Arrow file"):
        open_rows(str(bad))


def arrow_stream(rows: list[dict]) -> bytes:
    table = pa.Table.from_pylist(rows)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=2)
    return sink.getvalue()


def test_hub_layout_of_baai_taco_reads_the_split_arrow_files(shared_data, tmp_path):
    """BAAI/TACO's main revision: TACO.py, README.md, ALL/ (a Parquet conversion), train/ and test/ as
    save_to_disk folders. The split's Arrow files are read (what TACO.py loads), not ALL/ as well."""
    test_rows = taco_rows(shared_data, "taco_test_rows.jsonl")
    train_rows = taco_rows(shared_data, "taco_train_rows.jsonl")
    state = json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "test"}).encode()
    files = {
        "TACO.py": b"# loading script\n", "README.md": b"---\n---\n",
        "ALL/test-00000-of-00001.parquet": _parquet(test_rows[:1]),
        "ALL/train-00000-of-00001.parquet": _parquet(train_rows),
        "test/data-00000-of-00001.arrow": arrow_stream(test_rows), "test/state.json": state,
        "test/dataset_info.json": b"{}",
        "train/data-00000-of-00001.arrow": arrow_stream(train_rows), "train/state.json": state,
    }
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("BAAI/TACO", TACO_SHA, files)
        got, _ = run_isolated(home, "BAAI/TACO", "test", None, None, offline=False, endpoint=hub.endpoint)
        assert isinstance(got, dict), got
        assert got["source"]["resolved_revision"] == TACO_SHA
        assert [r["problem_id"] for r in got["rows"]] == [None, None]  # no id column: ids are row indices
        touched = {r.path.rsplit("/", 1)[-1] for r in hub.file_requests() if r.path.endswith((".arrow", ".parquet"))}
        assert touched == {"data-00000-of-00001.arrow"}
        assert [r["difficulty"] for r in got["rows"]] == ["MEDIUM", ""]
    offline, _ = run_isolated(home, "BAAI/TACO", "test", None, 1)  # warm cache, no network
    assert isinstance(offline, dict) and len(offline["rows"]) == 1 and offline["rows"][0]["tags"] == test_rows[0]["tags"]


def test_a_limited_run_fetches_only_the_arrow_shards_its_rows_lie_in(shared_data, tmp_path):
    """BAAI/TACO's train split is several save_to_disk shards: the first rows need only the first shard (and the
    shards' list); offline, the cached shards serve what lies in them, and a row past them is an error, never
    a split cut short."""
    train_rows = taco_rows(shared_data, "taco_train_rows.jsonl")
    names = ["data-00000-of-00002.arrow", "data-00001-of-00002.arrow"]
    state = json.dumps({"_data_files": [{"filename": n} for n in names], "_split": "train"}).encode()
    files = {"TACO.py": b"# loading script\n", "README.md": b"---\n---\n", "train/state.json": state,
             f"train/{names[0]}": arrow_stream(train_rows[:4]), f"train/{names[1]}": arrow_stream(train_rows[4:])}
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("BAAI/TACO", TACO_SHA, files)
        got, _ = run_isolated(home, "BAAI/TACO", "train", None, 3, offline=False, endpoint=hub.endpoint)
        assert isinstance(got, dict), got
        assert [r["question"] for r in got["rows"]] == [r["question"] for r in train_rows[:3]]
        fetched = {r.path.rsplit("/", 1)[-1] for r in hub.file_requests()}
        assert names[0] in fetched and names[1] not in fetched and "state.json" in fetched
    within, _ = run_isolated(home, "BAAI/TACO", "train", None, 4)  # offline: the first shard's rows
    assert isinstance(within, dict) and len(within["rows"]) == 4
    past, _ = run_isolated(home, "BAAI/TACO", "train", None, None)
    assert isinstance(past, str) and past.startswith("DatasetError: BAAI/TACO: data-00001-of-00002.arrow (2 of 2 "
                                                     "files of the split) is not in the Hugging Face cache"), past
    with FakeHub() as hub:
        hub.add("BAAI/TACO", TACO_SHA, files)
        whole, _ = run_isolated(home, "BAAI/TACO", "train", None, None, offline=False, endpoint=hub.endpoint)
        assert isinstance(whole, dict) and len(whole["rows"]) == len(train_rows) == 6
    again, _ = run_isolated(home, "BAAI/TACO", "train", None, None)  # now all of it offline
    assert isinstance(again, dict) and len(again["rows"]) == 6


def test_the_plugin_runs_baai_taco_by_name_from_the_hub(shared_data, tmp_path, pytester, monkeypatch):
    """`--apps-dataset=BAAI/TACO` end to end on the hub's layout: node ids carry the row's index in its split."""
    test_rows = taco_rows(shared_data, "taco_test_rows.jsonl")
    state = json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "test"}).encode()
    files = {"TACO.py": b"# loading script\n", "README.md": b"---\n---\n",
             "test/data-00000-of-00001.arrow": arrow_stream(test_rows), "test/state.json": state}
    with served(monkeypatch, tmp_path / "hf", "BAAI/TACO", TACO_SHA, files):
        result = pytester.runpytest_subprocess(*UNUSED_PLUGINS, "--apps-dataset=BAAI/TACO", "--apps-limit=2",
                                               "--apps-candidates=reference", "--apps-samples=1", "--apps-max-tests=2",
                                               "--apps-judge=taco", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["apps: dataset BAAI/TACO split test*"])
    report = json.loads((pytester.path / "reports" / "apps-report.json").read_text())
    assert [p["id"] for p in report["problems"]] == ["0", "1"]
    assert report["problems"][0]["verdict"] == "pass" and report["source"]["resolved_revision"] == TACO_SHA
    # test[415] has no solution (no code) and no tier: TACO's UNKNOWN_DIFFICULTY, never a tier without a name
    result.stdout.fnmatch_lines(["apps-generations/reference/0/solution_0.py ..*",
                                 "APPS problem 1: no code (*",
                                 "per tier: MEDIUM 100.00% (1/1, *), UNKNOWN_DIFFICULTY 0.00% (0/1, *)"])


def _parquet(rows: list[dict]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return sink.getvalue()


# ------------------------------------------------------------------------------------------- special judges


def test_special_judge_list_kinds(shared_data):
    special = SpecialJudges.from_file(shared_data / "taco" / "output_spj.jsonl")
    kinds = list(special.kinds.values())
    assert (kinds.count(1), kinds.count(2), kinds.count(3), len(kinds)) == (139, 42, 37, 218)  # case 0 + flag: 1
    assert special.kind("0") is None and special.kind("415") is None


def test_builtin_special_checkers():
    assert case_insensitive("YES\nno\n", "yes\nNO") == (True, "")
    assert not case_insensitive("YES", "YEP")[0]
    assert tolerant("0.333333333", "0.3333334", 1e-6)[0]
    assert not tolerant("0.3333", "0.3343", 1e-6)[0]
    assert tolerant("1000000.0 x", "1000000.5 x", 1e-6)[0]  # relative to the expected value
    assert not tolerant("1 2", "1", 1e-6)[0]
    assert stated_tolerance("the absolute or relative error doesn't exceed 10^{-4}.") == 1e-4
    assert stated_tolerance("print the answer") == 1e-6


def test_special_judges_bind_only_their_kinds(tmp_path):
    path = tmp_path / "spj.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in (
        {"idx": 0, "special_judge": True, "case": 2}, {"idx": 1, "special_judge": True, "case": 3},
        {"idx": 2, "special_judge": True, "case": 1}, {"idx": 3, "special_judge": False, "case": 0})))
    special = SpecialJudges.from_file(path)
    assert special.bind("0", "", "stdin", "Yes")("YES") == (True, "")
    assert special.bind("1", "", "stdin", "0.5")("0.5000001") == (True, "")
    assert special.bind("2", "", "stdin", "1 2") is None and special.needs_checker("2")
    assert special.bind("3", "", "stdin", "x") is None
    problems = [make_problem(str(i), "EASY") for i in range(4)]
    kept, left = exclude_needing_checker(problems, special, checked=())
    assert [p.id for p in kept] == ["0", "1", "3"] and [s.problem_id for s in left] == ["2"]
    assert len(exclude_needing_checker(problems, special, checked=("2",))[0]) == 4  # a checker of its own
    spec = RunSpec(Judging(special=special), Limits(), (), 0)
    summary = annotate(summarize(problems, {}, [], []), taco_facts(problems, spec))
    spj = summary.figures["special_judge"]
    assert spj["needs_checker"]["ids"] == ["2"]
    assert spj["marked"] == {"several right outputs": 1, "case-insensitive": 1, "floating-point": 1}


def taco_row(question: str, inputs: list[str], outputs: list[str], **columns) -> dict:
    """A row as BAAI/TACO holds one (no id column: its id is its index)."""
    return {"question": question, "solutions": "[]", "starter_code": "", "difficulty": "EASY",
            "input_output": json.dumps({"inputs": inputs, "outputs": outputs}), "tags": "['Mathematics']",
            "skill_types": "['Data structures']", "time_limit": None, "memory_limit": None, "source": "codeforces",
            **columns}


def test_special_judges_row_limits_and_exclusion_in_a_plugin_run(pytester):
    """End to end, with a list file of the user's: a case-insensitive and a floating-point problem pass by the
    built-in checkers, a problem with several right outputs is counted apart (or left out with exclude), and a
    row's own time limit is the one its problem ran under."""
    rows = [taco_row("Print YES or NO.", ["1\n", "2\n"], ["YES\n", "NO\n"], time_limit="1 second",
                     memory_limit="256 megabytes"),
            taco_row("Print 1/n. Your answer is accepted if its absolute or relative error is at most 10^{-4}.",
                     ["3\n"], ["0.333333333\n"]),
            taco_row("Print any two positive integers whose sum is n.", ["4\n"], ["1 3\n"])]
    (pytester.path / "taco.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (pytester.path / "spj.jsonl").write_text("".join(json.dumps({"idx": i, "special_judge": True, "case": c}) + "\n"
                                                     for i, c in ((0, 2), (1, 3), (2, 1))))
    folder = pytester.mkdir("cands")
    (folder / "0.py").write_text("print('yes' if int(input()) == 1 else 'no')\n")
    (folder / "1.py").write_text("print(1 / int(input()) + 5e-5)\n")  # within 10^-4, not the seed's tolerance
    (folder / "2.py").write_text("n = int(input())\nprint(2, n - 2)\n")
    base = ("--apps-dataset=taco.jsonl", "--apps-candidates=cands", "-p", "no:cacheprovider")

    def verdicts(result, name):
        report = json.loads((pytester.path / "reports" / name).read_text())
        return report, {p["id"]: p["verdict"] for p in report["problems"]}

    plain = run(pytester, *base, "--apps-report=reports/plain.json")
    assert verdicts(plain, "plain.json")[1] == {"0": "fail", "1": "fail", "2": "fail"}
    listed = run(pytester, *base, "--apps-special-judge=spj.jsonl", "--apps-limits=row", "-n", "2",
                 "--apps-report=reports/listed.json")
    report, got = verdicts(listed, "listed.json")
    assert got == {"0": "pass", "1": "pass", "2": "fail"}
    assert report["summary"]["special_judge"]["needs_checker"]["ids"] == ["2"]
    listed.stdout.fnmatch_lines(["special judges (TACO's list):*1 need* a checker*"])
    limits = {p["id"]: p["limits"] for p in report["problems"]}
    assert limits["0"]["mode"] == "row" and limits["0"]["time"] == 1.0 and limits["1"]["mode"] == "fixed"
    left_out = run(pytester, *base, "--apps-special-judge=spj.jsonl", "--apps-needs-checker=exclude",
                   "--apps-report=reports/excluded.json")
    report, got = verdicts(left_out, "excluded.json")
    assert got == {"0": "pass", "1": "pass"} and report["summary"]["strict_accuracy"] == 1.0
    assert left_out.ret == 0


def test_bad_special_judge_list_is_one_line(tmp_path):
    path = tmp_path / "spj.jsonl"
    path.write_text('{"idx": 0}\n')
    with pytest.raises(Exception, match=r"spj.jsonl line 1: not an output_spj.jsonl entry"):
        SpecialJudges.from_file(path)


def test_the_list_is_refused_for_another_split_and_a_bad_list_is_a_usage_error(pytester):
    special = SpecialJudges({"0": 2}, "spj.jsonl")
    special.check_split("test")
    special.check_split("")  # one file: its split cannot be told
    with pytest.raises(Exception, match=r"^--apps-special-judge=spj.jsonl: TACO's list names problems of its test "
                                        r"split by index, and this run reads split 'train'"):
        special.check_split("train")
    pytester.mkdir("solutions")
    (pytester.path / "spj.jsonl").write_text('{"idx": 0}\n')
    result = run(pytester, "--apps-dataset=sample", "--apps-special-judge=spj.jsonl", "-p", "no:cacheprovider")
    assert result.ret == 4 and "INTERNALERROR" not in result.stderr.str() + result.stdout.str()
    result.stderr.fnmatch_lines(["ERROR: *spj.jsonl line 1: not an output_spj.jsonl entry*"])
    # a list that reads well, given with APPS rows (the bundled sample): their ids are other problems
    (pytester.path / "spj.jsonl").write_text('{"idx": 0, "special_judge": true, "case": 2}\n')
    result = run(pytester, "--apps-dataset=sample", "--apps-special-judge=spj.jsonl", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["ERROR: --apps-special-judge=*spj.jsonl: TACO's list names problems of TACO's test "
                                 "split, and this dataset's rows are not TACO rows*"])


# ------------------------------------------------------------------------------------------- row limits


def test_row_limits_replace_the_time_and_bound_resident_memory():
    problem = make_problem("0", "HARD", time_limit=2.0, memory_limit=64 << 20)
    base = Limits(timeout=4.0)
    assert problem_limits(base, problem, row=False) is base
    assert problem_limits(base, problem, row=True, scale=1.5).timeout == 3.0
    ok = Outcome(status=RUN_EXITED, exit_code=0, peak_memory=10 << 20)
    big = Outcome(status=RUN_EXITED, exit_code=0, peak_memory=100 << 20)
    assert over_row_memory(problem, ok, Verdict(PASS)).kind == PASS
    assert over_row_memory(problem, big, Verdict(PASS)).kind == MEMORY_LIMIT
    assert limit_of(problem, True, 4.0, 4 << 30)["text"] == "2 s, 64 MiB"
    assert limit_of(problem, False, 4.0, 4 << 30)["mode"] == "fixed"


def test_a_row_time_limit_is_enforced_by_the_executor():
    problem = make_problem("0", "HARD", time_limit=0.5)
    executor = Executor(Limits(timeout=4.0))
    try:
        with executor.limited(problem_limits(executor.limits, problem, row=True)):
            outcome = executor.run_stdin(Program("while True: pass\n"), "")
        assert outcome.status == "timeout" and outcome.own_time < 2.0
        assert executor.limits.timeout == 4.0
    finally:
        executor.close()


# ------------------------------------------------------------------------------------------- TACO's judge


def test_taco_compares_the_stripped_whole_text():
    assert taco.compare_stdin("1 2\n3\n", "1 2\n3") == "exact"
    assert taco.compare_stdin("1 2 \n3\n", "1 2\n3") is None  # spaces inside the text count (APPS strips lines)
    assert taco.compare_stdin("12 3", "1 2\n3") == "char_sets"  # a quirk of comparing one string
    assert taco.compare_stdin("1.0 2", "1 2") is None and taco.compare_stdin("10 2", "1 0 2") is None
    assert taco.compare_stdin("2\n1", "1\n2") == "char_sets"
    assert taco.compare_stdin("0.5000001\n", "0.5") is None  # no numeric tolerance for a printed line
    assert taco.compare_stdin("5", "5.0000001") == "chars_numeric"


def test_taco_program_transforms():
    code = "import os\nn = int(input())\nprint(n)\n"
    std = taco.std_program(code)
    assert std.startswith("import os\n" + taco.PRELUDE) and "stdout = sys.stdout\nn = int(input())" in std
    wrapped = taco.wrapped_program("import os\nn = int(input())\nif n: return\nprint(n)\n")
    assert "def code():\n\tn = int(input())\n\tif n: return\n" in wrapped and wrapped.endswith("\ncode()\n")
    assert taco.needs_wrapping(Outcome(status=RUN_COMPILE_ERROR))
    assert taco.needs_wrapping(Outcome(status=RUN_EXITED, exit_code=1))
    assert not taco.needs_wrapping(Outcome(status=RUN_EXITED, exit_code=0))


def test_taco_judge_runs_the_prelude_and_the_wrapped_fallback(shared_data):
    from pytest_apps.engine.run import Trial, run_judged

    problem = make_problem("0", "EASY")
    executor = Executor(Limits(timeout=4.0))
    try:
        # np and sqrt come from TACO's prelude; the seed judge fails this program
        uses_prelude = Program("print(int(sqrt(np.int64(int(input())))))\n")
        _, verdict = run_judged(executor, Trial("taco", problem, uses_prelude, "16\n", "4\n"))
        assert verdict.kind == PASS and verdict.step == "exact"
        assert run_judged(executor, Trial("seed", problem, uses_prelude, "16\n", "4\n"))[1].kind != PASS
        top_return = Program("n = int(input())\nif n > 0:\n    print(n)\n    return\nprint(0)\n")
        _, verdict = run_judged(executor, Trial("taco", problem, top_return, "3", "3"))
        assert verdict.kind == PASS and verdict.step == taco.WRAPPED + "exact"
        _, verdict = run_judged(executor, Trial("taco", problem, Program("print('1 2 ')\n"), "", "1 2\n"))
        assert verdict.kind == PASS  # trailing spaces of the whole text are stripped
        two_lines = Program("print('1 2 ')\nprint(3)\n")
        _, verdict = run_judged(executor, Trial("taco", problem, two_lines, "", "1 2\n3\n"))
        assert verdict.kind == WRONG_ANSWER  # but not those inside it
    finally:
        executor.close()


def test_taco_fails_a_program_it_cannot_load_wrapped_even_when_it_runs():
    """TACO loads a standard-input program wrapped in code() before any test (its `import *` lines hoisted to the
    module's top, indentation kept) and fails the whole problem when that fails; the program itself runs."""
    from pytest_apps.engine.run import Trial, run_judged

    assert taco.loaded_program("x = 1\nprint(x)\n").endswith("def code():\n\tx = 1\n\tprint(x)\n\t\n")
    problem = make_problem("0", "EASY")
    executor = Executor(Limits(timeout=4.0))
    try:
        indented_star = Program("if True:\n    from math import *\nprint(int(sqrt(int(input()))))\n")
        assert run_judged(executor, Trial("seed", problem, indented_star, "16\n", "4\n"))[1].kind == PASS
        for _ in range(2):  # (the second test of the program: decided the same)
            outcome, verdict = run_judged(executor, Trial("taco", problem, indented_star, "16\n", "4\n"))
            assert verdict.kind == "compile_error" and verdict.step == "taco_load", verdict
            assert "cannot load the program wrapped in code() (IndentationError" in verdict.reason
        loads = Program("print(int(input()) // 4)\n")
        _, verdict = run_judged(executor, Trial("taco", problem, loads, "16\n", "4\n"))
        assert verdict.kind == PASS  # a program that loads runs as before
    finally:
        executor.close()


def test_reference_run_on_real_taco_rows_end_to_end(pytester, shared_data):
    spj = shared_data / "taco" / "output_spj.jsonl"
    result = pytester.runpytest_subprocess(
        *UNUSED_PLUGINS, "-p", "pytest_apps", "--apps", "--apps-dataset", str(shared_data / "taco" / "taco_test_rows.jsonl"),
        "--apps-candidates", "reference", "--apps-samples", "2", "--apps-max-tests", "3", "--apps-judge", "taco",
        "--apps-special-judge", str(spj), "--apps-limits", "row", "--apps-tag", "mathematics",
        "--apps-difficulty", "MEDIUM", "-n", "2", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["per tier: MEDIUM 100.00% (2 of 2 samples passing, 1 problem, 95% CI*", "per tag: Combinatorics 100.00% (2 of 2 samples passing, 1 problem, 95% CI*",
                                 "special judges (TACO's list): none among the selected problems",
                                 "passes by step (taco judge): exact 6 (100.0%)"])
    report = json.loads((pytester.path / "reports" / "apps-report.json").read_text())
    problem = report["problems"][0]
    assert problem["id"] == "0" and problem["tags"] == ["Combinatorics", "Mathematics"]
    assert problem["limits"]["mode"] == "fixed" and report["summary"]["per_tag"]["Mathematics"]["passed"] == 1
    assert list(report["summary"]["per_tier"]) == ["EASY", "MEDIUM", "MEDIUM_HARD", "HARD", "VERY_HARD"]
    assert "per_tag" in report["summary"]["intervals"]


def test_per_tag_and_per_skill_figures_in_every_report():
    from pytest_apps.core.record import CaseRecord
    from pytest_apps.report.html import render_html
    from pytest_apps.report.markdown import markdown_text
    from pytest_apps.report.rollup import document
    from pytest_apps.report.terminal import summary_lines

    problems = [make_problem(str(i), ("EASY", "HARD")[i % 2], tags=("Sorting", "Greedy")[: 1 + i % 2],
                             skills=("Data structures",) if i < 2 else ()) for i in range(4)]
    records = [CaseRecord(str(i), 0, PASS if i != 1 else WRONG_ANSWER) for i in range(4)]
    summary = summarize(problems, {str(i): f"{i}.py" for i in range(4)}, [], records, extra={"wall_time": 1.0,
                                                                                           "missing_ids": []})
    f = summary.figures
    assert list(f["per_tier"]) == ["EASY", "MEDIUM", "MEDIUM_HARD", "HARD", "VERY_HARD"]
    assert f["per_tier"]["HARD"] == {"problems": 2, "passed": 1, "strict_accuracy": 0.5}
    assert f["per_tag"] == {"Sorting": {"problems": 4, "passed": 3, "strict_accuracy": 0.75},
                            "Greedy": {"problems": 2, "passed": 1, "strict_accuracy": 0.5}}
    assert f["per_skill"]["Data structures"]["passed"] == 1
    assert f["intervals"]["per_tag"]["Greedy"]["method"] == f["intervals"]["per_tier"]["HARD"]["method"]
    text = "\n".join(summary_lines(summary))
    assert "per tag: Sorting 75.00% (3/4, 95% CI" in text and "per skill: Data structures 50.00% (1/2" in text
    doc = document({}, {}, summary)
    assert "| tag: Greedy | 2 | 1 | 50.00% |" in markdown_text(doc)
    page = render_html(doc)
    assert "Strict accuracy per tag" in page and 'data-tier="Greedy"' in page
