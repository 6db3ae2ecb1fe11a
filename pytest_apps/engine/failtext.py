"""The short, readable text of one failing case: what went in, what was expected, what came out.

For output of several lines, expected and got are shown around their first difference, both sides with line
numbers (the first differing line marked `>`), and, where more than that one line differs, a compact diff
(difflib's unified form, one line of context), each within the bounds of the judge's excerpts (`cut`).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from ..core import jsontext
from ..dataset.problems import STDIN, Problem, parse_call_args, stdin_text
from ..judge.toolkit import CUT_CHARS, CUT_LINES, cut, show_value
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
    stdin = stdin_text(raw) if problem.fmt == STDIN else jsontext.dumps(parse_call_args(raw)) + "\n"
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
    except OSError:
        os.unlink(path)  # (a full disk: no half a file to mislead whoever debugs with it)
        raise
    finally:
        os.close(fd)


def _safe(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return safe if safe.strip(".") else "_" * max(len(safe), 1)  # never "", "." or ".."


WIDTH = 72  # characters of a line shown beside its number; a longer line is shown around its first difference
BEFORE = 3  # lines shown before the first differing one (when the window has room)


def case_title(problem_id: str, index: int, label: str = "") -> str:
    """`APPS problem 15 test 1`, or with several samples `APPS problem 15 sample_1 test 1` (the label of a sample,
    or its file's name in a folder of samples)."""
    return f"APPS problem {problem_id}" + (f" {label}" if label else "") + f" test {index}"


def first_differing_line(expected: list[str], got: list[str]) -> int | None:
    """The index of the first line where the two differ (trailing blanks aside), or where one ends first;
    None when they agree line by line."""
    for i, (e, g) in enumerate(zip(expected, got)):
        if e.rstrip() != g.rstrip():
            return i
    if len(expected) != len(got):
        return min(len(expected), len(got))
    return None


def _column(a: str, b: str) -> int:
    """The first column where two lines differ."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _clip(line: str, column: int, width: int = WIDTH) -> str:
    """`line` shortened to about `width` characters around `column`, with `...` where it was cut."""
    if len(line) <= width:
        return line
    start = max(0, min(column - width // 3, len(line) - width))
    return ("..." if start else "") + line[start:start + width] + ("..." if start + width < len(line) else "")


def _window(lines: list[str], first: int, column: int, marked: bool) -> tuple[str, int, int]:
    """Numbered lines around `first` (0-based) within CUT_LINES lines and about CUT_CHARS characters:
    (the text, first shown, last shown), numbers 1-based."""
    if not lines:
        return "", 0, 0
    at = min(first, len(lines) - 1)
    start = max(0, min(at - BEFORE, len(lines) - CUT_LINES))
    shown = list(range(start, min(len(lines), start + CUT_LINES)))
    texts = {i: _clip(lines[i], column) for i in shown}
    while len(shown) > 1 and sum(len(texts[i]) for i in shown) > CUT_CHARS:  # drop the line farthest away
        shown.remove(max(shown, key=lambda i: (abs(i - at), i > at)))
    digits = len(str(shown[-1] + 1))
    rows = [("> " if marked and i == first else "  ") + f"{i + 1:>{digits}} | {texts[i]}" for i in shown]
    return "\n".join(rows), shown[0] + 1, shown[-1] + 1


def _lines_of(text: str) -> list[str]:
    """The lines of an output as the judges number them: blank lines at either end are not compared (every
    profile strips the whole text), so the line a failure's reason names is the line marked here."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    return lines[start:]


def difference_view(expected: str, got: str) -> dict[str, Any] | None:
    """Expected and got around their first difference, for output of several lines: "line" (1-based),
    "expected" and "got" (numbered excerpts with a header each) and "diff" (a compact unified diff, "" when
    only that one line differs). None when both are a single line or they agree line by line."""
    exp_lines, got_lines = _lines_of(expected), _lines_of(got)
    if max(len(exp_lines), len(got_lines)) <= 1 or not got_lines:
        return None
    first = first_differing_line(exp_lines, got_lines)
    if first is None:
        return None
    both = first < len(exp_lines) and first < len(got_lines)
    column = _column(exp_lines[first], got_lines[first]) if both else 0
    views = {}
    for name, lines in (("expected", exp_lines), ("got", got_lines)):
        text, low, high = _window(lines, first, column, marked=first < len(lines))
        where = f"lines {low}-{high} of {len(lines)}" if low != high else f"line {low} of {len(lines)}"
        if first >= len(lines):
            where += f"; ends after line {len(lines)}"
        views[name] = f"{name} ({where}):\n{text}"
    differing = sum(1 for e, g in zip(exp_lines, got_lines) if e.rstrip() != g.rstrip())
    diff = ""
    if differing > 1 or len(exp_lines) != len(got_lines):
        body = [line for line in difflib.unified_diff([x.rstrip() for x in exp_lines], [x.rstrip() for x in got_lines],
                                                       lineterm="", n=1)][2:]
        diff = cut("\n".join(line[:1] + _clip(line[1:], column) if not line.startswith("@@") else line
                              for line in body))
    return {"line": first + 1, "expected": views["expected"], "got": views["got"], "diff": diff}


def case_failure_text(result: CaseResult, title: str, rerun: str, case_file: Path | None = None) -> str:
    verdict, outcome = result.verdict, result.outcome
    parts = [f"{title}: {verdict.kind.replace('_', ' ')}" + (f" ({verdict.reason})" if verdict.reason else "")]
    parts.append("input:\n" + indent(cut(show(result.input))))
    got = _full_got(result) if outcome is not None else ""
    view = difference_view(show(result.expected), got) if outcome is not None else None
    if view is None:
        parts.append("expected:\n" + indent(cut(show(result.expected))))
    else:
        parts.append(_indented_view(view["expected"]))
    if outcome is not None:
        if view is None:
            parts.append("got:\n" + indent(cut(got) if got else "(nothing)"))
        else:
            parts.append(_indented_view(view["got"]))
            if view["diff"]:
                parts.append("diff (- expected, + got):\n" + indent(view["diff"]))
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


def _indented_view(view: str) -> str:
    head, _, body = view.partition("\n")
    return head + "\n" + indent(body)


def _full_got(result: CaseResult) -> str:
    """What the program printed or returned, whole: the judge keeps only an excerpt (`cut`) of it; when that
    excerpt is of the program's own output, the output itself."""
    shown, outcome = _got(result), result.outcome
    if outcome is not None:
        for whole in (outcome.stdout, outcome.value_json):
            if whole and whole != shown and cut(whole) == shown:
                return whole
    return shown


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
    got = _full_got(result) if outcome is not None else ""
    detail = {
        "input": cut(show(result.input)),
        "expected": cut(show(result.expected)),
        "got": cut(got),
        "first_diff": result.verdict.details.get("first_diff", ""),
        "reason": result.verdict.reason,
        "stderr_tail": cut(outcome.stderr_tail.strip()[-600:]) if outcome else "",
    }
    view = difference_view(show(result.expected), got) if outcome is not None else None
    if view is not None:  # output of several lines: both sides around the first difference, and the diff
        detail.update(diff_line=view["line"], expected_near=view["expected"], got_near=view["got"], diff=view["diff"])
    return detail
