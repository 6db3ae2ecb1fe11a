"""verl's `data_source` names a dataset of the table, and the reward functions score its completions with that
dataset's judge profile and limits: real programs on real executors, on the real CodeContests and LiveCodeBench
rows (whole rows as the ground truth, with their test sets, limits and encoded private tests), each beside the
same program under an unknown `data_source` (today's default), where the two judges' comparisons differ."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path

import pytest

from pytest_apps.api import problem_from_row
from pytest_apps.dataset import table
from pytest_apps.dataset.model import DatasetError
from pytest_apps.rewards import (
    CodeReward,
    NotScored,
    close_scorers,
    compute_score,
    compute_score_async,
    compute_score_batch,
    routed,
)

REPO = Path(__file__).resolve().parent.parent
# LiveCodeBench 1873_A (a Codeforces stdin problem: YES or NO per test case)
SHORT_SORT = ("for _ in range(int(input())):\n    s = input().strip()\n"
              "    print({pad}'YES' if sum(a != b for a, b in zip(s, 'abc')) in (0, 2) else {pad}'NO')\n")
# LiveCodeBench 3753 (a LeetCode functional problem)
MAX_DIFFERENCE = ("from collections import Counter\n\nclass Solution:\n    def maxDifference(self, s: str) -> int:\n"
                  "        c = Counter(s).values()\n"
                  "        return max(v for v in c if v % 2) - min(v for v in c if v % 2 == 0)\n")
UNKNOWN = "my_code_rows"  # a data_source no entry of the table names: today's default judge and limits
OPTIONS = {"workers": 1, "shape": "fraction"}


def fenced(code: str) -> str:
    return f"Here is my program:\n```python\n{code}```\n"


def rows(shared: Path, folder: str, name: str) -> list[dict]:
    return [json.loads(line) for line in (shared / folder / name).read_text().splitlines() if line.strip()]


def cc_row_and_solution(shared: Path) -> tuple[dict, str]:
    """CodeContests 1575_D (Divisible by Twenty-Five: one count per test, up to 3600000) and its first human Python 3
    solution."""
    row = next(r for r in rows(shared, "code_contests", "rows.jsonl") if r["name"].startswith("1575_D"))
    program = next(s for lang, s in zip(row["solutions"]["language"], row["solutions"]["solution"]) if lang == 3)
    return row, program


def off_by_one_when_large(program: str) -> str:
    """`program` printing its count plus one when the count is 100000 or more: right within the seed judge's relative
    tolerance (1e-5 of the expected), wrong under CodeContests' absolute one (1e-5)."""
    return ("import builtins\n_print = builtins.print\n"
            "def print(*args, **kwargs):\n"
            "    if len(args) == 1 and isinstance(args[0], int) and args[0] >= 100000:\n"
            "        args = (args[0] + 1,)\n"
            "    _print(*args, **kwargs)\n" + program)


def test_each_data_source_name_chooses_its_entrys_judge_and_limits_unless_the_caller_chose() -> None:
    names = table.data_source_names()
    for name, dataset in names.items():
        entry = table.TABLE[dataset]
        assert table.of_data_source(name) is entry and table.of_data_source(f" {name.upper()} ") is entry
        chosen = routed(name, {})
        assert chosen.get("judge", "seed") == entry.judge and chosen.get("limits", "fixed") == (
            "row" if entry.row_limits else "fixed")
        assert routed(name, {"judge": "apps", "limits": "fixed"}) == {"judge": "apps", "limits": "fixed"}
    assert {names[n] for n in ("apps", "taco", "lcb", "livecodebench", "codecontests", "code_contests")} == set(
        table.TABLE)
    assert names["livecodebench/code_generation_lite"] == "livecodebench"
    assert names["deepmind/code_contests"] == "codecontests"
    for unknown in ("codeforces", UNKNOWN, "", None, 3, "deepmind"):
        assert table.of_data_source(unknown) is None and routed(unknown, {"shape": "strict"}) == {"shape": "strict"}
    assert routed("apps", {}) == {}  # APPS keeps the default: the same scorer as an unknown name


