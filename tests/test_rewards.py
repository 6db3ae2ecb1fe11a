"""The trainers' reward functions (`pytest_apps.rewards`) with real programs on real executors, called exactly
as each trainer calls them (neither trainer is installed: TRL and verl pull torch):

* TRL's `GRPOTrainer._calculate_rewards`: ``reward_func(prompts=..., completions=..., completion_ids=...,
  **reward_kwargs)`` where reward_kwargs holds every dataset column but prompt/completion (one value per
  completion), ``trainer_state``, and in recent versions ``log_extra`` and ``log_metric``; completions are
  strings, or conversational: ``[[{"role": "assistant", "content": text}], ...]``; None becomes NaN.
* verl's naive reward manager: ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)`` plus
  ``custom_reward_function.reward_kwargs``; its batch manager: ``compute_score(data_sources=, solution_strs=,
  ground_truths=, extra_infos=, **reward_kwargs)``; a dict result's "score" is the reward.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import UNUSED_PLUGINS

from pytest_apps import Evaluator, load_problems
from pytest_apps.api import problem_from_row
from pytest_apps.dataset.loading import sample_path
from pytest_apps.dataset.rows import DatasetError
from pytest_apps.report.rollup import ProblemResult
from pytest_apps.rewards import (
    CodeReward,
    NotScored,
    RewardDetail,
    batch_figures,
    close_scorers,
    completion_text,
    compute_score,
    compute_score_batch,
    shape_of,
)

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
SAMPLE_ROWS = {str(r["problem_id"]): r for r in map(json.loads, sample_path().read_text().splitlines())}
# real rows with few tests each, so the plugin run stays short
SHARED_IDS = ("3040", "3177", "4245", "4559", "4655", "1303")


def fenced(code: str, draft: str = "print('draft')") -> str:
    """Model text as a reasoning model writes it: a draft inside the thinking, the answer after it."""
    return f"<think>\nLet me try\n```python\n{draft}\n```\n</think>\nHere is my solution:\n```python\n{code}```\n"


def trl_call(reward: CodeReward, completions: list[Any], **columns: Any) -> list[float | None]:
    """As GRPOTrainer calls a custom reward function (the state is an object, here a stand-in)."""
    return reward(prompts=["prompt"] * len(completions), completions=completions,
                  completion_ids=[[1, 2, 3]] * len(completions), trainer_state=object(), **columns)


def solution(pid: str) -> str:
    return (SOLUTIONS / f"{pid}.py").read_text()


@pytest.fixture(scope="module")
def strict() -> Any:
    with CodeReward("strict", timeout=1.0, workers=2) as reward:
        yield reward


@pytest.fixture(scope="module")
def fraction() -> Any:
    with CodeReward("fraction", timeout=1.0, workers=2) as reward:
        yield reward


# ------------------------------------------------------------------------------------------------ TRL


def test_trl_call_reads_the_rows_own_tests_and_conversational_or_plain_completions(
    strict: CodeReward, fraction: CodeReward,
) -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    wrong = "a, b = map(int, input().split())\nprint(a + b if a >= 0 else a - b)\n"  # right on 4 of 5 tests
    completions = [
        [{"role": "assistant", "content": fenced(solution("900001"))}],  # conversational
        fenced(wrong),  # plain text
        "I cannot solve this.",  # no code at all: a real 0
        [{"role": "assistant", "content": [{"type": "text", "text": fenced(solution("900001"))}]}],  # content parts
    ]
    columns = {"input_output": [io] * 4, "problem_id": ["900001"] * 4}
    assert trl_call(strict, completions, **columns) == [1.0, 0.0, 0.0, 1.0]
    assert trl_call(fraction, completions, **columns) == [1.0, 0.8, 0.0, 1.0]
    assert [d.verdict for d in fraction.last] == ["pass", "fail", "no_code", "pass"]
    assert fraction.last[1].kinds["pass"] == 4 and fraction.last[1].kinds["wrong_answer"] == 1
    assert strict.last[1].tests_run < 5  # strict stops each program at its first failure
    assert strict.__name__ == "apps_strict"  # TRL names the metric after the function


def test_trl_call_by_problem_id_into_a_loaded_split_with_call_based_problems() -> None:
    problems = load_problems("sample")
    with CodeReward("fraction", problems=problems, timeout=1.0, workers=2) as reward:
        ids = ["900002", "900002", "900006", "999999"]
        texts = [fenced(solution("900002")), fenced("def reverse_words(s):\n    return s\n"), fenced(solution("900006")),
                 fenced("print(1)")]
        rewards = trl_call(reward, texts, problem_id=ids)
        assert rewards[0] == 1.0 and rewards[2] == 1.0
        assert 0.0 <= rewards[1] < 1.0
        assert rewards[3] is None and reward.last[3].verdict == "not_applicable"  # unknown id: no reward, not 0
        assert "999999" in reward.last[3].reason


def test_the_dataset_name_is_loaded_on_first_use_and_rows_without_tests_get_no_reward(fraction: CodeReward) -> None:
    with CodeReward("strict", problems="sample", timeout=1.0, workers=1) as reward:
        assert trl_call(reward, [fenced(solution("900001"))], problem_id=[900001]) == [1.0]
    broken = json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n"]})
    empty = json.dumps({"inputs": [], "outputs": []})
    out = trl_call(fraction, [fenced("print(input())\n")] * 3, input_output=[broken, empty, None])
    assert out == [None, None, None]
    assert [d.verdict for d in fraction.last] == ["not_applicable"] * 3
    assert "differ in length" in fraction.last[0].reason and "no inputs" in fraction.last[1].reason


def test_trl_logging_callbacks_get_the_same_keys_every_batch(strict: CodeReward) -> None:
    metrics: dict[str, list[float]] = {}
    extras: dict[str, list[Any]] = {}
    seen: list[list[RewardDetail]] = []
    strict.on_batch = seen.append
    try:
        for texts in ([fenced(solution("900001"))], [fenced("print(0)"), "no code"]):
            strict(prompts=["p"] * len(texts), completions=texts, completion_ids=None,
                   input_output=[SAMPLE_ROWS["900001"]["input_output"]] * len(texts),
                   log_metric=lambda k, v: metrics.setdefault(k, []).append(v),
                   log_extra=lambda k, v: extras.setdefault(k, []).extend(v))
    finally:
        strict.on_batch = None
    assert {len(v) for v in metrics.values()} == {2}  # every key both times
    assert metrics["apps_strict/pass_rate"] == [1.0, 0.0] and metrics["apps_strict/no_code"] == [0.0, 1.0]
    assert metrics["apps_strict/tests_wrong_answer"][1] >= 1.0
    assert extras["apps_strict_verdict"] == ["pass", "fail", "no_code"]
    assert [len(batch) for batch in seen] == [1, 2]


def test_completion_text_of_each_shape() -> None:
    assert completion_text("x") == "x"
    assert completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) == "a"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "b"},
                                                             {"type": "image"}]}]) == "b"
    assert completion_text(None) == ""


# ------------------------------------------------------------------------------------ harness errors


@pytest.fixture
def failing_checker(tmp_path: Path) -> Path:
    """A checker that raises: the harness (not the program) fails on every test of problem 900001."""
    folder = tmp_path / "checks"
    folder.mkdir()
    (folder / "900001.py").write_text("def check(input, expected, got):\n    raise RuntimeError('checker bug')\n")
    return folder


def test_a_harness_error_is_no_reward_for_trl_and_an_exception_for_verl(failing_checker: Path) -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    text = fenced(solution("900001"))
    for shape in ("strict", "fraction"):
        with CodeReward(shape, checkers=failing_checker, timeout=1.0, workers=1) as reward:
            assert trl_call(reward, [text], input_output=[io], problem_id=["900001"]) == [None]
            detail = reward.last[0]
            assert detail.verdict == "harness_error" and detail.kinds["harness_error"] >= 1
            assert "checker" in detail.reason
            assert batch_figures(reward.last, reward.__name__)[f"apps_{shape}/harness_error"] == 1.0
    with pytest.raises(NotScored, match="harness_error"):
        compute_score(data_source="apps", solution_str=text, ground_truth=io, extra_info={"problem_id": "900001"},
                      checkers=str(failing_checker), timeout=1.0, workers=1)
    close_scorers()


def test_shapes_on_plain_results() -> None:
    def result(verdict: str, kinds: list[str], total: int) -> ProblemResult:
        return ProblemResult("1", "interview", "stdin", "c", verdict, tests_passed=kinds.count("pass"),
                             tests_run=len(kinds), tests_total=total,
                             tests=[{"case": i, "kind": k} for i, k in enumerate(kinds)])

    mixed = result("fail", ["pass", "harness_error", "wrong_answer"], 3)
    assert shape_of(mixed, "strict").reward == 0.0  # a real failure is a failure
    assert shape_of(mixed, "fraction").reward is None  # but the fraction is unknown
    only_harness = result("incomplete", ["pass", "harness_error"], 2)
    assert shape_of(only_harness, "strict").reward is None
    assert shape_of(result("fail", ["pass", "timeout"], 2), "fraction").reward == 0.5
    assert shape_of(None, "strict").verdict == "not_scored"


def test_the_continuous_shape_is_verls_partial_credit_on_the_first_ten_tests() -> None:
    def result(kinds: list[str], total: int | None = None) -> ProblemResult:
        verdict = "pass" if kinds.count("pass") == len(kinds) == (total or len(kinds)) else "fail"
        return ProblemResult("1", "interview", "stdin", "c", verdict, tests_passed=kinds.count("pass"),
                             tests_run=len(kinds), tests_total=total or len(kinds),
                             tests=[{"case": i, "kind": k} for i, k in enumerate(kinds)])

    def continuous(kinds: list[str], total: int | None = None) -> float | None:
        return shape_of(result(kinds, total), "continuous").reward

    assert continuous(["pass"] * 14) == 1.0  # every test passes
    # a failure on the 4th and on the 12th test: 9 of the first 10 pass, whatever comes after
    assert continuous(["pass"] * 3 + ["wrong_answer"] + ["pass"] * 7 + ["timeout"] + ["pass"] * 2) == 0.9
    assert continuous(["pass"] * 10 + ["wrong_answer"] * 4) == 1.0  # verl's shape: only the first 10 count
    assert continuous(["pass", "runtime_error", "pass", "wrong_answer"]) == 0.5  # fewer tests: over them all
    assert continuous(["pass"] * 3 + ["harness_error"] + ["wrong_answer"] * 2) is None  # one of the ten unknown
    assert continuous(["wrong_answer"] + ["pass"] * 10 + ["harness_error"]) == 0.9  # known: it failed
    assert shape_of(result(["pass"] * 11 + ["harness_error"]), "continuous").verdict == "harness_error"
    assert shape_of(result(["pass"] * 4, total=14), "continuous").verdict == "not_scored"  # the budget ran out
    assert continuous(["wrong_answer"] * 10, total=14) == 0.0  # the first ten ran: the rest cannot change it


# --------------------------------------------------------------------------------------------- verl


def test_verl_naive_and_batch_managers_calls() -> None:
    io = SAMPLE_ROWS["900002"]["input_output"]  # call-based: ground_truth carries fn_name
    options = {"shape": "fraction", "timeout": 1.0, "workers": 2}  # custom_reward_function.reward_kwargs
    try:
        good = compute_score(data_source="apps", solution_str=fenced(solution("900002")), ground_truth=io,
                             extra_info={"index": 3}, **options)
        assert good["score"] == 1.0 and good["passed"] == 1.0 and good["tests_pass"] == good["tests_total"] > 0
        by_id = compute_score(data_source="apps", solution_str=fenced(solution("900006")), ground_truth="900006",
                              extra_info=None, dataset="sample", **options)
        assert by_id["score"] == 1.0
        texts = [fenced(solution("900002")), "no code", fenced("def reverse_words(s):\n    return s\n")]
        batch = compute_score_batch(data_sources=["apps"] * 3, solution_strs=texts, ground_truths=[io] * 3,
                                    extra_infos=[{}, {}, {}], **options)
        assert [b["score"] for b in batch][:2] == [1.0, 0.0] and 0.0 <= batch[2]["score"] < 1.0
        assert len({tuple(b) for b in batch}) == 1  # the same keys for every item (verl stacks them)
        with pytest.raises(NotScored, match="not_applicable"):
            compute_score_batch(data_sources=["apps"], solution_strs=["x"],
                                ground_truths=[json.dumps({"inputs": ["1"], "outputs": []})], **options)
        with pytest.raises(TypeError, match="reward_kwargs"):
            compute_score("apps", "x", io, None, shaep="strict")
    finally:
        close_scorers()


# ------------------------------------------------------------------------------------------- batches


BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.25:\n    pass\n"


def test_a_batch_budget_reports_what_it_did_not_reach_as_not_scored() -> None:
    problem = problem_from_row(SAMPLE_ROWS["900001"])  # 5 tests: 1.25 s of CPU per program
    slow = BUSY + solution("900001")
    with Evaluator(workers=2, timeout=2.0) as ev:
        started = time.monotonic()
        results = ev.score_batch([(problem, slow)] * 8, budget=1.5)
        took = time.monotonic() - started
        assert took < 1.5 + 1.0  # it returns at the budget
        assert None in results  # 8 programs x 1.25 s on 2 executors cannot fit
        assert all(r is None or r.verdict == "pass" for r in results)  # a scored one is scored fully
        with CodeReward("fraction", evaluator=ev, budget=1.5) as reward:
            # eight distinct programs (identical ones on identical rows would run once for all)
            out = trl_call(reward, [fenced(f"# {k}\n" + slow) for k in range(8)],
                           input_output=[SAMPLE_ROWS["900001"]["input_output"]] * 8)
        assert None in out and set(out) <= {None, 1.0}  # never 0 for what was not scored
        assert {d.verdict for d in reward.last if d.reward is None} == {"not_scored"}
        assert ev.score_batch([(problem, solution("900001"))])[0].verdict == "pass"  # executors free again


def test_budgeted_batch_for_verl_raises_rather_than_scoring_zero() -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    try:
        with pytest.raises(NotScored, match="not_scored"):
            compute_score_batch(data_sources=["apps"] * 6, solution_strs=[fenced(BUSY + solution("900001"))] * 6,
                                ground_truths=[io] * 6, budget=1.0, timeout=2.0, workers=2)
    finally:
        close_scorers()


def shared_work(folder: Path, per_problem: int) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    rows = [r for r in map(json.loads, (folder / "apps_test_rows.jsonl").read_text().splitlines())
            if str(r["problem_id"]) in SHARED_IDS]
    candidates: dict[str, list[str]] = {}
    for record in map(json.loads, (folder / "candidates.jsonl").read_text().splitlines()):
        pid = str(record["problem_id"])
        if pid in SHARED_IDS and len(candidates.setdefault(pid, [])) < per_problem:
            candidates[pid].append(fenced(record["code"].rstrip("\n") + "\n"))
    return rows, [(pid, text) for pid in SHARED_IDS for text in candidates[pid]]


def test_same_verdicts_at_any_batch_size_and_concurrency(shared_data: Path) -> None:
    rows, work = shared_work(shared_data, 3)
    ios = {str(r["problem_id"]): r["input_output"] for r in rows}

    def rewards(workers: int, batch: int) -> list[tuple[Any, ...]]:
        out = []
        with CodeReward("fraction", timeout=2.0, workers=workers) as reward:
            for start in range(0, len(work), batch):
                chunk = work[start:start + batch]
                trl_call(reward, [t for _, t in chunk], input_output=[ios[p] for p, _ in chunk],
                         problem_id=[p for p, _ in chunk])
                out += [(d.reward, d.verdict, tuple(sorted(d.kinds.items()))) for d in reward.last]
        return out

    one = rewards(1, 1)
    assert one == rewards(2, len(work))
    assert len({r for r, _, _ in one}) > 1  # the work is not all one verdict


def test_rewards_match_the_plugin_on_real_rows_and_model_text(shared_data: Path, pytester: pytest.Pytester) -> None:
    rows, work = shared_work(shared_data, 3)
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (pytester.path / "gen.jsonl").write_text("".join(json.dumps({"problem_id": p, "response": t}) + "\n"
                                                     for p, t in work))
    run = pytester.runpytest_subprocess(
        *UNUSED_PLUGINS, "-p", "no:cacheprovider", "-n", "2", "--apps-dataset", "rows.jsonl", "--apps-candidates", "gen.jsonl",
        "--apps-timeout", "2", "--apps-report", "report.json")
    assert run.ret in (0, 1), run.stdout.str()[-2000:]
    report = json.loads((pytester.path / "report.json").read_text())
    plugin: dict[tuple[str, int], dict[str, Any]] = {}
    for p in report["problems"]:
        for sample in p["sample_results"]:
            kinds = [t["kind"] for t in p["tests"] if t["sample"] == sample["sample"]]
            plugin[(p["id"], sample["sample"])] = {"verdict": sample["verdict"], "kinds": kinds,
                                                   "passed": sample["tests_passed"]}
    ios = {str(r["problem_id"]): r["input_output"] for r in rows}
    problems = load_problems(str(pytester.path / "rows.jsonl"))
    for shape in ("fraction", "strict"):
        with CodeReward(shape, problems=problems, timeout=2.0, workers=2) as reward:
            got = trl_call(reward, [t for _, t in work], problem_id=[p for p, _ in work])
            by_row = trl_call(reward, [t for _, t in work], input_output=[ios[p] for p, _ in work])
        assert got == by_row
        samples: dict[str, int] = {}
        for (pid, _), value, detail in zip(work, got, reward.last):
            sample = samples[pid] = samples.get(pid, -1) + 1
            theirs = plugin[(pid, sample)]
            total = len(theirs["kinds"])
            if shape == "fraction":
                assert value == theirs["passed"] / total, (pid, sample)
                assert {k: v for k, v in detail.kinds.items() if v} == {k: theirs["kinds"].count(k)
                                                                        for k in set(theirs["kinds"])}
            else:
                assert value == (1.0 if theirs["verdict"] == "pass" else 0.0), (pid, sample)
    assert {v["verdict"] for v in plugin.values()} >= {"pass", "fail"}


def test_problem_from_row_refuses_a_row_the_plugin_would_skip() -> None:
    with pytest.raises(DatasetError, match="row 4 .*no outputs"):
        problem_from_row({"problem_id": 7, "question": "q", "input_output": {"inputs": ["1"], "outputs": []}}, 4)


# --------------------------------------------------------------------- verl's reward loop, TRL's async trainer
# verl (verl/experimental/reward_loop/reward_manager/naive.py, dapo.py, limited.py): `get_custom_reward_fn` merges
# reward_kwargs into the call (`_call_with_kwargs` / `_call_with_kwargs_async`, chosen by
# `inspect.iscoroutinefunction(raw_fn)`); `run_single` then awaits the function when it is a coroutine function,
# else runs it in the loop's default thread pool, with ``reward_router_address=`` and ``reward_model_tokenizer=``
# added when a reward router is configured. Many `run_single` run at once (`asyncio.gather` over the batch).


def verl_reward_fn(raw_fn: Any, reward_kwargs: dict[str, Any]) -> Any:
    """What verl's get_custom_reward_fn returns for `raw_fn` (reward_kwargs take precedence)."""
    import functools
    import inspect

    def call(*args: Any, **kwargs: Any) -> Any:
        return raw_fn(*args, **{**kwargs, **reward_kwargs})

    async def call_async(*args: Any, **kwargs: Any) -> Any:
        return await raw_fn(*args, **{**kwargs, **reward_kwargs})

    return functools.partial(call_async if inspect.iscoroutinefunction(raw_fn) else call)


