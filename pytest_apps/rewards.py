"""Rewards for training code models: TRL's `GRPOTrainer` and verl's `compute_score`, over the `Evaluator`.

    from pytest_apps.rewards import CodeReward

    trainer = GRPOTrainer(model=..., train_dataset=ds, reward_funcs=[CodeReward("strict")])  # ds has input_output

    # verl 0.9: reward.custom_reward_function.path=pkg://pytest_apps.rewards
    #           reward.custom_reward_function.name=compute_score_async

This module adds two things to the engine and nothing else: the program is taken from the model's text with
the plugin's extraction (`candidates.extract.extract_code`), and a reward shape turns the problem's result
into a number. The problem comes from the row: its own ``input_output`` column (TRL; verl's ``ground_truth``,
as verl's ``prime_code`` holds it, or a whole CodeContests or LiveCodeBench row), or its id into a split loaded
with `load_problems` (``problems=`` / ``dataset=``). verl's ``data_source`` names the dataset: the dataset table
(`dataset.table.of_data_source`) gives its judge profile and limits wherever the options do not choose them.
Every program is scored by `Evaluator.score_batch` (warm executors, in parallel, fail-fast where the shape allows
it, a batch time budget), so its verdicts are the plugin's.

Shapes: ``strict`` (1.0 when every test passes, else 0.0; each program stops at its first failing test),
``fraction`` (tests passed / tests, every test run) and ``continuous`` (verl's ``prime_code`` with
``continuous=True``, its default for APPS rows: 1.0 when every test passes, else the share of the first 10
tests, in the row's order, that pass). A completion without code is a real 0.0.

Not scored is never 0.0: a harness error (the executor failed, not the program), a problem that cannot be
judged (a row without usable tests, an unknown id), or a program the batch budget did not reach has no
reward. `CodeReward` (TRL) returns None there, which TRL reads as "does not apply": that completion is left
out of its group's baseline and gets no advantage. verl has no such value (the reward goes into a tensor), so
`compute_score` raises `NotScored`, which stops the verl step under every manager verl ships (a
`BaseException`, so that the managers that turn an `Exception` into 0.0 let it through; docs/rewards.md says
what each does). A harness fault is run once more before it stays.

verl's reward loop awaits `compute_score_async` (concurrent calls gathered into one batch); `compute_score` and
`compute_score_batch` serve its sync path and the legacy managers. Within a call, the same program on the same
tests runs once, and recent results are reused (`cache`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import threading
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .api import DEFAULT_JUDGE, DatasetError, Evaluator, ProblemList, load_problems, problem_from_row
from .candidates.extract import extract_code
from .core.outcome import ALL_KINDS, NO_CODE, PASS, RUN_HARNESS_ERROR
from .core.settings import DEFAULT_TIMEOUT, LIMIT_MODES
from .core.wording import counted
from .dataset import table
from .dataset.problems import Problem
from .report.rollup import P_NO_CODE, P_PASS, ProblemResult

__all__ = ["CodeReward", "NotScored", "RewardDetail", "SHAPES", "VerlResult", "apps_reward", "compute_score",
           "compute_score_async", "compute_score_batch", "completion_text"]

log = logging.getLogger("pytest_apps.rewards")

STRICT, FRACTION, CONTINUOUS = "strict", "fraction", "continuous"
SHAPES = (STRICT, FRACTION, CONTINUOUS)
CONTINUOUS_TESTS = 10  # verl's prime_code(continuous=True): partial credit over the first 10 tests
# the verdict of a completion that has no reward
NOT_SCORED = "not_scored"  # the batch budget ran out before it was scored
HARNESS = "harness_error"  # the harness failed on a test the reward needs
NOT_APPLICABLE = "not_applicable"  # no problem to judge it on (bad row, unknown id, broken problem)
COUNTED_KINDS = (*ALL_KINDS, RUN_HARNESS_ERROR)
_ROW_CACHE = 1024  # problems built from rows' own input_output, kept by their text
FIXED, ROW = LIMIT_MODES  # `limits`: the run's own for every problem, or a problem's row's where it gives them
RESULTS_CACHE = 4096  # default count of recent (problem, program) results kept for reuse


class NotScored(BaseException):
    """A completion that has no reward (verl's `compute_score`): the harness failed, the problem cannot be
    judged, or the batch budget ran out. Never to be read as a reward of 0.

    A `BaseException`, as `asyncio.CancelledError` is, and for the same reason: verl's ``rate_limited`` and legacy
    ``prime`` managers turn every `Exception` of a reward function into a reward of 0.0 (and verl's legacy
    reward step scores the whole batch again after one); this one passes through them and stops the step, as
    verl's other managers do with any exception. Catch it by name."""


@dataclass(frozen=True)
class RewardDetail:
    """One completion's reward and what it rests on, for logging: the problem's verdict, the tests that passed,
    ran and exist, and the count of each test verdict kind (pass, wrong_answer, ..., harness_error)."""

    reward: float | None
    verdict: str
    problem_id: str | None = None
    tests_passed: int = 0
    tests_run: int = 0
    tests_total: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    ran: bool = False  # its program ran in this batch (not a duplicate, not a result reused from a recent batch)
    deduplicated: bool = False  # the result of the same program on the same tests, run once for all of them
    cached: bool = False  # the result of the same program on the same tests kept from a recent batch
    retried: bool = False  # a harness fault made it run a second time
    latency: float = 0.0  # seconds from the batch's start to its result
    queue: float = 0.0  # of those, seconds it waited for an executor
    cpu_time: float = 0.0  # the program's own CPU seconds over the tests it ran

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def figures(self) -> dict[str, Any]:
        """Flat numbers with the same keys for every completion (verl turns each key into a per-batch list and
        averages it in validation, so no text here)."""
        out: dict[str, Any] = {"score": self.reward, "passed": float(self.verdict == P_PASS),
                               "tests_passed": self.tests_passed, "tests_run": self.tests_run,
                               "tests_total": self.tests_total}
        out.update({f"tests_{kind}": self.kinds.get(kind, 0) for kind in COUNTED_KINDS})
        return out


def completion_text(completion: Any) -> str:
    """The model's text in a completion as a trainer passes it: a string, or (conversational) a list of
    messages, whose assistant messages' contents are joined (content as a string or a list of text parts)."""
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    messages = list(completion)
    mine = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant"] or messages
    texts = []
    for message in mine:
        content = message.get("content") if isinstance(message, Mapping) else message
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, Sequence):
            texts.extend(str(part.get("text", "")) for part in content
                         if isinstance(part, Mapping) and part.get("type", "text") == "text")
    return "\n".join(texts)


