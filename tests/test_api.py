"""The Python API (`pytest_apps.Evaluator`, `load_problems`): the documented example, and equivalence with the
plugin: the same problems and programs give the same per-test outcomes and summary figures both ways."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import UNUSED_PLUGINS

from pytest_apps import Evaluator, Problem, ProblemList, ProblemResult, Summary, load_problems
from pytest_apps.dataset.problems import case_order
from pytest_apps.dataset.loading import sample_path

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
TIMEOUT = "0.5"

README_EXAMPLE = """\
from pathlib import Path
from pytest_apps import Evaluator, load_problems

problems = load_problems(dataset="sample")  # or "codeparrot/apps", limit=50, difficulty="interview"
programs = {p.id: Path(f"solutions/{p.id}.py").read_text() for p in problems}

with Evaluator(timeout=4.0) as ev:  # warm executors, one per core
    results = ev.score_many([(p, programs[p.id]) for p in problems])  # parallel, in input order
    for r in results:
        print(r.id, r.verdict, f"{r.tests_passed}/{r.tests_total}")
    print("strict accuracy:", ev.summary(results, problems).figures["strict_accuracy"])
"""

# Two program sets over the sample problems; between them every outcome kind the brief names.
PROGRAM_SETS: dict[str, dict[str, str | None]] = {
    "failing": {
        # right on some tests, wrong answer on the others
        "900001": "a, b = map(int, input().split())\nprint(a + b if a >= 0 else a - b)\n",
        # runtime error (call-based)
        "900002": "def reverse_words(s):\n    raise ValueError('nope')\n",
        # compile error
        "900003": "def broken(:\n    pass\n",
        # no file at all: no code
        "900004": None,
        # timeout (short --apps-timeout), asleep: no CPU taken from the suite's other tests
        "900005": "import time\nwhile True:\n    time.sleep(60)\n",
        # correct (the bundled solution)
        "900006": "<solution>",
    },
    "mixed": {
        "900001": "<solution>",
        # wrong answer (call-based): returns its input
        "900002": "def reverse_words(s):\n    return s\n",
        # an empty file: no code on every test
        "900003": "",
        # runtime error by exit status (call-based program that exits)
        "900004": "import sys\nclass Solution:\n    def twoSum(self, nums, target):\n        sys.exit(3)\n",
        # stdin program that crashes on some inputs only
        "900005": "import sys\nn = sys.stdin.read().split()\nprint(1 // (len(n) % 2))\n",
        "900006": "<solution>",
    },
}

EXTRA_ROWS = [
    # inputs and outputs differ in length: a "broken" problem that scores 0 and runs nothing
    {
        "problem_id": 900101,
        "question": "Echo the input.",
        "input_output": json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n"]}),
        "difficulty": "interview",
        "starter_code": "",
    },
    # no usable tests: a skipped row, counted in the figures
    {
        "problem_id": 900102,
        "question": "Nothing to test.",
        "input_output": "",
        "difficulty": "interview",
        "starter_code": "",
    },
]


def program_text(pid: str, spec: str | None) -> str | None:
    if spec == "<solution>":
        return (SOLUTIONS / f"{pid}.py").read_text()
    return spec


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A report without what legitimately differs between runs and front ends (timings, memory, node
    ids, settings: the plugin has no fail_fast, the API no candidates folder)."""
    # (the machine's slowdown measured around the tests is a timing too, and so is whether a verdict met during a
    # measured slowdown was confirmed: the verdicts themselves are compared)
    summary = {k: v for k, v in document["summary"].items()
               if k not in ("wall_time", "speed_range", "speed_credited", "confirmations", "confirmations_changed")}
    problems = [
        {
            **{k: v for k, v in p.items() if k not in ("tests", "first_failure", "first_failure_nodeid", "reason")},
            # a no-code reason names the program's file as each front end spells it; a timeout's, the own time
            # measured afresh in each run
            "reason": None if p.get("verdict") == "no_code" or not isinstance(p.get("reason"), str)
            else re.sub(r"own time [0-9.]+ s", "own time", p["reason"]),
            "tests": [(t["case"], t["kind"], t["step"]) for t in p["tests"]],
            **({"first_failure_detail": {**p["first_failure_detail"], "reason": re.sub(
                r"own time [0-9.]+ s", "own time", str(p["first_failure_detail"].get("reason")))}}
               if isinstance(p.get("first_failure_detail"), dict) else {}),
        }
        for p in document["problems"]
    ]
    return {
        "version": document["version"],
        "source": {k: v for k, v in document["source"].items() if k != "index"},  # cached or not
        "summary": summary,
        "skipped_rows": document["skipped_rows"],
        "problems": problems,
    }


