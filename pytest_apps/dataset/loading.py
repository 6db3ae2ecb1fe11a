"""Open APPS rows from the hub (`hub.py`), a local file or folder (`rows.py`), the bundled sample, or a
`datasets` object the caller holds (`objects.py`).

Pure data out: :func:`open_rows` returns a :class:`Source` (what was actually loaded, for the report and for
cache keys) and an iterator of plain dicts in the ``codeparrot/apps`` schema, in dataset order.

Design notes
------------
* Rows are streamed (see `rows.py`): ``stop`` is the caller's promise that it needs at most that many rows.
* The hub repository ``codeparrot/apps`` still carries a loading script (``apps.py``) that ``datasets`` >= 4
  refuses, so its raw ``<split>.jsonl`` at the repo root is fetched with ``huggingface_hub`` (its cache, file
  locks and offline mode) and streamed here. A repo without ``<split>.jsonl`` (or ``--apps-revision
  refs/convert/parquet``) is matched against the layouts :func:`find_split_files` understands, and its
  Parquet files are read a row group at a time, over HTTP with range requests when only the first rows are
  needed (see `hub.py`, also for why not through ``datasets``). ``owner/name/<folder>`` names a folder inside
  a repository (one config of the Parquet conversion).
* A ``datasets`` ``Dataset``, ``IterableDataset`` or ``DatasetDict`` passed as ``dataset`` is read lazily
  (`objects.py`); it has no revision, so it is never cached as a problem index.
* Before downloading, one quick metadata request (no retries) decides between "online" and "use the cache":
  ``hf_hub_download`` alone retries for ~25 s with back-off when the hub is unreachable and nothing is cached.
* When the file is not cached yet and the caller passed ``stop``, the head of the file is streamed over HTTP
  instead of downloading 1.3 GB. Without ``stop`` (a full run) the file is downloaded into the hub cache once,
  so later runs work offline.
* Nothing here writes files except ``huggingface_hub`` (which locks and renames atomically), so several
  xdist workers may call :func:`open_rows` at the same time.
* What cannot be read (missing file, unknown format, an unreadable file, an unreachable hub without a cache)
  raises :class:`DatasetError` with a one-line message; a bad row becomes a marker row (see `rows.py`).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import table
from .model import DataOptions
from .rows import (
    DEFAULT_DATASET,
    DEFAULT_SPLIT,
    ONE_FILE,
    SUFFIXES,
    DatasetError,
    Source,
    classify_file,
    find_split_files,
    fingerprint,
    limit_rows,
    read_rows,
)

__all__ = ["DatasetError", "Source", "open_rows", "find_split_files", "sample_path", "ignored_split", "shown_split", "DEFAULT_DATASET"]


# --------------------------------------------------------------------------------------------------- entry point


def open_rows(
    dataset: str | os.PathLike[str] | Any,
    split: str = "test",
    revision: str | None = None,
    *,
    stop: int | None = None,
    options: DataOptions = DataOptions(),
) -> tuple[Source, Iterator[dict]]:
    """Open the rows of ``dataset`` (``sample``, a local file or folder, a hub id or a folder in a hub
    repository, or a ``datasets`` object) in dataset order.

    Opening errors raise :class:`DatasetError` here; a Parquet file that turns out corrupt further in raises
    it from the iterator. ``stop`` (``None`` = all) bounds how many rows are read, marker rows included.
    Anything else than a string, a path or a ``datasets`` object raises ValueError. ``options`` choose a release
    (the files of a folder or repository, `table.release_splits`) and the test sets that count (`table.prepared`);
    the Source names both where they apply.
    """
    if stop is not None and stop < 0:
        raise ValueError(f"stop must be >= 0, got {stop}")
    source, rows = _open(dataset, split, revision, stop, options)
    return table.prepared(source, rows, options)


def _open(dataset: Any, split: str, revision: str | None, stop: int | None,
          options: DataOptions) -> tuple[Source, Iterator[dict]]:
    if dataset is not None and not isinstance(dataset, (str, os.PathLike)):
        from .objects import open_object

        _no_release(options, "a datasets object")
        return open_object(dataset, split, stop)
    dataset = (os.fspath(dataset) if dataset is not None else "").strip() or DEFAULT_DATASET
    if dataset == "sample":
        path = sample_path()
        if not path.is_file():
            raise DatasetError(f"the bundled sample {path} is missing; reinstall pytest-apps (pip install -e .)")
        _no_release(options, "the bundled sample")
        kind, files = classify_file(path)
        return Source("sample", ONE_FILE, None, fingerprint(files)), read_rows(kind, files, stop)

    path = Path(dataset).expanduser()
    local = path.exists() or _looks_like_path(dataset)
    if local and path.is_file():
        _no_release(options, f"{dataset}, one file,")
    release = options.release or (None if local else table.default_release(dataset))
    if release is None:
        return _open_split(dataset, path if local else None, split, revision, stop)
    opened = [_open_split(dataset, path if local else None, name, revision, stop)
              for name in table.release_splits(dataset, release)]
    resolved = list(dict.fromkeys(str(s.resolved_revision) for s, _ in opened))
    source = replace(opened[0][0], split=split, release=release,
                     resolved_revision=resolved[0] if len(resolved) == 1 else ";".join(resolved))
    return source, limit_rows(itertools.chain.from_iterable(rows for _, rows in opened), stop)


def _open_split(dataset: str, path: Path | None, split: str, revision: str | None, stop: int | None):
    if path is not None:
        return _open_local(path, dataset, split, revision, stop)
    from .hub import open_hub  # the hub client is imported only when the hub is used

    return open_hub(dataset, split, revision, stop)


def _no_release(options: DataOptions, what: str) -> None:
    if options.release:
        raise DatasetError(f"--apps-release={options.release} does not apply: {what} has no release files; give "
                           "the folder or hub repository that holds them (test.jsonl, test2.jsonl, ...)")


def sample_path() -> Path:
    """Path of the bundled sample rows (may not exist in a broken install)."""
    return Path(__file__).resolve().parent.parent / "data" / "sample.jsonl"


def _looks_like_path(text: str) -> bool:
    """A string that cannot be a hub id (``owner/name``, or ``owner/name/<folder>`` for a folder in the
    repository) is taken as a local path even if it does not exist."""
    if text.startswith((".", "/", "~")) or text.lower().endswith(SUFFIXES):
        return True
    return not re.fullmatch(r"[\w.-]+(/[\w.-]+)*", text)


# ----------------------------------------------------------------------------------------------------- local


def _open_local(path: Path, shown: str, split: str, revision: str | None, stop: int | None):
    if not path.exists():
        raise DatasetError(
            f"--apps-dataset {shown}: no such file or folder; pass a .jsonl, .json or .parquet file, a folder "
            f"holding {split}.jsonl or {split}.parquet, 'sample', or a hub id such as {DEFAULT_DATASET}"
        )
    if path.is_dir():
        kind, files = find_split_files(path, split)
    else:
        kind, files = classify_file(path)
        split = ONE_FILE
    return Source(str(path), split, revision, fingerprint(files)), read_rows(kind, files, stop)


ONE_FILE_TEXT = "one file: no splits"


def shown_split(source: Any, settings: Any) -> Any:
    """The split a report names: the one the rows were read from (ONE_FILE_TEXT for one file, whatever
    --apps-split said), or the setting for a report written before sources recorded it."""
    if "split" in (source or {}):
        return source["split"] or ONE_FILE_TEXT
    return (settings or {}).get("split")


def ignored_split(dataset: str, loaded: str, split: str) -> str:
    """One line for a split asked for where there is none to choose (`loaded`, the Source's split, is ONE_FILE:
    a single file or the bundled sample, whose rows are all read); "" when it was used or is the default."""
    if loaded != ONE_FILE or split in (ONE_FILE, DEFAULT_SPLIT):
        return ""
    return (f"--apps-split={split} does not apply: {dataset} is one file and all of its rows were read; "
            f"drop --apps-split, or give a folder or a hub dataset that holds a {split} split")
