"""The benchmark from Python: the plugin's engine without pytest, for optimizers and training loops.

    from pytest_apps import Evaluator, load_problems

    problems = load_problems(dataset="sample")
    with Evaluator(timeout=4.0) as ev:
        results = ev.score_many([(p, program_for(p)) for p in problems])
        print(ev.summary(results, problems).figures["strict_accuracy"])

One engine, two front ends. Problems come from the same loader, selection and problem index as the
plugin's (`dataset.loading.open_rows`, `dataset.problems.select`, `dataset.index.load`); every case is run and
judged by the same function as a pytest item (`engine.run.run_case`), becomes the same record
(`engine.run.case_record`) and rolls up through the same code (`report.rollup.problem_result`, `summary_of`,
`document`). A program therefore gets the same verdicts and figures whichever way it was scored;
`tests/test_api.py` checks it.

Like the plugin, this module lifts the interpreter's 4300-digit limit on int/str conversion
(`sys.set_int_max_str_digits(0)`): APPS data holds longer integers.
"""

from __future__ import annotations

import itertools
import os
import queue
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from types import TracebackType
from typing import Any

from .candidates.sources import Candidate
from .core.record import CaseRecord
from .core.settings import DEFAULT_TIMEOUT, OptionError, Settings, settings_from
from .core.wording import counted
from .dataset import index as problem_index
from .dataset import table
from .dataset.index import cases_path, read_cases
from .dataset.problems import Cases, Problem, Selection, SkippedRow, parse_row
from .dataset.rows import DEFAULT_DATASET, DatasetError
from .engine.confirm import confirm, pending
from .engine.problem import run_problem
from .engine.special import taco_facts
from .engine.spec import run_spec, selection_of
from .engine.waiting import wait_until
from .executor import Executor
from .executor.machine import timing_figures
from .judge import profiles
from .judge.checkers import BUILTIN
from .judge.profiles import DEFAULT_JUDGE
from .report.rollup import ProblemResult, Summary, document, single_result, summary_of
from .report.taco import annotate

__all__ = ["Evaluator", "ProblemList", "load_problems", "problem_from_row", "DatasetError"]

DEFAULT_NAME = "<candidate>"  # the program's file name in tracebacks when the caller gives none


def _settings(given: dict[str, Any]) -> Settings:
    """The settings of these arguments, as the plugin's options of the same names give them; a bad value is a
    one-line ValueError naming the parameter."""
    try:
        return settings_from(given, named=lambda name: name.replace("-", "_"), check=profiles.checked)
    except OptionError as e:
        raise ValueError(str(e)) from None


# ----------------------------------------------------------------------------------------------- problems


