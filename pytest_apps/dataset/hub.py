"""Open APPS rows from the Hugging Face hub: a repository's raw `<split>.jsonl`, or its Parquet files.

``--apps-dataset`` names a repository (``owner/name``) or a folder inside one (``owner/name/<folder>``, e.g. the
tier config ``codeparrot/apps/interview`` of the Parquet conversion); ``--apps-revision`` a branch, tag, ref
(``refs/convert/parquet``, ``refs/pr/5``) or commit. Everything goes through ``huggingface_hub``: its cache,
file locks, offline mode and ``HfFileSystem``.

* ``<split>.jsonl`` at the repository root (or the folder): ``codeparrot/apps``'s default revision holds it
  next to a loading script that ``datasets`` >= 4 refuses. One quick metadata request (no retries) decides
  between online and the cache (none when the revision is a commit whose file is cached); without the file
  cached and with a ``stop``, only the head of the file is streamed.
* Otherwise the repository's file list at the resolved commit is matched against the layouts
  :func:`rows.find_split_files` understands: ``<split>/data-*.arrow`` (the folders ``datasets.save_to_disk``
  writes; ``BAAI/TACO``'s main revision holds ``train/`` and ``test/`` so, read by its loading script ``TACO.py``,
  beside an older Parquet conversion in ``ALL/``; these Arrow files are downloaded whole, being in the IPC stream
  format that has no footer to seek by), ``data/<split>-*.parquet`` (``push_to_hub``, Parquet copies such
  as ``metr-evals/apps``), the Parquet conversion's ``<config>/<split>/*.parquet`` with config ``default`` or
  ``all``, never ``all/`` together with the tier folders (each row would be read twice: what
  ``datasets.load_dataset("codeparrot/apps", revision="refs/convert/parquet")`` does), or the one config the
  folder names. A run that needs only the first rows (``stop``) and finds the files uncached reads them over
  HTTP with range requests, a footer and then one row group at a time; any other run downloads them into the
  hub cache, so that later runs work offline. Parquet is read by pyarrow (`rows.py`), one row group at a
  time on the calling thread.
* Not through ``datasets``' streaming Parquet reader: it fetches far more than the first rows need, and its
  processes can abort or hang at exit (apache/arrow#45214; ``benchmarks/bench_hub_parquet.py`` measures both),
  which a pytest run cannot afford; ``datasets`` reads only the objects a caller passes (`objects.py`).
* Offline (``HF_HUB_OFFLINE=1``, or the hub unreachable): the same rules on the cached snapshot of the
  revision; a revision pinned to a commit whose files are cached opens without any request at all.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..core.wording import counted
from .ranges import SparseParquet
from .rows import (
    DEFAULT_DATASET,
    AmbiguousConfigs,
    DatasetError,
    Source,
    arrow_file_rows,
    find_split_files,
    iter_jsonl,
    limit_rows,
    open_arrow,
    open_parquet,
    parquet_file_rows,
    read_rows,
    short_error,
    state_listed_arrow_files,
)

_HUB_TIMEOUT_DEFAULT = 5.0  # seconds for the metadata request that decides online vs cache
_COMMIT = re.compile(r"[0-9a-f]{40}")  # a full commit sha (a branch or tag can move; a commit cannot)
# Read-ahead of a streamed Parquet file: each fetch takes what pyarrow asks for (a row group's column chunk)
# plus this much. fsspec's default, 5 MiB, fetched 6.2 MB for the first 1 MB row group of a 12 MB file.
_STREAM_BLOCK = 1 << 20


def _hub_offline() -> bool:
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return bool(constants.HF_HUB_OFFLINE) or env.strip().upper() in {"1", "ON", "YES", "TRUE"}


def _hub_timeout() -> float:
    try:
        return float(os.environ.get("HF_HUB_ETAG_TIMEOUT", "")) or _HUB_TIMEOUT_DEFAULT
    except ValueError:
        return _HUB_TIMEOUT_DEFAULT


def _local_copy_hint(repo_id: str, split: str) -> str:
    return (
        f"download {split}.jsonl from https://huggingface.co/datasets/{repo_id} and pass "
        f"--apps-dataset=path/to/{split}.jsonl"
    )


def split_spec(spec: str) -> tuple[str, str]:
    """``owner/name/sub/folder`` -> (``owner/name``, ``sub/folder``)."""
    parts = [p for p in spec.strip().strip("/").split("/") if p]
    return "/".join(parts[:2]), "/".join(parts[2:])


def _in(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


@dataclass(frozen=True)
class _Asked:
    """What `open_hub` was asked for, and the file it looks for first: ``<folder>/<split>.jsonl`` of the repository."""

    spec: str
    split: str
    revision: str | None
    stop: int | None

    @property
    def repo_id(self) -> str:
        return split_spec(self.spec)[0]

    @property
    def filename(self) -> str:
        return _in(split_spec(self.spec)[1], f"{self.split}.jsonl")

    @property
    def rev(self) -> str:
        return self.revision or "main"

    @property
    def where(self) -> str:
        return f"{self.spec}@{self.rev}" if self.revision else self.spec

    def other_layout(self, *, offline: bool):
        """The split from the repository's other layouts (Arrow folders, Parquet files)."""
        return _open_hub_other_layout(self.spec, self.split, self.revision, self.stop, offline=offline)


