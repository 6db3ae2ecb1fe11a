"""A remote Parquet file read a row group at a time through a local sparse copy (`SparseParquet`).

pyarrow reads a Python file object (such as an ``HfFileSystem`` file) from its own I/O threads, which call
back into Python, and a native thread that has done so can abort the process when the interpreter exits
(apache/arrow#34314). So pyarrow never sees a Python file here: the footer, and before each row group is read
the byte ranges of the column chunks it needs, are fetched on the calling thread (HTTP range requests through
the file object) and written at their offsets into a sparse temporary file of the remote file's size, which
pyarrow reads as the local file it is. Only the ranges fetched take space, and the file is removed on ``close``.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO, Any

_MAGIC = b"PAR1"
_MERGE_GAP = 64 << 10  # column chunks closer than this are fetched in one request


class SparseParquet:
    """A local sparse copy of the remote Parquet file ``remote`` (a seekable binary file object of ``size``
    bytes): ``path`` holds its footer once opened, and a row group's column chunks once
    :meth:`fetch_row_group` has run. Raises ``ValueError`` when the remote file has no Parquet footer."""

    def __init__(self, remote: IO[bytes], size: int):
        self._remote = remote
        self._size = size
        self._file = tempfile.NamedTemporaryFile(prefix="pytest-apps-", suffix=".parquet")  # noqa: SIM115
        try:
            os.ftruncate(self._file.fileno(), size)
            self._fetch_footer()
        except BaseException:
            self.close()
            raise

    @property
    def path(self) -> str:
        return self._file.name

    def _fetch(self, start: int, length: int) -> bytes:
        self._remote.seek(start)
        data = self._remote.read(length)
        if len(data) != length:
            raise OSError(f"short read: {len(data)} of {length} bytes at offset {start}")
        os.pwrite(self._file.fileno(), data, start)
        return data

    def _fetch_footer(self) -> None:
        if self._size < 12:
            raise ValueError(f"{self._size} bytes, too short for a Parquet file")
        tail = self._fetch(self._size - 8, 8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != _MAGIC or length > self._size - 12:
            raise ValueError("no Parquet footer at the end of the file")
        self._fetch(self._size - 8 - length, length)

    def fetch_row_group(self, metadata: Any, group: int, columns: list[str]) -> None:
        """Fetch the chunks of the top-level ``columns`` in row group ``group`` (``metadata``: the file's
        ``pyarrow.parquet.FileMetaData``), neighbouring chunks in one request."""
        rg = metadata.row_group(group)
        spans = []
        for j in range(rg.num_columns):
            chunk = rg.column(j)
            if chunk.path_in_schema.split(".")[0] not in columns:
                continue
            offsets = [chunk.data_page_offset]
            if chunk.has_dictionary_page and chunk.dictionary_page_offset:
                offsets.append(chunk.dictionary_page_offset)
            start = min(offsets)
            spans.append((start, start + chunk.total_compressed_size))
        for start, end in merge_spans(spans, _MERGE_GAP):
            self._fetch(start, min(end, self._size) - start)

    def close(self) -> None:
        self._file.close()


def merge_spans(spans: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """Byte spans ``(start, end)`` sorted and merged where they overlap or lie within ``gap`` of each other."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + gap:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
