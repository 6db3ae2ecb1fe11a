"""The plain values a dataset entry makes of a row, and the one error it raises: a `Problem` (what a run needs to know of it, without its test
data), its `Cases` (the tests, loaded per problem when it runs) or a `SkippedRow` (why it cannot be used); `DatasetError` for what cannot be read at all.

Every dataset of the table (`table.py`) makes these; nothing here knows which dataset a row came from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

STDIN = "stdin"
CALL = "call"


class DatasetError(Exception):
    """One-line, user-facing message naming the dataset/file/row/option and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))  # guarantee a single line


@dataclass(frozen=True)
class Problem:
    """One selected problem, without its test data (that is loaded per problem, when it runs)."""

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
    # labels a dataset gives (TACO's tags and skill types, LiveCodeBench's platform, ...), and the row's own limits
    # (None: the row has none; limit_error: the row's limit text could not be read, so the fixed limits apply)
    tags: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    time_limit: float | None = None
    memory_limit: int | None = None
    limit_error: str = ""
    date: str = ""  # the contest date (ISO) of datasets that give one, for --apps-since / --apps-until

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


@dataclass(frozen=True)
class DataOptions:
    """Which of a dataset's rows and tests a run reads, before any selection: a release (LiveCodeBench's files)
    and the test sets that count (CodeContests'; empty: the dataset's default). The report names them."""

    release: str | None = None
    test_sets: tuple[str, ...] = ()
