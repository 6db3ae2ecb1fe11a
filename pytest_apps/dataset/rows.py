"""Raw rows: their normalisation by their dataset's entry (`normalize`, which every reader ends in), what was
loaded (`Source`), the one-line `DatasetError`, and readers for JSON Lines, JSON and Parquet files (local, or
for Parquet also a file object the hub streams) and the folder layouts the hub uses.

* Rows are streamed, never converted into an Arrow dataset: the full test split is over a gigabyte and a run
  with ``--apps-limit 50`` needs only the first rows. ``stop`` is the caller's promise that it needs at most
  that many rows; JSON Lines readers stop reading there, Parquet readers read row groups lazily.
* A single bad line in a JSON Lines file is not fatal: it is yielded as a marker row
  ``{"__error__": "<file> line N: ...", "__line__": N}`` that the caller skips and counts. Everything else
  that cannot be read (missing file, unknown format, a file that is not JSON Lines at all, an unreadable
  Parquet file) raises :class:`DatasetError` with a one-line message.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.settings import DEFAULT_DATASET  # noqa: F401 - the option table's, named here for hub and loading
from . import table
from .apps import ROW_FIELDS, marker  # noqa: F401 - the APPS schema, named here for the readers
from .model import DatasetError

DEFAULT_SPLIT = "test"
ONE_FILE = ""  # a Source's split when the rows are one file (a local file, the bundled sample): it has no splits
_JSONL_SUFFIXES = (".jsonl", ".ndjson")
SUFFIXES = (*_JSONL_SUFFIXES, ".json", ".parquet", ".arrow")  # what a local dataset file may be
_PARQUET_BATCH_ROWS = 16  # APPS rows can be megabytes each: keep record batches small.
_PREFERRED_CONFIGS = ("default", "all")


class AmbiguousConfigs(DatasetError):
    """Several config folders hold the split and none is the default (``default`` or ``all``)."""

    def __init__(self, message: str, configs: list[str]) -> None:
        super().__init__(message)
        self.configs = configs


@dataclass(frozen=True)
class Source:
    """What was loaded: ``resolved_revision`` is the hub commit sha, or a fingerprint of local files."""

    dataset: str
    split: str  # ONE_FILE ("") for a single file: its rows are all read, whatever split was asked for
    revision: str | None
    resolved_revision: str | None
    release: str | None = None  # the release read (LiveCodeBench), when the dataset has releases
    test_sets: str | None = None  # the test sets that count (CodeContests), when the rows have several

    def to_dict(self) -> dict[str, str | None]:
        data = dataclasses.asdict(self)
        for key in ("release", "test_sets"):  # named only where they apply
            if data[key] is None:
                del data[key]
        return data


def classify_file(path: Path) -> tuple[str, list[Path]]:
    name = path.name.lower()
    if name.endswith(_JSONL_SUFFIXES):
        return "jsonl", [path]
    if name.endswith(".json"):
        return "json", [path]
    if name.endswith(".parquet"):
        return "parquet", [path]
    if name.endswith(".arrow"):
        return "arrow", [path]
    raise DatasetError(
        f"{path}: unknown dataset format {path.suffix or '(no extension)'!r}; "
        "use a .jsonl (one JSON row per line), .json (a list of rows), .parquet or .arrow file"
    )


def find_split_files(folder: Path, split: str) -> tuple[str, list[Path]]:
    """Find the files of ``split`` in ``folder``: ``(kind, files in order)``.

    Layouts, first match wins: ``<split>.jsonl`` / ``.parquet`` / ``.json`` (the hub repo root, a snapshot);
    shards ``<split>-00000-of-00002.parquet`` (``push_to_hub``), also under ``data/``; ``<split>/*.parquet``;
    the folder ``datasets.save_to_disk`` writes, ``<split>/data-00000-of-00001.arrow`` (with ``state.json``
    naming the files in order; ``BAAI/TACO``'s main revision holds its splits so, beside a loading script);
    ``state.json`` + ``data-*.arrow`` in the folder itself (a saved ``Dataset``); and the Parquet conversion
    ``<config>/<split>/*.parquet`` or ``<config>/<split>-*.parquet``, taking
    config ``default`` or ``all`` when several exist.
    """
    folder = Path(folder)

    def direct(base: Path) -> tuple[str, list[Path]] | None:
        for suffix, kind in ((".jsonl", "jsonl"), (".parquet", "parquet"), (".json", "json")):
            if (base / f"{split}{suffix}").is_file():
                return kind, [base / f"{split}{suffix}"]
        for suffix, kind in ((".parquet", "parquet"), (".jsonl", "jsonl")):
            shards = sorted(p for p in base.glob(f"{split}-*{suffix}") if p.is_file())
            if shards:
                return kind, shards
        if (base / split).is_dir():
            shards = sorted(p for p in (base / split).glob("*.parquet") if p.is_file())
            if shards:
                return "parquet", shards
            arrow = saved_arrow_files(base / split)
            if arrow:
                return "arrow", arrow
        return None

    own = saved_arrow_files(folder)
    if own:
        return "arrow", own
    found = direct(folder) or ((folder / "data").is_dir() and direct(folder / "data")) or None
    if found:
        return found
    configs = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        hit = direct(sub)
        if hit and hit[0] == "parquet":
            configs[sub.name] = hit
    if len(configs) == 1:
        return next(iter(configs.values()))
    for name in _PREFERRED_CONFIGS:
        if name in configs:
            return configs[name]
    if configs:
        raise AmbiguousConfigs(
            f"{folder}: several configs hold split {split!r} ({', '.join(configs)}); "
            f"pass one of them, e.g. --apps-dataset {folder / next(iter(configs))}",
            list(configs),
        )
    raise DatasetError(
        f"{folder}: no {split}.jsonl or {split}.parquet here (nor data/{split}-*.parquet or "
        f"<config>/{split}/*.parquet); pass the file itself or choose another --apps-split"
    )


def saved_arrow_files(folder: Path) -> list[Path]:
    """The Arrow files of a folder ``datasets.save_to_disk`` wrote for one split, in order: as its ``state.json``
    lists them (``_data_files``), else ``data-*.arrow`` sorted; [] when there are none."""
    listed = state_listed_arrow_files(folder)
    if listed and all(p.is_file() for p in listed):
        return listed
    return sorted(p for p in folder.glob("data-*.arrow") if p.is_file())


def state_listed_arrow_files(folder: Path) -> list[Path]:
    """The Arrow files a split folder's ``state.json`` lists, in order, whether they are there or not ([] without
    a readable state.json): a hub cache may hold only the first shards of a split."""
    state = folder / "state.json"
    if not state.is_file():
        return []
    try:
        return [folder / str(f["filename"]) for f in json.loads(state.read_text())["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def fingerprint(files: list[Path]) -> str:
    """A cheap identity of local files: size, mtime to the nanosecond, and a hash of the first and the last
    MiB (no full read of a gigabyte file; an edit changes the mtime, and a same-size rewrite within one
    timestamp tick would have to leave both ends alone)."""
    if len(files) == 1:
        f = files[0]
        st = f.stat()
        h = hashlib.blake2b(digest_size=6)
        with open(f, "rb") as fh:
            h.update(fh.read(1 << 20))
            if st.st_size > 1 << 20:
                fh.seek(max(1 << 20, st.st_size - (1 << 20)))
                h.update(fh.read(1 << 20))
        seconds, ns = divmod(st.st_mtime_ns, 1_000_000_000)
        mtime = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{ns:09d}Z"
        return f"size={st.st_size},mtime={mtime},ends={h.hexdigest()}"
    h = hashlib.blake2b(digest_size=8)
    total = 0
    for f in files:
        h.update(f"{f.name}\0{fingerprint([f])}\0".encode())
        total += f.stat().st_size
    return f"files={len(files)},size={total},hash={h.hexdigest()}"


# ------------------------------------------------------------------------------------------------------ rows


def read_rows(kind: str, files: list[Path], stop: int | None) -> Iterator[dict]:
    """Check the head of each file now (so opening errors raise from open_rows), then stream lazily."""
    if kind == "jsonl":
        for f in files:
            _check_jsonl_head(f)
        return limit_rows((row for f in files for row in _jsonl_file_rows(f)), stop)
    if kind == "json":
        rows = _json_rows(files[0])
        return limit_rows(rows, stop)
    if kind == "parquet":
        opened = [(str(f), open_parquet(f, str(f))) for f in files]
        return limit_rows((row for name, pf in opened for row in parquet_file_rows(pf, name)), stop)
    if kind == "arrow":
        readers = [(str(f), open_arrow(f)) for f in files]
        return limit_rows((row for name, reader in readers for row in arrow_file_rows(reader, name)), stop)
    raise AssertionError(kind)


def limit_rows(rows: Iterable[dict], stop: int | None) -> Iterator[dict]:
    if stop is None:
        yield from rows
        return
    if stop <= 0:
        return
    n = 0
    for row in rows:  # generator chains are closed (files released) when this generator is
        yield row
        n += 1
        if n >= stop:
            return


def normalize(obj: Any, where: str, line: int | None = None) -> dict:
    """A row object -> the plain dict its dataset's entry makes of it (`table.py`), or a marker row saying why it
    is unusable. Every reader ends here (JSON Lines, JSON, Parquet, Arrow, `datasets` objects), so a row means the
    same whatever it came from; ``where`` names the row in a marker's message."""
    if not isinstance(obj, dict):
        return marker(f"{where}: not a JSON object but {type(obj).__name__}", line)
    return table.entry_of(obj).normalize(obj, where, line)


# JSON Lines ----------------------------------------------------------------------------------------------------


def _check_jsonl_head(path: Path) -> None:
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
            fh.seek(0)
            if magic[:2] == b"\x1f\x8b":
                raise DatasetError(f"{path} is gzip-compressed; decompress it (gunzip) and pass the .jsonl")
            if magic == b"PAR1":
                raise DatasetError(f"{path} is a Parquet file; rename it to .parquet")
            for number, raw in enumerate(fh, 1):
                if raw.strip():
                    break
            else:
                return  # empty file: zero rows
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc}); check the path and permissions") from exc
    try:
        first = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DatasetError(
            f"{path} line {number} is not JSON ({short_error(exc)}); is this a JSON Lines file (one row object per line)?"
        ) from None
    if not isinstance(first, dict):
        raise DatasetError(
            f"{path} line {number} is a JSON {type(first).__name__}, not a row object; "
            "a JSON list of rows belongs in a .json file"
        )


def _jsonl_file_rows(path: Path) -> Iterator[dict]:
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    with fh:
        yield from iter_jsonl(fh, str(path))


def iter_jsonl(lines: Iterable[bytes], name: str) -> Iterator[dict]:
    """Rows of a JSON Lines byte stream; a bad line becomes a marker row. Reads only as far as consumed."""
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except UnicodeDecodeError as exc:
            yield marker(f"{name} line {number}: not UTF-8 ({short_error(exc)})", number)
            continue
        except ValueError as exc:
            hint = "; the file looks truncated" if not raw.endswith(b"\n") else ""
            yield marker(f"{name} line {number}: not JSON ({short_error(exc)}){hint}", number)
            continue
        yield normalize(obj, f"{name} line {number}", number)


# JSON ----------------------------------------------------------------------------------------------------------


def _json_rows(path: Path) -> Iterator[dict]:
    """A ``.json`` file: a list of rows, ``{"rows": [...]}``, a dict of columns, or (as ``Dataset.to_json``
    writes by default) JSON Lines. Read whole: a ``.json`` file cannot be streamed."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data" and text.lstrip()[:1] == b"{":
            _check_jsonl_head(path)
            return _jsonl_file_rows(path)
        raise DatasetError(
            f"{path} is not valid JSON ({short_error(exc)}); the file may be truncated or corrupt, download it again"
        ) from None
    name = str(path)
    if isinstance(data, dict) and isinstance(data.get("rows"), list):
        data = [r["row"] if isinstance(r, dict) and isinstance(r.get("row"), dict) else r for r in data["rows"]]
    elif isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        lengths = {len(v) for v in data.values()}
        if len(lengths) != 1:
            raise DatasetError(f"{path}: a dict of columns whose lengths differ ({sorted(lengths)}); fix the file")
        keys = list(data)
        data = [dict(zip(keys, values)) for values in zip(*data.values())]
    elif isinstance(data, dict):
        data = [data]  # one row
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of row objects, found a {type(data).__name__}")
    return (normalize(obj, f"{name} row {i}", None) for i, obj in enumerate(data))


# Parquet -------------------------------------------------------------------------------------------------------


def check_columns(columns: Iterable[str], name: object) -> None:
    """Refuse a table whose columns are no dataset's of the table (`table.py`), in one line."""
    names = set(columns)
    if not table.recognised(names):
        raise DatasetError(
            f"{name} has no problem_id column (columns: {', '.join(sorted(names)) or 'none'}); "
            f"it does not look like {table.accepted_schemas()}"
        )


def open_parquet(source: Any, name: str) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` over a path or a binary file object (a hub file streamed with range
    requests), its schema checked; ``name`` names it in errors."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(source)
    except Exception as exc:  # ArrowInvalid (a ValueError), OSError, ArrowException, a connection error
        raise DatasetError(f"{name} is not a readable Parquet file ({short_error(exc)}); download it again") from None
    check_columns(pf.schema_arrow.names, name)
    return pf


def parquet_file_rows(pf: Any, name: str, before_group: Callable[[int, list[str]], None] | None = None) -> Iterator[dict]:
    """The rows of an opened Parquet file, one row group at a time, reading only the APPS columns.

    Row group by row group (a record batch may otherwise span groups), so a limited run decodes, and over
    HTTP fetches, only the first groups; small batches bound memory when rows are megabytes. Reading happens
    on the calling thread (``use_threads=False``): nothing of ours is left running when a caller stops early.
    ``before_group(group, columns)`` runs before each row group is read (a streamed file fetches it there).
    """
    names = pf.schema_arrow.names
    columns = [c for c in table.all_columns() if c in names]
    index = 0
    try:
        for group in range(pf.num_row_groups):
            if before_group is not None:
                before_group(group, columns)
            for batch in pf.iter_batches(
                batch_size=_PARQUET_BATCH_ROWS, row_groups=[group], columns=columns, use_threads=False
            ):
                for obj in batch.to_pylist():
                    yield normalize(obj, f"{name} row {index}", None)
                    index += 1
    except DatasetError:
        raise
    except Exception as exc:
        raise DatasetError(
            f"{name}: cannot read past row {index} ({short_error(exc)}); the file is corrupt or the connection "
            "dropped: retry, or download it again"
        ) from None
    finally:
        try:
            pf.close()
        except Exception:
            pass


# Arrow (the files ``datasets.save_to_disk`` writes) ------------------------------------------------------------


def open_arrow(path: Path) -> Any:
    """A record batch reader over an Arrow IPC file ``datasets`` wrote (the stream format; the file format is read
    too), memory-mapped: a batch costs only what is read of it. Its schema is checked like a Parquet file's."""
    import pyarrow as pa

    try:
        source = pa.memory_map(str(path), "r")
    except (OSError, pa.ArrowException) as exc:
        raise DatasetError(f"{path}: cannot read ({short_error(exc)}); check the path and permissions") from None
    try:
        try:
            reader = pa.ipc.open_stream(source)
        except pa.ArrowInvalid:
            source.seek(0)
            reader = pa.ipc.open_file(source)
    except Exception as exc:  # noqa: BLE001 - any pyarrow failure is a file we cannot read
        raise DatasetError(f"{path} is not a readable Arrow file ({short_error(exc)}); download it again") from None
    check_columns(reader.schema.names, path)
    return reader


def arrow_file_rows(reader: Any, name: str) -> Iterator[dict]:
    """The rows of an opened Arrow file, a few at a time (``datasets`` writes batches of a thousand rows, and TACO
    rows can be megabytes), reading only the columns rows use."""
    import pyarrow as pa

    names = reader.schema.names
    columns = [c for c in table.all_columns() if c in names]
    index = 0
    try:
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        for batch in batches:
            batch = batch.select(columns)
            for start in range(0, batch.num_rows, _PARQUET_BATCH_ROWS):
                for obj in batch.slice(start, _PARQUET_BATCH_ROWS).to_pylist():
                    yield normalize(obj, f"{name} row {index}", None)
                    index += 1
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise DatasetError(f"{name}: cannot read past row {index} ({short_error(exc)}); the file is corrupt or "
                           "truncated: download it again") from None


def short_error(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