def shape_of(result: ProblemResult | None, shape: str) -> RewardDetail:
    """The reward of one problem result under `shape`, or no reward (None) with the reason."""
    if result is None:
        return RewardDetail(None, NOT_SCORED, reason="not scored within the batch budget")
    kinds = Counter(t["kind"] for t in result.tests)
    base = dict(problem_id=result.id, tests_passed=result.tests_passed, tests_run=result.tests_run,
                tests_total=result.tests_total, kinds={k: kinds.get(k, 0) for k in COUNTED_KINDS},
                cpu_time=sum(float(t.get("cpu_time") or 0.0) for t in result.tests))
    if result.verdict == P_NO_CODE or (result.tests and kinds.get(NO_CODE, 0) == len(result.tests)):
        # its tests did not run: they count as no code, as the report's `outcomes` counts them
        base["kinds"][NO_CODE] = result.tests_total
        return RewardDetail(0.0, P_NO_CODE, reason=result.reason or "no code in the completion", **base)
    if result.verdict == "broken":
        return RewardDetail(None, NOT_APPLICABLE, reason=result.reason, **base)
    harness = kinds.get(RUN_HARNESS_ERROR, 0)
    real_failures = result.tests_run - result.tests_passed - harness
    if shape == CONTINUOUS:
        return _continuous(result, real_failures, harness, base)
    if shape == STRICT:
        if result.verdict == P_PASS:
            return RewardDetail(1.0, P_PASS, **base)
        if real_failures > 0:
            return RewardDetail(0.0, result.verdict, reason=result.reason, **base)
    elif harness == 0 and result.tests_run == result.tests_total and result.tests_total > 0:
        return RewardDetail(result.tests_passed / result.tests_total, result.verdict, reason=result.reason, **base)
    why = result.reason if harness else f"{counted(result.tests_total - result.tests_run, 'test')} did not run"
    return RewardDetail(None, HARNESS if harness else NOT_SCORED, reason=why, **base)


def _continuous(result: ProblemResult, real_failures: int, harness: int, base: dict[str, Any]) -> RewardDetail:
    """verl's ``prime_code.compute_score(continuous=True)``: 1.0 when every test passes; else each of the first
    `CONTINUOUS_TESTS` tests (the row's order) counts, whatever fails before it: passed among them / their
    count. No reward when one of those first tests hit a harness fault or did not run, or when nothing failed
    for real but a harness fault leaves "every test passes" unknown."""
    if result.verdict == P_PASS:
        return RewardDetail(1.0, P_PASS, **base)
    first = {int(t["case"]): t["kind"] for t in result.tests if int(t["case"]) < CONTINUOUS_TESTS}
    count = min(CONTINUOUS_TESTS, result.tests_total)
    known = len(first) == count and RUN_HARNESS_ERROR not in first.values()
    if known and real_failures > 0 and count > 0:
        passed = sum(kind == PASS for kind in first.values())
        return RewardDetail(passed / count, result.verdict, reason=result.reason, **base)
    fault = RUN_HARNESS_ERROR in first.values() or (real_failures == 0 and harness > 0)
    why = result.reason if fault else f"{count - len(first)} of the first {counted(count, 'test')} did not run"
    return RewardDetail(None, HARNESS if fault else NOT_SCORED, reason=why, **base)