async def verl_run_single(fn: Any, solution_str: str, ground_truth: Any, extra_info: Any, router: bool) -> Any:
    """NaiveRewardManager.run_single's call of the reward function."""
    import asyncio
    import inspect

    loop = asyncio.get_running_loop()
    extra = {"reward_router_address": "127.0.0.1:30000", "reward_model_tokenizer": object()} if router else {}
    if inspect.iscoroutinefunction(fn):
        return await fn(data_source="codecontests", solution_str=solution_str, ground_truth=ground_truth,
                        extra_info=extra_info, **extra)
    return await loop.run_in_executor(None, lambda: fn(data_source="codecontests", solution_str=solution_str,
                                                       ground_truth=ground_truth, extra_info=extra_info, **extra))


def test_verl_reward_loop_sync_and_async_entry_points_give_the_same_scores_without_blocking_the_loop() -> None:
    import asyncio
    import inspect

    from pytest_apps.rewards import compute_score_async

    assert inspect.iscoroutinefunction(compute_score_async) and not inspect.iscoroutinefunction(compute_score)
    io = SAMPLE_ROWS["900001"]["input_output"]
    good, bad = fenced(solution("900001")), fenced("print(3)\n")
    texts = [good, bad, good, "no code here"] * 6 + [fenced(BUSY + solution("900001"))]  # 1.25 s of CPU
    kwargs = {"shape": "fraction", "timeout": 1.0, "workers": 2}

    async def batch(raw_fn: Any, router: bool) -> tuple[list[Any], float]:
        fn = verl_reward_fn(raw_fn, {**kwargs, "cache": 0})  # a scorer of its own, nothing reused from the other
        gap = 0.0
        done = False

        async def ticker() -> None:
            nonlocal gap
            last = time.monotonic()
            while not done:
                await asyncio.sleep(0.005)
                gap, last = max(gap, time.monotonic() - last), time.monotonic()

        tick = asyncio.create_task(ticker())
        out = await asyncio.gather(*[verl_run_single(fn, t, io, {"index": i, "split": "train"}, router)
                                     for i, t in enumerate(texts)])
        done = True
        await tick
        return list(out), gap

    try:
        sync_out, _ = asyncio.run(batch(compute_score, router=True))
        started = time.monotonic()
        async_out, gap = asyncio.run(batch(compute_score_async, router=True))
        took = time.monotonic() - started
        expected = [1.0, 0.2, 1.0, 0.0] * 6 + [1.0]
        assert [o["score"] for o in async_out] == [o["score"] for o in sync_out] == expected
        assert len({tuple(o) for o in sync_out + async_out}) == 1  # the same keys everywhere (verl stacks them)
        assert took > 1.0 and gap < took / 2  # the event loop kept running while the batch was scored
        assert max(o["batch_deduplicated"] for o in async_out) > 0  # concurrent calls were scored as one batch
        with pytest.raises(TypeError, match="shaep"):
            asyncio.run(verl_run_single(verl_reward_fn(compute_score_async, {"shaep": "strict"}), good, io, {}, True))
    finally:
        close_scorers()


