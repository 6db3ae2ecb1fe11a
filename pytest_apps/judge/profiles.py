"""Judge profiles: which semantics decide a run's tests, and with which checkers.

  "seed"  (the default) the seed runner's semantics: a standard-input program runs as a real program, a program
          that does not compile is a compile error, and the strict cascades of `seed.py` compare.
  "apps"  the original APPS harness's verdicts (hendrycks/apps b45c0ed), reproduced inside our isolation: the
          program runs its way (`executor/appsstyle.py`) and `apps.py` compares its way.
  "taco"  TACO's verdicts (FlagOpen/TACO metrics/testing_util.py 2ba6235): standard-input programs run as real
          programs after TACO's prelude and compare as `taco.py` does; call-based ones as "apps" does.

The two are never mixed: a run has one profile, named in every report. A reference run (`audit`) also records,
per test, a digest of each reference's output (to find problems whose references disagree) and, for a test that
fails, the verdict under the other profile (to list references that pass only there).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from ..core import jsontext
from ..core.outcome import RUN_EXITED, Outcome, Verdict
from ..core.settings import JUDGES, one_of
from . import apps, seed, taco
from .toolkit import Checker
from .checkers import Checkers
from .special import SpecialJudges

__all__ = ["APPS", "PROFILES", "SEED", "TACO", "Judging", "decide", "other_profile", "output_digest"]

SEED = "seed"
APPS = "apps"
TACO = "taco"
PROFILES = JUDGES  # (SEED, APPS, TACO), as --apps-judge accepts them
DESCRIPTIONS = {
    SEED: "the seed runner's strict cascade (programs run as real programs)",
    APPS: "the original APPS harness's verdicts (hendrycks/apps b45c0ed, reproduced in isolation)",
    TACO: "TACO's verdicts (FlagOpen/TACO metrics/testing_util.py 2ba6235, reproduced in isolation)",
}


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
    return APPS if profile == SEED else SEED


def decide(profile: str, fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None,
           step_prefix: str = "") -> Verdict:
    """The verdict of one run under `profile` (the run must have been made in that profile's style)."""
    if profile == TACO and fmt == "stdin":
        return taco.judge_stdin(expected, outcome, checker, step_prefix)
    if profile in (APPS, TACO):
        return apps.judge(fmt, expected, outcome, checker)
    return seed.judge(fmt, expected, outcome, checker)


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
