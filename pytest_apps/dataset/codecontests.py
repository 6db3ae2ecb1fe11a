"""The CodeContests entry (`deepmind/code_contests`, Li et al. 2022, released with AlphaCode): its row schema, its
test sets and limits, and how a row becomes a problem.

A row holds ``name`` (``1575_A. Another Sorting Problem``), ``description``, three test sets ``public_tests``,
``private_tests`` and ``generated_tests`` (each ``{"input": [...], "output": [...]}``), ``source`` (the hub's class
label: 0 unknown, 1 CodeChef, 2 Codeforces, 3 HackerEarth, 4 Code Jam, 5 AtCoder, 6 Aizu), ``difficulty``,
``solutions`` / ``incorrect_solutions`` (``{"language": [...], "solution": [...]}``, language 3 is Python 3),
``cf_rating``, ``cf_tags``, ``time_limit`` (``{"seconds", "nanos"}``) and ``memory_limit_bytes``.

* A problem's id is its name up to the first space (``1575_A``); every problem reads standard input.
* Which test sets count is the run's choice (``--apps-test-sets``); by default the hidden ones, private and
  generated, as the paper scores a solution (the public tests are the statement's examples).
* Tiers are the source platform; the Codeforces rating is a skill label (``rating 1100``), its tags are tags.
* Limits are the row's own (``--apps-limits row``): the time limit, and the memory limit as peak resident size.
* Reference solutions are the Python 3 ones of ``solutions``; the Python 3 ones of ``incorrect_solutions`` are
  known-wrong programs (:func:`wrong_solutions`).

Pure functions of a row's plain values; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from ..core.wording import counted
from .apps import make_problem, marker
from .model import Cases, Problem, SkippedRow

SOURCES = ("unknown_source", "codechef", "codeforces", "hackerearth", "codejam", "atcoder", "aizu")
TIERS = SOURCES[1:]
TEST_SETS = ("public", "private", "generated")
DEFAULT_TEST_SETS = ("private", "generated")
FIX = ("give it tests in a set that counts (public_tests, private_tests or generated_tests, each with equal-length "
       "input and output lists)")  # what a refused row must hold
PYTHON3 = 3
COLUMNS = ("name", "description", "public_tests", "private_tests", "generated_tests", "source", "difficulty",
           "solutions", "incorrect_solutions", "cf_rating", "cf_tags", "time_limit", "memory_limit_bytes",
           "input_file", "output_file")
CHOSEN = "test_sets"  # the key `prepare` adds: the test sets that count


def marks(columns: Collection[str]) -> bool:
    return "public_tests" in columns or "generated_tests" in columns


def normalize(obj: dict, where: str, line: int | None = None) -> dict:
    """The row's columns (plain values), or a marker naming what is missing."""
    missing = [f for f in ("name", "description") if not obj.get(f)]
    if not any(isinstance(obj.get(f"{s}_tests"), dict) for s in TEST_SETS):
        missing.append("public_tests, private_tests or generated_tests")
    if missing:
        held = ", ".join(sorted(k for k, v in obj.items() if v not in (None, "", [], {}))) or "nothing"
        return marker(f"{where}: a CodeContests row without {', '.join(missing)} (it holds {held})", line)
    return {key: obj.get(key) for key in COLUMNS}


def prepare(row: dict[str, Any], chosen: tuple[str, ...]) -> dict[str, Any]:
    return {**row, CHOSEN: list(chosen)}


def problem_id(row: dict[str, Any], index: int) -> str:
    name = str(row.get("name") or "").strip()
    return name.split()[0].rstrip(".") if name else str(index)


def tier(row: dict[str, Any]) -> str:
    value = row.get("source")
    if isinstance(value, int) and not isinstance(value, bool):
        return SOURCES[value] if 0 <= value < len(SOURCES) else f"source {value}"
    return str(value or SOURCES[0]).strip().lower()


def _python3(field: Any) -> list[str]:
    if isinstance(field, str):
        field = json.loads(field) if field.strip() else {}
    if not isinstance(field, dict):
        return []
    return [str(s) for lang, s in zip(field.get("language") or [], field.get("solution") or []) if lang == PYTHON3]


def solutions(row: dict[str, Any]) -> str:
    """The Python 3 human solutions, as a JSON list (what `--apps-candidates=reference` reads)."""
    return json.dumps(_python3(row.get("solutions")))


def wrong_solutions(row: dict[str, Any]) -> list[str]:
    """The Python 3 programs the dataset labels incorrect: known-wrong programs."""
    return _python3(row.get("incorrect_solutions"))


def limits(row: dict[str, Any]) -> tuple[float | None, int | None]:
    """The row's time limit (seconds) and memory limit (bytes); None where it gives none."""
    t = row.get("time_limit")
    seconds = None
    if isinstance(t, dict) and (t.get("seconds") or t.get("nanos")):
        seconds = float(t.get("seconds") or 0) + float(t.get("nanos") or 0) / 1e9
    memory = row.get("memory_limit_bytes")
    return seconds, (int(memory) if isinstance(memory, (int, float)) and memory > 0 else None)


def parse(row: dict[str, Any], index: int) -> tuple[Problem, Cases] | SkippedRow:
    pid = problem_id(row, index)
    if row.get("input_file") or row.get("output_file"):
        return SkippedRow(index, pid, f"reads {row.get('input_file') or '-'} and writes {row.get('output_file') or '-'}"
                                      " instead of standard input and output")
    chosen = tuple(row.get(CHOSEN) or DEFAULT_TEST_SETS)
    inputs: list[str] = []
    outputs: list[str] = []
    held = []
    for name in chosen:
        tests = row.get(f"{name}_tests") or {}
        ins, outs = tests.get("input") or [], tests.get("output") or []
        if len(ins) != len(outs):
            return SkippedRow(index, pid,
                              f"{name}_tests has {counted(len(ins), 'input')} and {counted(len(outs), 'output')}")
        inputs += [str(x) for x in ins]
        outputs += [str(x) for x in outs]
    for name in TEST_SETS:
        held.append(f"{name} {len((row.get(f'{name}_tests') or {}).get('input') or [])}")
    if not inputs:
        return SkippedRow(index, pid, f"no tests in the {', '.join(chosen)} sets (the row holds {', '.join(held)})")
    seconds, memory = limits(row)
    rating = row.get("cf_rating")
    return make_problem(pid, index, tier(row), row.get("description") or "", "", None, inputs, outputs,
                        tags=tuple(str(t) for t in row.get("cf_tags") or ()),
                        skills=(f"rating {rating}",) if isinstance(rating, int) and rating > 0 else (),
                        time_limit=seconds, memory_limit=memory)