def test_ground_truth_as_verl_reads_it_back_from_parquet() -> None:
    import numpy as np

    raw = json.loads(SAMPLE_ROWS["900002"]["input_output"])  # call-based: nested lists of arguments
    as_parquet = {"inputs": np.array([np.array(a, dtype=object) for a in raw["inputs"]], dtype=object),
                  "outputs": np.array([np.array(o, dtype=object) for o in raw["outputs"]], dtype=object),
                  "fn_name": raw["fn_name"]}
    text = fenced(solution("900002"))
    options = {"shape": "fraction", "timeout": 1.0, "workers": 2}
    try:
        for truth in (as_parquet, raw, json.dumps(raw)):
            for info in ({"index": "train-3"}, {"index": 7}, {"problem_id": 12}, None):
                assert compute_score("apps", text, truth, info, **options)["score"] == 1.0
        with pytest.raises(NotScored, match=r"ground_truth.*not valid JSON"):
            compute_score("apps", text, "[1, 2", {"index": 0}, **options)
        with pytest.raises(NotScored, match=r"ground_truth.*inputs"):
            compute_score("apps", text, {"outputs": ["1"]}, {"index": 0}, **options)
    finally:
        close_scorers()


def _trl_async_call(reward: Any, io: str, texts: list[str]) -> list[float | None]:
    """As TRL's async rollout worker scores a group: an async function is awaited, a sync one goes to a thread."""
    import asyncio
    import inspect

    kwargs = dict(completions=texts, prompts=["p"] * len(texts), completion_ids=[[1]] * len(texts),
                  input_output=[io] * len(texts))

    async def group() -> list[Any]:
        if inspect.iscoroutinefunction(reward):
            return await reward(**kwargs)
        return await asyncio.to_thread(reward, **kwargs)

    return asyncio.run(group())


