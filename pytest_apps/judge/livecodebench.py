"""LiveCodeBench's verdicts (LiveCodeBench/LiveCodeBench lcb_runner/evaluation/testing_util.py 28fef95),
decided on a program that ran as a real program inside our isolation.

* Standard input (its ``grade_stdio``): the output and the expected text are stripped, split into lines and each
  line stripped; the line counts must agree, and each pair of lines must be equal, or equal as lists of
  ``Decimal`` numbers (``1.0`` and ``1``, ``1e3`` and ``1000`` match; no tolerance). A program that ends with
  ``SystemExit`` is judged on what it printed, whatever its status: the evaluator catches ``SystemExit`` around
  the program. An uncaught exception is a runtime error.
* Call-based (its ``grade_call_based``): each input line is one JSON argument; the return value, a tuple taken as
  a list, must equal the expected JSON value (``==``: ``1 == 1.0``; no one-element-list leniency, no tolerance).

Where the program runs differently (the differences are the evaluator's, documented in docs/livecodebench.md): the
evaluator execs the program inside a function after unwrapping a final ``if __name__ == '__main__':`` block; here
it runs as a real program whose ``__name__`` is ``"__main__"``, so that block runs as written. Its 6 s per-test
alarm is each problem's own time limit (``--apps-limits row``), measured as the program's own time.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from ..core import jsontext
from ..core.outcome import PASS, RUNTIME_ERROR, WRONG_ANSWER, Outcome, Verdict
from .toolkit import Checker, checked, cut, ended_verdict, judged_text, last_line, run_details


def judge(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None) -> Verdict:
    details = run_details(outcome)
    decide = _judge_stdin if fmt == "stdin" else _judge_call
    return ended_verdict(outcome, details) or decide(expected, outcome, details, checker)


def stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def compare_stdin(got: str, expected: str) -> str | None:
    """The step that accepts `got` ("lines" or "decimal"), or None: LiveCodeBench's line by line comparison."""
    mine, theirs = stripped_lines(got), stripped_lines(expected)
    if len(mine) != len(theirs):
        return None
    step = "lines"
    for a, b in zip(mine, theirs):
        if a == b:
            continue
        numbers = _decimals(a)
        if numbers is None or numbers != _decimals(b):
            return None
        step = "decimal"
    return step


def _judge_stdin(expected: Any, outcome: Outcome, details: dict[str, Any], checker: Checker | None) -> Verdict:
    if outcome.exit_code != 0 and outcome.error:  # an uncaught exception (SystemExit is caught, whatever its code)
        details["got"] = cut(outcome.stdout)
        return Verdict(RUNTIME_ERROR, reason=last_line(outcome.error), details=details)
    return judged_text(expected, outcome.stdout, compare_stdin, details, checker)


def _judge_call(expected: Any, outcome: Outcome, details: dict[str, Any], checker: Checker | None) -> Verdict:
    if outcome.value_json is None:
        reason = "the function returned no value"
        if outcome.exit_code or outcome.error:
            reason = last_line(outcome.error) or f"exit status {outcome.exit_code}"
        return Verdict(RUNTIME_ERROR, reason=reason, details=details)
    try:
        got = jsontext.loads(outcome.value_json)
    except (ValueError, RecursionError, OverflowError):
        return Verdict(WRONG_ANSWER, reason="return value is not valid JSON", details=details)
    if checker is not None:
        details.update(got=cut(outcome.value_json))
        return checked(checker, got, details)
    if got == expected:
        return Verdict(PASS, step="equal")
    details.update(expected=cut(jsontext.dumps(expected)), got=cut(outcome.value_json))
    return Verdict(WRONG_ANSWER, reason=f"expected {cut(jsontext.dumps(expected), 80, 1)}, got "
                                        f"{cut(outcome.value_json, 80, 1)}", details=details)