class CodeReward:
    """A reward function for TRL's `GRPOTrainer` (``reward_funcs=[CodeReward(...)]``), and the scorer behind
    verl's `compute_score`.

    `shape`: "strict", "fraction" or "continuous" (verl's `prime_code` partial credit). The problem of each
    completion, from the dataset's columns (TRL passes
    every column as a keyword argument, one value per completion): `io_column` (default ``input_output``),
    the row's own tests, JSON text or a dict; else the columns of a dataset of the table in its hub schema (a
    CodeContests or LiveCodeBench dataset as the hub holds it); else `id_column` (default ``problem_id``) into
    `problems`, a `ProblemList` or what `load_problems` takes as `dataset` (loaded on first use with `split` and
    `max_tests`). `data_source` names the dataset as verl's column does (``"livecodebench"``, ``"codecontests"``:
    `dataset.table.of_data_source`): its judge profile and its rows' own limits, wherever `judge` and `limits` are
    not given (unnamed: the ``seed`` profile and fixed limits; rows of a dataset whose own judge differs are then
    scored with a warning saying so). `budget`: seconds for one call (one batch); what it does not reach gets no
    reward.
    The Evaluator's options (`timeout`, `memory`, `judge`, `checkers`, `limits`, `workers`, `ray`,
    `ray_per_node`, `ray_resource`, `shared`) are its own (on Ray, or with `shared=True` on one machine, one pool of
    executors per node shared by every caller); or pass a ready `evaluator` (it is not closed by `close()` then).

    Within a call, completions with the same program on the same problem's tests run once; `cache` recent
    results (program, problem) are reused by later calls (least recently used dropped first; 0: none);
    `dedup=False` runs every completion (for measuring). A
    completion whose run hit a harness fault runs once more (the executor restarts its server after a fault)
    before it is left without a reward.

    It pickles (TRL's async trainer sends reward functions to a spawned process): the copy starts its own
    executors on first use. `as_async()` is the same reward as an ``async`` function.

    Logging: after each call, `last` holds a `RewardDetail` per completion and `on_batch` (if given) is
    called with them; when TRL passes ``log_metric`` / ``log_extra`` (recent versions do), the batch's figures
    (`batch_figures`) go to its metrics and each completion's verdict and tests to its completions table.
    """

    def __init__(
        self,
        shape: str = STRICT,
        *,
        problems: ProblemList | Sequence[Problem] | str | os.PathLike[str] | Any = None,
        split: str = "test",
        max_tests: int = 20,
        io_column: str = "input_output",
        id_column: str = "problem_id",
        budget: float | None = None,
        evaluator: Evaluator | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        memory: int | None = None,
        judge: str | None = None,
        checkers: str | os.PathLike[str] | None = None,
        limits: str | None = None,
        workers: int | None = None,
        ray: bool = False,
        ray_per_node: int | None = None,
        ray_resource: str | None = None,
        shared: bool = False,
        cache: int = RESULTS_CACHE,
        dedup: bool = True,
        on_batch: Callable[[list[RewardDetail]], None] | None = None,
        name: str | None = None,
        data_source: str | None = None,
    ) -> None:
        if shape not in SHAPES:
            raise ValueError(f"shape: unknown reward shape {shape!r}; use {', '.join(SHAPES)}")
        if budget is not None and budget <= 0:
            raise ValueError(f"budget: {budget} must be more than 0 seconds (or None for no budget)")
        if cache < 0:
            raise ValueError(f"cache: {cache}; give 0 (no reuse) or more results to keep")
        self.shape = shape
        self.split, self.max_tests = split, max_tests
        self.io_column, self.id_column = io_column, id_column
        self.budget = budget
        self.cache = cache if dedup else 0
        self.dedup = dedup
        self.on_batch = on_batch
        self.__name__ = name or f"apps_{shape}"  # TRL names a reward function's metrics after it
        self._problems_spec = problems
        self._own = evaluator is None
        if evaluator is not None:
            self._options: dict[str, Any] = dict(
                workers=evaluator.workers, timeout=evaluator.timeout, memory=evaluator.memory,
                judge=evaluator.judge, checkers=evaluator.checkers, limits=evaluator.settings.limits,
                ray=getattr(evaluator.cluster, "kind", "") == "ray",
                shared=getattr(evaluator.cluster, "kind", "") == "machine")
        else:
            chosen = routed(data_source, {k: v for k, v in (("judge", judge), ("limits", limits)) if v is not None})
            self._options = dict(workers=workers, timeout=timeout, memory=memory,
                                 judge=chosen.get("judge", DEFAULT_JUDGE), checkers=checkers,
                                 limits=chosen.get("limits", FIXED), ray=ray, ray_per_node=ray_per_node,
                                 ray_resource=ray_resource, shared=shared)
        self.data_source = data_source
        self._fresh()
        # started now, so that a bad option fails here rather than at the first batch
        self._evaluator: Evaluator | None = evaluator if evaluator is not None else Evaluator(**self._options)

    def _fresh(self) -> None:
        """The state that is not pickled: locks, caches, the last batch."""
        self._by_id: dict[str, Problem] | None = None
        self._rows: OrderedDict[str, Problem | str] = OrderedDict()  # input_output text -> problem or why not
        self._results: OrderedDict[tuple[int, str | None], tuple[Problem, RewardDetail]] = OrderedDict()
        self._lock = threading.Lock()
        self.last: list[RewardDetail] = []
        self._warned: set[str] = set()

    @property
    def evaluator(self) -> Evaluator:
        """The Evaluator that scores the programs (started on first use)."""
        with self._lock:
            if self._evaluator is None:
                self._evaluator = Evaluator(**self._options)
            return self._evaluator

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_evaluator", "_lock", "_rows", "_results", "_by_id", "last", "_warned")}
        state["_own"] = True  # the copy owns the executors it starts
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._evaluator = None
        self._fresh()

    # -- TRL -------------------------------------------------------------------------------------------
    def __call__(self, prompts: Any = None, completions: Sequence[Any] = (), completion_ids: Any = None,
                 **columns: Any) -> list[float | None]:
        """TRL's call: one reward (or None) per completion, the row's columns as keyword lists."""
        log_metric, log_extra = columns.pop("log_metric", None), columns.pop("log_extra", None)
        texts = [completion_text(c) for c in completions]
        problems = [self._problem_of(columns, i) for i in range(len(texts))]
        details = self.score(texts, problems)
        if callable(log_metric):
            for key, value in batch_figures(details, self.__name__).items():
                log_metric(key, value)
        if callable(log_extra):
            log_extra(f"{self.__name__}_verdict", [d.verdict for d in details])
            log_extra(f"{self.__name__}_tests", [f"{d.tests_passed}/{d.tests_total}" for d in details])
        return [d.reward for d in details]

    def as_async(self) -> functools.partial[Any]:
        """This reward as an ``async`` function (TRL awaits it, beside its other async reward functions, without
        a thread of its own): `apps_reward` bound to this `CodeReward`. It pickles as this object does."""
        return functools.partial(apps_reward, self)

    # -- the core both trainers use --------------------------------------------------------------------
    def score(self, texts: Sequence[str | None], problems: Sequence[Problem | str]) -> list[RewardDetail]:
        """Rewards for model texts on their problems (a `Problem`, or a string saying why there is none)."""
        if len(texts) != len(problems):
            raise ValueError(f"{counted(len(texts), 'completion')} for {counted(len(problems), 'problem')}")
        started = time.monotonic()
        details: list[RewardDetail | None] = [None] * len(texts)
        first: dict[tuple[int, str | None], int] = {}  # (problem, program) -> the completion that runs it
        copies: list[tuple[int, int]] = []  # (completion, the completion whose result it takes)
        for i, (text, problem) in enumerate(zip(texts, problems)):
            if isinstance(problem, str):
                details[i] = RewardDetail(None, NOT_APPLICABLE, reason=problem)
                continue
            key = (id(problem), extract_code(text))
            if not self.dedup:
                key = (id(problem), key[1], i)  # type: ignore[assignment]  # every completion its own run
            if key in first:
                copies.append((i, first[key]))
                continue
            first[key] = i
            known = self._known(key, problem)
            if known is not None:
                details[i] = replace(known, ran=False, deduplicated=False, cached=True, retried=False, latency=0.0,
                                     queue=0.0)
        run = [(i, key) for key, i in first.items() if details[i] is None]
        if run:
            self._run(run, problems, details, started)
        for i, source in copies:
            found = details[source]
            assert found is not None
            details[i] = replace(found, ran=False, deduplicated=True, cached=False, retried=False)
        done = [d for d in details if d is not None]
        self.last = done
        if self.on_batch is not None:
            self.on_batch(done)
        return done

    def _run(self, run: list[tuple[int, tuple[int, str | None]]], problems: Sequence[Problem | str],
             details: list[RewardDetail | None], started: float) -> None:
        """Score the distinct programs of a batch; a harness fault is run once more before it stays."""
        evaluator = self.evaluator
        todo = run
        for attempt in (0, 1):
            left = None if self.budget is None else self.budget - (time.monotonic() - started)
            if left is not None and left <= 0:
                for i, _ in todo:
                    details[i] = details[i] or RewardDetail(None, NOT_SCORED, reason="not scored within the batch budget")
                break
            timings: list[tuple[float, float] | None] = []
            offset = time.monotonic() - started
            pairs = [(problems[i], key[1]) for i, key in todo]
            results = evaluator.score_batch(pairs, fail_fast=self.shape == STRICT, budget=left, timings=timings)
            again = []
            for (i, key), result, timing in zip(todo, results, timings):
                queue, latency = (0.0, 0.0) if timing is None else timing
                detail = replace(shape_of(result, self.shape), ran=True, retried=attempt == 1,
                                 queue=offset + queue, latency=offset + latency)
                details[i] = detail
                if detail.verdict == HARNESS and attempt == 0:
                    again.append((i, key))
                elif detail.reward is not None:
                    self._keep(key, problems[i], detail)
            if not again:
                break
            log.warning("pytest-apps reward: %d completion(s) hit a harness fault; running them once more",
                        len(again))
            todo = again

    def _known(self, key: tuple[int, str | None], problem: Any) -> RewardDetail | None:
        if self.cache <= 0:
            return None
        with self._lock:
            found = self._results.get(key)
            if found is None or found[0] is not problem:
                return None
            self._results.move_to_end(key)
            return found[1]

    def _keep(self, key: tuple[int, str | None], problem: Any, detail: RewardDetail) -> None:
        if self.cache <= 0:
            return
        with self._lock:
            self._results[key] = (problem, detail)  # the problem is held: its id() is not reused while kept
            self._results.move_to_end(key)
            while len(self._results) > self.cache:
                self._results.popitem(last=False)

    def problem_of_row(self, io: Any, pid: Any = None, index: int = 0) -> Problem | str:
        """The problem for a row's own tests (`io`: JSON text or a dict), built once per distinct text."""
        io = plain(io)
        try:
            text = f"{pid}\0" + (io if isinstance(io, str) else json.dumps(io, sort_keys=True))  # checkers go by id
        except (TypeError, ValueError) as exc:
            return f"row {pid if pid not in (None, '') else index}: its tests are not JSON data ({exc})"
        row = {"problem_id": pid if pid not in (None, "") else f"row-{index}", "question": "(the row's tests)",
               "input_output": io}
        return self._built(text, lambda: row, index)

    def problem_of_tests(self, io: Any, pid: Any, index: int, data_source: Any, what: str = "input_output"
                         ) -> Problem | str:
        """The problem of a row's own tests as the dataset `data_source` names reads them: LiveCodeBench's functional
        inputs as LiveCodeBench writes them, for one (`Dataset.tests_row`); else as APPS's (`problem_of_row`)."""
        entry = table.of_data_source(plain(data_source))
        if entry is None or entry.tests_row is None:
            return self.problem_of_row(io, pid, index)
        io = plain(io)
        try:
            tests = json.loads(io) if isinstance(io, str) else io
            if not isinstance(tests, Mapping):
                raise ValueError("they are no JSON object with inputs and outputs lists")
            row = entry.tests_row(dict(tests), str(pid if pid not in (None, "") else f"row-{index}"))
        except ValueError as exc:
            return f"row {index}: {what} as {entry.title} tests: {exc}"
        return self.problem_of_dataset_row(entry, row, index)

    def problem_of_dataset_row(self, entry: table.Dataset, row: Mapping[str, Any], index: int = 0) -> Problem | str:
        """The problem of a whole row of a dataset of the table in its hub schema (a CodeContests row with its test
        sets and limits, a LiveCodeBench row with its encoded private tests), read by its entry; built once."""
        row = plain(row)
        try:
            text = f"{entry.name}\0" + json.dumps(row, sort_keys=True)
        except (TypeError, ValueError) as exc:
            return f"row {index}: the {entry.title} row is not JSON data ({exc})"
        return self._built(text, lambda: entry.normalize(dict(row), f"ground_truth of row {index}"), index)

    def _built(self, text: str, make_row: Callable[[], dict[str, Any]], index: int) -> Problem | str:
        """The problem of the row `make_row` gives (or why there is none), kept by the row's `text`."""
        with self._lock:
            found = self._rows.get(text)
            if found is not None:
                self._rows.move_to_end(text)
                return found
        row = make_row()
        made: Problem | str = str(row["__error__"]) if "__error__" in row else ""
        try:
            if not made:
                made = problem_from_row(row, index, self.max_tests)
            if isinstance(made, Problem) and made.broken:
                made = f"problem {made.id}: {made.broken}"
        except DatasetError as exc:
            made = str(exc)
        with self._lock:
            self._rows[text] = made
            while len(self._rows) > _ROW_CACHE:
                self._rows.popitem(last=False)
        return made

    def problem_by_id(self, pid: Any) -> Problem | str:
        """The problem with this id in `problems` (loaded on first use)."""
        with self._lock:
            if self._by_id is None:
                spec = self._problems_spec
                if spec is None:
                    return (f"no {self.io_column!r} value and no problems to look id {pid} up in; give the dataset "
                            f"an {self.io_column!r} column or pass problems= (a load_problems() result or a dataset)")
                loaded = spec if isinstance(spec, (list, tuple)) else load_problems(
                    spec, split=self.split, max_tests=self.max_tests)
                self._by_id = {p.id: p for p in loaded}
        found = self._by_id.get(str(pid))
        if found is None:
            return f"problem {pid} is not among the loaded problems ({len(self._by_id)}); check {self.id_column!r}"
        if found.broken:
            return f"problem {pid}: {found.broken}"
        return found

    def close(self) -> None:
        if self._own and self._evaluator is not None:
            self._evaluator.close()

    def __enter__(self) -> CodeReward:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------------------
    def _problem_of(self, columns: Mapping[str, Any], i: int) -> Problem | str:
        io = _at(columns.get(self.io_column), i)
        pid = _at(columns.get(self.id_column), i)
        entry = table.entry_of(columns) if io in (None, "") else table.DEFAULT
        if entry is not table.DEFAULT:  # the columns of a dataset of the table in its hub schema
            _warn_once(self._warned, judge_differs(self._options["judge"], self.data_source, entry))
            found = self.problem_of_dataset_row(entry, {k: _at(columns[k], i) for k in entry.columns if k in columns},
                                                i)
        elif io not in (None, ""):
            found = self.problem_of_tests(io, pid, i, self.data_source)
        elif pid not in (None, ""):
            found = self.problem_by_id(pid)
        else:
            found = (f"completion {i}: no {self.io_column!r} or {self.id_column!r} column value; give the dataset one "
                     "of them")
        if isinstance(found, str):
            _warn_once(self._warned, f"{found} (no reward for it)")
        return found