def _score_in_spawned_child(payload: bytes, io: str, texts: list[str], out: Any) -> None:
    import pickle

    out.put(_trl_async_call(pickle.loads(payload), io, texts))


def test_code_reward_pickles_and_scores_in_a_spawned_process_sync_and_async() -> None:
    import inspect
    import multiprocessing
    import pickle

    io = SAMPLE_ROWS["900001"]["input_output"]
    texts = [fenced(solution("900001")), fenced("print(3)\n")]
    with CodeReward("strict", timeout=1.0, workers=1) as reward:
        assert trl_call(reward, texts, input_output=[io] * 2) == [1.0, 0.0]  # executors running
        twin = reward.as_async()
        assert inspect.iscoroutinefunction(twin)
        assert _trl_async_call(twin, io, texts) == _trl_async_call(reward, io, texts) == [1.0, 0.0]
        context = multiprocessing.get_context("spawn")  # as TRL's AsyncRolloutWorker starts its child
        for func in (reward, twin):
            payload = pickle.dumps(func)
            queue = context.Queue()
            child = context.Process(target=_score_in_spawned_child, args=(payload, io, texts, queue))
            child.start()
            try:
                assert queue.get(timeout=120) == [1.0, 0.0]
            finally:
                child.join(30)
            assert child.exitcode == 0
        copy = pickle.loads(pickle.dumps(reward))  # in this process too: its own executors, started lazily
        assert copy.shape == "strict" and trl_call(copy, texts, input_output=[io] * 2) == [1.0, 0.0]
        copy.close()


