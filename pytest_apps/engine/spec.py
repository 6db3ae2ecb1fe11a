"""What a run is, decided once: the frozen `RunSpec` that `run_spec` builds from resolved `Settings`.

Every front end (the plugin's processes, the API's `Evaluator`, Ray's node actors, `python -m pytest_apps`) turns
its inputs into `Settings` and asks `run_spec` for the rest: the judging (profile, checkers, audit, TACO's
special-judge list, per-problem limits and their time scale), the run's limits and each problem's, the judge key
of a problem's records, what the executor's zygote preloads, and the least memory the profile starts a program in.
`selection_of` is the problems a run's settings select.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..candidates.sources import REFERENCE
from ..core.settings import Settings
from ..dataset.problems import Problem, Selection
from ..dataset.limits import limit_of
from ..executor import Executor, Limits
from ..judge.checkers import Checkers
from ..judge.profiles import DEFAULT_JUDGE, TABLE, Judging, preload_for
from ..judge.special import SpecialJudges
from .records import JudgeKey, judge_key


@dataclass(frozen=True)
class RunSpec:
    """A run's judging and limits, as every process of the run uses them. `limits` are the run's own (the time
    limit already scaled by the time scale): its executors run under them (`executor()`), and the engine gives a
    problem with limits of its own those (`engine.limits.problem_limits`, from the limits its executor runs under:
    the run's, or a served request's); `limit_of(problem)` and `judge_key(problem)` say the same for the report
    and the record key."""

    judging: Judging
    limits: Limits
    preload: tuple[str, ...]  # the modules the executor's zygote loads for the profile (and the audit's)
    memory_floor: int  # the least address space the profile starts a program in (its table entry's)

    @property
    def special(self) -> SpecialJudges | None:
        """TACO's special-judge list (the built-in checkers of its case-insensitive and floating-point problems)."""
        return self.judging.special

    def limit_of(self, problem: Problem) -> dict[str, Any]:
        """The limits `problem` ran under, for the report (dataset/limits.py)."""
        return limit_of(problem, self.judging.row_limits, self.limits.timeout, self.limits.memory,
                        self.judging.time_scale)

    def judge_key(self, problem: Problem) -> JudgeKey:
        """The judge part of the key of `problem`'s records (engine/records.py)."""
        return judge_key(self.judging, self.limits, problem)

    def executor(self, **where: Any) -> Executor:
        """An executor for the run (not started): its limits and preload; `where` its `cpu` and `slot`."""
        return Executor(self.limits, preload=self.preload, **where)


def run_spec(settings: Settings, *, checker_code: Mapping[str, str] | None = None) -> RunSpec:
    """The run spec of `settings`. `checker_code`: checkers given as text (the plan's, from the checker hook).
    A reference run (the dataset's own solutions, no agent) also audits the references."""
    s = settings
    judge = s.judge or DEFAULT_JUDGE  # (settings made directly, not resolved: the table's default)
    special = SpecialJudges.from_file(s.path(s.special_judge)) if s.special_judge else None
    checkers = Checkers.from_setting(s.checkers, s.rootdir, sources=checker_code)
    judging = Judging(profile=judge, checkers=checkers, audit=s.candidates == REFERENCE and not s.agent,
                      special=special, row_limits=s.limits == "row", time_scale=s.timeout_scale)
    limits = Limits(timeout=s.time_limit) if s.memory is None else Limits(timeout=s.time_limit, memory=s.memory)
    return RunSpec(judging, limits, preload_for(judging), TABLE[judge].memory_floor)


def selection_of(settings: Settings) -> Selection:
    """The problems `settings` select, in the order the selection applies: tiers, ids, offset, limit; tags."""
    return Selection(settings.difficulty, settings.only, settings.offset, settings.limit, settings.tag,
                     since=settings.since, until=settings.until, release=settings.release,
                     test_sets=settings.test_sets)
