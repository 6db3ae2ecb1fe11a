"""The comparison cascades: pure functions from plain data (expected output, `Outcome`) to a `Verdict`.

Nothing here runs candidate code or touches pytest. The candidate's output reaches us only as text
(`Outcome.stdout`) or as JSON text (`Outcome.value_json`, parsed here with `json.loads` and nothing else),
so no object the candidate built can take part in a comparison.

Standard-input cascade (`compare_stdin`), the first step that matches accepts:
  "exact"    the stripped texts are equal;
  "lines"    the lists of right-stripped lines of the stripped texts are equal;
  "numeric"  every whitespace token on both sides is a finite decimal number, the counts are equal, and
             ``numpy.allclose(got, expected, rtol=1e-5, atol=1e-6)`` (tolerance relative to the expected).

Call-based cascade (`compare_call`):
  "equal"        Python ``==`` (so ``True == 1`` and ``1 == 1.0``, as in the APPS harness);
  "numeric"      both are numbers or rectangular nested lists of numbers (no bools, no strings) of the same
                 shape, and allclose as above;
  "set"          both are lists and equal as sets (inner lists/dicts are frozen so they can be set items);
  "set_rounded"  both are flat lists of numbers and equal as sets of floats rounded to 3 places.
  When the expected output is a one-element list and the whole cascade fails, the cascade is run again
  against that element; its steps are then named "unwrap+equal", "unwrap+numeric", ...

Decisions worth knowing:
  * Numeric tokens are ASCII decimal literals only (``-1``, ``+2.``, ``.5``, ``1e-3``); ``nan``, ``inf``,
    ``1_000``, ``0x10`` and non-ASCII digits are not numbers, and neither is a literal too large for a
    float. A NaN never matches anything; an infinity only matches through the "exact"/"equal" steps.
  * The numeric steps follow the reference runner exactly, including its weakness: integers are compared
    as floats within rtol=1e-5, so ``123457`` is accepted for ``123456``. Kept for comparable numbers.
  * Comparisons are case-sensitive and never coerce strings or bools to numbers.
  * A malformed, absurdly deep or absurdly large return value is the candidate's failure (its code wrote
    it), never a harness error, so a candidate cannot turn its failure into an error.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from ..core import jsontext
from ..core.errors import HarnessError
from ..core.wording import counted
from ..core.outcome import CHECKER_STEP, OUTPUT_LIMIT, PASS, RUNTIME_ERROR, WRONG_ANSWER, Outcome, Verdict
from .toolkit import (
    CUT_CHARS,
    CUT_LINES,
    MAX_VALUE_JSON_CHARS,
    Checker,
    checked,
    cut,
    ended_verdict,
    expected_text,
    first_difference,
    last_line,
    run_details,
    show_value,
    text_lines,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ATOL",
    "CHECKER_STEP",
    "Checker",
    "checked",
    "ended_verdict",
    "RTOL",
    "NUMBER",
    "compare_call",
    "compare_stdin",
    "cut",
    "first_difference",
    "judge",
]

RTOL = 1e-5
ATOL = 1e-6

# a decimal number token, as the numeric steps accept it
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NUMBER = NUMBER

# Steps may see arbitrary data; these are the ways odd data can make them fail.
_ODD_DATA = (RecursionError, TypeError, ValueError, OverflowError, MemoryError)


# --------------------------------------------------------------------------------------------------
# standard input


def _numeric_tokens(tokens: list[str]) -> np.ndarray | None:
    values = []
    for token in tokens:
        if _NUMBER.fullmatch(token) is None:
            return None
        value = float(token)  # a literal beyond float range gives inf, rejected below
        if not math.isfinite(value):
            return None
        values.append(value)
    return _numpy().asarray(values, dtype=float)


def _allclose(got: np.ndarray, expected: np.ndarray) -> bool:
    return bool(_numpy().allclose(got, expected, rtol=RTOL, atol=ATOL))


def _numpy() -> Any:
    """numpy, loaded on first use: exact and line-wise answers (most of them) never need it, and its import is
    most of what a process that runs one case (a pasted node id) would otherwise add to pytest's start."""
    import numpy

    return numpy