@pytest.fixture
def rows_file(pytester: pytest.Pytester) -> Path:
    """The bundled sample plus a broken problem and an unusable row, as a local dataset file (inside the
    project folder: pytest takes the common folder of path arguments as its rootdir)."""
    path = pytester.path / "rows.jsonl"
    lines = sample_path().read_text().splitlines()
    path.write_text("\n".join([*lines, *(json.dumps(r) for r in EXTRA_ROWS)]) + "\n")
    return path


# --------------------------------------------------------------------------------------------- README


def test_readme_example_runs_as_written(pytester: pytest.Pytester) -> None:
    shutil.copytree(SOLUTIONS, pytester.path / "solutions")
    (pytester.path / "example.py").write_text(README_EXAMPLE)
    result = pytester.run(sys.executable, "example.py")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["900001 pass 5/5", "900006 pass 4/4", "strict accuracy: 1.0"])


# ----------------------------------------------------------------------------------------- equivalence


@pytest.mark.parametrize("fail_fast", [False, True], ids=["full", "fail_fast"])
@pytest.mark.parametrize("set_name", sorted(PROGRAM_SETS))
def test_plugin_and_api_agree(pytester: pytest.Pytester, rows_file: Path, set_name: str, fail_fast: bool) -> None:
    agree(pytester, rows_file, set_name, fail_fast)


def test_plugin_and_api_agree_under_the_apps_judge_with_checkers(pytester: pytest.Pytester, rows_file: Path) -> None:
    (pytester.path / "checks").mkdir()
    (pytester.path / "checks" / "900001.py").write_text(
        "def check(input, expected, got):\n    return got.split() == expected.split(), 'another sum'\n")
    api = agree(pytester, rows_file, "mixed", False, judge="apps", checkers="checks")
    assert api["settings"]["judge"] == "apps" and api["settings"]["checkers"] == "checks"
    verdicts = {p["id"]: p["verdict"] for p in api["problems"]}
    assert verdicts["900001"] == verdicts["900006"] == "pass" and verdicts["900002"] == "fail"
    assert {t["step"] for t in api["problems"][0]["tests"]} == {"checker"}
    assert {t["step"] for t in api["problems"][5]["tests"]} == {"apps:unwrap"}


def agree(pytester: pytest.Pytester, rows_file: Path, set_name: str, fail_fast: bool, judge: str = "seed",
          checkers: str | None = None) -> dict[str, Any]:
    """Run the program set through the plugin and the API; assert that both give the same report."""
    programs = PROGRAM_SETS[set_name]
    folder = pytester.path / "solutions"
    folder.mkdir()
    for pid, spec in programs.items():
        text = program_text(pid, spec)
        if text is not None:
            (folder / f"{pid}.py").write_text(text)
    (folder / "900101.py").write_text("print(input())\n")

    run = pytester.runpytest_subprocess(
        *UNUSED_PLUGINS, "-p", "no:cacheprovider", "--apps-dataset", rows_file.name, "--apps-timeout", TIMEOUT,
        "--apps-report", "reports/plugin.json", *(["--apps-fail-fast"] if fail_fast else []),
        "--apps-judge", judge, *(["--apps-checkers", checkers] if checkers else []),
    )
    assert run.ret == 1  # some cases fail
    plugin = json.loads((pytester.path / "reports" / "plugin.json").read_text())

    problems = load_problems(dataset=str(rows_file))
    pairs: list[tuple[Problem, str | None]] = []
    names: list[str | None] = []
    for p in problems:
        file = folder / f"{p.id}.py"
        pairs.append((p, file.read_text() if file.exists() else None))
        names.append(str(file.resolve()))
    checkers_path = None if checkers is None else pytester.path / checkers
    with Evaluator(workers=2, timeout=float(TIMEOUT), fail_fast=fail_fast, judge=judge, checkers=checkers_path) as ev:
        results = ev.score_many(pairs, names=names)
        api = ev.report(results, problems)
        api["settings"]["checkers"] = checkers

    assert comparable(api) == comparable(plugin)
    # the report is the plugin's format, key for key (but the plugin's `run` section: its record store, resume
    # and interruptions)
    assert list(api) == [key for key in plugin if key != "run"]
    assert list(api["summary"]) == list(plugin["summary"])
    assert [list(p) for p in api["problems"]] == [list(p) for p in plugin["problems"]]
    json.dumps(api)  # plain data
    kinds = {t["kind"] for p in api["problems"] for t in p["tests"]}
    if fail_fast:
        assert api["summary"]["tests_run"] < api["summary"]["tests_total"]
    elif set_name == "failing":
        assert {"pass", "wrong_answer", "runtime_error", "compile_error", "timeout"} <= kinds
        verdicts = {p["id"]: p["verdict"] for p in api["problems"]}
        assert verdicts["900004"] == "no_code" and verdicts["900101"] == "broken"
        assert api["summary"]["skipped_rows"] == 1
    else:
        assert {"pass", "wrong_answer", "runtime_error"} <= kinds
        # the empty program: no code, its tests counted as no code and none as run, by both front ends alike
        no_code = next(p for p in api["problems"] if p["id"] == "900003")
        assert (no_code["verdict"], no_code["tests_run"], no_code["tests"]) == ("no_code", 0, [])
        assert api["summary"]["outcomes"]["no_code"] == no_code["tests_total"] == 5
    return api


