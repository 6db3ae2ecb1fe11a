"""What a request runs on its executor: one program on one input (`/run_code`), or one program on a problem's tests
judged by a profile (`/submit`, `/judge`), through the engine every front end shares (`engine.problem.run_problem`,
`engine.confirm.confirm`), so a program gets here the verdicts the plugin and `pytest_apps.rewards` give it.

The limits are the request's: its time limit is the program's own time, its memory limit the child's address space
(never below what the judge profile's interpreter starts in), its output capped as in the plugin. An executor that
fails (its server or zygote died) is renewed and the run made once more; a second failure is the sandbox's error,
never the program's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..candidates.sources import Candidate
from ..core.outcome import RUN_HARNESS_ERROR, Outcome
from ..core.record import CaseRecord
from ..core.settings import DEFAULT_MEMORY, DEFAULT_TIMEOUT, OptionError, settings_from
from ..judge import profiles
from ..dataset.problems import Cases, Problem
from ..engine.confirm import confirm, pending
from ..engine.problem import run_problem
from ..engine.spec import RunSpec, run_spec
from ..executor import Executor, Limits, Program, files_request
from .schema import RequestError

MiB = 1 << 20
CANDIDATE_NAME = "<candidate>"  # the program's file name in its tracebacks


@dataclass(frozen=True)
class Served:
    """The server's limits: the time limit of a judged request that names none, the memory limit of a request that
    names none (bytes; 0 = none), the longest time limit a request may ask for, the most tests per request, and the
    judge profile of a request that names none."""

    timeout: float = DEFAULT_TIMEOUT
    memory: int = DEFAULT_MEMORY
    max_timeout: float = 60.0
    max_tests: int = 1000
    judge: str = profiles.DEFAULT_JUDGE


@functools.lru_cache(maxsize=16)
def spec_of(judge: str, served: Served) -> RunSpec:
    """The run spec of judge profile `judge` under the server's limits (RequestError 400 for an unknown profile);
    made once per profile."""
    try:
        settings = settings_from({"judge": judge, "timeout": served.timeout, "memory": served.memory},
                                 named=lambda name: name.replace("-", "_"),
                                 check=profiles.checked)
    except (OptionError, TypeError) as exc:
        raise RequestError(str(exc), 400) from None
    return run_spec(settings)


def limits_for(spec: RunSpec, served: Served, timeout: float | None, memory_mb: int | None) -> Limits:
    """The limits of one request: `timeout` seconds of own time (None: the server's) and `memory_mb` MiB of address
    space (None or 0 or less: the server's); RequestError (400) for a time over the server's longest or a memory
    limit below what the profile's interpreter starts in."""
    seconds = served.timeout if timeout is None else timeout
    if seconds > served.max_timeout:
        raise RequestError(f"run_timeout: {seconds:g} s is over this server's longest, {served.max_timeout:g} s "
                           "(its --max-timeout)", 400)
    memory = served.memory if memory_mb is None or memory_mb <= 0 else memory_mb * MiB
    if 0 < memory < spec.memory_floor:
        raise RequestError(f"memory_limit_MB: {memory // MiB} is below the {spec.memory_floor // MiB} MB a Python "
                           f"program of judge profile {spec.judging.profile!r} starts in; give more (or -1 for the "
                           "server's limit)", 400)
    return replace(spec.limits, timeout=seconds, memory=memory)


def run_once_more(first: Callable[[], Outcome], executor: Executor) -> Outcome:
    """`first()`'s outcome; after a failure of the executor, once more on a renewed executor."""
    outcome = first()
    if outcome.status == RUN_HARNESS_ERROR:
        executor.renew()
        outcome = first()
    return outcome


def run_code_job(source: str, stdin: str | None, limits: Limits, files: Mapping[str, bytes] | None = None,
                 fetch: Sequence[str] = ()) -> Callable[[Executor], Outcome]:
    """A `/run_code` job: `source` run as ``python prog.py < stdin`` under `limits`, with `files` placed in its
    folder and the files at `fetch` sent back (`files_refused` has checked them)."""
    program = Program(source, CANDIDATE_NAME)

    def job(executor: Executor) -> Outcome:
        with executor.limited(limits):
            return run_once_more(lambda: executor.run_stdin(program, stdin or "", files=files, fetch=fetch),
                                 executor)

    return job


@dataclass(frozen=True)
class Judged:
    """One program on one problem's tests: what a judged request runs."""

    problem: Problem
    cases: Cases
    program: str | None
    spec: RunSpec
    limits: Limits
    fail_fast: bool

    @property
    def candidate(self) -> Candidate:
        return Candidate(self.problem.id, CANDIDATE_NAME, self.program, origin="serve")


def judged_job(work: Judged, stop: Callable[[], bool]) -> Callable[[Executor], list[CaseRecord] | None]:
    """A judged job: the records of `work` (None when `stop` turned true before its tests were done). A verdict near
    the time limit met on a slow machine is run again before it stands (engine/confirm.py), as the API does."""

    def job(executor: Executor) -> list[CaseRecord] | None:
        candidate = work.candidate
        judging = work.spec.judging
        with executor.limited(work.limits):
            records = run_problem(executor, work.problem, candidate, work.cases, judging, work.fail_fast, stop)
            if records and pending(records):
                records, _ = confirm(executor, work.problem, candidate, work.cases, judging, work.fail_fast,
                                     records)
        return records

    return job


def files_refused(files: Mapping[str, bytes], fetch: Sequence[str], limits: Limits) -> str:
    """Why the executor cannot place `files` or fetch `fetch` under `limits` ("" when it can): too many, or contents
    over the file-size limit together."""
    try:
        files_request(files, fetch, limits)
    except ValueError as exc:
        return f"files: {exc}"
    return ""


def plain(value: Any) -> Any:
    """`value` cut for a response: text over 1,000 characters shortened, as SandboxFusion's test_info is."""
    if isinstance(value, str) and len(value) > 1000:
        return value[:1000] + f"... ({len(value)} characters)"
    return value
