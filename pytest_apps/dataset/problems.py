"""APPS rows to problems: parse `input_output`, skip unusable rows with a reason, cap tests, select.

Pure data in and out. Loading the raw rows (hub, files, the bundled sample) is `loading`'s job (`rows`, `hub`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from functools import partial
from typing import Any

from ..core import jsontext
from ..core.settings import TIERS, parse_only
from . import taco

STDIN = "stdin"
CALL = "call"


@dataclass(frozen=True)
class Problem:
    """One selected APPS problem, without its test data (that is loaded per problem, when it runs)."""

    id: str
    index: int  # position in dataset order (0-based)
    difficulty: str
    fmt: str  # STDIN or CALL
    fn_name: str | None
    n_cases: int  # tests kept after the cap
    n_cases_total: int  # tests in the row
    question: str = ""
    starter_code: str = ""
    broken: str = ""  # non-empty: the problem scores 0 with this reason and runs nothing
    input_sizes: tuple[int, ...] = ()  # length of each kept test's input, for cheap-first ordering
    # TACO rows (`taco.py`): tags and skill types, and the row's own limits (None: the row has none; limit_error:
    # the row's limit text could not be read, so the fixed limits apply)
    tags: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    time_limit: float | None = None
    memory_limit: int | None = None
    limit_error: str = ""

    def to_dict(self) -> dict[str, Any]:
        # not dataclasses.asdict: its deep copies cost half a second over the full split's plan
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in _TUPLES:
            data[name] = list(data[name])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        known = {f.name for f in fields(cls)}
        return cls(**{k: (tuple(v) if k in _TUPLES else v) for k, v in data.items() if k in known})


_TUPLES = ("input_sizes", "tags", "skills")


@dataclass(frozen=True)
class SkippedRow:
    """A row that could not become a problem; it is counted, never silently dropped."""

    index: int
    problem_id: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Cases:
    """A problem's test data: inputs and expected outputs, capped."""

    inputs: list[Any]
    outputs: list[Any]

    def __len__(self) -> int:
        return len(self.inputs)


@dataclass
class Selection:
    """What the user asked for, in the order it is applied: tier filter, only, offset, limit. ``tags`` keeps
    the problems with one of these tags or skill types (TACO's ``tags`` / ``skill_types``, any case)."""

    difficulties: Sequence[str] = ()
    only: Sequence[str] = ()
    offset: int = 0
    limit: int | None = None
    tags: Sequence[str] = ()

    def stop_hint(self) -> int | None:
        """How many rows from the start are enough, when that is knowable before reading."""
        if self.difficulties or self.only or self.tags or self.limit is None:
            return None
        return self.offset + self.limit


@dataclass
class ParsedRows:
    problems: list[Problem] = field(default_factory=list)
    cases: dict[str, Cases] = field(default_factory=dict)
    skipped: list[SkippedRow] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # --apps-only ids not in the dataset
    solutions: dict[str, Any] = field(default_factory=dict)  # raw `solutions` fields, only when asked for
    # with a tier filter and every row read: the tiers the rows have (so a tier that none has can be named)
    tiers: list[str] | None = None


def normalise_tier(value: str) -> str:
    """An APPS tier (lower case) or a TACO tier (upper case, as TACO writes them), from any case."""
    tier = value.strip().lower()
    if tier in TIERS:
        return tier
    named = taco.tier_of(value)
    if named is None:
        raise ValueError(f"--apps-difficulty: unknown tier {value!r}; use one of {', '.join(TIERS)} (APPS) or "
                         f"{', '.join(taco.TIERS)} (TACO)")
    return named


def problem_labels(problem: Problem) -> set[str]:
    """A problem's tags and skill types, case-folded, as ``--apps-tag`` matches them."""
    return {name.casefold() for name in (*problem.tags, *problem.skills)}


def problem_id_of(row: dict[str, Any], index: int) -> str:
    value = row.get("problem_id", row.get("id"))
    return str(index) if value is None else str(value)


def row_difficulty(row: dict[str, Any]) -> str:
    """APPS tiers in lower case (as codeparrot writes them), TACO's in upper case (as TACO does); a TACO row without
    one is TACO's UNKNOWN_DIFFICULTY (not a tier with an empty name)."""
    value = row.get("difficulty")
    tier = taco.tier_of(value) or str(value or "").strip().lower()
    return tier or (taco.UNKNOWN_TIER if taco.is_taco_row(row) else "")


def parse_row(row: dict[str, Any], index: int, max_tests: int) -> tuple[Problem, Cases] | SkippedRow:
    """Turn one raw codeparrot row into a problem and its cases (capped), or say why it is skipped."""
    parsed = parse_row_full(row, index)
    if isinstance(parsed, SkippedRow):
        return parsed
    problem, cases = parsed
    keep = cap_of(problem, max_tests)
    return cap(problem, max_tests), Cases(cases.inputs[:keep], cases.outputs[:keep])