# --------------------------------------------------------------------------------------------- the API


@pytest.fixture(scope="module")
def sample() -> ProblemList:
    return load_problems(dataset="sample")


@pytest.fixture(scope="module")
def evaluator() -> Any:
    with Evaluator(workers=2, timeout=float(TIMEOUT)) as ev:
        yield ev


def solution(pid: str) -> str:
    return (SOLUTIONS / f"{pid}.py").read_text()


def light(result: ProblemResult) -> dict[str, Any]:
    data = result.to_dict()
    data["tests"] = [(t["case"], t["kind"], t["step"]) for t in data["tests"]]
    return data


def test_load_problems_is_the_plugins_selection(sample: ProblemList) -> None:
    assert [p.id for p in sample] == ["900001", "900002", "900003", "900004", "900005", "900006"]
    assert all(isinstance(p, Problem) for p in sample)
    assert sample.source["dataset"] == "sample" and sample.skipped == [] and sample.missing == []
    with pytest.warns(UserWarning, match=r"only: 42 is not in the data"):
        picked = load_problems(dataset="sample", difficulty="competition", only=[900005, "900006,42"])
    assert [p.id for p in picked] == ["900005", "900006"] and picked.missing == ["42"]
    assert [p.id for p in load_problems(dataset="sample", difficulty=["interview"], limit=1)] == ["900003"]
    assert [p.n_cases for p in load_problems(dataset="sample", max_tests=2)] == [2] * 6
    assert [p.id for p in load_problems(dataset="sample", offset=4)] == ["900005", "900006"]
    with pytest.raises(ValueError):
        load_problems(dataset="sample", difficulty="expert")
    with pytest.raises(ValueError):
        load_problems(dataset="sample", limit=-1)


def test_score_many_keeps_input_order_and_matches_score(sample: ProblemList, evaluator: Evaluator) -> None:
    wrong = "print(0)\n"
    pairs = [(p, solution(p.id) if i % 2 else wrong) for i, p in enumerate([*sample, *reversed(sample)])]
    many = evaluator.score_many(pairs)
    assert [r.id for r in many] == [p.id for p, _ in pairs]
    one_by_one = [evaluator.score(p, program) for p, program in pairs]
    assert [light(r) for r in many] == [light(r) for r in one_by_one]
    assert [r.verdict for r in many] == ["pass" if i % 2 else "fail" for i in range(len(pairs))]
    assert all(r.program == wrong for r in many if r.verdict == "fail")
    assert all(r.program is None for r in many if r.verdict == "pass")


def test_fail_fast_stops_at_the_first_failure_with_the_same_verdict(sample: ProblemList) -> None:
    programs = {pid: program_text(pid, spec) for pid, spec in PROGRAM_SETS["failing"].items()}
    pairs = [(p, programs[p.id]) for p in sample]
    with Evaluator(workers=2, timeout=float(TIMEOUT)) as full_ev:
        full = full_ev.score_many(pairs)
    with Evaluator(workers=2, timeout=float(TIMEOUT), fail_fast=True) as fast_ev:
        fast = fast_ev.score_many(pairs)
    for problem, a, b in zip(sample, full, fast):
        assert (a.id, a.verdict) == (b.id, b.verdict)
        if a.verdict == "fail":
            ran = [t["case"] for t in b.tests]
            failed = [t["case"] for t in b.tests if t["kind"] not in ("pass", "harness_error")]
            order = case_order(problem, True)  # cheapest input first, as the plugin's --apps-fail-fast
            assert len(failed) == 1 and sorted(order[: order.index(failed[0]) + 1]) == ran  # nothing after it
            assert b.tests_run == len(ran) and b.tests_passed == len(ran) - 1  # unrun tests never pass
            assert b.program == programs[b.id]
        else:
            assert light(a) == light(b)
    timeout = next(r for r in fast if r.id == "900005")
    assert timeout.tests_run == 1 and timeout.tests_total == 5
    assert fast_ev.summary(fast).figures["test_case_average_partial"]