class _NoJsonl(Exception):
    """The revision holds no ``<split>.jsonl`` where it was looked for: its other layouts are read."""


def open_hub(spec: str, split: str, revision: str | None, stop: int | None):
    asked = _Asked(spec, split, revision, stop)
    offline = _hub_offline()
    if revision and _COMMIT.fullmatch(revision):
        found = _open_cached_commit(asked)
        if found is not None:
            return found
    try:
        meta, unreachable = (None, None) if offline else _ask_hub(asked)
        if meta is not None and stop is not None and meta.commit_hash:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(asked.repo_id, asked.filename, revision=meta.commit_hash,
                                            repo_type="dataset")
            if not isinstance(cached, str):
                # Not cached and only the first rows are needed: stream the head instead of 1.3 GB.
                rows = _stream_hub_jsonl(asked.repo_id, asked.filename, split, meta.commit_hash, stop)
                return Source(spec, split, revision, meta.commit_hash), rows
        return _download_jsonl(asked, meta, offline, unreachable)
    except _NoJsonl:
        return asked.other_layout(offline=False)


def _open_cached_commit(asked: _Asked):
    """A commit never changes, so its files in the cache are the files: opened without any request to the hub;
    None when they are not cached."""
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(asked.repo_id, asked.filename, revision=asked.revision, repo_type="dataset")
    if isinstance(cached, str):
        return Source(asked.spec, asked.split, asked.revision, asked.revision), read_rows("jsonl", [Path(cached)],
                                                                                          asked.stop)
    try:
        return asked.other_layout(offline=True)
    except DatasetError:
        return None  # not cached: ask the hub


