"""TACO's special judges: its list of test problems whose outputs cannot be compared with the stored one alone
(``output_spj.jsonl`` of FlagOpen/TACO: ``{"idx", "special_judge", "case"}`` per test-split index), and the
built-in checkers that decide two of its three kinds.

  case 2  case-insensitive ("print YES or NO in any case"): decided by :func:`case_insensitive`;
  case 3  floating-point tolerance ("absolute or relative error at most 1e-6"): decided by :func:`tolerant`, with
          the tolerance the statement states (``10^{-k}`` near "error"), else 1e-6;
  case 1  several right outputs ("print any of them"): only a checker written for the problem can decide it. Such a
          problem is *needing a checker*: it is decided by the user's ``--apps-checkers`` checker when there is
          one, otherwise by the ordinary comparison, and then counted apart in the summary (its score is in doubt),
          or left out of the score (``--apps-needs-checker exclude``).
  case 0 with ``special_judge`` true (2 problems of the list): a special judge of no stated kind, treated as
          case 1.

The built-in checkers are trusted code of this package and run in the judging process on plain text, like every
checker (`checkers.py`); the candidate never sees them. TACO's own evaluator ignores the list (it compares every
problem by its APPS-derived cascade), so `--apps-judge taco` reproduces TACO without it unless it is given.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.wording import counted

__all__ = ["SEVERAL", "CASE_INSENSITIVE", "FLOAT", "KIND_NAMES", "SpecialJudges", "case_insensitive", "tolerant",
           "stated_tolerance"]

SEVERAL, CASE_INSENSITIVE, FLOAT = 1, 2, 3
KIND_NAMES = {SEVERAL: "several right outputs", CASE_INSENSITIVE: "case-insensitive", FLOAT: "floating-point"}
DEFAULT_TOLERANCE = 1e-6
_STATED = re.compile(r"(?:error|differ|precision|tolerance)[^.]{0,160}?10\s*\^?\s*\{?\s*[-−]\s*(\d{1,2})\s*\}?",
                     re.IGNORECASE | re.DOTALL)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


class SpecialJudgeError(Exception):
    """The list cannot be read; one line naming the file and the line."""


@dataclass(frozen=True)
class SpecialJudges:
    """The list: test-split index (the problem id of a TACO test row) -> kind (1, 2, 3)."""

    kinds: dict[str, int]
    path: str = ""

    @classmethod
    def from_file(cls, path: str | Path) -> SpecialJudges:
        kinds: dict[str, int] = {}
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise SpecialJudgeError(f"{path}: cannot read ({exc.strerror or exc})") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                index, flag, case = int(entry["idx"]), bool(entry["special_judge"]), int(entry.get("case") or 0)
            except (ValueError, KeyError, TypeError):
                raise SpecialJudgeError(f"{path} line {number}: not an output_spj.jsonl entry "
                                        '({"idx": N, "special_judge": true|false, "case": 0-3})') from None
            if flag:
                kinds[str(index)] = case if case in KIND_NAMES else SEVERAL
        return cls(kinds, str(path))

    def check_split(self, split: str) -> None:
        """The list names problems of TACO's test split by their index: refuse it for another named split, whose
        problems with those ids are others (a one-file source, split "", cannot be told apart and is taken)."""
        if split not in ("", "test"):
            raise SpecialJudgeError(
                f"--apps-special-judge={self.path}: TACO's list names problems of its test split by index, and this "
                f"run reads split {split!r}, whose problems with those ids are others; drop the option, or run the "
                "test split")

    def check_rows(self, taco_rows: bool) -> None:
        """Refuse the list for a dataset whose rows are not TACO's (APPS ids are other problems)."""
        if not taco_rows:
            raise SpecialJudgeError(
                f"--apps-special-judge={self.path}: TACO's list names problems of TACO's test split, and this "
                "dataset's rows are not TACO rows (no TACO tier or column); drop the option, or give TACO's data")

    def kind(self, problem_id: str) -> int | None:
        return self.kinds.get(problem_id)

    def needs_checker(self, problem_id: str) -> bool:
        return self.kinds.get(problem_id) == SEVERAL

    def bind(self, problem_id: str, question: str, fmt: str, expected: Any) -> Callable[[Any], tuple[bool, str]] | None:
        """The built-in checker of a case-insensitive or floating-point problem for one test (a standard-input
        problem's expected text), or None (no such kind, or a call-based problem: compared as usual)."""
        kind = self.kinds.get(problem_id)
        if fmt != "stdin" or not isinstance(expected, str):
            return None
        if kind == CASE_INSENSITIVE:
            return lambda got: case_insensitive(expected, got)
        if kind == FLOAT:
            tolerance = stated_tolerance(question)
            return lambda got: tolerant(expected, got, tolerance)
        return None

    def counts(self, problem_ids: Any) -> dict[str, int]:
        """How many of `problem_ids` the list marks, by kind name."""
        out = {name: 0 for name in KIND_NAMES.values()}
        for pid in problem_ids:
            kind = self.kinds.get(pid)
            if kind is not None:
                out[KIND_NAMES[kind]] += 1
        return out


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in str(text).strip().split("\n")]


def case_insensitive(expected: str, got: Any) -> tuple[bool, str]:
    """Equal ignoring letter case, each line compared with its trailing spaces cut (as the seed cascade's "lines")."""
    if not isinstance(got, str):
        return False, "no text output"
    want, have = _lines(expected), _lines(got)
    if [w.casefold() for w in want] == [h.casefold() for h in have]:
        return True, ""
    return False, "differs from the expected output even ignoring case"


def stated_tolerance(question: str) -> float:
    """The tolerance a statement states ("... error does not exceed 10^{-6}"), else 1e-6."""
    match = _STATED.search(question or "")
    if match is None:
        return DEFAULT_TOLERANCE
    return 10.0 ** -int(match.group(1))


def tolerant(expected: str, got: Any, tolerance: float = DEFAULT_TOLERANCE) -> tuple[bool, str]:
    """The same tokens in the same order, numbers within `tolerance` absolute or relative (the usual judge rule
    ``|a - b| <= tol * max(1, |b|)``), other tokens equal."""
    if not isinstance(got, str):
        return False, "no text output"
    want, have = str(expected).split(), got.split()
    if len(want) != len(have):
        return False, f"{counted(len(have), 'token')}; expected {len(want)}"
    for i, (w, h) in enumerate(zip(want, have)):
        if w == h:
            continue
        if _NUMBER.fullmatch(w) and _NUMBER.fullmatch(h):
            a, b = float(h), float(w)
            if math.isfinite(a) and abs(a - b) <= tolerance * max(1.0, abs(b)):
                continue
            return False, f"token {i}: {h} is not within {tolerance:g} of {w}"
        return False, f"token {i}: {h!r} where {w!r} was expected"
    return True, ""
