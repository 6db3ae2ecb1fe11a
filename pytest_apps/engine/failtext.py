"""The short, readable text of one failing case: what went in, what was expected, what came out."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core import jsontext
from ..dataset.problems import STDIN, Problem, call_args, stdin_text
from ..judge.cascade import cut, show_value
from .result import CaseResult


def show(value: Any) -> str:
    """Text as it is (a list of lines joined), anything else as the judge prints values."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return "\n".join(value)
    return show_value(value)


def indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in (text.splitlines() or [""]))


def write_case_files(folder: Path, problem: Problem, index: int, result: CaseResult) -> Path:
    """Write a failing case's input (as the program read it) and expected output for debugging by hand:
    `<folder>/<problem>/<test>.in` and `<test>.expected`. Returns the input's path."""
    texts = case_file_texts(problem, index, result)
    write_texts(folder, texts)
    return Path(folder, texts[0][0])


def case_file_texts(problem: Problem, index: int, result: CaseResult) -> list[tuple[str, str]]:
    """The files `write_case_files` writes, as (path relative to the folder, text); the input first."""
    raw = result.input
    stdin = stdin_text(raw) if problem.fmt == STDIN else jsontext.dumps(call_args(raw)) + "\n"
    target = _safe(problem.id)
    return [(f"{target}/{index}.in", stdin), (f"{target}/{index}.expected", show(result.expected))]


def write_texts(folder: Path | str, texts: list[tuple[str, str]]) -> None:
    """Write (relative path, text) pairs under `folder`; a path leaving the folder is refused."""
    for name, text in texts:
        parts = name.split("/")
        if name.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"not a plain relative path: {name!r}")
        target = os.path.join(folder, *parts[:-1])
        if target not in _MADE:  # one mkdir per problem, not per failing case
            os.makedirs(target, exist_ok=True)
            _MADE.add(target)
        _write(os.path.join(target, parts[-1]), text)


_MADE: set[str] = set()


def _write(path: str, text: str) -> None:
    """A whole small file in one system call (a failing case costs its worker no text-file machinery)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:  # the folder went away during the run
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        data = memoryview(text.encode("utf-8", "surrogateescape"))
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _safe(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return safe if safe.strip(".") else "_" * max(len(safe), 1)  # never "", "." or ".."


def failure_text(result: CaseResult, title: str, rerun: str, case_file: Path | None = None) -> str:
    verdict, outcome = result.verdict, result.outcome
    parts = [f"{title}: {verdict.kind.replace('_', ' ')}" + (f" ({verdict.reason})" if verdict.reason else "")]
    parts.append("input:\n" + indent(cut(show(result.input))))
    parts.append("expected:\n" + indent(cut(show(result.expected))))
    if outcome is not None:
        got = _got(result)
        parts.append("got:\n" + indent(cut(got) if got else "(nothing)"))
        first = verdict.details.get("first_diff")
        if first and first != verdict.reason:
            parts.append(f"first difference: {first}")
        if outcome.stderr_tail.strip():
            parts.append("stderr (end):\n" + indent(cut(outcome.stderr_tail.strip()[-600:])))
        status = f"exit status {outcome.exit_code}" if outcome.exit_code is not None else outcome.status
        if outcome.signal:
            status += f", signal {outcome.signal}"
        parts.append(f"{status}, {outcome.own_time:.3f} s of its own time ({outcome.cpu_time:.3f} s CPU, "
                     f"{outcome.wall_time:.3f} s wall)")
    parts.append("rerun: " + rerun)
    if case_file is not None:
        parts.append(f"input written to {case_file} (expected output beside it)")
    return "\n".join(parts)


def _got(result: CaseResult) -> str:
    """What the program printed or returned, as the judge showed it (the apps profile's tagged values decoded),
    else as the executor saw it."""
    shown = result.verdict.details.get("got")
    if isinstance(shown, str):
        return shown
    outcome = result.outcome
    if outcome is None:
        return ""
    return outcome.value_json if outcome.value_json is not None else outcome.stdout


def failure_detail(result: CaseResult) -> dict[str, Any]:
    """The failing case as short plain data for reports: input, expected, got, first difference."""
    outcome = result.outcome
    got = _got(result) if outcome is not None else ""
    return {
        "input": cut(show(result.input)),
        "expected": cut(show(result.expected)),
        "got": cut(got),
        "first_diff": result.verdict.details.get("first_diff", ""),
        "reason": result.verdict.reason,
        "stderr_tail": cut(outcome.stderr_tail.strip()[-600:]) if outcome else "",
    }