def test_max_tests_is_the_plugins_cap(sample: ProblemList, evaluator: Evaluator) -> None:
    capped = load_problems(dataset="sample", max_tests=2)
    broken = "a, b = map(int, input().split())\nprint(a + b + (a < 0))\n"  # fails test 1 only
    programs = {p.id: solution(p.id) for p in sample} | {"900001": broken}
    with Evaluator(workers=2, max_tests=2) as ev:
        over_full = ev.score_many([(p, programs[p.id]) for p in sample])
    over_capped = evaluator.score_many([(p, programs[p.id]) for p in capped])
    assert [light(r) for r in over_full] == [light(r) for r in over_capped]
    assert over_full[0].verdict == "fail" and over_full[0].tests_total == 2


def test_no_program_empty_program_and_summary(sample: ProblemList, evaluator: Evaluator) -> None:
    results = evaluator.score_many([(sample[0], None), (sample[1], ""), (sample[2], solution(sample[2].id))])
    assert [r.verdict for r in results] == ["no_code", "no_code", "pass"]  # no file, an empty file
    assert [r.samples for r in results] == [0, 1, 1] and [r.score for r in results] == [0.0, 0.0, 1.0]
    summary = evaluator.summary(results, sample)
    assert isinstance(summary, Summary)
    assert summary.figures["problems"] == 3 and summary.figures["passed"] == 1
    assert summary.figures["problems_with_code"] == 1
    assert summary.figures["outcomes"]["no_code"] == sample[0].n_cases + sample[1].n_cases
    assert set(summary.to_dict()) == {"summary", "skipped_rows", "problems"}


def test_problems_without_test_data_are_refused_before_anything_runs(
    sample: ProblemList, evaluator: Evaluator
) -> None:
    copy = dataclasses.replace(sample[0])
    with pytest.raises(LookupError, match="load_problems"):
        evaluator.score_many([(sample[1], solution(sample[1].id)), (copy, "print(1)")])
    with pytest.raises(TypeError):
        evaluator.score(sample[0], b"print(1)")  # type: ignore[arg-type]


def test_closed_evaluator_refuses_work(sample: ProblemList) -> None:
    ev = Evaluator(workers=1)
    assert ev.score(sample[0], solution(sample[0].id)).passed
    ev.close()
    ev.close()
    with pytest.raises(RuntimeError, match="closed"):
        ev.score(sample[0], solution(sample[0].id))


def test_evaluator_options_are_checked() -> None:
    for kwargs in ({"workers": 0}, {"timeout": 0}, {"memory": -1}):
        with pytest.raises(ValueError):
            Evaluator(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs, says", [
    ({"timeout": 0}, "timeout: 0.0 must be more than 0 seconds"),
    ({"timeout": "soon"}, "timeout: 'soon' is not a valid float"),
    ({"memory": "lots"}, "memory: 'lots' is not a size; give bytes or a size such as 512M"),
    ({"memory": "1M", "judge": "apps"}, "memory: 1M is too small to start a Python program; give at least"),
    ({"judge": "hendrycks"}, "judge: unknown judge 'hendrycks'; use seed, apps, taco, lcb or codecontests"),
    ({"checkers": "nowhere"}, "checkers: nowhere is not a folder; give a folder of <problem_id>.py checkers"),
], ids=lambda value: ",".join(value) if isinstance(value, dict) else None)
def test_the_api_refuses_what_the_plugin_refuses_naming_its_parameter(kwargs: dict, says: str) -> None:
    """The API's options go through the plugin's option table: the same check and message, with the parameter's
    name where the plugin names its flag."""
    with pytest.raises(ValueError) as info:
        Evaluator(**kwargs)
    assert str(info.value).startswith(says) and "\n" not in str(info.value)


def test_load_problems_refuses_what_the_plugin_refuses_naming_its_parameter() -> None:
    with pytest.raises(ValueError, match=r"^limit: -1 is negative; give 0 or more problems$"):
        load_problems(dataset="sample", limit=-1)


def test_readme_example_is_this_modules_text() -> None:
    """The Python API page (docs/api.md) carries the same example (kept in one place: this test)."""
    text = (REPO / "docs" / "api.md").read_text()
    assert textwrap.dedent(README_EXAMPLE).strip() in text


def test_load_problems_refuses_ids_that_are_all_absent_naming_them_and_the_data() -> None:
    """`only=[absent id]` is an error naming the ids and what the data holds, never a silent empty list."""
    with pytest.raises(ValueError) as info:
        load_problems(dataset="sample", only=["4001", 42])
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("only: 4001, 42 are not in the data (sample, split test); it holds problem ids ")
    assert "900001, 900002, 900003" in message