def compare_stdin(expected: Any, got: str) -> str | None:
    """The name of the step that accepts `got` as `expected` ("exact", "lines", "numeric"), or None."""
    exp = expected_text(expected)
    if exp is None or not isinstance(got, str):
        return None
    exp_s, got_s = exp.strip(), got.strip()
    if exp_s == got_s:
        return "exact"
    if text_lines(exp_s) == text_lines(got_s):
        return "lines"
    exp_tokens, got_tokens = exp_s.split(), got_s.split()
    if not exp_tokens or len(exp_tokens) != len(got_tokens):
        return None
    exp_nums = _numeric_tokens(exp_tokens)
    if exp_nums is None:
        return None
    got_nums = _numeric_tokens(got_tokens)
    if got_nums is None:
        return None
    if _allclose(got_nums, exp_nums):
        return "numeric"
    return None


# --------------------------------------------------------------------------------------------------
# call-based


def _as_float_array(value: Any) -> np.ndarray | None:
    """A float array when `value` is a number or a rectangular nested list of numbers, else None."""

    def walk(item: Any) -> Any:
        if isinstance(item, bool):
            raise TypeError("bool is not a number here")
        if isinstance(item, (int, float)):
            number = float(item)  # OverflowError for ints beyond float range
            if not math.isfinite(number):
                raise ValueError("not finite")
            return number
        if isinstance(item, (list, tuple)):
            return [walk(x) for x in item]
        raise TypeError(f"{type(item).__name__} is not a number")

    try:
        return _numpy().array(walk(value), dtype=float)  # ragged nesting raises ValueError
    except _ODD_DATA:
        return None