def test_the_docs_table_lists_every_name_with_what_it_selects() -> None:
    text = (REPO / "docs" / "rewards.md").read_text()
    section = text.split("### `data_source`", 1)[1].split("\n### ", 1)[0]
    lines = {line.split("|")[2].strip(): line for line in section.splitlines() if re.match(r"\| `", line)}
    for name, dataset in table.data_source_names().items():
        entry = table.TABLE[dataset]
        line = next((row for row in lines.values() if f"`{name}`" in row.split("|")[1]), "")
        assert line, f"docs/rewards.md's data_source table does not list {name}"
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        assert cells[1] == entry.title and cells[2].startswith(f"`{entry.judge}`")
        assert cells[3] == ("`row`" if entry.row_limits else "`fixed`")


def test_a_codecontests_row_is_scored_by_its_testers_comparison_and_its_own_limits(shared_datasets: Path) -> None:
    """The whole CodeContests row as the ground truth (its private and generated tests, its 2 s and 512 MB): a human
    solution passes under `codecontests`; the same program off by one on large counts passes under the default judge
    (an unknown data_source) and fails under CodeContests' comparison; a program that holds 600 MiB passes under the
    default limits and fails by memory under the row's 512 MB."""
    row, program = cc_row_and_solution(shared_datasets)
    off = fenced(off_by_one_when_large(program))
    heavy = fenced("_held = bytearray(600 << 20)\nfor _i in range(0, len(_held), 4096):\n    _held[_i] = 1\n"
                   + program)
    try:
        right = compute_score("codecontests", fenced(program), row, {"index": 3}, **OPTIONS)
        assert right["score"] == 1.0 and right["tests_total"] == 20
        strict = compute_score("deepmind/code_contests", off, row, {"index": 3}, **OPTIONS)
        lenient = compute_score(UNKNOWN, off, row, {"index": 3}, **OPTIONS)
        assert lenient["score"] == 1.0
        assert 0.0 < strict["score"] < 1.0 and strict["tests_wrong_answer"] >= 1
        assert compute_score("codecontests", off, row, {"index": 3}, judge="seed", **OPTIONS)["score"] == 1.0
        # (its first 4 tests: each touches 600 MiB)
        held = compute_score("code_contests", heavy, row, {"index": 3}, max_tests=4, **OPTIONS)
        assert held["score"] == 0.0 and held["tests_memory_limit"] == held["tests_total"] == 4
        assert compute_score(UNKNOWN, heavy, row, {"index": 3}, max_tests=4, **OPTIONS)["score"] == 1.0
    finally:
        close_scorers()


def test_a_livecodebench_row_is_scored_as_livecodebench_scores_it(shared_datasets: Path) -> None:
    """The whole LiveCodeBench row as the ground truth (its private tests decoded without unpickling): a program that
    pads each line with a space passes under `lcb` (each line is stripped) and fails under the default judge (which
    keeps a line's leading space); a LeetCode functional row scores through the same call."""
    stdin_row = rows(shared_datasets, "lcb", "rows.jsonl")[0]
    functional = next(r for r in rows(shared_datasets, "lcb", "rows_public_only.jsonl") if r["question_id"] == "3753")
    padded = fenced(SHORT_SORT.format(pad="' ' + "))
    try:
        plain = compute_score("livecodebench", fenced(SHORT_SORT.format(pad="")), stdin_row, {"index": 0}, **OPTIONS)
        assert plain["score"] == 1.0 and plain["tests_total"] > 1
        assert compute_score("lcb", padded, stdin_row, {"index": 0}, **OPTIONS)["score"] == 1.0
        assert compute_score(UNKNOWN, padded, stdin_row, {"index": 0}, **OPTIONS)["score"] < 1.0
        call = compute_score("livecodebench/code_generation_lite", fenced(MAX_DIFFERENCE), functional, {"index": 1},
                             **OPTIONS)
        assert call["score"] == 1.0 and call["tests_total"] > 1
    finally:
        close_scorers()