def cap_of(problem: Problem, max_tests: int) -> int:
    """How many of the row's tests a cap keeps (0 or less keeps all)."""
    total = problem.n_cases_total
    return total if max_tests <= 0 else min(total, max_tests)


def cap(problem: Problem, max_tests: int) -> Problem:
    """An uncapped problem (``parse_row_full``) as ``parse_row`` with this cap gives it."""
    keep = cap_of(problem, max_tests)
    if keep == problem.n_cases_total:
        return problem
    return replace(problem, n_cases=0 if problem.broken else keep, input_sizes=problem.input_sizes[:keep])


def parse_row_full(row: dict[str, Any], index: int) -> tuple[Problem, Cases] | SkippedRow:
    """``parse_row`` without a cap: every test of the row (what the problem index stores)."""
    pid = problem_id_of(row, index)
    if "__error__" in row:
        return SkippedRow(index, pid, str(row["__error__"]))
    question = row.get("question") or ""
    if not str(question).strip():
        return SkippedRow(index, pid, "empty question")
    raw = row.get("input_output")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return SkippedRow(index, pid, "empty input_output")
    if isinstance(raw, str):
        try:
            io = jsontext.loads(raw)
        except (ValueError, RecursionError) as exc:
            return SkippedRow(index, pid, f"input_output is not JSON ({exc})")
    else:
        io = raw
    if not isinstance(io, dict):
        return SkippedRow(index, pid, f"input_output is not an object (a {type(io).__name__})")
    inputs, outputs = io.get("inputs"), io.get("outputs")
    if not isinstance(inputs, list) or not inputs:
        return SkippedRow(index, pid, "input_output has no inputs")
    if not isinstance(outputs, list) or not outputs:
        return SkippedRow(index, pid, "input_output has no outputs")
    fn_name = io.get("fn_name") or None
    if not fn_name:  # a standard-input test is text: null is no test (call-based values stay JSON values)
        for side, values in (("input", inputs), ("output", outputs)):
            at = next((i for i, value in enumerate(values) if value is None), None)
            if at is not None:
                return SkippedRow(index, pid, f"input_output: test {at}'s {side} is null in a standard-input "
                                              "problem")
        at = next((i for i, value in enumerate(inputs) if not _is_stdin_text(value)), None)
        if at is not None:  # text, or a list of lines; a number or an object is not turned into text by guess
            return SkippedRow(index, pid, f"input_output: test {at}'s input is a {type(inputs[at]).__name__}, not "
                                          "text or a list of lines, in a standard-input problem")
    extra: dict[str, Any] = {}
    if taco.is_taco_row(row):
        limits = taco.parse_limits(row)
        extra = {"tags": taco.labels(row.get("tags")), "skills": taco.labels(row.get("skill_types")),
                 "time_limit": limits.time, "memory_limit": limits.memory, "limit_error": limits.error}
    broken = ""
    if len(inputs) != len(outputs):
        broken = f"inputs ({len(inputs)}) and outputs ({len(outputs)}) differ in length"
    total = min(len(inputs), len(outputs))
    inputs, outputs = inputs[:total], outputs[:total]
    problem = Problem(
        id=pid,
        index=index,
        difficulty=row_difficulty(row),
        fmt=CALL if fn_name else STDIN,
        fn_name=str(fn_name) if fn_name else None,
        n_cases=0 if broken else total,
        n_cases_total=total,
        question=str(question),
        starter_code=str(row.get("starter_code") or ""),
        broken=broken,
        input_sizes=() if broken else tuple(_size(x) for x in inputs),
        **extra,
    )
    return problem, Cases(inputs, outputs)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(jsontext.dumps(value))


@dataclass(frozen=True)
class Entry:
    """One dataset row as selection sees it: what the filters look at, and how to get the rest.

    ``parse(max_tests)`` gives what ``parse_row`` gives; its cases may be ``None`` when they stay where the
    entry came from (the problem index keeps them in a file per problem). ``solutions()`` gives the raw
    ``solutions`` field when the entry has it.
    """

    index: int
    problem_id: str
    difficulty: str
    parse: Callable[[int], tuple[Problem, Cases | None] | SkippedRow]
    solutions: Callable[[], Any] = lambda: None


def row_entries(rows: Iterable[dict[str, Any]]) -> Iterator[Entry]:
    """Raw rows as entries, parsed only if selection keeps them."""
    for index, row in enumerate(rows):
        yield Entry(index, problem_id_of(row, index), row_difficulty(row), partial(parse_row, row, index),
                    partial(row.get, "solutions"))


def select(
    rows: Iterable[dict[str, Any]],
    selection: Selection,
    max_tests: int,
    keep_solutions: bool = False,
    sink: Callable[[Problem, Cases], None] | None = None,
) -> ParsedRows:
    """Apply the selection to rows in dataset order, then parse the rows it keeps (see ``select_entries``)."""
    return select_entries(row_entries(rows), selection, max_tests, keep_solutions, sink)