def judge_differs(judge: str, data_source: Any, entry: table.Dataset) -> str:
    """What to say when rows of `entry`'s dataset are scored under another `judge` than its own that no
    `data_source` chose ("" when there is nothing to say)."""
    if data_source is not None or judge == entry.judge:
        return ""
    return (f"{entry.title} rows are scored under the {judge!r} judge profile; pass data_source={entry.name!r} (or "
            f"judge={entry.judge!r}) to score them as {entry.title} does")


def _warn_once(warned: set[str], message: str) -> None:
    """Log `message` (if any) the first time this reward meets it."""
    if message and message not in warned:
        warned.add(message)
        log.warning("pytest-apps reward: %s", message)


async def apps_reward(reward: CodeReward, *args: Any, **kwargs: Any) -> list[float | None]:
    """`reward` (a `CodeReward`) as an async reward function: TRL's call, scored on the warm executors from a
    worker thread, so the event loop goes on meanwhile. `CodeReward.as_async()` binds it."""
    return await asyncio.to_thread(reward, *args, **kwargs)


def plain(value: Any) -> Any:
    """`value` with numpy arrays and scalars (what a dict read back from Parquet holds) as lists and numbers."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, without importing numpy
    if callable(tolist):
        return plain(tolist())
    return value


def _at(values: Any, i: int) -> Any:
    if values is None:
        return None
    try:
        return values[i]
    except (IndexError, KeyError, TypeError):
        return None


def _quantile(values: Sequence[float], q: float) -> float:
    """The `q` quantile of `values` (nearest rank), 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.999999) - 1))]