# verl's own test of SandboxFusion on LiveCodeBench's test row 510: functional tests as LiveCodeBench writes them
OCCURRENCES = ("from typing import List\nfrom collections import defaultdict\n\nclass Solution:\n"
               "    def occurrencesOfElement(self, nums: List[int], queries: List[int], x: int) -> List[int]:\n"
               "        positions = defaultdict(list)\n"
               "        for idx, num in enumerate(nums):\n            positions[num].append(idx)\n"
               "        return [positions[x][k - 1] if k <= len(positions[x]) else -1 for k in queries]\n")
OCCURRENCES_TESTS = {"fn_name": "occurrencesOfElement",
                     "inputs": ["[1, 3, 1, 7]\n[1, 3, 2, 4]\n1", "[1, 2, 3]\n[10]\n5"],
                     "outputs": ["[0, -1, 2, -1]", "[-1]"]}


def test_livecodebench_tests_as_input_output_are_read_as_livecodebench_writes_them() -> None:
    """An input_output ground truth under a LiveCodeBench data_source: a functional test's input is its text (one
    JSON value per line) and its output JSON text, as LiveCodeBench and verl's SandboxFusion path hold them; under an
    unknown data_source the same tests are APPS's (each input one argument) and the program fails them. The same
    problem's arguments as lists (APPS's way of writing them) read the same under LiveCodeBench."""
    as_lists = {"fn_name": "occurrencesOfElement", "inputs": [[[1, 3, 1, 7], [1, 3, 2, 4], 1], [[1, 2, 3], [10], 5]],
                "outputs": [[0, -1, 2, -1], [-1]]}
    try:
        assert compute_score("livecodebench", fenced(OCCURRENCES), OCCURRENCES_TESTS, {"index": 0},
                             **OPTIONS)["score"] == 1.0
        assert compute_score("lcb", fenced(OCCURRENCES), json.dumps(as_lists), {"index": 1}, **OPTIONS)["score"] == 1.0
        assert compute_score(UNKNOWN, fenced(OCCURRENCES), OCCURRENCES_TESTS, {"index": 0}, **OPTIONS)["score"] == 0.0
        with pytest.raises(NotScored, match="ground_truth as LiveCodeBench tests: the tests need equal-length"):
            compute_score("lcb", fenced(OCCURRENCES), {**OCCURRENCES_TESTS, "outputs": ["[-1]"]}, {"index": 2},
                          **OPTIONS)
    finally:
        close_scorers()


def test_a_batch_mixing_datasets_scores_each_completion_under_its_own(shared_datasets: Path) -> None:
    """verl's batch and async entry points with CodeContests, LiveCodeBench and unknown rows in one batch: each
    completion gets its own dataset's verdict, in the batch's order, with the same keys."""
    cc_row, program = cc_row_and_solution(shared_datasets)
    lcb_row = rows(shared_datasets, "lcb", "rows.jsonl")[0]
    off = fenced(off_by_one_when_large(program))
    padded = fenced(SHORT_SORT.format(pad="' ' + "))
    sources = ["codecontests", UNKNOWN, "lcb", UNKNOWN]
    texts, truths = [off, off, padded, padded], [cc_row, cc_row, lcb_row, lcb_row]
    try:
        batch = compute_score_batch(sources, texts, truths, [{"index": i} for i in range(4)], **OPTIONS)
        scores = [b["score"] for b in batch]
        assert scores[0] < 1.0 and scores[1] == 1.0 and scores[2] == 1.0 and scores[3] < 1.0
        assert len({tuple(b) for b in batch}) == 1

        async def gathered() -> list[dict]:
            return await asyncio.gather(*(compute_score_async(s, t, g, {"index": i}, **OPTIONS)
                                          for i, (s, t, g) in enumerate(zip(sources, texts, truths))))

        assert [b["score"] for b in asyncio.run(gathered())] == scores
    finally:
        close_scorers()


