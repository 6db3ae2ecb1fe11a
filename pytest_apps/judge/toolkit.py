"""The judging toolkit every judge profile shares (`seed.py`, `apps.py`, `taco.py`): a checker's type and its
verdict (`Checker`, `checked`), the verdict of a run that did not end by itself (`ended_verdict`), and the short
texts of a failure (`cut`, `show_value`, `first_difference`). Pure functions from plain data; no candidate code.
"""

from __future__ import annotations

import json
import signal as _signal
from typing import Any, Callable

from ..core.errors import HarnessError
from ..core.outcome import (
    CHECKER_STEP,
    COMPILE_ERROR,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    PASS,
    RUN_COMPILE_ERROR,
    RUN_EXITED,
    RUN_HARNESS_ERROR,
    RUN_MEMORY,
    RUN_OUTPUT_LIMIT,
    RUN_SIGNALED,
    RUN_TIMEOUT,
    RUNTIME_ERROR,
    TIMEOUT,
    WRONG_ANSWER,
    Outcome,
    Verdict,
)

__all__ = [
    "CUT_CHARS",
    "CUT_LINES",
    "MAX_VALUE_JSON_CHARS",
    "Checker",
    "checked",
    "cut",
    "ended_verdict",
    "expected_text",
    "first_difference",
    "last_line",
    "run_details",
    "show_value",
    "text_lines",
]

# A return value whose JSON text is longer than this is not parsed (reported as an output limit).
MAX_VALUE_JSON_CHARS = 64 * 1024 * 1024

# How much of a value a failure text shows.
CUT_CHARS = 300
CUT_LINES = 8
_LINE_SHOWN = 80


# A problem's checker, bound to one test's input and expected output: the program's output -> (accepted, message).
Checker = Callable[[Any], "tuple[bool, str]"]


def expected_text(expected: Any) -> str | None:
    """The expected stdout as text, or None when it is not usable as text.

    APPS gives a str, sometimes a list of lines; lines are joined with "\\n" (one trailing newline of each
    line is dropped first, so ``["1\\n", "2\\n"]`` and ``["1", "2"]`` mean the same).
    """
    if isinstance(expected, str):
        return expected
    if isinstance(expected, (bytes, bytearray)):
        return bytes(expected).decode("utf-8", errors="replace")
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            return str(expected)
        except ValueError:  # an int beyond the int-to-str digit limit
            return None
    if isinstance(expected, (list, tuple)):
        parts = []
        for item in expected:
            text = expected_text(item) if not isinstance(item, (list, tuple)) else None
            if text is None:
                return None
            parts.append(text[:-1] if text.endswith("\n") else text)
        return "\n".join(parts)
    return None


def text_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().split("\n")]


def first_difference(expected: str, got: str) -> str:
    """One human line naming the first line where `got` differs from `expected`."""
    exp_text = expected_text(expected)
    if exp_text is None:
        exp_text = ""
    got_text = got if isinstance(got, str) else ""
    if not got_text.strip() and exp_text.strip():
        return "got no output"
    exp_lines, got_lines = text_lines(exp_text), text_lines(got_text)
    for number, (e, g) in enumerate(zip(exp_lines, got_lines), start=1):
        if e != g:
            return f"line {number}: expected {_quote(e)}, got {_quote(g)}"
    if len(got_lines) < len(exp_lines):
        missing = len(exp_lines) - len(got_lines)
        return (
            f"got fewer lines: {len(got_lines)} instead of {len(exp_lines)}; "
            f"line {len(got_lines) + 1} expected {_quote(exp_lines[len(got_lines)])}"
            + (f" (and {missing - 1} more)" if missing > 1 else "")
        )
    if len(got_lines) > len(exp_lines):
        extra = len(got_lines) - len(exp_lines)
        return (
            f"got more lines: {len(got_lines)} instead of {len(exp_lines)}; "
            f"line {len(exp_lines) + 1} got {_quote(got_lines[len(exp_lines)])}"
            + (f" (and {extra - 1} more)" if extra > 1 else "")
        )
    return "no difference line by line"


def cut(text: str, max_chars: int = CUT_CHARS, max_lines: int = CUT_LINES) -> str:
    """`text` shortened to at most `max_lines` lines and about `max_chars` characters, marked when cut."""
    if not isinstance(text, str):
        text = show_value(text)
    lines = text.split("\n")
    short = "\n".join(lines[:max_lines])
    if len(short) > max_chars:
        short = short[:max_chars]
    if short == text:
        return text
    more = f"{len(text) - len(short)} more chars"
    if len(lines) > max_lines:
        more += f", {len(lines)} lines in all"
    return f"{short}... [{more}]"


