"""Every entry of the dataset table (`dataset/table.py`) through the whole house: its rows in its hub schema, read from
a JSON Lines file and from Parquet laid out as the hub lays it out, selected by tier, scored through the API under
the entry's own judge profile, and run by the plugin with two xdist workers into its reports. A new entry without a
sample here fails `test_every_entry_has_a_sample`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run

from pytest_apps import Evaluator, load_problems
from pytest_apps.dataset import table
from pytest_apps.dataset.problems import Selection
from pytest_apps.dataset.table import TABLE, TierError

ECHO_DOUBLE = "n = int(input())\nprint(2 * n)\n"
ECHO_WRONG = "n = int(input())\nprint(n + 1)\n"


@dataclass
class Sample:
    """Rows in an entry's hub schema, with a right and a wrong program per problem id."""

    rows: list[dict]
    right: dict[str, str]
    wrong: dict[str, str]
    tiers: dict[str, str]  # problem id -> its tier as the report names it
    options: dict[str, object] = field(default_factory=dict)  # dataset options of the run (load_problems names)


def apps_sample() -> Sample:
    io_stdin = {"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]}
    io_call = {"inputs": [[1, 2], [3, 4]], "outputs": [[3], [7]], "fn_name": "add"}
    rows = [
        {"problem_id": 10, "question": "Double n.", "solutions": json.dumps([ECHO_DOUBLE]),
         "input_output": json.dumps(io_stdin), "difficulty": "introductory", "url": "", "starter_code": ""},
        {"problem_id": 11, "question": "Add a and b.", "solutions": json.dumps(["def add(a, b):\n    return a + b\n"]),
         "input_output": json.dumps(io_call), "difficulty": "interview", "url": "", "starter_code": "def add(a, b):"},
    ]
    return Sample(rows, {"10": ECHO_DOUBLE, "11": "def add(a, b):\n    return a + b\n"},
                  {"10": ECHO_WRONG, "11": "def add(a, b):\n    return a - b\n"},
                  {"10": "introductory", "11": "interview"})


def taco_sample() -> Sample:
    io_stdin = {"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]}
    row = {"question": "Double n.", "solutions": json.dumps([ECHO_DOUBLE]), "starter_code": "",
           "input_output": json.dumps(io_stdin), "difficulty": "MEDIUM", "raw_tags": "['math']", "name": None,
           "source": "codeforces", "tags": "['Mathematics']", "skill_types": "['Math']", "url": "",
           "Expected Auxiliary Space": None, "time_limit": "1.0 seconds", "date": None, "picture_num": "0",
           "memory_limit": "256.0 megabytes", "Expected Time Complexity": None}
    return Sample([row, {**row, "difficulty": "HARD"}], {"0": ECHO_DOUBLE, "1": ECHO_DOUBLE},
                  {"0": ECHO_WRONG, "1": ECHO_WRONG}, {"0": "MEDIUM", "1": "HARD"})


def encode_private(tests: list[dict]) -> str:
    """LiveCodeBench's encoding of private tests: base64(zlib(pickle(JSON text)))."""
    import base64
    import pickle
    import zlib

    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


def lcb_sample() -> Sample:
    stdin = [{"input": "2\n", "output": "4\n", "testtype": "stdin"}]
    private = [{"input": "5\n", "output": "10\n", "testtype": "stdin"}]
    functional = [{"input": "[1, 2]\n3", "output": "[4, 5]", "testtype": "functional"}]
    base = {"question_title": "t", "contest_id": "c", "starter_code": "", "metadata": "{}"}
    rows = [
        {**base, "question_content": "Double n.", "platform": "atcoder", "question_id": "abc001_a",
         "contest_date": "2024-01-06T00:00:00", "difficulty": "easy", "public_test_cases": json.dumps(stdin),
         "private_test_cases": encode_private(private)},
        {**base, "question_content": "Add k to each.", "platform": "leetcode", "question_id": "3001",
         "contest_date": "2024-05-04T18:30:00", "difficulty": "medium", "public_test_cases": json.dumps(functional),
         "private_test_cases": json.dumps(functional), "metadata": json.dumps({"func_name": "addAll"}),
         "starter_code": "class Solution:\n    def addAll(self, nums: List[int], k: int) -> List[int]:\n        "},
    ]
    right = "class Solution:\n    def addAll(self, nums, k):\n        return [x + k for x in nums]\n"
    wrong = "class Solution:\n    def addAll(self, nums, k):\n        return [x - k for x in nums]\n"
    return Sample(rows, {"abc001_a": ECHO_DOUBLE, "3001": right}, {"abc001_a": ECHO_WRONG, "3001": wrong},
                  {"abc001_a": "easy", "3001": "medium"})


def codecontests_sample() -> Sample:
    def tests(*pairs: tuple[str, str]) -> dict:
        return {"input": [i for i, _ in pairs], "output": [o for _, o in pairs]}

    base = {"description": "Double n.", "difficulty": 7, "cf_contest_id": 1, "cf_index": "A", "cf_points": 0.0,
            "cf_tags": ["math"], "is_description_translated": False, "untranslated_description": "",
            "time_limit": {"seconds": 2, "nanos": 0}, "memory_limit_bytes": 256000000, "input_file": "",
            "output_file": "", "public_tests": tests(("2\n", "4\n")), "private_tests": tests(("5\n", "10\n")),
            "generated_tests": tests(("7\n", "14\n")),
            "solutions": {"language": [3, 2], "solution": [ECHO_DOUBLE, "int main() {}"]},
            "incorrect_solutions": {"language": [3], "solution": [ECHO_WRONG]}}
    rows = [{**base, "name": "1_A. Double", "source": 2, "cf_rating": 800},
            {**base, "name": "2_B. Double again", "source": 1, "cf_rating": 0}]
    return Sample(rows, {"1_A": ECHO_DOUBLE, "2_B": ECHO_DOUBLE}, {"1_A": ECHO_WRONG, "2_B": ECHO_WRONG},
                  {"1_A": "codeforces", "2_B": "codechef"})


SAMPLES = {"apps": apps_sample, "taco": taco_sample, "livecodebench": lcb_sample, "codecontests": codecontests_sample}
EACH_ENTRY = pytest.mark.parametrize("name", list(TABLE))


def test_every_entry_has_a_sample() -> None:
    assert set(SAMPLES) == set(TABLE)


def write_layouts(rows: list[dict], folder: Path) -> list[Path]:
    """The rows as a JSON Lines file, and as a Parquet shard in the `push_to_hub` layout of a repository."""
    folder.mkdir(parents=True, exist_ok=True)
    jsonl = folder / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    repo = folder / "repo"
    (repo / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), repo / "data" / "test-00000-of-00001.parquet")
    return [jsonl, repo]


@EACH_ENTRY
def test_each_entry_loads_from_its_layouts_and_selects_by_its_tiers(name: str, tmp_path: Path) -> None:
    sample, entry = SAMPLES[name](), TABLE[name]
    assert set(sample.tiers.values()) <= set(entry.vocabulary())
    for path in write_layouts(sample.rows, tmp_path):
        problems = load_problems(str(path), max_tests=0, **sample.options)
        assert {p.id: p.difficulty for p in problems} == sample.tiers, path
        assert not problems.skipped
        one = next(iter(sample.tiers.items()))
        chosen = load_problems(str(path), difficulty=one[1].swapcase(), **sample.options)  # any case
        assert [p.id for p in chosen] == [pid for pid, tier in sample.tiers.items() if tier == one[1]]


@EACH_ENTRY
def test_each_entry_scores_through_the_api_under_its_own_judge(name: str, tmp_path: Path) -> None:
    sample, entry = SAMPLES[name](), TABLE[name]
    path = write_layouts(sample.rows, tmp_path)[0]
    problems = load_problems(str(path), max_tests=0, **sample.options)
    with Evaluator(workers=1, judge=entry.judge) as ev:
        right = [ev.score(p, sample.right[p.id]) for p in problems]
        wrong = [ev.score(p, sample.wrong[p.id]) for p in problems]
        summary = ev.summary(right, problems)
    assert all(r.passed for r in right), [(r.id, r.verdict, r.reason) for r in right if not r.passed]
    assert not any(r.passed for r in wrong)
    per_tier = summary.figures["per_tier"]
    assert list(per_tier)[: len(entry.tiers)] == list(entry.tiers)  # the dataset's tiers, in its order
    assert {t: f["problems"] for t, f in per_tier.items() if f["problems"]} == {
        t: list(sample.tiers.values()).count(t) for t in set(sample.tiers.values())}


@EACH_ENTRY
def test_each_entry_runs_in_the_plugin_with_xdist_into_its_reports(name: str, pytester: pytest.Pytester) -> None:
    sample, entry = SAMPLES[name](), TABLE[name]
    path = write_layouts(sample.rows, pytester.path / "data")[1]
    folder = pytester.path / "cands"
    folder.mkdir()
    for pid, program in sample.right.items():
        (folder / f"{pid}.py").write_text(program)
    options = [f"--apps-{k.replace('_', '-')}={v}" for k, v in sample.options.items()]
    result = run(pytester, f"--apps-dataset={path}", "--apps-candidates=cands", f"--apps-judge={entry.judge}",
                 "--apps-html=r.html", "--apps-markdown=r.md", "-n", "2", "-p", "no:cacheprovider", *options)
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "reports" / "apps-report.json").read_text())
    figures = report["summary"] if "summary" in report else report
    text = json.dumps(figures)
    assert all(f'"{tier}"' in text for tier in sample.tiers.values())
    markdown = (pytester.path / "r.md").read_text()
    assert all(tier in markdown for tier in sample.tiers.values())
    assert (pytester.path / "r.html").is_file()


def test_an_unknown_tier_names_every_datasets_tiers_before_anything_is_read() -> None:
    with pytest.raises(TierError) as caught:
        Selection(difficulties=["expert"])
    message = str(caught.value)
    assert message.startswith("--apps-difficulty: unknown tier 'expert'; use one of introductory")
    assert all(entry.title in message for entry in TABLE.values()) and "\n" not in message


def test_recognition_picks_the_most_specific_entry_and_apps_last() -> None:
    assert table.entry_of({"problem_id": 1, "question": "q"}).name == "apps"
    assert table.entry_of({"question": "q", "skill_types": "[]"}).name == "taco"
    assert table.entry_of({}).name == "apps"  # no id: refused there, with the row named
    assert table.entry_of({"question_content": "q", "public_test_cases": "[]"}).name == "livecodebench"
    assert table.entry_of({"name": "1_A", "public_tests": {}, "time_limit": {}}).name == "codecontests"  # not TACO