def test_identical_completions_run_once_and_recent_batches_are_reused() -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    good, bad = fenced(solution("900001")), fenced("print(3)\n")
    logged: dict[str, float] = {}
    with CodeReward("fraction", timeout=1.0, workers=2, cache=4) as reward:
        texts = [good] * 8 + [bad] * 4 + [fenced(solution("900001"), draft="other draft")] * 4
        out = reward(prompts=None, completions=texts, completion_ids=None, input_output=[io] * 16,
                     log_metric=logged.__setitem__)
        assert out == [1.0] * 8 + [0.2] * 4 + [1.0] * 4
        assert logged["apps_fraction/deduplicated"] == 14.0  # 2 distinct programs on one problem's tests ran
        assert logged["apps_fraction/programs_run"] == 2.0 and logged["apps_fraction/cached"] == 0.0
        out = reward(prompts=None, completions=[good, bad, good], completion_ids=None, input_output=[io] * 3,
                     log_metric=logged.__setitem__)
        assert out == [1.0, 0.2, 1.0] and logged["apps_fraction/programs_run"] == 0.0
        assert logged["apps_fraction/cached"] == 2.0 and logged["apps_fraction/deduplicated"] == 1.0
        # nothing ran: no latency to report (reused results are counted apart, never as 0 s)
        assert logged["apps_fraction/latency_p50_s"] == logged["apps_fraction/slowest_s"] == 0.0
        for i in range(6):  # the memory is bounded: older results are dropped
            reward(completions=[fenced(f"print({i})\n")], input_output=[io])
        reward(completions=[good], input_output=[io], log_metric=logged.__setitem__)
        assert logged["apps_fraction/programs_run"] == 1.0
        assert len(reward._results) <= 4


