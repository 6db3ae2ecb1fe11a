"""Rows to problems: each row parsed by its dataset's entry (`table.py`), unusable rows skipped with a reason,
tests capped, problems selected.

Pure data in and out. Loading the raw rows (hub, files, the bundled sample) is `loading`'s job (`rows`, `hub`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..core import jsontext
from ..core.settings import parse_only
from . import table
from .apps import TIERS  # noqa: F401 - APPS's tiers, as callers name them here
from .model import CALL, STDIN, Cases, DataOptions, Problem, SkippedRow  # noqa: F401 - the values made here
from .table import normalise_tier

@dataclass
class Selection:
    """What the user asked for, in the order it is applied: tier filter, only, offset, limit. ``tags`` keeps
    the problems with one of these tags or skill types (TACO's ``tags`` / ``skill_types``, any case). A tier no
    dataset of the table has is refused here, before anything is read."""

    difficulties: Sequence[str] = ()
    only: Sequence[str] = ()
    offset: int = 0
    limit: int | None = None
    tags: Sequence[str] = ()
    since: str | None = None  # contest dates from (YYYY-MM-DD), as LiveCodeBench's --start_date
    until: str | None = None  # ... to (YYYY-MM-DD, midnight), as its --end_date
    release: str | None = None  # which rows exist at all: a release (`DataOptions`)
    test_sets: Sequence[str] = ()  # and which tests count

    def __post_init__(self) -> None:
        for tier in self.difficulties:
            normalise_tier(tier)

    def data_options(self) -> DataOptions:
        return DataOptions(self.release, tuple(self.test_sets))

    def unfiltered(self) -> Selection:
        """Every problem of the same rows: the data options kept, the filters dropped."""
        return Selection(release=self.release, test_sets=self.test_sets)

    def in_window(self, date: str) -> bool:
        """Whether a row of this contest date is in the --apps-since / --apps-until window (always without one);
        a row without a date is in no window."""
        if self.since is None and self.until is None:
            return True
        return bool(date) and date_in_window(date, self.since, self.until)

    def stop_hint(self) -> int | None:
        """How many rows from the start are enough, when that is knowable before reading."""
        if self.difficulties or self.only or self.tags or self.since or self.until or self.limit is None:
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


def problem_labels(problem: Problem) -> set[str]:
    """A problem's tags and skill types, case-folded, as ``--apps-tag`` matches them."""
    return {name.casefold() for name in (*problem.tags, *problem.skills)}


def problem_id_of(row: dict[str, Any], index: int) -> str:
    return table.entry_of(row).problem_id(row, index)


def row_difficulty(row: dict[str, Any]) -> str:
    """The row's tier, as its dataset names it (APPS's in lower case, TACO's in upper case, ...)."""
    return table.entry_of(row).tier(row)


def row_date(row: dict[str, Any]) -> str:
    """The row's contest date (ISO), "" when its dataset gives none."""
    return table.entry_of(row).date(row)


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
    if "__error__" in row:
        return SkippedRow(index, problem_id_of(row, index), str(row["__error__"]))
    broken = not_unicode(row)
    if broken:
        return SkippedRow(index, problem_id_of(row, index), broken)
    return table.entry_of(row).parse(row, index)


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def not_unicode(row: dict[str, Any]) -> str:
    """Why a row's text cannot be written or run ("" when it can): a lone surrogate (JSON's `\\ud800` alone
    decodes to one) is no character, and no UTF-8 file, program input or report can hold it. Every text field is
    looked at, and a field that is JSON text (tests, as every dataset's entry stores them) once decoded, where it
    holds an escape that could decode to one."""
    for key, value in row.items():
        if not isinstance(value, str):
            value = jsontext.dumps(value) if isinstance(value, (dict, list)) else ""
        found = _lone_surrogate(value)
        if found:
            return f"{key} holds a lone surrogate (\\u{found:04x}), which is not Unicode text"
        if _ESCAPED_SURROGATE.search(value):  # escaped: only then can the decoded tests hold one
            try:
                found = _lone_surrogate(jsontext.dumps(jsontext.loads(value)))
            except (ValueError, RecursionError, TypeError):
                continue
            if found:
                return f"{key}: a test holds a lone surrogate (\\u{found:04x}), which is not Unicode text"
    return ""


def _lone_surrogate(text: str) -> int:
    """The first lone surrogate's code point in `text` (0: none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return ord(text[exc.start])
    return 0


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
    date: str = ""  # the contest date (ISO), for datasets that give one


def row_entries(rows: Iterable[dict[str, Any]]) -> Iterator[Entry]:
    """Raw rows as entries, parsed only if selection keeps them."""
    for index, row in enumerate(rows):
        entry = table.entry_of(row)
        yield Entry(index, problem_id_of(row, index), row_difficulty(row), partial(parse_row, row, index),
                    partial(entry.solutions, row), row_date(row))


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
        if not _passes(entry, selection, tiers, only):
            continue
        parsed = _tagged(entry, wanted_tags, max_tests) if wanted_tags else None
        if parsed is False:
            continue
        kept += 1
        if kept <= selection.offset:
            continue
        _add(out, seen, entry, entry.parse(max_tests) if parsed is None else parsed, sink, keep_solutions)
    if complete:
        found = {p.id for p in out.problems} | {r.problem_id for r in out.skipped}
        out.missing = [pid for pid in parse_only(selection.only) if pid not in found]
        if tiers:
            out.tiers = list(met)
    return out


def _passes(entry: Entry, selection: Selection, tiers: set[str], only: set[str]) -> bool:
    """Whether the entry passes the filters that look at the raw row: tier, only ids, contest-date window."""
    if tiers and entry.difficulty.casefold() not in tiers:
        return False
    if only and entry.problem_id not in only:
        return False
    return selection.in_window(entry.date)


def _add(out: ParsedRows, seen: set[str], entry: Entry, parsed: tuple[Problem, Cases | None] | SkippedRow,
         sink: Callable[[Problem, Cases], None] | None, keep_solutions: bool) -> None:
    """One selected entry, parsed, into `out`: skipped (with why) or a problem whose cases go to the sink, to
    `out`, or nowhere (left where they are), and its solutions when they are kept."""
    if isinstance(parsed, SkippedRow):
        out.skipped.append(parsed)
        return
    problem, cases = parsed
    if problem.id in seen:
        out.skipped.append(SkippedRow(entry.index, problem.id, "duplicate problem_id (first one kept)"))
        return
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


def date_in_window(date: str, since: str | None, until: str | None) -> bool:
    """``since <= date <= until`` as datetimes (a day alone is its midnight), as LiveCodeBench compares."""
    from datetime import datetime

    try:
        when = datetime.fromisoformat(date)
    except ValueError:
        return False
    when = when.replace(tzinfo=None)
    return ((since is None or datetime.fromisoformat(since) <= when)
            and (until is None or when <= datetime.fromisoformat(until)))


def _tagged(entry: Entry, wanted_tags: set[str], max_tests: int) -> Any:
    """The entry parsed when it has a wanted tag, else False: tags are known once the row is parsed, and a row
    without a wanted one is not counted."""
    parsed = entry.parse(max_tests)
    if isinstance(parsed, SkippedRow) or not problem_labels(parsed[0]) & wanted_tags:
        return False
    return parsed


def absent_tiers_line(difficulties: Sequence[str], parsed: ParsedRows, dataset: str) -> str | None:
    """One line for `--apps-difficulty` tiers that no row of the data has (APPS's tier names on TACO rows, or
    TACO's on APPS rows): the tiers the data has and what to give; None when a tier asked for is there."""
    if not difficulties or parsed.tiers is None or parsed.problems or parsed.skipped:
        return None
    if {normalise_tier(t) for t in difficulties} & {t.casefold() for t in parsed.tiers}:
        return None
    has = table.tier_order(parsed.tiers)
    given = ", ".join(dict.fromkeys(difficulties))
    if not has:
        return f"--apps-difficulty={given}: {dataset} has no rows to choose from"
    kind = table.kind_of_tiers(has)
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
