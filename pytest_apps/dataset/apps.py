"""The APPS dataset entry (`codeparrot/apps`, Hendrycks et al. 2021): its row schema and how a row becomes a problem.

A row holds ``problem_id``, ``question``, ``solutions`` (a JSON list of Python programs), ``input_output`` (JSON:
``inputs``, ``outputs`` and, for a call-based problem, ``fn_name``), ``difficulty`` (introductory, interview or
competition), ``url`` and ``starter_code``. Copies name the id ``id``, or give it as text; readers of JSON keep
``input_output`` / ``solutions`` decoded: :func:`normalize` makes all of them the one schema codeparrot stores.

:func:`parse` is the APPS way from a row to a problem, shared by the datasets whose rows are APPS rows with more
columns (TACO): the caller gives the tier, the id and what its own columns add.

Pure functions of a row's plain values; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from ..core import jsontext
from .model import CALL, STDIN, Cases, Problem, SkippedRow

TIERS = ("introductory", "interview", "competition")  # APPS's tiers, easiest first
FIX = "give it an input_output with equal-length inputs and outputs lists"  # what a refused row must hold
ROW_FIELDS = ("problem_id", "question", "solutions", "input_output", "difficulty", "url", "starter_code")
COLUMNS = (*ROW_FIELDS, "id")
_TEXT_FIELDS = ROW_FIELDS[1:]


def marks(columns: Collection[str]) -> bool:
    """Rows with an id column are APPS rows, unless another entry claims them first (the table's fallback)."""
    return "problem_id" in columns or "id" in columns


def marker(message: str, line: int | None) -> dict:
    """A row that cannot be used, as the readers yield it: skipped and counted with ``message``."""
    return {"__error__": message, "__line__": line}


def normalize(obj: dict, where: str, line: int | None = None, *, id_optional: bool = False,
              extra: tuple[str, ...] = ()) -> dict:
    """A row object -> plain dict in the codeparrot schema, or a marker row saying why it is unusable.

    ``input_output``/``solutions`` already decoded (dicts, lists) are encoded back to JSON text as codeparrot
    stores them, ``id`` stands in for ``problem_id``, and an id given as text or float is an int. ``where`` names
    the row in a marker's message. With ``id_optional`` (TACO) a row without an id keeps ``problem_id`` None (the id
    is then the row's index in its split); ``extra`` columns are kept beside the APPS ones.
    """
    pid = obj.get("problem_id", obj.get("id"))
    if isinstance(pid, str) and pid.strip().lstrip("-").isdigit():
        pid = int(pid)
    elif isinstance(pid, float) and pid.is_integer():
        pid = int(pid)
    if not (pid is None and id_optional) and (not isinstance(pid, int) or isinstance(pid, bool)):
        return marker(f"{where}: problem_id is {pid!r}, not an integer", line)
    row: dict[str, Any] = {"problem_id": pid}
    for key in extra:
        value = obj.get(key)
        row[key] = json.dumps(value) if isinstance(value, (dict, list)) else value
    for key in _TEXT_FIELDS:
        value = obj.get(key)
        if value is None:
            value = ""
        elif isinstance(value, (dict, list)):
            value = json.dumps(value)  # codeparrot stores input_output / solutions as JSON-encoded strings
        elif not isinstance(value, str):
            value = str(value)
        row[key] = value
    return row


def problem_id(row: dict[str, Any], index: int) -> str:
    value = row.get("problem_id", row.get("id"))
    return str(index) if value is None else str(value)


def solutions(row: dict[str, Any]) -> Any:
    """The row's reference programs (Python 3), as its ``solutions`` field holds them."""
    return row.get("solutions")


def parse_with(tier: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any], int], tuple[Problem, Cases] | SkippedRow]:
    """The APPS entry's parse, its tiers spelled by `tier` (the table's spelling)."""
    return lambda row, index: parse_apps_row(row, index, problem_id(row, index), tier(row))


def parse_apps_row(row: dict[str, Any], index: int, pid: str, difficulty: str, **extra: Any
                   ) -> tuple[Problem, Cases] | SkippedRow:
    """An APPS-schema row -> its problem and every test, or why it is skipped; ``extra`` are more Problem fields."""
    question = row.get("question") or ""
    if not str(question).strip():
        return SkippedRow(index, pid, "empty question")
    tests = decode_input_output(row.get("input_output"))
    if isinstance(tests, str):
        return SkippedRow(index, pid, tests)
    inputs, outputs, fn_name = tests
    return make_problem(pid, index, difficulty, question, str(row.get("starter_code") or ""), fn_name,
                        inputs, outputs, **extra)


def decode_input_output(raw: Any) -> tuple[list, list, str | None] | str:
    """``input_output`` -> (inputs, outputs, fn_name), or the reason it cannot be used."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return "empty input_output"
    if isinstance(raw, str):
        try:
            io = jsontext.loads(raw)
        except (ValueError, RecursionError) as exc:
            return f"input_output is not JSON ({exc})"
    else:
        io = raw
    if not isinstance(io, dict):
        return f"input_output is not an object (a {type(io).__name__})"
    inputs, outputs = io.get("inputs"), io.get("outputs")
    if not isinstance(inputs, list) or not inputs:
        return "input_output has no inputs"
    if not isinstance(outputs, list) or not outputs:
        return "input_output has no outputs"
    fn_name = io.get("fn_name") or None
    if not fn_name:  # a standard-input test is text: null is no test (call-based values stay JSON values)
        for side, values in (("input", inputs), ("output", outputs)):
            at = next((i for i, value in enumerate(values) if value is None), None)
            if at is not None:
                return f"input_output: test {at}'s {side} is null in a standard-input problem"
        at = next((i for i, value in enumerate(inputs) if not is_stdin_text(value)), None)
        if at is not None:  # text, or a list of lines; a number or an object is not turned into text by guess
            return (f"input_output: test {at}'s input is a {type(inputs[at]).__name__}, not text or a list of "
                    "lines, in a standard-input problem")
    return inputs, outputs, (str(fn_name) if fn_name else None)


def is_stdin_text(value: Any) -> bool:
    """Whether a standard-input test's input is text, or a list of lines (as APPS sometimes stores it)."""
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(x, str) for x in value))


def make_problem(pid: str, index: int, difficulty: str, question: Any, starter_code: str, fn_name: str | None,
                 inputs: list, outputs: list, **extra: Any) -> tuple[Problem, Cases]:
    """A problem and its cases from decoded tests; inputs and outputs of different lengths make it broken (it
    scores 0 with that reason)."""
    broken = ""
    if len(inputs) != len(outputs):
        broken = f"inputs ({len(inputs)}) and outputs ({len(outputs)}) differ in length"
    total = min(len(inputs), len(outputs))
    inputs, outputs = inputs[:total], outputs[:total]
    problem = Problem(
        id=pid,
        index=index,
        difficulty=difficulty,
        fmt=CALL if fn_name else STDIN,
        fn_name=fn_name,
        n_cases=0 if broken else total,
        n_cases_total=total,
        question=str(question),
        starter_code=starter_code,
        broken=broken,
        input_sizes=() if broken else tuple(_size(x) for x in inputs),
        **extra,
    )
    return problem, Cases(inputs, outputs)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(jsontext.dumps(value))