@pytest.fixture
def flaky_checker(tmp_path: Path) -> Path:
    """A checker whose first call raises (a harness fault once), then judges as the stored answer does."""
    folder = tmp_path / "flaky"
    folder.mkdir()
    (folder / "900001.py").write_text(
        "import os\n"
        f"MARK = {str(folder / 'failed-once')!r}\n"
        "def check(input, expected, got):\n"
        "    if not os.path.exists(MARK):\n"
        "        open(MARK, 'w').close()\n"
        "        raise RuntimeError('lost once')\n"
        "    return expected.split() == got.split()\n")
    return folder


def test_a_harness_fault_is_retried_once_before_no_reward(flaky_checker: Path, failing_checker: Path) -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    text = fenced(solution("900001"))
    logged: dict[str, float] = {}
    with CodeReward("fraction", checkers=flaky_checker, timeout=1.0, workers=1) as reward:
        assert reward(completions=[text], input_output=[io], problem_id=["900001"], log_metric=logged.__setitem__) == [1.0]
        assert logged["apps_fraction/retried"] == 1.0 and logged["apps_fraction/harness_error"] == 0.0
    with CodeReward("fraction", checkers=failing_checker, timeout=1.0, workers=1) as reward:
        assert reward(completions=[text], input_output=[io], problem_id=["900001"], log_metric=logged.__setitem__) == [None]
        assert logged["apps_fraction/retried"] == 1.0 and logged["apps_fraction/harness_error"] == 1.0


