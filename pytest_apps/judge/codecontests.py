"""CodeContests' verdicts: its tester's output comparison (google-deepmind/code_contests
execution/tester_sandboxer.cc fa7a4f8, ``OutputsMatch``), on a program that ran as a real program inside our
isolation under the problem's own limits.

* Both outputs are split on any of space, newline, tab, carriage return and vertical tab, empty tokens dropped,
  and lower-cased. Equal token lists match. Otherwise the lists must have the same length and every pair match:
  two tokens of which either is not a number must be equal; two numbers (anything ``absl::SimpleAtod`` reads,
  integers included) must differ by less than 1e-5 in absolute value, compared as doubles (so integers beyond
  2**53 that round to the same double match, and ``nan`` matches nothing).
* There is no special judge: a problem with several right outputs is decided by this comparison.
* A program that exits with a non-zero status, or is stopped by a limit, fails its test (its tester reports the
  program's status beside the comparison; we do not pass a test whose program failed).
"""

from __future__ import annotations

import re
from typing import Any

from ..core.outcome import RUNTIME_ERROR, Outcome, Verdict
from . import seed
from .toolkit import Checker, cut, ended_verdict, judged_text, last_line, run_details

_SEPARATORS = re.compile(r"[ \n\t\r\v]+")
# what absl::SimpleAtod reads (decimal and exponent forms, inf/infinity/nan), tokens being lower-cased
_DOUBLE = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf|infinity|nan)")
PRECISION = 1e-5


def tokens(text: str) -> list[str]:
    return [part.lower() for part in _SEPARATORS.split(text) if part]


def _number(token: str) -> float | None:
    if not _DOUBLE.fullmatch(token):
        return None
    try:
        return float(token)
    except (ValueError, OverflowError):
        return None


def values_match(a: str, b: str) -> bool:
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return a == b
    return abs(x - y) < PRECISION  # inf - inf and anything with nan are nan: no match, as in C++


def compare(got: str, expected: str) -> str | None:
    """The step that accepts `got` ("tokens" or "numbers"), or None: CodeContests' OutputsMatch."""
    mine, theirs = tokens(got), tokens(expected)
    if mine == theirs:
        return "tokens"
    if len(mine) != len(theirs):
        return None
    return "numbers" if all(values_match(a, b) for a, b in zip(mine, theirs)) else None


def judge(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None) -> Verdict:
    """One test as CodeContests' tester compares it (its problems are standard-input ones; a call-based problem
    of another dataset is judged by the seed cascade)."""
    if fmt != "stdin":
        return seed.judge(fmt, expected, outcome, checker)
    details = run_details(outcome)
    ended = ended_verdict(outcome, details)
    if ended is not None:
        return ended
    if outcome.exit_code != 0:
        details["got"] = cut(outcome.stdout)
        return Verdict(RUNTIME_ERROR, reason=last_line(outcome.error) or f"exit status {outcome.exit_code}",
                       details=details)
    return judged_text(expected, outcome.stdout, compare, details, checker)