class ProblemList(list[Problem]):
    """The problems `load_problems` selected, in dataset order, plus what the report needs about the load:
    the rows that were skipped (and why), `only` ids not found, and the dataset actually read."""

    def __init__(
        self,
        problems: Iterable[Problem] = (),
        *,
        source: dict[str, Any] | None = None,
        skipped: Sequence[SkippedRow] = (),
        missing: Sequence[str] = (),
        settings: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(problems)
        self.source: dict[str, Any] = dict(source or {})
        self.skipped: list[SkippedRow] = list(skipped)
        self.missing: list[str] = list(missing)
        self.settings: dict[str, Any] = dict(settings or {})


class _MemoryTestData:
    """Each loaded problem's test data, found from the `Problem` object itself (by identity).

    The plugin's items get their cases from `plan.PlanTestData` (a file per problem in the plan folder);
    here they stay in memory for as long as the `Problem` object lives, since an optimizer scores the
    same problems again and again. `Problem` is frozen plain data shared with the plugin, so the data
    is kept beside it rather than on it; an entry goes when its problem is garbage-collected.
    """

    def __init__(self) -> None:
        self._cases: dict[int, Cases] = {}
        self._serials: dict[int, int] = {}
        self._next = itertools.count(1)

    def put(self, problem: Problem, cases: Cases) -> None:
        key = id(problem)
        self._cases[key] = cases
        self._serials[key] = next(self._next)
        weakref.finalize(problem, self._drop, key)

    def _drop(self, key: int) -> None:
        self._cases.pop(key, None)
        self._serials.pop(key, None)

    def serial(self, problem: Problem) -> int:
        """A number naming this problem's test data for as long as the process lives (never reused, unlike
        `id()`): how executors elsewhere (Ray actors) cache it."""
        self.get(problem)
        return self._serials[id(problem)]

    def get(self, problem: Problem) -> Cases:
        try:
            return self._cases[id(problem)]
        except KeyError:
            raise LookupError(
                f"problem {problem.id}: no test data; pass a Problem returned by load_problems() in this "
                "process (a copy, e.g. from dataclasses.replace or pickling, carries none)"
            ) from None


_TEST_DATA = _MemoryTestData()


def problem_cases(problem: Problem) -> Cases:
    """The test cases (inputs and expected outputs) of a problem `load_problems` returned in this process, as the
    Evaluator runs them. A LookupError names a problem that carries none (a copy)."""
    return _TEST_DATA.get(problem)


def _absent_ids_text(missing: Sequence[str], dataset: Any, split: str, revision: str | None, name: str) -> str:
    """One line: the `only` ids the data does not hold, and the first ids it does hold."""
    first = problem_index.load(dataset, split, revision, Selection((), (), 0, 3, ()), 1).parsed.problems
    verb = "is" if len(missing) == 1 else "are"
    holds = f"it holds problem ids {', '.join(p.id for p in first)}, ..." if first else "it holds no problem"
    return (f"only: {', '.join(missing)} {verb} not in the data ({name}, split {split}); {holds} (give ids of its "
            "problem_id column, or row positions for data without one)")


def _empty_window_text(dataset: Any, split: str, revision: str | None, selection: Selection, name: str) -> str:
    """One line: a contest-date window that keeps no problem, and the dates the data holds."""
    held = problem_index.load(dataset, split, revision, selection.unfiltered(), 1).parsed.problems
    dates = sorted(p.date[:10] for p in held if p.date)
    holds = f"its contest dates run from {dates[0]} to {dates[-1]}" if dates else "its rows have no contest date"
    return (f"since={selection.since}, until={selection.until}: no problem of {name} (split {split}) has a contest "
            f"date in that window; {holds}")


def load_problems(
    dataset: str | os.PathLike[str] | Any = DEFAULT_DATASET,
    split: str = "test",
    revision: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    only: Iterable[str | int] | str | int = (),
    difficulty: Iterable[str] | str = (),
    max_tests: int = 20,
    tag: Iterable[str] | str = (),
    release: str | None = None,
    since: str | None = None,
    until: str | None = None,
    test_sets: Iterable[str] | str = (),
) -> ProblemList:
    """Load and select APPS problems exactly as the plugin's `--apps-*` options of the same names do.

    `dataset` is a hub id (or ``owner/name/<folder>``), ``"sample"`` (the bundled problems), a
    .jsonl/.json/.parquet file or a folder, or a `datasets` object in APPS format: a ``Dataset``, an
    ``IterableDataset`` (read lazily: `limit` reads only the rows it needs), or a ``DatasetDict`` /
    ``IterableDatasetDict`` (its `split` is used). Selection order: tier filter (`difficulty`), `only` ids,
    `offset`, `limit`; `tag` keeps problems with one of these tags or skill types (TACO's, LiveCodeBench's
    platform); `since` / `until` (YYYY-MM-DD) keep the problems whose contest date is in that window (an empty
    window is a ValueError naming the dates the data holds). `release` reads a release of a dataset that has
    them (LiveCodeBench), `test_sets` which test sets count (CodeContests). `max_tests` keeps each problem's first N tests (0 or less keeps all). Returns
    `Problem` objects (the plugin's type) whose test data stays available to `Evaluator`. Raises
    `DatasetError` (one line) for data that cannot be read and `ValueError` for a bad option (including a
    `dataset` of another type, and `only` ids none of which the data holds; when only some are absent, a
    `UserWarning` names them and the list holds the others).
    """
    sys.set_int_max_str_digits(0)
    asked = {"only": tuple(str(x) for x in ((only,) if isinstance(only, (str, int)) else only)),
             "difficulty": tuple((difficulty,) if isinstance(difficulty, str) else difficulty),
             "tag": tuple((tag,) if isinstance(tag, str) else tag), "offset": offset, "limit": limit,
             "release": release, "since": since, "until": until,
             "test_sets": tuple((test_sets,) if isinstance(test_sets, str) else test_sets)}
    selection = selection_of(_settings(asked))
    loaded = problem_index.load(dataset, split, revision, selection, max_tests)
    _check_loaded(loaded, dataset, split, revision, selection)
    _keep_test_data(loaded)
    parsed = loaded.parsed
    return ProblemList(parsed.problems, source=loaded.source_dict(), skipped=parsed.skipped, missing=parsed.missing,
                       settings=_load_settings(dataset, loaded, split, revision, asked, max_tests))


def _check_loaded(loaded: problem_index.Loaded, dataset: Any, split: str, revision: str | None,
                  selection: Selection) -> None:
    """Refuse a load that kept nothing because of what was asked (a ValueError naming it): `only` ids none of which
    the data holds, a contest-date window no problem is in; warn of `only` ids absent when others were found."""
    parsed = loaded.parsed
    if parsed.missing:
        absent = _absent_ids_text(parsed.missing, dataset, split, revision, loaded.source.dataset)
        if not parsed.problems:
            raise ValueError(absent)
        others = len(parsed.problems)
        were = "was" if others == 1 else "were"
        warnings.warn(f"{absent}; the {counted(others, 'other')} {were} loaded", UserWarning, stacklevel=3)
    if (selection.since or selection.until) and not parsed.problems and not parsed.skipped:
        raise ValueError(_empty_window_text(dataset, split, revision, selection, loaded.source.dataset))


def _load_settings(dataset: Any, loaded: problem_index.Loaded, split: str, revision: str | None,
                   asked: dict[str, Any], max_tests: int) -> dict[str, Any]:
    """The load's settings as the report names them (the plugin's option names); the date window, release and test
    sets only where given."""
    return {
        "dataset": dataset if isinstance(dataset, str) else loaded.source.dataset,
        "split": split,
        "revision": revision,
        "limit": asked["limit"],
        "offset": asked["offset"],
        "only": list(asked["only"]),
        "difficulty": list(asked["difficulty"]),
        "tag": list(asked["tag"]),
        "max_tests": max_tests,
        **{k: v for k, v in (("release", asked["release"]), ("since", asked["since"]), ("until", asked["until"]),
                             ("test_sets", list(asked["test_sets"]))) if v},  # named where given
    }


def _keep_test_data(loaded: problem_index.Loaded) -> None:
    """Each loaded problem's tests, for `Evaluator`: as parsed, or from the cached problem index's files."""
    for problem in loaded.parsed.problems:
        cases = loaded.parsed.cases.get(problem.id)
        if cases is None:  # from the cached problem index: its file holds every test
            cases = read_cases(cases_path(loaded.cases_dir, problem), problem.n_cases)
        _TEST_DATA.put(problem, cases)


def problem_from_row(row: dict[str, Any], index: int = 0, max_tests: int = 20) -> Problem:
    """One problem from one row in APPS format (the plugin's row rules), its test data kept for `Evaluator`.

    For rows that come one at a time rather than as a split: a trainer's dataset row with its own
    ``input_output`` (a JSON text or an already decoded dict with ``inputs``, ``outputs`` and an optional
    ``fn_name``). `index` is the row's position (its id when the row has no ``problem_id`` or ``id``);
    `max_tests` keeps its first N tests (0 or less keeps all). Raises `DatasetError` (one line: the row and
    why) for a row the plugin would skip.
    """
    sys.set_int_max_str_digits(0)
    parsed = parse_row(row, index, max_tests)
    if isinstance(parsed, SkippedRow):
        raise DatasetError(f"row {parsed.index} (problem {parsed.problem_id}): {parsed.reason}; "
                           f"{table.entry_of(row).fix}")
    problem, cases = parsed
    _TEST_DATA.put(problem, cases)
    return problem


# ---------------------------------------------------------------------------------------------- evaluator


def _labels(work: list[tuple[Problem, str | None]], names: Sequence[str | None] | None) -> list[str | None]:
    """One program name (or None) per pair: `names` checked against the pairs, or none given."""
    labels: list[str | None] = list(names) if names is not None else [None] * len(work)
    if len(labels) != len(work):
        raise ValueError(f"names: {counted(len(labels), 'name')} for {counted(len(work), 'pair')}")
    return labels


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Evaluator:
    """Scores programs on problems with warm executors: one fork server per worker, kept across calls.

    Options mirror the plugin's: `timeout` (`--apps-timeout`, seconds of the program's own time per test), `memory`
    (`--apps-memory`: bytes, or a size such as "512M" or "4GiB"; None = `$APPS_CALL_BASED_MEMORY_BYTES`, else 4 GiB;
    0 = none), `max_tests`
    (`--apps-max-tests`, applied on top of the cap the problems were loaded with; None or 0 or less =
    every loaded test). `fail_fast` stops a problem at its first failing test: the rest do not run,
    the verdict is the same (fail), and `tests_passed`/`tests_run` count only what ran.
    `workers` (default one per core) bounds how many programs run at once in `score_many`. `judge`
    (`--apps-judge`) names a judge profile (the table in judge/profiles.py); `checkers` (`--apps-checkers`) a folder of `<problem_id>.py` checkers
    or "builtin"; `limits` (`--apps-limits`) "row" runs a problem whose row gives limits (TACO, CodeContests,
    LiveCodeBench's 6 s) under them.

    `confirm` (on by default, as in the plugin) runs each near-limit (`borderline`) verdict, and each timeout
    the mean slowdown measured around it would have brought within the limit, met while the machine was measured
    slower than quiet, again once a call's other work is done, and the second run's verdict is the test's
    (docs/isolation.md; `confirmations` counts them). On a quiet machine nothing is run twice, nor is a clear
    timeout. `confirm=False` keeps every first verdict, so the report can then differ from the plugin's there.

    `ray=True` runs the executors as Ray actors, one per node of the Ray cluster this process is connected
    to (`engine.cluster`; ``pip install 'pytest-apps[ray]'``): `ray_per_node` executors per node (default: the
    node's CPUs) instead of `workers` here, shared by every caller on the cluster with the same options (one
    pool per node, however many processes score); `ray_resource` keeps them to the nodes that hold that custom
    Ray resource. The verdicts are the same; a node lost mid-batch costs only time. `shared=True` (without Ray)
    runs the programs on this machine's one pool of executors (`engine.machine`: a server started at the first
    score, `workers` executors, default the machine's CPUs), shared by every process that scores with the same
    options.

    Use as a context manager, or call `close()`. Thread-safe: each worker thread takes an executor of
    its own for a whole problem (so a program is compiled once per problem, as in the plugin).
    """

    def __init__(
        self,
        workers: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        memory: int | str | None = None,
        max_tests: int | None = None,
        fail_fast: bool = False,
        judge: str = DEFAULT_JUDGE,
        checkers: str | os.PathLike[str] | None = None,
        ray: bool = False,
        ray_per_node: int | None = None,
        confirm: bool = True,
        limits: str = "fixed",
        ray_resource: str | None = None,
        shared: bool = False,
    ) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"workers: {workers}; give 1 or more (or None for one per core)")
        # the options as the plugin's settings (converted and checked by the one option table, each error naming
        # the parameter), and the run spec every front end builds from them (engine/spec.py)
        self.settings = _settings({"timeout": timeout, "memory": memory, "judge": judge, "limits": limits,
                                   "checkers": None if checkers is None else str(checkers)})
        self.spec = run_spec(self.settings)
        sys.set_int_max_str_digits(0)
        self.workers = workers or _cores()
        self.timeout = self.settings.timeout
        self.memory = self.settings.memory
        self.max_tests = max_tests
        self.fail_fast = fail_fast
        self.judge = self.settings.judge
        self.checkers = self.settings.checkers
        self.limits = self.spec.limits
        self.judging = self.spec.judging
        self._lock = threading.Lock()
        self._idle: queue.LifoQueue[Executor] = queue.LifoQueue()  # the warmest executor first
        self._executors: list[Executor] = []
        self._threads: ThreadPoolExecutor | None = None
        self._closed = False
        self._active = 0
        self._busy_since = 0.0
        self.wall_time = 0.0  # seconds during which at least one score/score_many call was running
        self.cluster: Any = None  # engine.cluster.RayExecutors when ray=True, engine.machine.MachinePool when shared
        # timeout and near-limit verdicts of a slow machine run again once a call's other work is done
        # (engine/confirm.py)
        self.confirm = bool(confirm)
        self.confirmations = 0
        self._to_confirm: dict[int, tuple] = {}
        # a checker folder as an absolute path: every node (or the machine's pool) builds the same spec from these
        where = self.checkers if self.checkers in (None, BUILTIN) else os.path.abspath(self.checkers or "")
        if ray:
            from .engine.cluster import RayExecutors

            self.cluster = RayExecutors(replace(self.settings, checkers=where), per_node=ray_per_node,
                                        confirm=self.confirm, resource=ray_resource)
        elif shared:
            from .engine.machine import MachinePool

            self.cluster = MachinePool(replace(self.settings, checkers=where), executors=workers,
                                       confirm=self.confirm)

    # -- context ---------------------------------------------------------------------------------------
    def __enter__(self) -> Evaluator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker threads and every executor server. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads, self._threads = self._threads, None
            executors = list(self._executors)
        if threads is not None:
            threads.shutdown(wait=True, cancel_futures=True)
        for executor in executors:
            executor.close()
        if self.cluster is not None:
            self.cluster.close()

    # -- scoring ---------------------------------------------------------------------------------------
    def score(self, problem: Problem, program: str | None, *, name: str | None = None) -> ProblemResult:
        """Score one program on one problem (its tests run one after another on one executor).

        `program` None means "no program" (verdict no_code, like a missing candidate file); `name` is
        the program's file name in tracebacks and `ProblemResult.candidate` (default "<candidate>").
        """
        self._check(problem, program)
        if self.cluster is not None:
            return self.score_many([(problem, program)], names=[name])[0]
        with self._timed():
            return self._confirm([self._score_on_any(problem, program, name, self.fail_fast)])[0]

    def score_many(
        self, pairs: Iterable[tuple[Problem, str | None]], *, names: Sequence[str | None] | None = None
    ) -> list[ProblemResult]:
        """Score (problem, program) pairs in parallel, up to `workers` at once; results in input order.

        `names`, if given, holds one `name` (see `score`) per pair.
        """
        work = list(pairs)
        labels = _labels(work, names)
        for problem, program in work:
            self._check(problem, program)
        if not work:
            return []
        if self.cluster is not None:
            results = self.score_batch(work, names=labels)
            assert all(r is not None for r in results)  # without a budget, every program is scored or it raises
            return [r for r in results if r is not None]
        with self._timed():
            if len(work) == 1 or self.workers == 1:
                results = [self._score_on_any(p, program, n, self.fail_fast) for (p, program), n in zip(work, labels)]
            else:
                pool = self._pool()
                futures = [pool.submit(self._score_on_any, p, program, n, self.fail_fast)
                           for (p, program), n in zip(work, labels)]
                results = [future.result() for future in futures]
            return self._confirm(results)

    def score_batch(
        self,
        pairs: Iterable[tuple[Problem, str | None]],
        *,
        names: Sequence[str | None] | None = None,
        fail_fast: bool | None = None,
        budget: float | None = None,
        timings: list[tuple[float, float] | None] | None = None,
    ) -> list[ProblemResult | None]:
        """Score a training batch: `score_many` with a time budget and a fail-fast choice for this call.

        `fail_fast` (default: the Evaluator's) stops each program at its first failing test (cheapest input
        first), which changes no pass/fail verdict. `budget` (seconds) bounds the call: what is not scored
        by then comes back as None (not scored: never a result that reads as failed). The call returns at the
        budget; programs still running stop at their next test, so the executors are free again at most
        one test's limit later. Verdicts do not depend on the batch's size or the concurrency.

        `timings`, if given (a list), receives one entry per pair: (seconds it waited for an executor, seconds
        from the call to its result), or None where it was not scored. On a Ray cluster the first is the time
        until it was sent to a node (each node takes two programs per executor at a time), the second when its
        result came back here.
        """
        work = list(pairs)
        labels = _labels(work, names)
        if budget is not None and budget <= 0:
            raise ValueError(f"budget: {budget} must be more than 0 seconds (or None for no budget)")
        for problem, program in work:
            self._check(problem, program)
        if not work:
            return []
        stop_fast = self.fail_fast if fail_fast is None else bool(fail_fast)
        deadline = None if budget is None else time.monotonic() + budget
        started = time.monotonic()
        with self._timed():
            if self.cluster is not None:
                return self._score_on_cluster(work, labels, stop_fast, deadline, started, timings)
            return self._score_here(work, labels, stop_fast, deadline, started, timings)

    def _score_here(self, work: list[tuple[Problem, str | None]], labels: list[str | None], fail_fast: bool,
                    deadline: float | None, started: float,
                    timings: list[tuple[float, float] | None] | None) -> list[ProblemResult | None]:
        """`score_batch` on this process's executors, up to `workers` at once: what is not done by `deadline` is
        None (what is still running stops at its next test), and nothing is confirmed then; `timings` as
        `score_batch`'s, from `started`."""
        begun: list[float | None] = [None] * len(work)
        ended: list[float | None] = [None] * len(work)

        def one(i: int, problem: Problem, program: str | None, name: str | None,
                stop: Any) -> ProblemResult | None:
            begun[i] = time.monotonic()
            result = self._score_on_any(problem, program, name, fail_fast, stop)
            ended[i] = time.monotonic()
            return result

        stopped = threading.Event()
        pool = self._pool()
        futures: list[Future[ProblemResult | None]] = [
            pool.submit(one, i, p, program, n, stopped.is_set)
            for i, ((p, program), n) in enumerate(zip(work, labels))
        ]
        left = wait_until(futures, deadline)
        stopped.set()  # what is still running stops at its next test, what has not started does not start
        for future in left:
            future.cancel()
        results = [f.result() if f.done() and not f.cancelled() and f not in left else None for f in futures]
        if timings is not None:
            timings.extend(None if r is None or b is None or e is None else (b - started, e - started)
                           for r, b, e in zip(results, begun, ended))
        if left:  # out of budget: no time to confirm; what was scored stands as it ran
            with self._lock:
                for r in results:
                    self._to_confirm.pop(id(r), None)
            return results
        return self._confirm(results)

    # -- roll-up ---------------------------------------------------------------------------------------
    def summary(self, results: Iterable[ProblemResult], problems: Sequence[Problem] | None = None) -> Summary:
        """The run's figures over `results` (one per problem), as the plugin computes them.

        Pass the `ProblemList` from `load_problems` as `problems` to count its skipped rows and missing
        `only` ids, as the plugin's report does. `summary.to_dict()` is the report's body.
        """
        skipped = list(getattr(problems, "skipped", []))
        missing = list(getattr(problems, "missing", []))
        summary = summary_of(list(results), skipped, {"wall_time": round(self.wall_time, 3), "missing_ids": missing})
        # each problem's limits as the plugin reports them: the run spec's, as the problems ran under them
        return annotate(summary, taco_facts(list(problems or []), self.spec, skipped=skipped))

    def report(self, results: Iterable[ProblemResult], problems: Sequence[Problem] | None = None) -> dict[str, Any]:
        """The plugin's JSON report document (`--apps-report`) for `results`: version, settings, source,
        summary figures, skipped rows, per-problem results and the executor's isolation layers."""
        settings: dict[str, Any] = dict(getattr(problems, "settings", {}))
        if self._cap() is not None:
            loaded = settings.get("max_tests", 0)
            settings["max_tests"] = self._cap() if loaded is None or loaded <= 0 else min(loaded, self._cap() or 0)
        settings.update(
            timeout=self.timeout, memory=self.memory, fail_fast=self.fail_fast, workers=self.workers, front_end="api",
            judge=self.judge, checkers=self.checkers,
        )
        source = dict(getattr(problems, "source", {}))
        doc = document(settings, source, self.summary(results, problems))
        executor = self._checkout()
        try:
            doc["isolation"] = executor.isolation()  # the executor's active isolation layers, as the plugin
            limits = executor.limits
            doc["machine"] = timing_figures(limits.timeout, limits.band, limits.backstop, _cores(), self.workers,
                                            executor.machine_speed())
        finally:
            self._idle.put(executor)
        return doc

    # -- internals -------------------------------------------------------------------------------------
    def _cap(self) -> int | None:
        return self.max_tests if self.max_tests is not None and self.max_tests > 0 else None

    def _check(self, problem: Problem, program: str | None) -> None:
        if self._closed:
            raise RuntimeError("Evaluator is closed")
        if not isinstance(problem, Problem):
            raise TypeError(f"expected a Problem from load_problems(), got {type(problem).__name__}")
        if program is not None and not isinstance(program, str):
            raise TypeError(f"problem {problem.id}: the program must be str or None, not {type(program).__name__}")
        if program is not None and not problem.broken:
            _TEST_DATA.get(problem)  # fail before anything runs

    def _score_on_any(self, problem: Problem, program: str | None, name: str | None, fail_fast: bool,
                      stop: Any = None) -> ProblemResult | None:
        if stop is not None and stop():
            return None
        executor = self._checkout()
        try:
            return self._score_on(executor, problem, program, name, fail_fast, stop)
        finally:
            self._idle.put(executor)

    def _shown(self, problem: Problem) -> Problem:
        """The problem as scored: the Evaluator's test cap on top of the one it was loaded with."""
        cap = self._cap()
        if cap is not None and problem.n_cases > cap:
            return replace(problem, n_cases=cap, input_sizes=problem.input_sizes[:cap])
        return problem

    def _score_on(
        self, executor: Executor, problem: Problem, program: str | None, name: str | None, fail_fast: bool,
        stop: Any = None,
    ) -> ProblemResult | None:
        shown = self._shown(problem)
        if program is None:
            return single_result(shown, None, [])
        candidate = Candidate(problem.id, name or DEFAULT_NAME, program, origin="api")
        records: list[CaseRecord] | None = []
        if not shown.broken:
            records = run_problem(executor, shown, candidate, _TEST_DATA.get(problem), self.judging, fail_fast, stop)
        if records is None:
            return None
        result = single_result(shown, candidate, records)
        if self.confirm and pending(records):  # confirmed once the call's other work is done (_confirm)
            with self._lock:  # (kept with the result itself: its id is not reused while it waits here)
                self._to_confirm[id(result)] = (result, problem, shown, candidate, records, fail_fast)
        return result

    def _confirm(self, results: list[ProblemResult | None]) -> list[ProblemResult | None]:
        """Each timeout or near-limit verdict of `results` run again, now that the other workers are idle, one after
        another on one executor (engine/confirm.py); `confirmations` counts them."""
        with self._lock:
            todo = [(i, self._to_confirm.pop(id(r), None)) for i, r in enumerate(results) if r is not None]
        todo = [(i, item[1:]) for i, item in todo if item is not None and item[0] is results[i]]
        if not todo:
            return results
        executor = self._checkout()
        try:
            for i, (problem, shown, candidate, records, fail_fast) in todo:
                records, made = confirm(executor, shown, candidate, _TEST_DATA.get(problem), self.judging, fail_fast,
                                        records)
                with self._lock:
                    self.confirmations += made
                results[i] = single_result(shown, candidate, records)
        finally:
            self._idle.put(executor)
        return results

    def _score_on_cluster(self, work: list[tuple[Problem, str | None]], labels: list[str | None], fail_fast: bool,
                          deadline: float | None, started: float = 0.0,
                          timings: list[tuple[float, float] | None] | None = None) -> list[ProblemResult | None]:
        """The same results as `_score_on`, from executors in Ray actors (`engine.cluster`); `timings` as
        `score_batch`'s, from `started`."""
        from .engine.cluster import Work

        results: list[ProblemResult | None] = [None] * len(work)
        remote: list[Work] = []
        where: list[int] = []
        for i, ((problem, program), name) in enumerate(zip(work, labels)):
            shown = self._shown(problem)
            if program is None:
                results[i] = single_result(shown, None, [])
                continue
            candidate = Candidate(problem.id, name or DEFAULT_NAME, program, origin="api")
            if shown.broken:
                results[i] = single_result(shown, candidate, [])
                continue
            remote.append(Work(shown, candidate, _TEST_DATA.serial(problem), _TEST_DATA.get(problem)))
            where.append(i)
        times: list[tuple[float, float] | None] = []
        spans: list[tuple[float, float] | None] = [None if r is None else (0.0, 0.0) for r in results]
        for i, w, records, span in zip(where, remote, self.cluster.run(remote, fail_fast, deadline, times), times):
            results[i] = None if records is None else single_result(w.problem, w.candidate, records)
            spans[i] = None if span is None else (span[0] - started, span[1] - started)
            with self._lock:  # (confirmed on the node, engine/cluster.py)
                self.confirmations += sum(bool(r.confirmed) for r in records or ())
        if timings is not None:
            timings.extend(spans)
        return results

    def _checkout(self) -> Executor:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if self._closed:
                raise RuntimeError("Evaluator is closed")
            if len(self._executors) < self.workers:
                executor = self.spec.executor()
                self._executors.append(executor)
                return executor
        return self._idle.get()

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("Evaluator is closed")
            if self._threads is None:
                self._threads = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="apps-eval")
            return self._threads

    @contextmanager
    def _timed(self) -> Iterator[None]:
        """Count busy wall time; overlapping calls from several threads are counted once."""
        with self._lock:
            if self._active == 0:
                self._busy_since = time.perf_counter()
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    self.wall_time += time.perf_counter() - self._busy_since
