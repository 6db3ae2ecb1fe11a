"""A remote Parquet file read through a local sparse copy: only the footer and the row groups asked for are
fetched, what is read from the copy equals the file, and nothing is left behind."""

import io
import json
import os
import random
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pytest_apps.dataset.ranges import SparseParquet, merge_spans


class CountingFile(io.BytesIO):
    """A remote file as the hub's file object behaves: seek and read, counting the bytes that travel."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.sent = 0

    def read(self, n=-1):
        data = super().read(n)
        self.sent += len(data)
        return data


def rows(n: int) -> list[dict]:
    rng = random.Random(7)
    return [
        {"problem_id": i, "question": f"q{i}", "input_output": json.dumps({"inputs": [rng.randbytes(4000).hex()]}),
         "extra": rng.randbytes(8000).hex()}
        for i in range(n)
    ]


def parquet(data: list[dict], group: int) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(data), sink, row_group_size=group)
    return sink.getvalue()


def test_spans_merge_where_they_touch_or_lie_within_the_gap():
    assert merge_spans([], 10) == []
    assert merge_spans([(50, 60), (0, 10)], 0) == [(0, 10), (50, 60)]
    assert merge_spans([(0, 10), (10, 20), (25, 30)], 5) == [(0, 30)]
    assert merge_spans([(0, 10), (16, 20)], 5) == [(0, 10), (16, 20)]
    assert merge_spans([(0, 100), (10, 20)], 0) == [(0, 100)]


def test_only_the_footer_and_the_row_groups_asked_for_are_fetched_and_they_read_as_the_file():
    data = rows(40)
    blob = parquet(data, group=10)
    remote = CountingFile(blob)
    copy = SparseParquet(remote, len(blob))
    try:
        footer = remote.sent
        assert footer < len(blob) / 20
        pf = pq.ParquetFile(copy.path)
        assert pf.num_row_groups == 4 and pf.metadata.num_rows == 40
        copy.fetch_row_group(pf.metadata, 2, ["problem_id", "input_output"])
        got = pf.read_row_group(2, columns=["problem_id", "input_output"], use_threads=False).to_pylist()
        assert got == [{k: r[k] for k in ("problem_id", "input_output")} for r in data[20:30]]
        # one group of two columns out of four groups of four: the unread column and groups never travelled
        assert remote.sent - footer < len(blob) / 8
        assert os.stat(copy.path).st_size == len(blob)
        assert os.stat(copy.path).st_blocks * 512 < len(blob) / 2  # sparse: only what was fetched takes space
    finally:
        copy.close()
    assert not os.path.exists(copy.path)


def test_a_file_without_a_parquet_footer_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    # a temporary folder of this test's own: other tests and runs make and remove files in the machine's
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ValueError, match="no Parquet footer"):
        SparseParquet(CountingFile(b'{"problem_id": 1}\n' * 10), 180)
    with pytest.raises(ValueError, match="too short"):
        SparseParquet(CountingFile(b"PAR1"), 4)
    assert not list(tmp_path.iterdir())


def test_a_remote_file_that_ends_early_is_an_error_not_a_short_copy():
    blob = parquet(rows(10), group=5)
    with pytest.raises(OSError, match="short read"):
        SparseParquet(CountingFile(blob[:-100] + blob[-8:]), len(blob))  # the footer's length points past the data
