"""The problem index: the parsed dataset, cached on disk, so that a run does not re-read and re-parse the split.

One folder per key (index format, dataset, split, resolved revision)::

    <cache>/index/<name>-<hash>/index.json        an entry per row: row index, problem id, difficulty, and
                                                   either the uncapped Problem or the reason it is skipped
    <cache>/index/<name>-<hash>/cases/<row>.json  all tests of that problem (uncapped)

The cache is ``$PYTEST_APPS_CACHE``, else ``$XDG_CACHE_HOME/pytest-apps``, else ``~/.cache/pytest-apps``:
outside the project and outside what a sandboxed candidate may read (it holds expected outputs).

* Built only by a complete scan of the rows (never from a ``stop``-limited read), in a temporary folder
  renamed into place: concurrent first runs never see half an index, and the loser of the race discards
  its copy. A folder once in place is never modified, so workers may read its case files directly.
* A corrupt or unreadable entry (bad JSON, wrong key, a case file missing or of the wrong size) is treated as
  absent and rebuilt by the next full scan. Failing to write the cache is never fatal either.
* No caching when the source has no resolved revision (nothing to key it by).
* Selection over an index is ``problems.select_entries``, the very routine that selects over rows; the cap
  (``max_tests``) is applied there, so one index serves every cap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..core import jsontext
from .loading import open_rows
from .problems import (
    Cases,
    Entry,
    ParsedRows,
    Problem,
    Selection,
    SkippedRow,
    cap,
    parse_row_full,
    problem_id_of,
    row_date,
    row_difficulty,
    select,
    select_entries,
)
from .rows import Source

FORMAT = 6  # 2: problems carry TACO tags, skills and row limits; 3: a TACO row without a tier is UNKNOWN_DIFFICULTY;
# 4: a standard-input row with a null test is skipped; 5: so is one with an input that is not text or lines;
# 6: so is a row holding a lone surrogate, and rows are read through the dataset table
INDEX_FILE = "index.json"
CACHED, BUILT, NONE = "cached", "built", "none"
_LEFTOVER_AGE_S = 6 * 3600  # a temporary folder this old is a crashed build's: swept by the next build
# Paths a fenced candidate may read (see executor/server.py): the cache must not be under them.
_CHILD_READABLE = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc")

stats: Counter[str] = Counter()  # "built", "opened": evidence for tests that the cache was (not) used


# ------------------------------------------------------------------------------------------------- where


def cache_root() -> Path | None:
    """The cache folder, or None when it would sit where a sandboxed candidate can read it."""
    env = os.environ.get("PYTEST_APPS_CACHE")
    if env:
        root = Path(env).expanduser()
    elif os.environ.get("XDG_CACHE_HOME"):
        root = Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "pytest-apps"
    else:
        root = Path.home() / ".cache" / "pytest-apps"
    real = os.path.realpath(root) + os.sep
    exposed = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *_CHILD_READABLE}
    if any(real.startswith(os.path.realpath(p) + os.sep) for p in exposed):
        return None
    return root


def key_of(source: Source) -> list[Any] | None:
    if not source.resolved_revision:
        return None
    options = [x for x in (source.release, source.test_sets) if x is not None]
    return [FORMAT, source.dataset, source.split, source.resolved_revision, *options]


def folder_for(source: Source) -> Path | None:
    key, root = key_of(source), cache_root()
    if key is None or root is None:
        return None
    digest = hashlib.blake2b(json.dumps(key).encode(), digest_size=10).hexdigest()
    name = re.sub(r"[^\w.-]+", "_", f"{Path(source.dataset).name}-{source.split}")[:60]
    return root / "index" / f"{name}-{digest}"


# ------------------------------------------------------------------------------------------------- read


@dataclass(frozen=True)
class ProblemIndex:
    folder: Path
    rows: list[tuple[int, str, str, Problem | str]]  # row index, id, difficulty, uncapped problem or skip reason
    dates: dict[int, str] = field(default_factory=dict)  # row index -> contest date, for rows that have one

    @property
    def cases_dir(self) -> Path:
        return self.folder / "cases"

    def entries(self) -> Iterator[Entry]:
        for index, pid, difficulty, found in self.rows:
            date = self.dates.get(index, "")
            if isinstance(found, Problem):
                yield Entry(index, pid, difficulty, partial(_capped, found), date=date)
            else:
                yield Entry(index, pid, difficulty, partial(_skipped, SkippedRow(index, pid, found)), date=date)

    def cases(self, problem: Problem) -> Cases:
        return read_cases(cases_path(self.cases_dir, problem), problem.n_cases)


def _capped(problem: Problem, max_tests: int) -> tuple[Problem, None]:
    return cap(problem, max_tests), None  # the cases stay in the index's file


def _skipped(row: SkippedRow, max_tests: int) -> SkippedRow:
    return row


def cases_path(folder: Path, problem: Problem) -> Path:
    """A problem's test file, named by its row (ids may repeat; rows do not)."""
    return folder / f"{problem.index}.json"


def read_cases(path: Path, n_cases: int) -> Cases:
    """A problem's first ``n_cases`` tests from its file (a cached file holds them all)."""
    return parse_cases(path.read_bytes(), n_cases)


def parse_cases(text: bytes, n_cases: int) -> Cases:
    """A problem's first ``n_cases`` tests from the text of its file (read here or sent from elsewhere)."""
    data = jsontext.loads(text)
    return Cases(data["inputs"][:n_cases], data["outputs"][:n_cases])


def open_index(source: Source) -> ProblemIndex | None:
    """The cached index of ``source``, or None when there is none or it cannot be trusted."""
    folder = folder_for(source)
    if folder is None:
        return None
    return _read(folder, key_of(source))