def test_batch_latency_figures_go_to_trl_and_verl() -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    slow = fenced(BUSY + solution("900001"))
    logged: dict[str, float] = {}
    with CodeReward("strict", timeout=2.0, workers=2) as reward:
        reward(completions=[slow, fenced(solution("900001"))], input_output=[io] * 2, log_metric=logged.__setitem__)
    for key in ("latency_p50_s", "latency_p99_s", "slowest_s", "queue_s", "deduplicated", "cached"):
        assert f"apps_strict/{key}" in logged
    assert logged["apps_strict/slowest_s"] >= logged["apps_strict/latency_p99_s"] >= logged["apps_strict/latency_p50_s"] > 0
    assert logged["apps_strict/slowest_s"] >= 5 * 0.25 * 0.9  # the busy program's own CPU time, at least
    try:
        out = compute_score_batch(data_sources=["apps"] * 2, solution_strs=[slow, slow], ground_truths=[io] * 2,
                                  timeout=2.0, workers=2)
        assert out[0]["batch_slowest_s"] >= out[0]["batch_latency_p50_s"] > 0
        assert out[0]["batch_deduplicated"] == 1
    finally:
        close_scorers()


def test_an_unclosed_final_python_block_is_a_truncated_generation_and_is_scored() -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    with CodeReward("strict", timeout=1.0, workers=1) as reward:
        truncated = "Here it is:\n```python\n" + solution("900001")
        cut_mid_line = "Here it is:\n```python\na, b = map(int, input().split(\n"
        assert reward(completions=[truncated, cut_mid_line], input_output=[io] * 2) == [1.0, 0.0]
        assert reward.last[1].verdict == "no_code"