def test_a_row_its_dataset_refuses_is_told_what_that_dataset_needs(shared_datasets: Path) -> None:
    """A row given alone (the API's `problem_from_row`, verl's whole-row ground truth) that its dataset cannot read
    gets the one-line error in its own dataset's terms: a CodeContests row without tests in the sets that count is
    told of those sets, a LiveCodeBench row of its test cases, an APPS row of its input_output; none is told of
    another dataset's fields."""
    cc_row, _ = cc_row_and_solution(shared_datasets)
    no_tests = {**cc_row, **{f"{s}_tests": {"input": [], "output": []} for s in ("private", "generated")}}
    lcb_row = {**rows(shared_datasets, "lcb", "rows.jsonl")[0], "public_test_cases": "[]", "private_test_cases": ""}
    apps_row = {"problem_id": 7, "question": "q", "input_output": json.dumps({"inputs": ["1"], "outputs": []})}
    wanted = {"codecontests": (no_tests, "private_tests or generated_tests"),
              "livecodebench": (lcb_row, "public_test_cases"), "apps": (apps_row, "an input_output")}
    for name, (row, hint) in wanted.items():
        entry = table.TABLE[name]
        with pytest.raises(DatasetError) as refused:
            problem_from_row(entry.normalize(dict(row), "the test's row"), 3)
        message = str(refused.value)
        assert hint in message and "\n" not in message, (name, message)
        assert not any(other.fix in message for other in table.TABLE.values() if other.fix != entry.fix), message
    try:
        with pytest.raises(NotScored, match=r"no tests in the private, generated sets.*give it tests in a set"):
            compute_score("codecontests", "print(1)", no_tests, {"index": 3}, **OPTIONS)
    finally:
        close_scorers()


def test_trls_reward_reads_a_datasets_own_columns_and_data_source_chooses_its_judge(
        shared_datasets: Path, caplog: pytest.LogCaptureFixture) -> None:
    """TRL passes a dataset's columns as they are: LiveCodeBench and CodeContests rows in their hub schemas are read
    by their entries. `data_source` chooses the entry's judge and limits as verl's column does: a padded LiveCodeBench
    program passes under it and fails unnamed (with a warning naming the option), and an input_output column of
    LiveCodeBench's functional tests is read as LiveCodeBench writes them; a judge given by the caller is kept over
    the data_source's."""
    lcb_row = rows(shared_datasets, "lcb", "rows.jsonl")[0]
    cc_row, program = cc_row_and_solution(shared_datasets)
    padded = fenced(SHORT_SORT.format(pad="' ' + "))
    off = fenced(off_by_one_when_large(program))

    def columns(row: dict, n: int) -> dict:
        return {key: [value] * n for key, value in row.items()}

    named = CodeReward("fraction", workers=1, data_source="livecodebench")
    unnamed = CodeReward("fraction", workers=1)
    kept = CodeReward("fraction", workers=1, data_source="codecontests", judge="seed")
    try:
        assert (named.evaluator.judge, named.evaluator.settings.limits) == ("lcb", "row")
        assert named(prompts=["p"], completions=[padded], **columns(lcb_row, 1)) == [1.0]
        as_text = json.dumps(OCCURRENCES_TESTS)  # an input_output column of LiveCodeBench's functional tests
        assert named(prompts=["p"], completions=[fenced(OCCURRENCES)], input_output=[as_text]) == [1.0]
        assert unnamed(prompts=["p"], completions=[fenced(OCCURRENCES)], input_output=[as_text]) == [0.0]
        with caplog.at_level(logging.WARNING, logger="pytest_apps"):
            assert unnamed(prompts=["p"], completions=[padded], **columns(lcb_row, 1))[0] < 1.0
        assert any("LiveCodeBench rows are scored under the 'seed' judge profile; pass data_source='livecodebench'"
                   in r.getMessage() for r in caplog.records)
        assert unnamed(prompts=["p", "p"], completions=[off, fenced(program)], **columns(cc_row, 2)) == [1.0, 1.0]
        assert kept.evaluator.judge == "seed" and kept.evaluator.settings.limits == "row"
        assert kept(prompts=["p"], completions=[off], **columns(cc_row, 1)) == [1.0]
    finally:
        for reward in (named, unnamed, kept):
            reward.close()