def _quote(line: str) -> str:
    if len(line) > _LINE_SHOWN:
        return repr(line[:_LINE_SHOWN]) + "..."
    return repr(line)


def show_value(value: Any) -> str:
    """A short-enough printable form of a decoded value, never raising."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except Exception:  # ints beyond the digit limit, NaN-free types json cannot write, depth
        pass
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return cut(line.strip(), 200, 1)
    return ""


def _stderr_tail(text: str) -> str:
    lines = text.rstrip().splitlines()[-CUT_LINES:]
    tail = "\n".join(lines)
    return tail[-CUT_CHARS * 2 :]


def _signal_name(number: int | None) -> str:
    if number is None:
        return "an unknown signal"
    try:
        return f"{_signal.Signals(number).name} ({number})"
    except ValueError:
        return f"signal {number}"


def run_details(outcome: Outcome) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if outcome.exit_code is not None:
        details["exit_code"] = outcome.exit_code
    if outcome.signal is not None:
        details["signal"] = outcome.signal
    if outcome.stderr_tail:
        details["stderr_tail"] = _stderr_tail(outcome.stderr_tail)
    return details


def ended_verdict(outcome: Outcome, details: dict[str, Any] | None = None) -> Verdict | None:
    """The verdict of a run that did not end by itself (not compiled, stopped by a limit, killed by a signal),
    the same in every judge profile; None when the program exited and its output is to be judged. Raises
    `HarnessError` when the outcome says the harness failed (or makes no sense)."""
    status = outcome.status
    details = run_details(outcome) if details is None else details
    if status == RUN_HARNESS_ERROR:
        raise HarnessError(outcome.error or "the executor failed")
    if status == RUN_COMPILE_ERROR:
        return Verdict(COMPILE_ERROR, reason=last_line(outcome.error) or "the program does not compile",
                       details=details)
    if status == RUN_TIMEOUT:
        return Verdict(TIMEOUT, reason=last_line(outcome.error) or "time limit exceeded", details=details)
    if status == RUN_MEMORY:
        return Verdict(MEMORY_LIMIT, reason=last_line(outcome.error) or "memory limit exceeded",
                       details=details)
    if status == RUN_OUTPUT_LIMIT:
        return Verdict(OUTPUT_LIMIT, reason=last_line(outcome.error) or "output limit exceeded",
                       details=details)
    if status == RUN_SIGNALED:
        # A CPU or file-size limit delivered as a signal keeps its own kind.
        if outcome.signal == getattr(_signal, "SIGXCPU", None):
            return Verdict(TIMEOUT, reason="CPU time limit exceeded (SIGXCPU)", details=details)
        if outcome.signal == getattr(_signal, "SIGXFSZ", None):
            return Verdict(OUTPUT_LIMIT, reason="file size limit exceeded (SIGXFSZ)", details=details)
        return Verdict(RUNTIME_ERROR, reason=f"killed by {_signal_name(outcome.signal)}", details=details)
    if status != RUN_EXITED:
        raise HarnessError(f"unknown run status {status!r}")
    return None


def checked(checker: Checker, got: Any, details: dict[str, Any]) -> Verdict:
    """The checker's decision on a program's output, as a verdict (step "checker", pass or wrong answer)."""
    accepted, message = checker(got)
    if accepted:
        return Verdict(PASS, step=CHECKER_STEP)
    details["first_diff"] = message or "rejected by the checker"
    return Verdict(WRONG_ANSWER, step=CHECKER_STEP, reason="checker: " + (message or "wrong answer"),
                   details=details)


def judged_text(expected: Any, got: str, compare: Callable[[str, str], "str | None"], details: dict[str, Any],
                checker: Checker | None) -> Verdict:
    """A standard-input run that ended normally, decided by `checker` when there is one, else by `compare` (the
    profile's comparison: the step that accepts `got` against the expected text, or None)."""
    if checker is not None:
        details.update(got=cut(got))
        return checked(checker, got, details)
    text = expected_text(expected) or ""
    step = compare(got, text)
    if step is not None:
        return Verdict(PASS, step=step)
    diff = first_difference(text, got)
    details.update(expected=cut(text), got=cut(got), first_diff=diff)
    return Verdict(WRONG_ANSWER, reason=diff, details=details)
