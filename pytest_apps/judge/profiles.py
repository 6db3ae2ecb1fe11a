"""Judge profiles: which semantics decide a run's tests, and with which checkers.

  "seed"  (the default) the seed runner's semantics: a standard-input program runs as a real program, a program
          that does not compile is a compile error, and the strict cascades of `seed.py` compare.
  "apps"  the original APPS harness's verdicts (hendrycks/apps b45c0ed), reproduced inside our isolation: the
          program runs its way (`executor/appsstyle.py`) and `apps.py` compares its way.
  "taco"  TACO's verdicts (FlagOpen/TACO metrics/testing_util.py 2ba6235): standard-input programs run as real
          programs after TACO's prelude and compare as `taco.py` does; call-based ones as "apps" does.
  "lcb"   LiveCodeBench's verdicts (`livecodebench.py`): real programs, its line and Decimal comparison, its
          strict equality of returned values.
  "codecontests"  CodeContests' tester's output comparison (`codecontests.py`): real programs, tokens compared
          with a 1e-5 tolerance for numbers.

The table (`TABLE`) is the one source of what a profile is: its name, how its programs run (`runs`), what the
executor preloads for them, the least memory they start in and its cascade. `add` puts a new entry in it (the
plugin adds those of `pytest_apps_judge_profiles` implementations); `checked` checks a run's settings against it.
Profiles are never mixed: a run has one profile, named in every report. A reference run (`audit`) also records,
per test, a digest of each reference's output (to find problems whose references disagree) and, for a test that
fails, the verdict under the other profile (to list references that pass only there).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, replace
from typing import Any, Callable

from ..core import jsontext
from ..core.outcome import RUN_EXITED, Outcome, Verdict
from ..core.settings import OptionError, Settings, one_of, size_text
from . import apps, codecontests, livecodebench, seed, taco
from .toolkit import Checker
from .checkers import Checkers
from .special import SpecialJudges

__all__ = ["APPS", "CODECONTESTS", "DEFAULT_JUDGE", "LCB", "MIN_MEMORY", "MIN_MEMORY_APPS", "RUNS", "SEED", "TABLE",
           "TACO", "Judging", "Profile", "add", "checked", "decide", "names", "other_profile", "output_digest",
           "preload_for", "remove"]

SEED = "seed"
APPS = "apps"
TACO = "taco"
LCB = "lcb"
CODECONTESTS = "codecontests"
DEFAULT_JUDGE = SEED  # --apps-judge left unset
# How a profile's programs run (`Profile.runs`; engine/run.py holds a runner for each): as real programs, in the
# original APPS harness's way, or as TACO runs them (its prelude, then either of the two ways)
# (the first two are the executor's own names of its ways of running)
RUNS_REAL, RUNS_APPS_HARNESS, RUNS_TACO_HARNESS = "real", "apps-harness", "taco-harness"
RUNS = (RUNS_REAL, RUNS_APPS_HARNESS, RUNS_TACO_HARNESS)
# The least address space a test's child starts a program in (its interpreter's own mappings included, numpy's too
# for programs run in the APPS harness's way), with room for a small program: below it every test would fail, or
# pass by luck.
MIN_MEMORY = 64 << 20
MIN_MEMORY_APPS = 256 << 20
# the modules the executor's zygote loads for programs run in the original APPS harness's way (its prefix imports
# numpy; its standard-input runs mock stdin): executor.APPS_STYLE_PRELOAD
APPS_STYLE_PRELOAD = ("numpy", "unittest.mock")


def _decide_seed(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None, step_prefix: str) -> Verdict:
    return seed.judge(fmt, expected, outcome, checker)


def _decide_apps(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None, step_prefix: str) -> Verdict:
    return apps.judge(fmt, expected, outcome, checker)


def _decide_taco(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None, step_prefix: str) -> Verdict:
    if fmt == "stdin":
        return taco.judge_stdin(expected, outcome, checker, step_prefix)
    return apps.judge(fmt, expected, outcome, checker)


def _decide_lcb(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None, step_prefix: str) -> Verdict:
    return livecodebench.judge(fmt, expected, outcome, checker)


def _decide_codecontests(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None,
                         step_prefix: str) -> Verdict:
    return codecontests.judge(fmt, expected, outcome, checker)


@dataclass(frozen=True)
class Profile:
    """One judge profile: its name (as ``--apps-judge`` takes it), what it is, its cascade (`decide(fmt, expected,
    outcome, checker, step_prefix)`: one run's verdict, from plain data), how its programs run (`runs`, one of
    `RUNS`: the engine's runner, engine/run.py), what the executor preloads for them, the least address space they
    start in, and the profile a reference audit compares it with."""

    name: str
    description: str
    decide: Callable[[str, Any, Outcome, "Checker | None", str], Verdict]
    runs: str = RUNS_REAL
    preload: tuple[str, ...] = ()
    memory_floor: int = MIN_MEMORY
    audit_with: str = SEED


# The table of judge profiles, in --apps-judge's order. A new profile is an entry here (with its cascade, a module
# of this package), or one `add` puts here (a conftest's `pytest_apps_judge_profiles`); see docs/extending.md.
TABLE: dict[str, Profile] = {p.name: p for p in (
    Profile(SEED, "the seed runner's strict cascade (programs run as real programs)",
            runs=RUNS_REAL, audit_with=APPS, decide=_decide_seed),
    Profile(APPS, "the original APPS harness's verdicts (hendrycks/apps b45c0ed, reproduced in isolation)",
            runs=RUNS_APPS_HARNESS, preload=APPS_STYLE_PRELOAD, memory_floor=MIN_MEMORY_APPS, decide=_decide_apps),
    Profile(TACO, "TACO's verdicts (FlagOpen/TACO metrics/testing_util.py 2ba6235, reproduced in isolation)",
            runs=RUNS_TACO_HARNESS, preload=APPS_STYLE_PRELOAD, memory_floor=MIN_MEMORY_APPS, decide=_decide_taco),
    Profile(LCB, "LiveCodeBench's verdicts (LiveCodeBench lcb_runner testing_util.py 28fef95; programs run as "
            "real programs)", decide=_decide_lcb),
    Profile(CODECONTESTS, "CodeContests' output comparison (google-deepmind/code_contests tester_sandboxer.cc "
            "fa7a4f8; programs run as real programs)", decide=_decide_codecontests),
)}
BUILT_IN = frozenset(TABLE)  # the profiles of this package (`remove` leaves them)


def names() -> tuple[str, ...]:
    """The profiles' names, in --apps-judge's order (the table's own, then those added)."""
    return tuple(TABLE)


def add(profile: Profile) -> None:
    """Put `profile` in the table (a profile a conftest or a plugin gives). ValueError, in one line naming the
    profile, for a name already taken by another entry, an unknown way of running or an unknown audit profile;
    the same entry given again (each xdist worker's conftest gives it too) is taken once."""
    if not isinstance(profile, Profile):
        raise ValueError(f"a judge profile is a pytest_apps.judge.profiles.Profile, not {type(profile).__name__}")
    if not profile.name or not isinstance(profile.name, str):
        raise ValueError(f"judge profile {profile.name!r}: give it a name")
    if TABLE.get(profile.name, profile) != profile:
        raise ValueError(f"judge profile {profile.name!r}: the name is taken; give the profile a name of its own")
    if profile.runs not in RUNS:
        raise ValueError(f"judge profile {profile.name!r}: runs={profile.runs!r}; use {one_of(RUNS)}")
    if profile.audit_with not in TABLE or profile.audit_with == profile.name:
        raise ValueError(f"judge profile {profile.name!r}: audit_with={profile.audit_with!r} is no other profile; "
                         f"use {one_of(names())}")
    TABLE[profile.name] = profile


def remove(name: str) -> None:
    """Take a profile `add` put in the table out of it again (a run that added it ends); the built-in ones stay."""
    if name not in BUILT_IN:
        TABLE.pop(name, None)


def checked(settings: Settings, named: Callable[[str], str]) -> Settings:
    """`settings` checked against the table (`core.settings.resolve`'s `check`): the judge a profile of it (the
    default one when unset, and then marked `defaulted`, as when it is given), the memory limit not below its
    floor. OptionError, in one line naming the option by
    `named(option name)`, otherwise."""
    judge = settings.judge or DEFAULT_JUDGE
    if judge not in TABLE:
        raise OptionError(f"{named('judge')}: unknown judge {judge!r}; use {one_of(names())}")
    if settings.memory and settings.memory < TABLE[judge].memory_floor:
        raise OptionError(memory_too_small(named("memory"), settings.memory, judge))
    if judge != DEFAULT_JUDGE or "judge" in settings.defaulted:
        return settings
    # (the default profile, given or not: a rerun line need not repeat it, as it need not repeat other defaults)
    return replace(settings, judge=judge, defaulted=(*settings.defaulted, "judge"))


def memory_too_small(name: str, memory: int, judge: str) -> str:
    """The one line refusing a memory limit below `judge`'s floor: what was given and the least that works."""
    entry = TABLE[judge]
    why = f" (the {judge} judge's harness loads {entry.preload[0]})" if entry.memory_floor > MIN_MEMORY and \
        entry.preload else ""
    given = size_text(memory)
    given = given if given[-1].isalpha() else f"{given} bytes"
    return (f"{name}: {given} is too small to start a Python program; give at least {size_text(entry.memory_floor)}"
            f"{why}, or 0 for no limit")


@dataclass(frozen=True)
class Judging:
    """How a run's tests are judged: the profile, the checkers (or None) and whether to audit references;
    `special`, TACO's special-judge list (built-in checkers for its case-insensitive and floating-point
    problems); `row_limits`, whether a problem with its own limits (TACO rows) runs under them, its time scaled
    by `time_scale`."""

    profile: str = SEED
    checkers: Checkers | None = None
    audit: bool = False
    special: SpecialJudges | None = None
    row_limits: bool = False
    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.profile not in TABLE:
            raise ValueError(f"unknown judge {self.profile!r}; use {one_of(names())}")


def other_profile(profile: str) -> str:
    """The profile a reference audit compares `profile` with."""
    return TABLE[profile].audit_with


def preload_for(judging: Judging) -> tuple[str, ...]:
    """What the executor preloads for a run judged by `judging`: its profile's, and with the audit, the compared
    profile's too (its programs run again in that profile's way)."""
    entry = TABLE[judging.profile]
    both = entry.preload + (TABLE[entry.audit_with].preload if judging.audit else ())
    return tuple(dict.fromkeys(both))


def decide(profile: str, fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None,
           step_prefix: str = "") -> Verdict:
    """The verdict of one run under `profile` (the run must have been made in that profile's style)."""
    return TABLE[profile].decide(fmt, expected, outcome, checker, step_prefix)


# --------------------------------------------------------------------------------------------------
# the reference audit's digest of an output


def output_digest(profile: str, fmt: str, outcome: Outcome | None) -> str:
    """A short digest of what a run printed or returned, after the seed cascade's normalisation, or "" when the
    run did not end normally. Texts are compared stripped, line by line with trailing spaces cut (its "exact" and
    "lines" steps); an output made only of numbers by its numbers to 6 significant digits, in order (its
    "numeric" step); a return value as canonical JSON with numbers likewise."""
    if outcome is None or outcome.status != RUN_EXITED or outcome.exit_code != 0:
        return ""
    if fmt == "stdin":
        if profile == APPS and outcome.value_json is None:
            return ""
        text = _normal_text(outcome.stdout)
    else:
        value = _returned(profile, outcome)
        if value is _NOTHING:
            return ""
        try:
            text = "v:" + json.dumps(_normal_value(value), sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return ""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


_NOTHING = object()


def _returned(profile: str, outcome: Outcome) -> Any:
    if outcome.value_json is None:
        return _NOTHING
    try:
        if profile == APPS:
            return apps.plain(apps.decode(jsontext.loads(outcome.value_json)["v"]))
        return jsontext.loads(outcome.value_json)
    except (ValueError, TypeError, KeyError, RecursionError, OverflowError):
        return _NOTHING


def _number(token: str) -> str | None:
    if seed.NUMBER.fullmatch(token) is None:
        return None
    value = float(token)
    return format(value, ".6g") if math.isfinite(value) else None


def _normal_text(text: str) -> str:
    tokens = text.split()
    numbers = [_number(t) for t in tokens]
    if tokens and all(n is not None for n in numbers):
        return "n:" + " ".join(numbers)  # type: ignore[arg-type]
    return "t:" + "\n".join(line.rstrip() for line in text.strip().split("\n"))


def _normal_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        number = float(value) if abs(value) < 1e300 else value
        return format(number, ".6g") if isinstance(number, float) and math.isfinite(number) else str(value)
    if isinstance(value, (list, tuple)):
        return [_normal_value(x) for x in value]
    if isinstance(value, dict):
        return {str(k): _normal_value(v) for k, v in value.items()}
    return repr(value)