def _ask_hub(asked: _Asked) -> tuple[Any, str | None]:
    """One quick metadata request for the split's JSONL file, no retries (hf_hub_download alone would back off for
    ~25 s when unreachable): (its metadata, None), or (None, why) when the hub cannot be reached. A one-line
    DatasetError for what no cache can help (gated, no such repository or revision, not a hub id); `_NoJsonl` when
    the revision holds no such file."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HFValidationError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.file_download import get_hf_file_metadata

    spec, repo_id = asked.spec, asked.repo_id
    try:
        url = hf_hub_url(repo_id, asked.filename, repo_type="dataset", revision=asked.rev)
        return get_hf_file_metadata(url, timeout=_hub_timeout()), None
    except GatedRepoError:
        raise DatasetError(
            f"{asked.where} is gated on the Hugging Face hub; accept its terms and log in (hf auth login), "
            f"or {_local_copy_hint(repo_id, asked.split)}"
        ) from None
    except RepositoryNotFoundError:
        raise DatasetError(
            f"--apps-dataset {spec}: no such local file or folder, and no such dataset on the Hugging Face "
            "hub (or it is private: log in); check the spelling"
        ) from None
    except RevisionNotFoundError:
        raise DatasetError(
            f"{repo_id} has no revision {asked.rev!r} on the Hugging Face hub; check --apps-revision"
        ) from None
    except HFValidationError:
        raise DatasetError(f"--apps-dataset {spec}: not an existing path nor a valid hub id") from None
    except EntryNotFoundError:
        raise _NoJsonl from None
    except Exception as exc:  # connection refused, DNS, timeout, proxy, 5xx: fall back to the cache
        return None, short_error(exc)


def _download_jsonl(asked: _Asked, meta: Any, offline: bool, unreachable: str | None):
    """The split's JSONL file through the hub cache (from the cache alone when offline or unreachable), or the
    revision's other layouts when the cache holds no such file; `_NoJsonl` when the revision holds none."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HFValidationError, LocalEntryNotFoundError

    spec, repo_id, filename, split = asked.spec, asked.repo_id, asked.filename, asked.split
    try:
        path = hf_hub_download(repo_id, filename, repo_type="dataset", revision=asked.rev,
                               local_files_only=offline or unreachable is not None, etag_timeout=_hub_timeout())
    except HFValidationError:
        raise DatasetError(f"--apps-dataset {spec}: not an existing path nor a valid hub id") from None
    except LocalEntryNotFoundError:
        try:
            return asked.other_layout(offline=True)
        except DatasetError:
            pass
        why = "the hub is offline (HF_HUB_OFFLINE=1)" if offline else f"the hub is unreachable ({unreachable})"
        not_local = "" if repo_id == DEFAULT_DATASET else f" (there is no local file or folder {spec!r} either)"
        raise DatasetError(
            f"{asked.where}: {filename} is not in the Hugging Face cache and {why}{not_local}; "
            f"{_local_copy_hint(repo_id, split)} (or run once online to fill the cache)"
        ) from None
    except EntryNotFoundError:
        raise _NoJsonl from None
    except Exception as exc:
        raise DatasetError(
            f"{asked.where}: downloading {filename} failed ({short_error(exc)}); retry, or "
            f"{_local_copy_hint(repo_id, split)}"
        ) from None
    local = Path(path)
    commit = _snapshot_commit(local) or (meta.commit_hash if meta else None)
    return Source(spec, split, asked.revision, commit), read_rows("jsonl", [local], asked.stop)


def _snapshot_commit(path: Path) -> str | None:
    """The commit sha of a file inside ``.../snapshots/<sha>/...`` of the hub cache."""
    parts = path.parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", parts[i]):
            return parts[i]
    return None


def _stream_hub_jsonl(repo_id: str, filename: str, split: str, commit: str, stop: int) -> Iterator[dict]:
    from huggingface_hub import HfFileSystem

    name = f"hf://datasets/{repo_id}@{commit}/{filename}"

    def gen() -> Iterator[dict]:
        try:
            fh = HfFileSystem().open(f"datasets/{repo_id}@{commit}/{filename}", "rb", block_size=0)
        except Exception as exc:
            raise DatasetError(f"{name}: cannot stream ({short_error(exc)}); {_local_copy_hint(repo_id, split)}") from None
        with fh:
            try:
                yield from iter_jsonl(_lines(fh), name)
            except DatasetError:
                raise
            except Exception as exc:  # connection dropped mid-stream
                raise DatasetError(f"{name}: streaming failed ({short_error(exc)}); retry or use a local copy") from None

    return limit_rows(gen(), stop)


def _lines(fh: IO[bytes], chunk: int = 1 << 20) -> Iterator[bytes]:
    """Split a binary stream into lines (keeping ``\\n``) without relying on the stream's readline."""
    pending = b""
    while True:
        block = fh.read(chunk)
        if not block:
            break
        pending += block
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line + b"\n"
    if pending:
        yield pending


