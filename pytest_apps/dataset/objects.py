"""Rows from `datasets` objects a caller already holds: a ``Dataset``, an ``IterableDataset``, or a
``DatasetDict``/``IterableDatasetDict`` (the split is taken from it), in the schema of a dataset of the table.

* The same rows as from a file: every row goes through :func:`rows.normalize` (``input_output`` and
  ``solutions`` as JSON text or already decoded, ``problem_id`` or ``id``), so ``load_problems(dataset=ds)``
  and the same rows in a ``.jsonl`` file give the same problems. A row that is not APPS-shaped becomes a
  marker row, skipped and counted like any broken row; an object without a ``problem_id`` (or ``id``) column at
  all is a :class:`DatasetError`.
* Lazy: rows are pulled from the object one at a time, and no further than ``stop``, so an
  ``IterableDataset`` (a stream from the hub, a generator) is read only as far as the selection needs.
  Only the APPS columns are read (``select_columns`` when the columns are known), and rows come as Python
  objects whatever format the caller set (``with_format(None)``).
* No problem index cache: the ``Source`` has no ``resolved_revision``, since ``datasets`` gives an object's
  contents no public identity to key it by (two in-memory datasets of one length share every public attribute),
  and the rows are local already. The description (type, builder/config names, split, row count) says in the
  report what was read.
* ``datasets`` is never imported here unless the caller imported it: an object can only be a ``datasets``
  object when that module is already loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from ..core.wording import counted
from . import table
from .rows import DatasetError, Source, limit_rows, normalize, short_error

_ACCEPTED = "a hub id, 'sample', a .jsonl/.json/.parquet file or folder, or a datasets Dataset/IterableDataset/DatasetDict"


def is_datasets_object(obj: Any) -> bool:
    """True for a ``datasets`` Dataset, IterableDataset, DatasetDict or IterableDatasetDict."""
    module = sys.modules.get("datasets")
    if module is None:
        return False
    kinds = tuple(getattr(module, n, None) for n in ("Dataset", "IterableDataset", "DatasetDict", "IterableDatasetDict"))
    return isinstance(obj, tuple(k for k in kinds if isinstance(k, type)))


def open_object(obj: Any, split: str, stop: int | None) -> tuple[Source, Iterator[dict]]:
    """Rows of a ``datasets`` object, lazily. Raises ValueError for anything that is not one."""
    if not is_datasets_object(obj):
        raise ValueError(
            f"dataset: a {type(obj).__module__}.{type(obj).__qualname__} is not a dataset; pass {_ACCEPTED} "
            "(rows in a list or a DataFrame: datasets.Dataset.from_list(rows) or .from_pandas(df))"
        )
    import datasets

    if isinstance(obj, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        if split not in obj:
            raise DatasetError(
                f"the {type(obj).__name__} has no split {split!r} (it has {', '.join(map(str, obj)) or 'none'}); "
                "pass split= one of them"
            )
        obj = obj[split]
    name = describe(obj)
    columns = obj.column_names  # None for an IterableDataset whose features are not known yet
    if columns is not None:
        if not table.recognised(columns):
            raise DatasetError(
                f"{name} has no problem_id column (columns: {', '.join(columns) or 'none'}); it does not look like "
                f"{table.accepted_schemas()} (APPS: problem_id, question, solutions, input_output, difficulty, url, "
                "starter_code)"
            )
        obj = obj.select_columns([c for c in table.all_columns() if c in columns])
    obj = obj.with_format(None)  # plain Python values, whatever format (numpy, torch, ...) the caller set
    source = Source(name, str(obj.split) if obj.split is not None else split, None, None)
    return source, limit_rows(_rows(obj, name), stop)


def describe(obj: Any) -> str:
    """``datasets.Dataset(parquet/default, test, 5000 rows)``: what the object says of itself (public API only)."""
    info = getattr(obj, "info", None)
    parts = []
    origin = "/".join(
        str(x) for x in (getattr(info, "dataset_name", None) or getattr(info, "builder_name", None),
                         getattr(info, "config_name", None)) if x
    )
    if origin:
        parts.append(origin)
    if getattr(obj, "split", None) is not None:
        parts.append(str(obj.split))
    rows = getattr(obj, "num_rows", None)
    if isinstance(rows, int):
        parts.append(counted(rows, "row"))
    return f"datasets.{type(obj).__name__}" + (f"({', '.join(parts)})" if parts else "")


def _rows(obj: Any, name: str) -> Iterator[dict]:
    index = 0
    try:
        for example in obj:
            yield normalize(example, f"{name} row {index}")
            index += 1
    except DatasetError:
        raise
    except Exception as exc:  # the object's own code (a generator, a map function, a stream) failed
        raise DatasetError(f"{name}: reading row {index} failed ({type(exc).__name__}: {short_error(exc)})") from exc