def batch_figures(details: Sequence[RewardDetail], name: str = "apps") -> dict[str, float]:
    """One batch's figures under the reward function's `name` (``<name>/pass_rate``...), the same keys every
    time (TRL wants every process to log the same keys; two reward functions of one trainer, named apart, never
    average into each other): the share of scored completions that passed, of tests passed, counts of each test
    verdict kind and of completions without a reward; how many programs ran, how many completions took the
    result of the same program run once in this batch (``deduplicated``) or kept from a recent batch
    (``cached``), how many ran again after a harness fault. The latency figures are over the programs that ran
    (a reused result took no time and is counted apart, above): seconds from the batch's start to each one's
    result (p50, p99, the slowest) and the median time they waited for an executor (``queue_s``)."""
    scored = [d for d in details if d.reward is not None]
    tests_run = sum(d.tests_run for d in scored)
    ran = [d for d in details if d.ran]
    latencies = [d.latency for d in ran]
    figures = {
        "pass_rate": sum(d.verdict == P_PASS for d in scored) / len(scored) if scored else 0.0,
        "test_pass_rate": sum(d.tests_passed for d in scored) / tests_run if tests_run else 0.0,
        "no_code": float(sum(d.verdict == P_NO_CODE for d in details)),
        "no_reward": float(len(details) - len(scored)),
        "not_scored": float(sum(d.verdict == NOT_SCORED for d in details)),
        "harness_error": float(sum(d.verdict == HARNESS for d in details)),
        "not_applicable": float(sum(d.verdict == NOT_APPLICABLE for d in details)),
        "programs_run": float(len(ran)),
        "deduplicated": float(sum(d.deduplicated for d in details)),
        "cached": float(sum(d.cached for d in details)),
        "retried": float(sum(d.retried for d in details)),
        "latency_p50_s": round(_quantile(latencies, 0.5), 6),
        "latency_p99_s": round(_quantile(latencies, 0.99), 6),
        "slowest_s": round(max(latencies, default=0.0), 6),
        "queue_s": round(_quantile([d.queue for d in ran], 0.5), 6),
    }
    for kind in COUNTED_KINDS:
        figures[f"tests_{kind}"] = float(sum(d.kinds.get(kind, 0) for d in details))
    return {f"{name}/{key}": value for key, value in figures.items()}


