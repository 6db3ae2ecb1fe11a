"""Open APPS rows from the Hugging Face hub: the raw `<split>.jsonl` of a dataset repository, streamed.

``codeparrot/apps`` still carries a loading script that ``datasets`` >= 4 refuses, so the raw file is
fetched with ``huggingface_hub`` (its cache, file locks and offline mode) and streamed here. One quick
metadata request (no retries) decides between online and the cache (none when the revision is a commit
whose file is cached); without the file cached and with a ``stop``, only the head of the file is streamed.
Repositories without ``<split>.jsonl`` (or a Parquet conversion revision) fall back to the layouts
:func:`rows.find_split_files` understands.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .rows import (
    DEFAULT_DATASET,
    DatasetError,
    Source,
    find_split_files,
    iter_jsonl,
    limit_rows,
    read_rows,
    short_error,
)

_HUB_TIMEOUT_DEFAULT = 5.0  # seconds for the metadata request that decides online vs cache
_COMMIT = re.compile(r"[0-9a-f]{40}")  # a full commit sha (a branch or tag can move; a commit cannot)


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
        f"--apps-dataset path/to/{split}.jsonl"
    )


def open_hub(repo_id: str, split: str, revision: str | None, stop: int | None):
    from huggingface_hub import hf_hub_download, hf_hub_url
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.file_download import get_hf_file_metadata

    filename = f"{split}.jsonl"
    rev = revision or "main"
    where = f"{repo_id}@{rev}" if revision else repo_id
    offline = _hub_offline()
    if revision and _COMMIT.fullmatch(revision):
        from huggingface_hub import try_to_load_from_cache

        # A commit never changes, so its file in the cache is the file: no request to the hub at all.
        cached = try_to_load_from_cache(repo_id, filename, revision=revision, repo_type="dataset")
        if isinstance(cached, str):
            return Source(repo_id, split, revision, revision), read_rows("jsonl", [Path(cached)], stop)
    meta = None
    unreachable: str | None = None
    if not offline:
        try:
            # One quick request, no retries: hf_hub_download alone would back off for ~25 s when unreachable.
            url = hf_hub_url(repo_id, filename, repo_type="dataset", revision=rev)
            meta = get_hf_file_metadata(url, timeout=_hub_timeout())
        except GatedRepoError:
            raise DatasetError(
                f"{where} is gated on the Hugging Face hub; accept its terms and log in (hf auth login), "
                f"or {_local_copy_hint(repo_id, split)}"
            ) from None
        except RepositoryNotFoundError:
            raise DatasetError(
                f"--apps-dataset {repo_id}: no such local file or folder, and no such dataset on the Hugging Face "
                "hub (or it is private: log in); check the spelling"
            ) from None
        except RevisionNotFoundError:
            raise DatasetError(
                f"{repo_id} has no revision {rev!r} on the Hugging Face hub; check --apps-revision"
            ) from None
        except HFValidationError:
            raise DatasetError(f"--apps-dataset {repo_id}: not an existing path nor a valid hub id") from None
        except EntryNotFoundError:
            return _open_hub_other_layout(repo_id, split, revision, stop, offline=False)
        except Exception as exc:  # connection refused, DNS, timeout, proxy, 5xx: fall back to the cache
            unreachable = short_error(exc)

    if meta is not None and stop is not None and meta.commit_hash:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(repo_id, filename, revision=meta.commit_hash, repo_type="dataset")
        if not isinstance(cached, str):
            # Not cached and only the first rows are needed: stream the head instead of 1.3 GB.
            rows = _stream_hub_jsonl(repo_id, split, meta.commit_hash, stop)
            return Source(repo_id, split, revision, meta.commit_hash), rows

    try:
        path = hf_hub_download(
            repo_id,
            filename,
            repo_type="dataset",
            revision=rev,
            local_files_only=offline or unreachable is not None,
            etag_timeout=_hub_timeout(),
        )
    except HFValidationError:
        raise DatasetError(f"--apps-dataset {repo_id}: not an existing path nor a valid hub id") from None
    except LocalEntryNotFoundError:
        try:
            return _open_hub_other_layout(repo_id, split, revision, stop, offline=True)
        except DatasetError:
            pass
        why = "the hub is offline (HF_HUB_OFFLINE=1)" if offline else f"the hub is unreachable ({unreachable})"
        not_local = "" if repo_id == DEFAULT_DATASET else f" (there is no local file or folder {repo_id!r} either)"
        raise DatasetError(
            f"{where}: {filename} is not in the Hugging Face cache and {why}{not_local}; "
            f"{_local_copy_hint(repo_id, split)} (or run once online to fill the cache)"
        ) from None
    except EntryNotFoundError:
        return _open_hub_other_layout(repo_id, split, revision, stop, offline=False)
    except Exception as exc:
        raise DatasetError(
            f"{where}: downloading {filename} failed ({short_error(exc)}); retry, or {_local_copy_hint(repo_id, split)}"
        ) from None
    local = Path(path)
    commit = _snapshot_commit(local) or (meta.commit_hash if meta else None)
    kind, files = "jsonl", [local]
    return Source(repo_id, split, revision, commit), read_rows(kind, files, stop)


def _snapshot_commit(path: Path) -> str | None:
    """The commit sha of a file inside ``.../snapshots/<sha>/...`` of the hub cache."""
    parts = path.parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", parts[i]):
            return parts[i]
    return None


def _stream_hub_jsonl(repo_id: str, split: str, commit: str, stop: int) -> Iterator[dict]:
    from huggingface_hub import HfFileSystem

    filename = f"{split}.jsonl"
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


def _open_hub_other_layout(repo_id: str, split: str, revision: str | None, stop: int | None, *, offline: bool):
    """A hub repo (or revision such as ``refs/convert/parquet``) without ``<split>.jsonl`` at its root.

    Online: list the repo's files, pick the split's files by :func:`find_split_files` rules, download them.
    Offline: apply the same rules to the cached snapshot folder.
    """
    from huggingface_hub import HfApi, hf_hub_download, snapshot_download

    rev = revision or "main"
    where = f"{repo_id}@{rev}" if revision else repo_id
    if offline:
        try:
            folder = Path(snapshot_download(repo_id, repo_type="dataset", revision=rev, local_files_only=True))
        except Exception:
            raise DatasetError(f"{where}: not in the Hugging Face cache; {_local_copy_hint(repo_id, split)}") from None
        kind, files = find_split_files(folder, split)
        return Source(repo_id, split, revision, _snapshot_commit(files[0])), read_rows(kind, files, stop)
    try:
        api = HfApi()
        info = api.dataset_info(repo_id, revision=rev, timeout=_hub_timeout(), files_metadata=False)
        names = [s.rfilename for s in (info.siblings or [])]
    except Exception as exc:
        raise DatasetError(f"{where}: cannot list the repository files ({short_error(exc)})") from None
    # Reuse the folder rules on the file listing (as a virtual tree of empty paths).
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in names:
            if n.endswith((".jsonl", ".parquet", ".json")):
                (root / n).parent.mkdir(parents=True, exist_ok=True)
                (root / n).touch()
        try:
            kind, virtual = find_split_files(root, split)
        except DatasetError:
            raise DatasetError(
                f"{where}: no {split}.jsonl or Parquet files for split {split!r} in the repository; "
                "check --apps-split / --apps-revision"
            ) from None
        wanted = [p.relative_to(root).as_posix() for p in virtual]
    try:
        files = [
            Path(hf_hub_download(repo_id, n, repo_type="dataset", revision=rev, etag_timeout=_hub_timeout()))
            for n in wanted
        ]
    except Exception as exc:
        raise DatasetError(f"{where}: downloading {wanted[0]} failed ({short_error(exc)}); retry or use a local copy") from None
    return Source(repo_id, split, revision, info.sha), read_rows(kind, files, stop)
