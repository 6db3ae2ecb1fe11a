"""The dataset table: one entry per dataset family, saying everything the rest of the package needs of its rows.

An entry names its hub repositories, how a row (or a file's columns) is recognised as one of its rows, how a raw
row becomes the plain row the readers yield (`normalize`) and then the run's problem and tests (`parse`: the
statement, tests and their decoding, call-based or standard input, starter code), its reference solutions (Python
programs, as a JSON list), its tier vocabulary in its own order, whether its rows carry limits of their own, and
the judge profile that reproduces its own evaluator. Readers, selection, the problem index and the reports ask the
table (`entry_of`, `tier_order`, ...), never which dataset a row came from.

Adding a dataset is a module of this package with its row functions and an entry in `TABLE` (and a judge profile
in `judge/profiles.py` where its evaluator's verdicts differ), or an entry `add` puts in the table (the plugin adds
those of `pytest_apps_datasets` implementations); see docs/extending.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from . import apps, codecontests, livecodebench, taco
from .model import Cases, DataOptions, DatasetError, Problem, SkippedRow


@dataclass(frozen=True)
class Dataset:
    """One dataset family of the table."""

    name: str  # as reports and docs name it
    title: str  # as people write it (messages, tier kinds)
    hub_names: tuple[str, ...]  # its repositories on the Hugging Face hub
    marks: Callable[[Collection[str]], bool]  # a row's keys (or a file's columns) are this dataset's
    columns: tuple[str, ...]  # the columns its rows are read with (Parquet, Arrow, datasets objects)
    normalize: Callable[..., dict]  # (raw row, where, line) -> the plain row the readers yield, or a marker row
    problem_id: Callable[[dict[str, Any], int], str]  # (plain row, index in its split) -> the problem's id
    tier: Callable[[dict[str, Any]], str]  # plain row -> its tier, as the data names it
    parse: Callable[[dict[str, Any], int], "tuple[Problem, Cases] | SkippedRow"]  # uncapped problem and tests
    solutions: Callable[[dict[str, Any]], Any]  # its reference Python programs (a JSON list), for `reference`
    tiers: tuple[str, ...]  # its tier vocabulary, in its own order (easiest first)
    unknown_tiers: tuple[str, ...] = ()  # tier names a row may have outside that order (sorted last)
    judge: str = "seed"  # the judge profile that gives its own evaluator's verdicts
    row_limits: str = ""  # what its rows say of limits, for `--apps-limits row` ("" when nothing)
    special_judge: bool = False  # TACO's special-judge list (`--apps-special-judge`) applies to its rows
    date: Callable[[dict[str, Any]], str] = lambda row: ""  # plain row -> its contest date (ISO), "" for none
    wrong_solutions: Callable[[dict[str, Any]], list[str]] = lambda row: []  # known-wrong programs it labels
    releases: Callable[[str], list[str]] | None = None  # release name -> its split files (ValueError: unknown)
    default_release: str | None = None  # the release its repositories are read at by name
    test_sets: tuple[str, ...] = ()  # the test sets its rows hold (`--apps-test-sets`)
    default_test_sets: tuple[str, ...] = ()  # those that count unless the option says
    prepare: Callable[[dict, tuple[str, ...]], dict] | None = None  # (plain row, test sets that count) -> row
    data_sources: tuple[str, ...] = ()  # what trainers name its rows besides its hub names (verl's `data_source`)
    # (input_output dict, id) -> a row of its schema, for a dataset whose tests read their own way (LiveCodeBench's
    # functional inputs): what a trainer's ground truth of its problems becomes
    tests_row: Callable[[dict, str], dict] | None = None
    # what a row it refuses must hold, for the one-line error of a caller who gives rows one at a time
    fix: str = "give it tests in the schema of its dataset"

    def vocabulary(self) -> tuple[str, ...]:
        return (*self.tiers, *self.unknown_tiers)


def _apps_tier(row: dict[str, Any]) -> str:
    return canonical_tier(row.get("difficulty"))


# The table, in the order docs and messages list it. Recognition goes the other way (`entry_of`): an entry whose
# columns are a superset of another's (TACO's of APPS's) comes after it here.
TABLE: dict[str, Dataset] = {d.name: d for d in (
    Dataset("apps", "APPS", ("codeparrot/apps", "metr-evals/apps"), apps.marks, apps.COLUMNS, apps.normalize,
            apps.problem_id, _apps_tier, apps.parse_with(_apps_tier), apps.solutions, apps.TIERS,
            data_sources=("apps",), fix=apps.FIX),
    Dataset("taco", "TACO", ("BAAI/TACO",), taco.marks, taco.COLUMNS, taco.normalize, apps.problem_id,
            taco.tier, taco.parse, apps.solutions, taco.TIERS, unknown_tiers=(taco.UNKNOWN_TIER,), judge="taco",
            row_limits="time_limit / memory_limit text", special_judge=True, data_sources=("taco",),
            fix=apps.FIX),
    Dataset("livecodebench", "LiveCodeBench", ("livecodebench/code_generation_lite",
                                                 "livecodebench/code_generation"),
            livecodebench.marks, livecodebench.COLUMNS, livecodebench.normalize, livecodebench.problem_id,
            livecodebench.tier, livecodebench.parse, livecodebench.solutions, livecodebench.TIERS, judge="lcb",
            row_limits="the evaluator's 6 s per test", date=livecodebench.date, releases=livecodebench.release_splits,
            default_release="release_latest", data_sources=("livecodebench", "lcb"),
            tests_row=livecodebench.row_of_tests, fix=livecodebench.FIX),
    Dataset("codecontests", "CodeContests", ("deepmind/code_contests",), codecontests.marks,
            codecontests.COLUMNS, codecontests.normalize, codecontests.problem_id, codecontests.tier,
            codecontests.parse, codecontests.solutions, codecontests.TIERS, unknown_tiers=(codecontests.SOURCES[0],),
            judge="codecontests", row_limits="time_limit and memory_limit_bytes",
            wrong_solutions=codecontests.wrong_solutions, test_sets=codecontests.TEST_SETS,
            default_test_sets=codecontests.DEFAULT_TEST_SETS, prepare=codecontests.prepare,
            data_sources=("codecontests", "code_contests"), fix=codecontests.FIX),
)}
DEFAULT = TABLE["apps"]  # rows no entry claims are read as APPS rows (and refused there without an id)
BUILT_IN = frozenset(TABLE)  # the entries of this package (`remove` leaves them)


def add(entry: Dataset) -> None:
    """Put `entry` in the table, after the others (its `marks` is asked before theirs). ValueError, in one line
    naming it, for what is no entry, a name taken by another entry, or no tiers; the same entry given again (each
    xdist worker's conftest gives it too) is taken once."""
    if not isinstance(entry, Dataset):
        raise ValueError(f"a dataset is a pytest_apps.dataset.table.Dataset, not {type(entry).__name__}")
    if TABLE.get(entry.name, entry) != entry:
        raise ValueError(f"dataset {entry.name!r}: the name is taken; give the dataset a name of its own")
    if not entry.tiers:
        raise ValueError(f"dataset {entry.name!r}: give its tiers, easiest first")
    TABLE[entry.name] = entry


def remove(name: str) -> None:
    """Take an entry `add` put in the table out of it again (a run that added it ends); the built-in ones stay."""
    if name not in BUILT_IN:
        TABLE.pop(name, None)


def entry_of(columns: Collection[str]) -> Dataset:
    """The entry whose rows have these keys (a row) or columns (a file): the last entry of the table that marks
    them, else APPS."""
    for entry in reversed(TABLE.values()):
        if entry is not DEFAULT and entry.marks(columns):
            return entry
    return DEFAULT


def recognised(columns: Collection[str]) -> bool:
    """Whether a file with these columns holds rows of some entry (an APPS file needs its id column)."""
    return any(entry.marks(columns) for entry in TABLE.values())


def all_columns() -> tuple[str, ...]:
    """Every column an entry reads, once each: what readers take of a file."""
    return tuple(dict.fromkeys(c for entry in TABLE.values() for c in entry.columns))


def accepted_schemas() -> str:
    """What rows the table reads, for a message refusing a file."""
    return " or ".join(entry.title for entry in TABLE.values()) + " rows"


def named(dataset: str) -> Dataset | None:
    """The entry one of whose hub repositories `dataset` names (``owner/name`` or a folder in it), or None."""
    repo = "/".join(str(dataset).strip("/").split("/")[:2]).lower()
    return next((e for e in TABLE.values() if repo in (n.lower() for n in e.hub_names)), None)


def of_data_source(name: Any) -> Dataset | None:
    """The entry a trainer's name for a row's dataset names (verl's ``data_source``): one of its hub repositories or
    `data_sources`, in any case; None for any other name (``codeforces``, a platform whose problems several entries
    hold, is one)."""
    text = str(name).strip().casefold() if isinstance(name, str) else ""
    return next((e for e in TABLE.values() if text in (n.casefold() for n in (*e.hub_names, *e.data_sources))),
                None) if text else None


def data_source_names() -> dict[str, str]:
    """Every name `of_data_source` knows, with its entry's name, in the table's order (for docs and messages)."""
    return {n: e.name for e in TABLE.values() for n in (*e.data_sources, *e.hub_names)}


# ---------------------------------------------------------------------------------------------------- options


def default_release(dataset: str) -> str | None:
    """The release a repository of a dataset with releases is read at by name (None for others)."""
    entry = named(dataset)
    return entry.default_release if entry is not None else None


def release_splits(dataset: str, release: str) -> list[str]:
    """The split files `release` reads, by the dataset's entry (the one with releases, for a folder)."""
    entry = named(dataset)
    with_releases = [e for e in TABLE.values() if e.releases is not None]
    if entry is not None and entry.releases is None:
        raise DatasetError(f"--apps-release={release} does not apply: {dataset} is {entry.title}, which has no "
                           f"releases ({', '.join(e.title for e in with_releases)} has)")
    try:
        return (entry or with_releases[0]).releases(release)  # type: ignore[misc]
    except ValueError as exc:
        raise DatasetError(str(exc)) from None


def prepared(source: Any, rows: Iterator[dict], options: DataOptions) -> tuple[Any, Iterator[dict]]:
    """Rows with the test sets that count applied (`--apps-test-sets`), and the Source naming them, decided by the
    first usable row's entry; a dataset whose rows hold one test set takes no `--apps-test-sets`."""
    head: list[dict] = []
    for row in rows:
        head.append(row)
        if "__error__" not in row:
            break
    entry = entry_of(head[-1]) if head and "__error__" not in head[-1] else None
    rows = _rejoined(head, rows)
    if entry is None or entry.prepare is None:
        if options.test_sets and entry is not None:
            raise DatasetError(f"--apps-test-sets={','.join(options.test_sets)} does not apply: {source.dataset} "
                               f"holds {entry.title} rows, whose tests are one set")
        return source, rows
    chosen = tuple(options.test_sets) or entry.default_test_sets
    unknown = [name for name in chosen if name not in entry.test_sets]
    if unknown or not chosen:
        raise DatasetError(f"--apps-test-sets={','.join(options.test_sets)}: {entry.title} rows hold the test sets "
                           f"{', '.join(entry.test_sets)}; give one or more of them, comma-separated")
    prepare = entry.prepare
    return replace(source, test_sets=",".join(chosen)), (row if "__error__" in row else prepare(row, chosen)
                                                         for row in rows)


def _rejoined(head: list[dict], rows: Iterator[dict]) -> Iterator[dict]:
    """The rows looked at, then the rest; closing it closes the reader (its files)."""
    try:
        yield from head
        yield from rows
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()


# ----------------------------------------------------------------------------------------------------- tiers

def all_tiers() -> tuple[str, ...]:
    """Every entry's tier names, in the table's order and each entry's own, once each."""
    return _tiers(tuple(TABLE.values()))[0]


@functools.lru_cache(maxsize=4)
def _tiers(entries: tuple[Dataset, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """(every tier name in order, case-folded name -> the first entry's spelling) of these entries."""
    order = tuple(dict.fromkeys(t for entry in entries for t in entry.vocabulary()))
    return order, {t.casefold(): t for t in reversed(order)}


def canonical_tier(value: Any) -> str:
    """A tier as the table spells it (APPS-schema rows of another dataset keep that dataset's names: TACO's in
    upper case), else in lower case as APPS writes its own."""
    text = str(value or "").strip()
    return _tiers(tuple(TABLE.values()))[1].get(text.casefold(), text.lower())


class TierError(DatasetError, ValueError):
    """A tier name no entry of the table has (`--apps-difficulty`)."""


def normalise_tier(value: str) -> str:
    """A tier as selection matches it (case-folded), when some entry has it; else a TierError naming each
    dataset's tiers."""
    folded = value.strip().casefold()
    if any(folded == t.casefold() for t in all_tiers()):
        return folded
    known = "; ".join(f"{', '.join(entry.tiers)} ({entry.title})" for entry in TABLE.values())
    raise TierError(f"--apps-difficulty: unknown tier {value!r}; use one of {known}")


def tier_entry(present: Iterable[str]) -> Dataset:
    """The entry whose tier names the most of `present` (the first in the table when none does)."""
    names = set(present)
    return max(TABLE.values(), key=lambda entry: len(names & set(entry.vocabulary())))


def tier_order(present: Iterable[str]) -> list[str]:
    """`present` tiers in their dataset's order, then the others sorted."""
    names, order = set(present), all_tiers()
    return [t for t in order if t in names] + sorted(names - set(order))


def tiers_shown(present: Collection[str]) -> tuple[str, ...]:
    """The tiers a summary lists even when none of its problems has them: those of the run's dataset."""
    return tier_entry(present).tiers


def kind_of_tiers(has: Sequence[str]) -> str:
    """``APPS's`` when every tier in `has` is one of APPS's, and so on; ``the data's`` otherwise."""
    for entry in TABLE.values():
        if set(has) <= set(entry.vocabulary()):
            return f"{entry.title}'s"
    return "the data's"


def takes_special_judge(problems: Iterable[Problem]) -> bool:
    """Whether some problem's tier is of a dataset that TACO's special-judge list applies to (no problems: yes)."""
    tiers = {p.difficulty for p in problems}
    return not tiers or any(entry.special_judge and tiers & set(entry.vocabulary()) for entry in TABLE.values())