# ------------------------------------------------------------------------------------------------- verl

_SCORERS: dict[tuple[Any, ...], CodeReward] = {}
_SCORERS_LOCK = threading.Lock()


def _scorer(options: Mapping[str, Any]) -> CodeReward:
    """One warm `CodeReward` per process and set of options (verl calls compute_score once per completion)."""
    key = tuple(sorted((k, repr(v)) for k, v in options.items()))
    with _SCORERS_LOCK:
        found = _SCORERS.get(key)
        if found is None:
            opts = dict(options)
            if "dataset" in opts:
                opts["problems"] = opts.pop("dataset")
            found = _SCORERS[key] = CodeReward(**opts)
        return found


_VERL_OPTIONS = ("shape", "dataset", "split", "max_tests", "budget", "timeout", "memory", "judge", "checkers",
                 "limits", "workers", "ray", "ray_per_node", "ray_resource", "shared", "cache", "dedup")
# what verl's reward loop adds to the call when a reward router is configured (not ours to read)
_VERL_PASSES = ("reward_router_address", "reward_model_tokenizer")
# the batch figures returned to verl beside each completion's own (one value per completion, the same keys)
_VERL_BATCH = {"batch_latency_p50_s": "apps/latency_p50_s", "batch_latency_p99_s": "apps/latency_p99_s",
               "batch_slowest_s": "apps/slowest_s", "batch_queue_s": "apps/queue_s",
               "batch_deduplicated": "apps/deduplicated", "batch_cached": "apps/cached",
               "batch_retried": "apps/retried"}