def _freeze(value: Any) -> Any:
    """A hashable stand-in: lists become tuples, dicts frozensets of (key, frozen value)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(x) for x in value)
    if isinstance(value, dict):
        return frozenset((_freeze(k), _freeze(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return frozenset(_freeze(x) for x in value)
    hash(value)  # TypeError for anything else unhashable
    return value


def _rounded_set(value: list) -> set[float]:
    out = set()
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise TypeError("not a number")
        out.add(round(float(item), 3))
    return out


def _step_equal(expected: Any, got: Any) -> bool:
    # Plain Python ==, like the APPS harness: True == 1 and 1 == 1.0 pass here. `got` came from
    # json.loads, so no candidate-defined __eq__ can run.
    return bool(expected == got)


def _step_numeric(expected: Any, got: Any) -> bool:
    exp, out = _as_float_array(expected), _as_float_array(got)
    if exp is None or out is None or exp.shape != out.shape:
        return False
    return _allclose(out, exp)


def _step_set(expected: Any, got: Any) -> bool:
    # Lists only: a str is not a set of its characters, a dict not a set of its keys.
    if not (isinstance(expected, list) and isinstance(got, list)):
        return False
    return {_freeze(x) for x in expected} == {_freeze(x) for x in got}


def _step_set_rounded(expected: Any, got: Any) -> bool:
    if not (isinstance(expected, list) and isinstance(got, list)):
        return False
    return _rounded_set(expected) == _rounded_set(got)


_CALL_STEPS = (
    ("equal", _step_equal),
    ("numeric", _step_numeric),
    ("set", _step_set),
    ("set_rounded", _step_set_rounded),
)


def _call_cascade(expected: Any, got: Any) -> str | None:
    for name, step in _CALL_STEPS:
        try:
            if step(expected, got):
                return name
        except _ODD_DATA:
            continue
    return None


def _lists_from_tuples(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_lists_from_tuples(x) for x in value]
    return value


def compare_call(expected: Any, got: Any) -> str | None:
    """The name of the step that accepts return value `got` as `expected`, or None.

    `got` is JSON-decoded (tuples already lists); tuples in `expected` are treated as lists too.
    """
    try:
        expected = _lists_from_tuples(expected)
        got = _lists_from_tuples(got)
    except RecursionError:
        return None
    step = _call_cascade(expected, got)
    if step is not None:
        return step
    if isinstance(expected, list) and len(expected) == 1:
        step = _call_cascade(expected[0], got)
        if step is not None:
            return "unwrap+" + step
    return None


def _decode_value(value_json: str) -> Any:
    return jsontext.loads(value_json)


# --------------------------------------------------------------------------------------------------
# failure texts


def _first_call_difference(expected: Any, got: Any) -> str:
    # APPS wraps most expected values in a one-element list: show the difference against the element,
    # unless the return value is itself a one-element list.
    if isinstance(expected, list) and len(expected) == 1 and not (isinstance(got, list) and len(got) == 1):
        expected = expected[0]
    if isinstance(expected, list) and isinstance(got, list):
        for index, (e, g) in enumerate(zip(expected, got)):
            try:
                same = bool(e == g)
            except _ODD_DATA:
                same = False
            if not same:
                return f"item {index}: expected {cut(show_value(e), 80, 1)}, got {cut(show_value(g), 80, 1)}"
        if len(expected) != len(got):
            return f"length: expected {counted(len(expected), 'item')}, got {len(got)}"
        return "same items, not accepted"
    if type(expected) is not type(got) and not (
        isinstance(expected, (int, float)) and isinstance(got, (int, float))
    ):
        return f"type: expected {type(expected).__name__}, got {type(got).__name__}"
    return f"expected {cut(show_value(expected), 80, 1)}, got {cut(show_value(got), 80, 1)}"


# --------------------------------------------------------------------------------------------------
# the verdict


def judge(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None) -> Verdict:
    """Decide one test: `fmt` is "stdin" or "call", `expected` the APPS output, `outcome` the run. `checker`, when
    given, decides a run that ended normally in place of the cascade (see `judge.checkers`): it gets the program's
    output (the text, or the decoded return value) and answers (accepted, message).

    Raises `HarnessError` when the outcome says the harness failed (or makes no sense), and ValueError
    for an unknown `fmt`.
    """
    if fmt not in ("stdin", "call"):
        raise ValueError(f"unknown problem format {fmt!r} (expected 'stdin' or 'call')")
    details = run_details(outcome)
    ended = ended_verdict(outcome, details)
    if ended is not None:
        return ended
    if fmt == "stdin":
        return _judge_stdin(expected, outcome, details, checker)
    return _judge_call(expected, outcome, details, checker)


def _judge_stdin(expected: Any, outcome: Outcome, details: dict[str, Any], checker: Checker | None) -> Verdict:
    if outcome.exit_code is None:
        raise HarnessError("the program exited but its exit status is unknown")
    if outcome.exit_code != 0:
        details["got"] = cut(outcome.stdout)
        return Verdict(
            RUNTIME_ERROR,
            reason=last_line(outcome.error) or f"exit status {outcome.exit_code}",
            details=details,
        )
    if checker is not None:
        details.update(got=cut(outcome.stdout))
        return checked(checker, outcome.stdout, details)
    step = compare_stdin(expected, outcome.stdout)
    if step is not None:
        return Verdict(PASS, step=step)
    exp_text = expected_text(expected)
    if exp_text is None:
        details["expected"] = cut(show_value(expected))
        details["got"] = cut(outcome.stdout)
        return Verdict(WRONG_ANSWER, reason=f"expected output is not text ({type(expected).__name__})",
                       details=details)
    diff = first_difference(exp_text, outcome.stdout)
    details.update(expected=cut(exp_text), got=cut(outcome.stdout), first_diff=diff)
    return Verdict(WRONG_ANSWER, reason=diff, details=details)


def _judge_call(expected: Any, outcome: Outcome, details: dict[str, Any], checker: Checker | None) -> Verdict:
    if outcome.value_json is None:
        if outcome.error:
            return Verdict(RUNTIME_ERROR, reason=last_line(outcome.error), details=details)
        if outcome.exit_code not in (None, 0):
            return Verdict(RUNTIME_ERROR, reason=f"exit status {outcome.exit_code}", details=details)
        return Verdict(RUNTIME_ERROR, reason="the function returned no value", details=details)
    if len(outcome.value_json) > MAX_VALUE_JSON_CHARS:
        size = len(outcome.value_json)
        return Verdict(OUTPUT_LIMIT, reason=f"return value too large ({size} chars of JSON)", details=details)
    try:
        got = _decode_value(outcome.value_json)
    except RecursionError:
        return Verdict(WRONG_ANSWER, reason="return value nested too deeply to compare", details=details)
    except (ValueError, TypeError, OverflowError, MemoryError) as exc:
        details["got"] = cut(outcome.value_json)
        return Verdict(WRONG_ANSWER, reason=f"return value is not valid JSON ({type(exc).__name__})",
                       details=details)
    if checker is not None:
        details.update(got=cut(outcome.value_json))
        return checked(checker, got, details)
    step = compare_call(expected, got)
    if step is not None:
        return Verdict(PASS, step=step)
    try:
        diff = _first_call_difference(expected, got)
    except _ODD_DATA:
        diff = "values differ"
    details.update(expected=cut(show_value(expected)), got=cut(outcome.value_json), first_diff=diff)
    return Verdict(WRONG_ANSWER, reason=diff, details=details)
