"""A problem's own limits, for every dataset whose rows give them (TACO's text limits, CodeContests' seconds and
bytes, LiveCodeBench's evaluator's fixed time): the `RowLimits` a row's entry reads, which limits a problem's tests
run under with ``--apps-limits row``, and how the report writes them.

Pure functions of plain values; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RowLimits:
    """A row's own limits: seconds and bytes, None where the row has none; ``error`` says what could not be read."""

    time: float | None = None
    memory: int | None = None
    error: str = ""


def limit_text(seconds: float | None, memory: int | None) -> str:
    """``2 s, 256 MiB`` for the report."""
    parts = []
    if seconds is not None:
        parts.append(f"{seconds:g} s")
    if memory is not None:
        parts.append(f"{memory / (1 << 20):g} MiB" if memory % (1 << 20) == 0 or memory > 1 << 20 else f"{memory} B")
    return ", ".join(parts)


def time_limit_of(problem: Any, row: bool, base_timeout: float, scale: float = 1.0) -> float:
    """The seconds a problem's test may run: with per-problem limits (`row`) its row's time limit times `scale`,
    else (or for a row without one) `base_timeout`, the run's limit already scaled."""
    return problem.time_limit * scale if row and problem.time_limit is not None else base_timeout


def limit_of(problem: Any, row: bool, base_timeout: float, base_memory: int, scale: float = 1.0) -> dict:
    """Which limits a problem ran under, for the report: the mode ("row" or "fixed"), the figures, and why a row's
    limit was not used (unreadable)."""
    use_row = row and (problem.time_limit is not None or problem.memory_limit is not None)
    timeout = time_limit_of(problem, use_row, base_timeout, scale)
    memory = problem.memory_limit if use_row and problem.memory_limit is not None else None
    out = {"mode": "row" if use_row else "fixed", "time": round(timeout, 6),
           "text": limit_text(timeout, memory) + ("" if memory is not None else
                                                   (f", {base_memory / (1 << 20):g} MiB address space" if base_memory
                                                    else ""))}
    if memory is not None:
        out["memory_rss"] = memory
    if problem.limit_error:
        out["unreadable"] = problem.limit_error
    return out