def _open_hub_other_layout(spec: str, split: str, revision: str | None, stop: int | None, *, offline: bool):
    """A hub repository (or revision such as ``refs/convert/parquet``) without ``<split>.jsonl``.

    Online: list the files at the revision's commit and pick the split's files by :func:`find_split_files`
    rules. Offline: apply the same rules to the cached snapshot folder of the revision.
    """
    from huggingface_hub import HfApi, snapshot_download, try_to_load_from_cache

    repo_id, folder = split_spec(spec)
    rev = revision or "main"
    where = f"{spec}@{rev}" if revision else spec
    if offline:
        try:
            snapshot = Path(snapshot_download(repo_id, repo_type="dataset", revision=rev, local_files_only=True))
        except Exception:
            raise DatasetError(f"{where}: not in the Hugging Face cache; {_local_copy_hint(repo_id, split)}") from None
        if not (snapshot / folder).is_dir():
            raise DatasetError(f"{where}: no folder {folder!r} in the cached snapshot {snapshot}")
        try:
            kind, files = find_split_files(snapshot / folder, split)
        except AmbiguousConfigs as exc:
            raise _ambiguous(spec, where, split, exc.configs) from None
        source = Source(spec, split, revision, _snapshot_commit(files[0]))
        listed = state_listed_arrow_files(files[0].parent) if kind == "arrow" else []
        if any(not p.is_file() for p in listed):  # a limited run fetched only the first shards
            return source, _cached_arrow_shards(listed, stop, where)
        return source, read_rows(kind, files, stop)
    try:
        info = HfApi().dataset_info(repo_id, revision=rev, timeout=_hub_timeout(), files_metadata=False)
        listed = [s.rfilename for s in (info.siblings or [])]
    except Exception as exc:
        raise DatasetError(f"{where}: cannot list the repository files ({short_error(exc)})") from None
    kind, wanted = _choose(listed, spec, split, where)
    commit = info.sha
    source = Source(spec, split, revision, commit)
    if kind == "parquet" and stop is not None:
        cached = [try_to_load_from_cache(repo_id, n, revision=commit, repo_type="dataset") for n in wanted]
        if not all(isinstance(c, str) for c in cached):  # the first rows only: a row group at a time over HTTP
            return source, _stream_hub_parquet(repo_id, commit, wanted, stop)
    if kind == "arrow" and stop is not None and len(wanted) > 1:
        # Arrow files (BAAI/TACO's save_to_disk shards) have no footer to read a part of: the first rows only
        # need the first shards, each downloaded (into the hub cache) when the rows before it are used up
        state = f"{wanted[0].rsplit('/', 1)[0]}/state.json" if "/" in wanted[0] else "state.json"
        if state in listed:  # the shards' list, so that an offline run knows what the cache lacks
            _download(repo_id, state, rev, commit, where)
        return source, _hub_arrow_shards(repo_id, wanted, rev, commit, where, stop)
    # Everything is read (or it is cached already): keep the files in the hub cache, so later runs work offline.
    files = [_download(repo_id, n, rev, commit, where) for n in wanted]
    return source, read_rows(kind, files, stop)


def _cached_arrow_shards(listed: list[Path], stop: int | None, where: str) -> Iterator[dict]:
    """Offline, the rows of a split of which the hub cache holds only the first shards: read in order, and an
    error (never a split cut short) when a row past them is needed."""

    def cached(i: int) -> Path:
        if not listed[i].is_file():
            raise DatasetError(f"{where}: {listed[i].name} ({i + 1} of {counted(len(listed), 'file')} of the split) is "
                               "not in the Hugging Face cache (an earlier run needed only the files before it); run "
                               "once online to fetch it, or use --apps-limit to stay within the cached rows")
        return listed[i]

    return _arrow_shards([functools.partial(cached, i) for i in range(len(listed))], stop)


def _hub_arrow_shards(repo_id: str, names: list[str], rev: str, commit: str, where: str, stop: int) -> Iterator[dict]:
    """The rows of a split's Arrow shards up to `stop`, each downloaded into the hub cache once its rows are
    needed."""
    return _arrow_shards([functools.partial(_download, repo_id, n, rev, commit, where) for n in names], stop)


def _arrow_shards(shards: list[Callable[[], Path]], stop: int | None) -> Iterator[dict]:
    """The rows of Arrow shards in order up to `stop`, a shard got (downloaded, or found in the cache) only when
    the rows before it are used up; the first now, so that an error is said when the dataset is opened."""
    first = shards[0]()
    reader = open_arrow(first)

    def gen() -> Iterator[dict]:
        yield from arrow_file_rows(reader, str(first))
        for get in shards[1:]:
            path = get()
            yield from arrow_file_rows(open_arrow(path), str(path))

    return limit_rows(gen(), stop)