def test_verl_counts_the_tests_of_a_completion_without_code_as_no_code() -> None:
    """A completion without a code block scores 0 as "no code", and its tests are counted there, as the JSON
    report's `outcomes.no_code` counts them (they did not run)."""
    io = SAMPLE_ROWS["900002"]["input_output"]
    try:
        out = compute_score(data_source="apps", solution_str="I do not know.", ground_truth=io, extra_info=None,
                            timeout=1.0)
    finally:
        close_scorers()
    assert out["score"] == 0.0 and out["tests_run"] == 0
    assert out["tests_no_code"] == out["tests_total"] == 4


def test_two_rewards_log_under_their_own_names_and_latency_is_over_the_programs_that_ran() -> None:
    io = SAMPLE_ROWS["900001"]["input_output"]
    slow, slower = fenced(BUSY + solution("900001")), fenced(BUSY + BUSY + solution("900001"))
    logged: dict[str, float] = {}
    with CodeReward("strict", timeout=2.0, workers=1) as strict, \
            CodeReward("strict", evaluator=strict.evaluator, name="apps_hard") as hard:
        strict(completions=[slow] * 4, input_output=[io] * 4, log_metric=logged.__setitem__)
        hard(completions=[fenced("print(3)\n")], input_output=[io], log_metric=logged.__setitem__)
        # the two functions' figures sit apart: nothing is averaged across them
        assert logged["apps_strict/pass_rate"] == 1.0 and logged["apps_hard/pass_rate"] == 0.0
        assert logged["apps_strict/deduplicated"] == 3.0 and logged["apps_strict/programs_run"] == 1.0
        # one program ran, its copies took its result: the latency figures are that one program's
        assert logged["apps_strict/latency_p50_s"] == logged["apps_strict/slowest_s"] >= 0.25 * 0.9
        # a batch of results kept from the last one and one new program: the figures are the new one's, not 0 s
        strict(completions=[slow] * 7 + [slower], input_output=[io] * 8, log_metric=logged.__setitem__)
        assert logged["apps_strict/cached"] == 1.0 and logged["apps_strict/deduplicated"] == 6.0
        assert logged["apps_strict/programs_run"] == 1.0
        assert logged["apps_strict/latency_p50_s"] >= 0.5 * 0.9
        assert [d.cached for d in strict.last] == [True] + [False] * 7