def _index(value: Any) -> tuple[int, str | None]:
    """extra_info's index as verl's data holds it: an int, or a text such as "train-3" (then also the row's id)."""
    value = plain(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None
    text = str(value).strip() if value not in (None, "") else ""
    if text.lstrip("-").isdigit():
        return int(text), None
    return 0, text or None


def _verl_problem(scorer: CodeReward, ground_truth: Any, extra_info: Any, data_source: Any = None
                  ) -> Problem | str:
    """The problem of a verl completion: its ground truth's tests (read by the dataset `data_source` names, when that
    dataset reads tests its own way), a whole row of a dataset of the table, or an id into ``dataset``; else why
    there is none."""
    info = extra_info if isinstance(extra_info, Mapping) else {}
    index, named = _index(info.get("index"))
    pid = plain(info.get("problem_id"))
    row_id = pid if pid not in (None, "") else named
    truth = plain(ground_truth)
    if isinstance(truth, bytes):
        truth = truth.decode("utf-8", "replace")
    if isinstance(truth, str) and truth.lstrip()[:1] in ("{", "["):
        try:
            truth = json.loads(truth)
        except ValueError as exc:
            shown = truth if len(truth) <= 60 else truth[:57] + "..."
            return (f"ground_truth is not valid JSON ({exc}): {shown!r}; give the problem's input_output as JSON "
                    "text or a dict with 'inputs' and 'outputs' lists, or a problem id")
    if isinstance(truth, list):
        return ("ground_truth is a JSON list; give the problem's input_output (a dict with 'inputs' and 'outputs' "
                "lists) or a problem id")
    if isinstance(truth, Mapping):
        entry = table.entry_of(truth)
        if entry is not table.DEFAULT and not isinstance(truth.get("inputs"), list):
            return scorer.problem_of_dataset_row(entry, truth, index)  # a CodeContests or LiveCodeBench row itself
        missing = [k for k in ("inputs", "outputs") if not isinstance(truth.get(k), list)]
        if missing:
            return (f"ground_truth has no {' or '.join(repr(k) for k in missing)} list (keys: "
                    f"{', '.join(map(str, truth)) or 'none'}); give the problem's input_output, or a whole row of "
                    f"{table.accepted_schemas()} in its hub schema")
        return scorer.problem_of_tests(dict(truth), row_id, index, data_source, "ground_truth")
    pid = pid if pid not in (None, "") else truth
    if pid in (None, ""):
        return "ground_truth holds no input_output and extra_info no problem_id"
    return scorer.problem_by_id(pid)


def _options(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(kwargs) - set(_VERL_OPTIONS) - set(_VERL_PASSES))
    if unknown:
        raise TypeError(f"compute_score: unknown option(s) {', '.join(unknown)}; "
                        f"reward.custom_reward_function.reward_kwargs takes {', '.join(_VERL_OPTIONS)}")
    return {k: v for k, v in kwargs.items() if k in _VERL_OPTIONS}


def routed(data_source: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options a completion of `data_source` is scored with: what its dataset's entry in the table implies
    (`dataset.table.of_data_source`: its judge profile, and its rows' own limits where it has them), wherever the
    caller's `options` do not choose; an unknown `data_source` changes nothing. Only what differs from the
    `CodeReward` defaults is added, so that equal settings share one scorer."""
    entry = table.of_data_source(plain(data_source))
    chosen = dict(options)
    if entry is not None:
        if "judge" not in chosen and entry.judge != DEFAULT_JUDGE:
            chosen["judge"] = entry.judge
        if "limits" not in chosen and entry.row_limits:
            chosen["limits"] = ROW
    return chosen


class VerlResult(dict):  # type: ignore[type-arg]
    """One completion's result for verl: a dict (its reward loop's managers take "score" as the reward and log
    every key) whose item 0 is the score too, as verl's legacy ``prime`` manager reads a result that is not a
    number (``float(result[0])``: the ``(score, metadata)`` pair its own ``prime_code`` returns)."""

    def __missing__(self, key: Any) -> Any:
        if type(key) is int and key == 0:
            return self["score"]
        raise KeyError(key)


def _verl_results(details: Sequence[RewardDetail]) -> list[dict[str, Any]]:
    """verl's dicts: each completion's figures with its batch's beside them; `NotScored` where one has no reward."""
    missing = [d for d in details if d.reward is None]
    if missing:
        if len(details) == 1:
            raise NotScored(f"pytest-apps: no reward ({missing[0].verdict}: {missing[0].reason})")
        why = Counter(d.verdict for d in missing)
        raise NotScored(f"pytest-apps: {len(missing)} of {counted(len(details), 'completion')} have no reward "
                        f"({', '.join(f'{k}: {v}' for k, v in sorted(why.items()))}; first: {missing[0].reason})")
    figures = batch_figures(details)
    batch = {mine: figures[theirs] for mine, theirs in _VERL_BATCH.items()}
    return [VerlResult({**d.figures(), **batch}) for d in details]


def compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None,
                  **options: Any) -> dict[str, Any]:
    """verl's custom reward function, called once per completion by its naive (and dapo) reward managers, the
    reward loop's in a thread of its own.

    `ground_truth`: the problem's tests, an ``input_output`` JSON text or dict (``inputs``, ``outputs``,
    optional ``fn_name``; numpy arrays as read back from Parquet), as verl's ``prime_code`` takes them; or a
    problem id (also read from ``extra_info["problem_id"]``) into ``dataset`` (a reward option). `options` are
    ``reward.custom_reward_function.reward_kwargs``: shape, dataset, split, max_tests, budget, timeout, memory,
    judge, checkers, limits, workers, ray, ray_per_node, ray_resource, shared, cache; what verl's reward loop adds
    (``reward_router_address``,
    ``reward_model_tokenizer``) is accepted and not read. Returns a dict whose "score" is the reward, with the
    test counts and the batch's figures beside it (verl logs every key). Raises `NotScored` where there is no
    reward (never 0.0). `data_source` chooses the judge profile and the limits of the dataset it names, where
    `options` do not (`routed`; docs/rewards.md has the names); `ground_truth` may also be a whole row of such a
    dataset in its hub schema (a CodeContests row, with its test sets and limits; a LiveCodeBench row).
    """
    scorer = _scorer(routed(data_source, _options(options)))
    problem = _verl_problem(scorer, ground_truth, extra_info, data_source)
    return _verl_results(scorer.score([solution_str], [problem]))[0]


class _Gather:
    """The completions `compute_score_async` received on one event loop and scorer, scored as one batch."""

    WINDOW = 0.02  # seconds a batch stays open for more calls after its first
    LARGEST = 1024  # completions at most in one batch

    def __init__(self, scorer: CodeReward) -> None:
        self.scorer = scorer
        self.open: list[tuple[str, Problem | str, asyncio.Future[Any]]] = []

    async def score(self, text: str, problem: Problem | str) -> tuple[RewardDetail, dict[str, float]]:
        """This completion's detail and its gathered batch's figures."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self.open.append((text, problem, future))
        if len(self.open) == 1:
            loop.call_later(self.WINDOW, self._flush)
        elif len(self.open) >= self.LARGEST:
            self._flush()
        return await future

    def _flush(self) -> None:
        batch, self.open = self.open, []
        if batch:
            asyncio.ensure_future(self._run(batch))

    async def _run(self, batch: list[tuple[str, Problem | str, asyncio.Future[Any]]]) -> None:
        try:
            details = await asyncio.to_thread(self.scorer.score, [b[0] for b in batch], [b[1] for b in batch])
        except BaseException as exc:  # noqa: BLE001 - every caller gets it
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        figures = batch_figures(details)
        for (_, _, future), detail in zip(batch, details):
            if not future.done():
                future.set_result((detail, figures))


_GATHERS: weakref.WeakKeyDictionary[Any, dict[int, _Gather]] = weakref.WeakKeyDictionary()


async def compute_score_async(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None,
                              **options: Any) -> dict[str, Any]:
    """`compute_score` as a coroutine function, for verl's reward loop (which awaits such a function instead of
    running it in a thread): the calls that arrive together on one event loop (verl's `run_single` of a batch)
    are scored as one batch on the shared warm executors (duplicates once, in parallel, within ``budget``) in a
    worker thread, so the loop goes on meanwhile. The same scores and keys as `compute_score`, whose
    ``batch_*`` figures are then the whole gathered batch's (of the completions scored with the same options: one
    dataset's, when a batch mixes `data_source`s that choose different judges)."""
    scorer = _scorer(routed(data_source, _options(options)))
    problem = _verl_problem(scorer, ground_truth, extra_info, data_source)
    loop = asyncio.get_running_loop()
    gathers = _GATHERS.setdefault(loop, {})
    gather = gathers.get(id(scorer))
    if gather is None or gather.scorer is not scorer:
        gather = gathers[id(scorer)] = _Gather(scorer)
    detail, figures = await gather.score(solution_str, problem)
    if detail.reward is None:
        raise NotScored(f"pytest-apps: no reward ({detail.verdict}: {detail.reason})")
    return VerlResult({**detail.figures(), **{mine: figures[theirs] for mine, theirs in _VERL_BATCH.items()}})


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str], ground_truths: Sequence[Any],
                        extra_infos: Sequence[Any] | None = None, **options: Any) -> list[dict[str, Any]]:
    """verl's legacy batch reward manager's function (``verl.workers.reward_manager.BatchRewardManager``, which
    no trainer of verl 0.9 loads): the whole batch scored in parallel in one call, within ``budget`` if
    given. Each completion's `data_source` chooses its options as in `compute_score`; the completions of each set
    of options are scored at once, beside the others. Raises `NotScored` if any completion has no reward."""
    given = _options(options)
    texts, truths = list(solution_strs), list(ground_truths)
    if len(truths) != len(texts):
        raise ValueError(f"compute_score_batch: {len(texts)} solution_strs for {len(truths)} ground_truths")
    infos = (list(extra_infos) if extra_infos is not None else []) + [None] * len(texts)
    sources = (list(data_sources) if data_sources is not None else []) + [None] * len(texts)
    groups: dict[int, tuple[CodeReward, list[int]]] = {}
    for i in range(len(texts)):
        scorer = _scorer(routed(sources[i], given))
        groups.setdefault(id(scorer), (scorer, []))[1].append(i)

    def score(scorer: CodeReward, at: list[int]) -> list[RewardDetail]:
        problems = [_verl_problem(scorer, truths[i], infos[i], sources[i]) for i in at]
        return scorer.score([texts[i] for i in at], problems)

    details: list[RewardDetail] = [RewardDetail(None, NOT_APPLICABLE)] * len(texts)
    if len(groups) == 1:
        done = [score(*group) for group in groups.values()]
    else:
        with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="apps-reward") as pool:
            done = list(pool.map(lambda group: score(*group), groups.values()))
    for (_, at), found in zip(groups.values(), done):
        for i, detail in zip(at, found):
            details[i] = detail
    return _verl_results(details)


def _forget_scorers() -> None:
    """In a forked child (verl's legacy ``prime`` manager forks a process pool per batch): the parent's scorers
    talk to the parent's executors, so the child starts its own on first use, and leaves the parent's alone."""
    global _SCORERS_LOCK
    _SCORERS.clear()
    _GATHERS.clear()
    _SCORERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_scorers)


def close_scorers() -> None:
    """Stop the executors of every `compute_score` scorer in this process."""
    with _SCORERS_LOCK:
        scorers = list(_SCORERS.values())
        _SCORERS.clear()
    for scorer in scorers:
        scorer.close()