def _stream_hub_parquet(repo_id: str, commit: str, names: list[str], stop: int) -> Iterator[dict]:
    """Rows of a hub repository's Parquet files, read with HTTP range requests through ``HfFileSystem``: the
    footer, then one row group at a time, into a local sparse copy that pyarrow reads (`ranges.py` says why
    pyarrow is never handed the remote file itself); a file is opened only when the rows before it are used
    up. The first file is opened here, so that its errors (not Parquet, not APPS rows) raise from
    ``open_rows``."""
    from huggingface_hub import HfFileSystem

    fs = HfFileSystem()

    def open_file(name: str) -> tuple[Any, SparseParquet, Any, str]:
        shown = f"hf://datasets/{repo_id}@{commit}/{name}"
        try:
            fh = fs.open(f"datasets/{repo_id}@{commit}/{name}", "rb", block_size=_STREAM_BLOCK)
        except Exception as exc:
            raise DatasetError(f"{shown}: cannot stream ({short_error(exc)}); retry, or use a local copy") from None
        copy = None
        try:
            copy = SparseParquet(fh, fh.size)
            return fh, copy, open_parquet(copy.path, shown), shown
        except BaseException as exc:
            if copy is not None:
                copy.close()
            fh.close()
            if isinstance(exc, DatasetError):
                raise
            if isinstance(exc, ValueError):  # no Parquet footer
                raise DatasetError(f"{shown} is not a readable Parquet file ({exc}); download it again") from None
            if isinstance(exc, OSError):
                raise DatasetError(f"{shown}: cannot stream ({short_error(exc)}); retry, or use a local copy") from None
            raise

    first = open_file(names[0])

    def gen() -> Iterator[dict]:
        for i, name in enumerate(names):
            fh, copy, pf, shown = first if i == 0 else open_file(name)
            with fh:
                try:
                    fetch = functools.partial(copy.fetch_row_group, pf.metadata)
                    yield from parquet_file_rows(pf, shown, before_group=fetch)
                finally:
                    copy.close()

    return limit_rows(gen(), stop)


def _choose(listed: list[str], spec: str, split: str, where: str) -> tuple[str, list[str]]:
    """The split's files among a repository's file names (under the folder ``spec`` names), by the rules of
    :func:`find_split_files`, applied to a virtual tree of empty files."""
    import tempfile

    folder = split_spec(spec)[1]
    prefix = f"{folder}/" if folder else ""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in listed:
            if n.startswith(prefix) and n.endswith((".jsonl", ".parquet", ".json", ".arrow")):
                (root / n).parent.mkdir(parents=True, exist_ok=True)
                (root / n).touch()
        try:
            kind, virtual = find_split_files(root / folder, split)
        except AmbiguousConfigs as exc:
            raise _ambiguous(spec, where, split, exc.configs) from None
        except (DatasetError, OSError):
            raise DatasetError(
                f"{where}: no {split}.jsonl or Parquet files for split {split!r} in the repository; "
                "check --apps-split / --apps-revision"
            ) from None
        return kind, [p.relative_to(root).as_posix() for p in virtual]


def _ambiguous(spec: str, where: str, split: str, configs: list[str]) -> DatasetError:
    return DatasetError(
        f"{where}: several folders of the repository hold split {split!r} ({', '.join(configs)}); "
        f"pass one of them, e.g. --apps-dataset {spec}/{configs[0]}"
    )


def _download(repo_id: str, name: str, rev: str, commit: str, where: str) -> Path:
    """One file into the hub cache, asked for by ``rev`` (so that the cache records which commit the branch or
    ref is, for offline runs), and checked to be the listed ``commit``'s."""
    from huggingface_hub import hf_hub_download

    try:
        path = Path(hf_hub_download(repo_id, name, repo_type="dataset", revision=rev, etag_timeout=_hub_timeout()))
    except Exception as exc:
        raise DatasetError(f"{where}: downloading {name} failed ({short_error(exc)}); retry or use a local copy") from None
    if _snapshot_commit(path) not in (None, commit):
        raise DatasetError(f"{where}: the revision moved from {commit} to {_snapshot_commit(path)} during the download; retry")
    return path