def _read(folder: Path, key: list[Any] | None) -> ProblemIndex | None:
    try:
        data = json.loads((folder / INDEX_FILE).read_bytes())
        if data["key"] != key:
            return None
        rows = [_row(rec, folder / "cases") for rec in data["rows"]]
        dates = {int(rec["index"]): str(rec["date"]) for rec in data["rows"] if rec.get("date")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    stats["opened"] += 1
    return ProblemIndex(folder, rows, dates)


def _row(rec: dict[str, Any], cases_dir: Path) -> tuple[int, str, str, Problem | str]:
    """One record of index.json, checked: its case file must be there, whole (else the index is corrupt)."""
    index, pid, difficulty = int(rec["index"]), str(rec["id"]), str(rec["difficulty"])
    if "problem" not in rec:
        return index, pid, difficulty, str(rec["skipped"])
    problem = Problem.from_dict(rec["problem"])
    if problem.index != index or (cases_dir / f"{index}.json").stat().st_size != rec["size"]:
        raise ValueError(f"row {index}: case file does not match")
    return index, pid, difficulty, problem


# ------------------------------------------------------------------------------------------------ build


def build_index(source: Source, rows: Iterable[dict[str, Any]]) -> ProblemIndex:
    """Parse every row into a new index for ``source`` and put it in place atomically.

    ``rows`` must be the complete split. Raises OSError if the cache cannot be written (the rows are then
    partly consumed), and whatever the row iterator raises.
    """
    folder, key = folder_for(source), key_of(source)
    if folder is None:
        raise OSError("no cache folder for this source")
    folder.parent.mkdir(parents=True, exist_ok=True)
    _sweep(folder.parent)
    tmp = folder.parent / f".tmp-{folder.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        (tmp / "cases").mkdir(parents=True)
        records = [_record(row, index, tmp / "cases") for index, row in enumerate(rows)]
        (tmp / INDEX_FILE).write_text(json.dumps({"key": key, "rows": records}), encoding="utf-8")
        stats["built"] += 1
        return _publish(tmp, folder, key)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _record(row: dict[str, Any], index: int, cases_dir: Path) -> dict[str, Any]:
    rec: dict[str, Any] = {"index": index, "id": problem_id_of(row, index), "difficulty": row_difficulty(row)}
    date = row_date(row)
    if date:
        rec["date"] = date
    parsed = parse_row_full(row, index)
    if isinstance(parsed, SkippedRow):
        rec["skipped"] = parsed.reason
        return rec
    problem, cases = parsed
    data = jsontext.dumps({"inputs": cases.inputs, "outputs": cases.outputs}).encode()
    (cases_dir / f"{index}.json").write_bytes(data)
    rec["problem"], rec["size"] = problem.to_dict(), len(data)
    return rec


def _publish(tmp: Path, folder: Path, key: list[Any] | None) -> ProblemIndex:
    """Rename ``tmp`` to ``folder`` and return the index in place. If a concurrent build got there first,
    theirs is kept (ours is discarded by the caller); a corrupt index in the way is moved aside first."""
    for _ in range(3):
        try:
            os.rename(tmp, folder)
        except OSError:
            pass
        found = _read(folder, key)
        if found is not None:
            return found
        stale = folder.parent / f".stale-{folder.name}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(folder, stale)
        except OSError:
            pass
        shutil.rmtree(stale, ignore_errors=True)
    raise OSError(f"cannot put the problem index in place at {folder}")


def _sweep(parent: Path) -> None:
    """Remove leftovers of crashed builds (old temporary and stale folders)."""
    now = time.time()
    for p in parent.iterdir():
        try:
            if p.name.startswith((".tmp-", ".stale-")) and now - p.stat().st_mtime > _LEFTOVER_AGE_S:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


# ------------------------------------------------------------------------------------------ load + select


@dataclass
class Loaded:
    source: Source
    parsed: ParsedRows
    index: str  # CACHED, BUILT or NONE
    cases_dir: Path | None  # the index's case files (uncapped), or None when the cases went to the sink

    def source_dict(self) -> dict[str, Any]:
        return {**self.source.to_dict(), "index": self.index}


def load(
    dataset: Any,
    split: str,
    revision: str | None,
    selection: Selection,
    max_tests: int,
    *,
    keep_solutions: bool = False,
    sink: Callable[[Problem, Cases], None] | None = None,
) -> Loaded:
    """Open the dataset (anything `open_rows` takes) and select from it, through the problem index when there
    is one or when the selection reads the whole split anyway (then the index is built during that scan).

    With the index, no cases reach ``sink`` or ``parsed.cases``: they are in ``cases_dir``. Reference runs
    (``keep_solutions``) need the rows' solutions, which the index does not keep: they read the rows.
    """
    stop = selection.stop_hint()
    options = selection.data_options()
    source, rows = open_rows(dataset, split, revision, stop=stop, options=options)
    if keep_solutions or folder_for(source) is None:
        return Loaded(source, select(rows, selection, max_tests, keep_solutions, sink), NONE, None)
    found, status = open_index(source), CACHED
    if found is None and stop is None:
        try:
            found, status = build_index(source, rows), BUILT
        except OSError:  # a cache we cannot write: read the rows again, as without a cache
            source, rows = open_rows(dataset, split, revision, stop=stop, options=options)
    if found is None:
        return Loaded(source, select(rows, selection, max_tests, keep_solutions, sink), NONE, None)
    _close(rows)
    return Loaded(source, select_entries(found.entries(), selection, max_tests), status, found.cases_dir)


def _close(rows: Iterator[dict[str, Any]]) -> None:
    close = getattr(rows, "close", None)
    if close is not None:
        close()
