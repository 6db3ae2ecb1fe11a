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

Profiles are never mixed: a run has one profile, named in every report. A reference run (`audit`) also records,
per test, a digest of each reference's output (to find problems whose references disagree) and, for a test that
fails, the verdict under the other profile (to list references that pass only there).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Callable

from ..core import jsontext
from ..core.outcome import RUN_EXITED, Outcome, Verdict
from ..core.settings import JUDGES, MIN_MEMORY, MIN_MEMORY_APPS, one_of
from . import apps, codecontests, livecodebench, seed, taco
from .toolkit import Checker
from .checkers import Checkers
from .special import SpecialJudges

__all__ = ["APPS", "CODECONTESTS", "LCB", "PROFILES", "SEED", "TABLE", "TACO", "Judging", "Profile", "decide", "other_profile", "output_digest",
           "preload_for"]

SEED = "seed"
APPS = "apps"
TACO = "taco"
LCB = "lcb"
CODECONTESTS = "codecontests"
PROFILES = JUDGES  # (SEED, APPS, TACO), as --apps-judge accepts them
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
    """One judge profile: its name (as ``--apps-judge`` takes it), what it is, how its programs run (`runs`: the
    engine's runner, engine/run.py), what the executor preloads for them, the least address space they start in,
    the profile a reference audit compares it with, and its cascade (`decide`: one run's verdict)."""

    name: str
    description: str
    runs: str
    preload: tuple[str, ...]
    memory_floor: int
    audit_with: str
    decide: Callable[[str, Any, Outcome, "Checker | None", str], Verdict]


# The table of judge profiles, in --apps-judge's order. A new profile is an entry here (with its cascade, a module
# of this package) and its name in core/settings.py's JUDGES; see docs/extending.md.
TABLE: dict[str, Profile] = {p.name: p for p in (
    Profile(SEED, "the seed runner's strict cascade (programs run as real programs)",
            runs="real", preload=(), memory_floor=MIN_MEMORY, audit_with=APPS, decide=_decide_seed),
    Profile(APPS, "the original APPS harness's verdicts (hendrycks/apps b45c0ed, reproduced in isolation)",
            runs="apps-harness", preload=APPS_STYLE_PRELOAD, memory_floor=MIN_MEMORY_APPS, audit_with=SEED,
            decide=_decide_apps),
    Profile(TACO, "TACO's verdicts (FlagOpen/TACO metrics/testing_util.py 2ba6235, reproduced in isolation)",
            runs="taco-harness", preload=APPS_STYLE_PRELOAD, memory_floor=MIN_MEMORY_APPS, audit_with=SEED,
            decide=_decide_taco),
    Profile(LCB, "LiveCodeBench's verdicts (LiveCodeBench lcb_runner testing_util.py 28fef95; programs run as "
            "real programs)", runs="real", preload=(), memory_floor=MIN_MEMORY, audit_with=SEED, decide=_decide_lcb),
    Profile(CODECONTESTS, "CodeContests' output comparison (google-deepmind/code_contests tester_sandboxer.cc "
            "fa7a4f8; programs run as real programs)", runs="real", preload=(), memory_floor=MIN_MEMORY,
            audit_with=SEED, decide=_decide_codecontests),
)}
PROFILES = JUDGES  # (SEED, APPS, TACO), as --apps-judge accepts them
DESCRIPTIONS = {name: entry.description for name, entry in TABLE.items()}


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
        if self.profile not in PROFILES:
            raise ValueError(f"unknown judge {self.profile!r}; use {one_of(PROFILES)}")


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