def select_entries(
    entries: Iterable[Entry],
    selection: Selection,
    max_tests: int,
    keep_solutions: bool = False,
    sink: Callable[[Problem, Cases], None] | None = None,
) -> ParsedRows:
    """Apply the selection to entries in dataset order, then parse the entries it keeps.

    Filters (tier, only) look at the raw row; offset and limit count rows, so that `--apps-limit 50`
    is exactly the first 50 rows. A row in the window that cannot be used is skipped and reported.
    With a `sink`, each problem's cases go there as soon as its row is parsed instead of into the
    result, so the whole split's test data is never held at once. Cases an entry leaves where they are
    (``None``) go to neither.
    """
    tiers = {normalise_tier(t) for t in selection.difficulties}
    only = set(parse_only(selection.only))
    wanted_tags = {t.strip().casefold() for t in selection.tags if t.strip()}
    out = ParsedRows()
    seen: set[str] = set()
    kept = 0
    complete = True  # read to the end: only then is an --apps-only id that was not met really absent
    met: dict[str, None] = {}  # the rows' tiers, with a tier filter
    for entry in entries:
        if selection.limit is not None and kept >= selection.offset + selection.limit:
            complete = False
            break
        if tiers:
            met[entry.difficulty] = None
        if tiers and entry.difficulty not in tiers:
            continue
        if only and entry.problem_id not in only:
            continue
        parsed = None
        if wanted_tags:  # tags are known once the row is parsed: a row without a wanted one is not counted
            parsed = entry.parse(max_tests)
            if isinstance(parsed, SkippedRow) or not problem_labels(parsed[0]) & wanted_tags:
                continue
        kept += 1
        if kept <= selection.offset:
            continue
        if parsed is None:
            parsed = entry.parse(max_tests)
        if isinstance(parsed, SkippedRow):
            out.skipped.append(parsed)
            continue
        problem, cases = parsed
        if problem.id in seen:
            out.skipped.append(SkippedRow(entry.index, problem.id, "duplicate problem_id (first one kept)"))
            continue
        seen.add(problem.id)
        out.problems.append(problem)
        if cases is None:
            pass
        elif sink is not None:
            sink(problem, cases)
        else:
            out.cases[problem.id] = cases
        if keep_solutions:  # the human solutions, for `--apps-candidates reference` only (they are big)
            out.solutions[problem.id] = entry.solutions()
    if complete:
        found = {p.id for p in out.problems} | {r.problem_id for r in out.skipped}
        out.missing = [pid for pid in parse_only(selection.only) if pid not in found]
        if tiers:
            out.tiers = list(met)
    return out


def absent_tiers_line(difficulties: Sequence[str], parsed: ParsedRows, dataset: str) -> str | None:
    """One line for `--apps-difficulty` tiers that no row of the data has (APPS's tier names on TACO rows, or
    TACO's on APPS rows): the tiers the data has and what to give; None when a tier asked for is there."""
    if not difficulties or parsed.tiers is None or parsed.problems or parsed.skipped:
        return None
    if {normalise_tier(t) for t in difficulties} & set(parsed.tiers):
        return None
    order = {name: i for i, name in enumerate((*TIERS, *taco.TIERS))}
    has = sorted(parsed.tiers, key=lambda t: (order.get(t, len(order)), t))
    given = ", ".join(dict.fromkeys(difficulties))
    if not has:
        return f"--apps-difficulty={given}: {dataset} has no rows to choose from"
    taco_tiers = {*taco.TIERS, taco.UNKNOWN_TIER}
    kind = "APPS's" if set(has) <= set(TIERS) else "TACO's" if set(has) <= taco_tiers else "the data's"
    return (f"--apps-difficulty={given}: no row of {dataset} has that tier; its tiers are {', '.join(has)} "
            f"({kind} names): give one of them")


def parse_call_args(raw: Any) -> list[Any]:
    """Arguments for a call-based test: JSON, else a Python literal, else the raw string; a non-list
    is one argument."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            try:
                value = ast.literal_eval(raw)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = raw
    return value if isinstance(value, list) else [value]


def _is_stdin_text(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(x, str) for x in value))


def stdin_text(raw: Any) -> str:
    """A standard-input test's input as text (APPS sometimes stores it as a list of lines)."""
    if isinstance(raw, list):
        return "\n".join(str(x) for x in raw) + "\n"
    return raw if isinstance(raw, str) else str(raw)


def case_order(problem: Problem, cheap_first: bool) -> list[int]:
    """The order a problem's cases run in: dataset order, or smallest input first (ties by index) when
    failing early matters. Deterministic, so every worker agrees; node ids name the index, not the order."""
    indices = list(range(problem.n_cases))
    if cheap_first and len(problem.input_sizes) == problem.n_cases:
        indices.sort(key=lambda i: (problem.input_sizes[i], i))
    return indices
