"""The dataset table: one entry per dataset family, saying everything the rest of the package needs of its rows.

An entry names its hub repositories, how a row (or a file's columns) is recognised as one of its rows, how a raw
row becomes the plain row the readers yield (`normalize`) and then the run's problem and tests (`parse`: the
statement, tests and their decoding, call-based or standard input, starter code), its reference solutions (Python
programs, as a JSON list), its tier vocabulary in its own order, whether its rows carry limits of their own, and
the judge profile that reproduces its own evaluator. Readers, selection, the problem index and the reports ask the
table (`entry_of`, `tier_order`, ...), never which dataset a row came from.

Adding a dataset is a module of this package with its row functions and an entry in `TABLE` (and a judge profile
in `judge/profiles.py` where its evaluator's verdicts differ); see docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import apps, taco
from .model import Cases, DatasetError, Problem, SkippedRow


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

    def vocabulary(self) -> tuple[str, ...]:
        return (*self.tiers, *self.unknown_tiers)


def _apps_tier(row: dict[str, Any]) -> str:
    return canonical_tier(row.get("difficulty"))


# The table, in the order docs and messages list it. Recognition goes the other way (`entry_of`): an entry whose
# columns are a superset of another's (TACO's of APPS's) comes after it here.
TABLE: dict[str, Dataset] = {d.name: d for d in (
    Dataset(apps.NAME, "APPS", ("codeparrot/apps", "metr-evals/apps"), apps.marks, apps.COLUMNS, apps.normalize,
            apps.problem_id, _apps_tier, apps.parse_with(_apps_tier), apps.solutions, apps.TIERS),
    Dataset(taco.NAME, "TACO", ("BAAI/TACO",), taco.marks, taco.COLUMNS, taco.normalize, apps.problem_id,
            taco.tier, taco.parse, apps.solutions, taco.TIERS, unknown_tiers=(taco.UNKNOWN_TIER,), judge="taco",
            row_limits="time_limit / memory_limit text", special_judge=True),
)}
DEFAULT = TABLE[apps.NAME]  # rows no entry claims are read as APPS rows (and refused there without an id)


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


# ----------------------------------------------------------------------------------------------------- tiers

TIER_ORDER: tuple[str, ...] = tuple(dict.fromkeys(t for entry in TABLE.values() for t in entry.vocabulary()))


_SPELLING = {t.casefold(): t for t in reversed(TIER_ORDER)}  # the first entry's spelling of a name wins


def canonical_tier(value: Any) -> str:
    """A tier as the table spells it (APPS-schema rows of another dataset keep that dataset's names: TACO's in
    upper case), else in lower case as APPS writes its own."""
    text = str(value or "").strip()
    return _SPELLING.get(text.casefold(), text.lower())


class TierError(DatasetError, ValueError):
    """A tier name no entry of the table has (`--apps-difficulty`)."""


def normalise_tier(value: str) -> str:
    """A tier as selection matches it (case-folded), when some entry has it; else a TierError naming each
    dataset's tiers."""
    folded = value.strip().casefold()
    if any(folded == t.casefold() for t in TIER_ORDER):
        return folded
    known = "; ".join(f"{', '.join(entry.tiers)} ({entry.title})" for entry in TABLE.values())
    raise TierError(f"--apps-difficulty: unknown tier {value!r}; use one of {known}")


def tier_entry(present: Iterable[str]) -> Dataset:
    """The entry whose tier names the most of `present` (the first in the table when none does)."""
    names = set(present)
    return max(TABLE.values(), key=lambda entry: len(names & set(entry.vocabulary())))


def tier_order(present: Iterable[str]) -> list[str]:
    """`present` tiers in their dataset's order, then the others sorted."""
    names = set(present)
    return [t for t in TIER_ORDER if t in names] + sorted(names - set(TIER_ORDER))


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
