"""The TACO dataset profile (`BAAI/TACO`, Li et al. 2023): what a TACO row adds to the APPS row schema.

TACO rows are APPS rows (``question``, ``solutions``, ``starter_code``, ``input_output``, ``difficulty``, ``url``)
with ten more text columns, among them ``tags``, ``skill_types``, ``source``, ``time_limit`` and ``memory_limit``,
and **no id column**: a TACO problem is known by its index in its split, so that is its id here (``"0"`` is the
split's first row), stable as long as the split's order is (the hub's Arrow and Parquet copies keep one order).

* Tiers are TACO's own, in TACO's order (``TIERS``); ``UNKNOWN_DIFFICULTY`` (rows of the train split) sorts last.
* ``tags`` / ``skill_types`` hold Python list literals as text (``"['Sorting', 'Range queries']"``).
* Limits are text: ``time_limit`` like ``2.0 seconds``, ``memory_limit`` like ``256.0 megabytes``, or null.
  :func:`parse_limits` reads the forms the data holds; anything else is refused with a reason (never guessed),
  and the problem then runs under the fixed limits, the reason shown in the report.

Pure functions of a row's plain values; no I/O.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from . import apps
from .limits import RowLimits, limit_of, limit_text, time_limit_of  # noqa: F401 - named here for TACO's callers
from .model import Cases, Problem, SkippedRow

TIERS = ("EASY", "MEDIUM", "MEDIUM_HARD", "HARD", "VERY_HARD")  # TACO's order, easiest first
UNKNOWN_TIER = "UNKNOWN_DIFFICULTY"
# Columns only TACO rows have: a row (or a file's schema) with one of them is a TACO row, whose id is its index.
MARKER_COLUMNS = ("skill_types", "raw_tags", "time_limit", "memory_limit", "Expected Time Complexity",
                  "Expected Auxiliary Space", "picture_num")
EXTRA_COLUMNS = ("tags", "skill_types", "source", "time_limit", "memory_limit", "name", "raw_tags")

_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_TIME = re.compile(rf"^{_NUMBER}\s*(seconds?|secs?|s|milliseconds?|ms)$", re.IGNORECASE)
_MEMORY = re.compile(rf"^{_NUMBER}\s*(megabytes?|mbytes?|mb|mib|m|kilobytes?|kb|kib|gigabytes?|gb|gib|bytes?)$",
                     re.IGNORECASE)
_MEMORY_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "b": 1}
_NULLS = {"", "none", "null", "nan", "n/a", "-"}


COLUMNS = (*apps.COLUMNS, *MARKER_COLUMNS, *EXTRA_COLUMNS)


def marks(columns: Any) -> bool:
    """A row (or a file's schema) with one of TACO's own columns is a TACO row."""
    return any(column in columns for column in MARKER_COLUMNS)


def normalize(obj: dict, where: str, line: int | None = None) -> dict:
    """An APPS row (`apps.normalize`) without an id column (its id is its index) and with TACO's columns."""
    return apps.normalize(obj, where, line, id_optional=True, extra=EXTRA_COLUMNS)


def tier(row: dict[str, Any]) -> str:
    """TACO's tiers in upper case, as TACO writes them; a row without one is UNKNOWN_DIFFICULTY."""
    value = row.get("difficulty")
    return tier_of(value) or str(value or "").strip().lower() or UNKNOWN_TIER


def parse(row: dict[str, Any], index: int) -> tuple[Problem, Cases] | SkippedRow:
    """An APPS problem with TACO's tags, skill types and the row's own limits."""
    limits = parse_limits(row)
    return apps.parse_apps_row(row, index, apps.problem_id(row, index), tier(row),
                               tags=labels(row.get("tags")), skills=labels(row.get("skill_types")),
                               time_limit=limits.time, memory_limit=limits.memory, limit_error=limits.error)


def tier_of(value: Any) -> str | None:
    """A TACO tier name (upper case) for ``value`` in any case, or None when it is not one."""
    text = str(value or "").strip().upper()
    return text if text in TIERS or text == UNKNOWN_TIER else None


def labels(value: Any) -> tuple[str, ...]:
    """``tags`` / ``skill_types`` as a tuple of names: a Python or JSON list literal as text, a list, or null."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        items = value
    else:
        text = str(value).strip()
        if not text or text.lower() in _NULLS:
            return ()
        try:
            items = json.loads(text)
        except ValueError:
            try:
                items = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                items = [part for part in text.split(",")]
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, (list, tuple)):
            return ()
    seen: list[str] = []
    for item in items:
        name = str(item).strip()
        if name and name not in seen:
            seen.append(name)
    return tuple(seen)


def parse_time(value: Any) -> float | None:
    """``2.0 seconds`` -> 2.0; None for null or empty. Raises ValueError for anything else."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = " ".join(str(value).split())
        if text.lower() in _NULLS:
            return None
        match = _TIME.fullmatch(text)
        if match is None:
            raise ValueError(f"time_limit {str(value)!r} is not a duration such as '2.0 seconds'")
        seconds = float(match.group(1)) / (1000.0 if match.group(2).lower().startswith("m") else 1.0)
    if not seconds > 0:
        raise ValueError(f"time_limit {str(value)!r} is not a positive duration")
    return seconds


def parse_memory(value: Any) -> int | None:
    """``256.0 megabytes`` -> 268435456 (binary megabytes, as judges mean them); None for null or empty.
    Raises ValueError for anything else."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = " ".join(str(value).split())
    if text.lower() in _NULLS:
        return None
    match = _MEMORY.fullmatch(text)
    if match is None:
        raise ValueError(f"memory_limit {str(value)!r} is not a size such as '256.0 megabytes'")
    amount = float(match.group(1)) * _MEMORY_UNITS[match.group(2).lower()[0]]
    if not amount > 0:
        raise ValueError(f"memory_limit {str(value)!r} is not a positive size")
    return int(amount)


def parse_limits(row: dict[str, Any]) -> RowLimits:
    """The row's time and memory limits; an unreadable one is None with the reason in ``error``."""
    errors = []
    try:
        time = parse_time(row.get("time_limit"))
    except ValueError as exc:
        time, errors = None, [str(exc)]
    try:
        memory = parse_memory(row.get("memory_limit"))
    except ValueError as exc:
        memory = None
        errors.append(str(exc))
    return RowLimits(time, memory, "; ".join(errors))
