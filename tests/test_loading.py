"""Tests for pytest_apps.dataset (rows, loading, hub): local formats, lazy reading, one-line errors, and the hub cache offline.

Hub tests build a real Hugging Face cache in tmp_path (``hub/datasets--codeparrot--apps/{blobs,refs,snapshots}``)
and run ``open_rows`` in a fresh interpreter with HF_HOME/HF_HUB_CACHE pointing at it, so the real
huggingface_hub code (which reads its environment at import time) resolves the files. Nothing is mocked.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import read_report, run
from fakehub import FakeHub, run_isolated

from pytest_apps.dataset import hub, loading
from pytest_apps.dataset.rows import DatasetError, Source, find_split_files, iter_jsonl
from pytest_apps.dataset.loading import open_rows

FIELDS = ("problem_id", "question", "solutions", "input_output", "difficulty", "url", "starter_code")


def make_row(pid: int, **over) -> dict:
    row = {
        "problem_id": pid,
        "question": f"Question {pid}: print the sum of two numbers.",
        "solutions": json.dumps(["a, b = map(int, input().split())\nprint(a + b)"]),
        "input_output": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),
        "difficulty": "interview",
        "url": f"https://example.org/{pid}",
        "starter_code": "",
    }
    row.update(over)
    return row


def write_jsonl(path: Path, rows, extra_lines: dict[int, str] | None = None) -> Path:
    """rows as JSON lines; extra_lines {index: raw text} are inserted at those 0-based line positions."""
    lines = [json.dumps(r) for r in rows]
    for index, raw in sorted((extra_lines or {}).items()):
        lines.insert(index, raw)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_parquet(path: Path, rows, row_group_size: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def ids(rows) -> list:
    return [r.get("problem_id", r.get("__error__")) for r in rows]


ROWS = [make_row(i) for i in range(5)]


# --------------------------------------------------------------------------------------------- local formats


def test_jsonl_rows_are_plain_dicts_in_codeparrot_schema(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    source, rows = open_rows(str(path))
    rows = list(rows)
    assert rows == ROWS
    assert all(tuple(r) == FIELDS for r in rows)
    assert isinstance(source, Source)
    assert source.dataset == str(path) and source.split == "" and source.revision is None  # one file: no splits
    assert source.resolved_revision and "size=" in source.resolved_revision


def test_a_split_asked_of_one_file_is_said_not_to_apply(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    source, rows = open_rows(str(path), "train")
    assert source.split == "" and list(rows) == ROWS  # the whole file, and the Source does not claim a split
    assert open_rows("sample", "train")[0].split == ""
    line = loading.ignored_split(source.dataset, source.split, "train")
    assert line.startswith(f"--apps-split=train does not apply: {path} is one file") and "drop --apps-split" in line
    assert loading.ignored_split(source.dataset, source.split, "test") == ""  # the default asks for nothing
    (tmp_path / "repo").mkdir()
    write_jsonl(tmp_path / "repo" / "train.jsonl", ROWS)
    folder = open_rows(str(tmp_path / "repo"), "train")[0]
    assert folder.split == "train" and loading.ignored_split(folder.dataset, folder.split, "train") == ""


def test_fingerprint_sees_an_edit_past_the_first_mib_in_the_same_second(tmp_path):
    """The fingerprint keys the problem-index cache: a stale one would evaluate against old rows."""
    path = tmp_path / "rows.jsonl"
    body = bytearray(json.dumps({**ROWS[0], "question": "x" * (3 << 20)}).encode() + b"\n")
    path.write_bytes(body)
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    before = open_rows(str(path))[0].resolved_revision
    body[-100] = ord("y")  # same size, near the end (inside the question)
    path.write_bytes(body)
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_001))  # one nanosecond later
    assert open_rows(str(path))[0].resolved_revision != before
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))  # even with the old mtime
    assert open_rows(str(path))[0].resolved_revision != before


def test_fields_are_normalised(tmp_path):
    raw = {
        "id": "42",  # some saved copies renamed problem_id to id, or wrote it as a string
        "question": "Q",
        "input_output": {"inputs": ["1\n"], "outputs": ["1\n"], "fn_name": None},  # object, not a JSON string
        "solutions": None,
        "extra": "dropped",
    }
    path = write_jsonl(tmp_path / "rows.jsonl", [raw])
    (row,) = open_rows(str(path))[1]
    assert row["problem_id"] == 42
    assert json.loads(row["input_output"]) == raw["input_output"]
    assert row["solutions"] == "" and row["starter_code"] == "" and row["url"] == ""
    assert "extra" not in row


def test_json_list_and_dict_of_columns(tmp_path):
    as_list = tmp_path / "list.json"
    as_list.write_text(json.dumps(ROWS))
    columns = tmp_path / "columns.json"
    columns.write_text(json.dumps({k: [r[k] for r in ROWS] for k in FIELDS}))
    for path in (as_list, columns):
        assert list(open_rows(str(path))[1]) == ROWS


def test_json_file_holding_json_lines(tmp_path):
    # datasets' Dataset.to_json("x.json") writes JSON Lines by default.
    path = write_jsonl(tmp_path / "rows.json", ROWS)
    assert list(open_rows(str(path))[1]) == ROWS


def test_parquet_file(tmp_path):
    path = write_parquet(tmp_path / "test.parquet", ROWS)
    source, rows = open_rows(str(path))
    assert list(rows) == ROWS
    assert source.resolved_revision


def test_folder_with_split_jsonl_and_parquet(tmp_path):
    write_jsonl(tmp_path / "test.jsonl", ROWS)
    write_jsonl(tmp_path / "train.jsonl", [make_row(100)])
    assert ids(open_rows(str(tmp_path))[1]) == [0, 1, 2, 3, 4]
    assert ids(open_rows(str(tmp_path), split="train")[1]) == [100]
    other = tmp_path / "pq"
    write_parquet(other / "test.parquet", ROWS[:2])
    assert ids(open_rows(str(other))[1]) == [0, 1]


@pytest.mark.parametrize(
    "layout",
    [
        ["default/test/0000.parquet", "default/test/0001.parquet"],  # refs/convert/parquet
        ["all/test/0000.parquet", "all/test/0001.parquet", "interview/test/0000.parquet"],  # APPS configs
        ["data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet"],  # push_to_hub
        ["all/test-00000-of-00002.parquet", "all/test-00001-of-00002.parquet"],  # convert_to_parquet PR
        ["test/0000.parquet", "test/0001.parquet"],
    ],
)
def test_parquet_conversion_layouts_in_shard_order(tmp_path, layout):
    write_parquet(tmp_path / layout[0], ROWS[:3])
    write_parquet(tmp_path / layout[1], ROWS[3:])
    for extra in layout[2:]:
        write_parquet(tmp_path / extra, [make_row(999)])
    write_parquet(tmp_path / layout[0].replace("test", "train"), [make_row(777)])
    kind, files = find_split_files(tmp_path, "test")
    assert kind == "parquet" and [f.relative_to(tmp_path).as_posix() for f in files] == layout[:2]
    source, rows = open_rows(str(tmp_path))
    assert ids(rows) == [0, 1, 2, 3, 4]
    assert source.resolved_revision.startswith("files=2,")
    assert ids(open_rows(str(tmp_path), stop=4)[1]) == [0, 1, 2, 3]


def test_ambiguous_configs_name_the_choices(tmp_path):
    write_parquet(tmp_path / "interview/test/0000.parquet", ROWS[:1])
    write_parquet(tmp_path / "competition/test/0000.parquet", ROWS[1:2])
    with pytest.raises(DatasetError, match="several configs.*competition, interview"):
        open_rows(str(tmp_path))


# -------------------------------------------------------------------------------------------- reading lazily


def test_stop_reads_only_the_rows_needed(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS, extra_lines={2: "{this is not json"})
    assert ids(open_rows(str(path), stop=2)[1]) == [0, 1]
    assert ids(open_rows(str(path), stop=0)[1]) == []
    rows = list(open_rows(str(path))[1])
    assert ids(rows)[:2] == [0, 1] and ids(rows)[3:] == [2, 3, 4]
    assert rows[2]["__line__"] == 3 and "line 3: not JSON" in rows[2]["__error__"]
    assert str(path) in rows[2]["__error__"]


def test_stop_does_not_read_past_the_rows_needed(tmp_path):
    # Everything after line 2 is undecodable junk; with stop=2 it is never looked at.
    path = tmp_path / "rows.jsonl"
    with open(path, "wb") as fh:
        fh.write(b"".join(json.dumps(r).encode() + b"\n" for r in ROWS[:2]))
        fh.write(os.urandom(4 << 20))
    started = time.perf_counter()
    assert ids(open_rows(str(path), stop=2)[1]) == [0, 1]
    assert time.perf_counter() - started < 2


def test_parquet_reads_row_groups_lazily(tmp_path):
    rows = [make_row(i, question="x" * 2000 + str(i)) for i in range(6)]
    path = write_parquet(tmp_path / "test.parquet", rows, row_group_size=2)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 3
    last = meta.row_group(2)
    chunks = [last.column(i) for i in range(last.num_columns)]
    starts = [c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset for c in chunks]
    start = min(starts)
    end = max(s + c.total_compressed_size for s, c in zip(starts, chunks))
    data = bytearray(path.read_bytes())
    data[start:end] = b"\xff" * (end - start)  # wreck the last row group, keep the footer
    path.write_bytes(bytes(data))

    assert ids(open_rows(str(path), stop=2)[1]) == [0, 1]
    assert ids(open_rows(str(path), stop=4)[1]) == [0, 1, 2, 3]
    source, it = open_rows(str(path))
    with pytest.raises(DatasetError) as info:
        list(it)
    assert str(path) in str(info.value) and "row 4" in str(info.value) and "\n" not in str(info.value)


def test_stream_line_splitter_handles_chunk_boundaries():
    payload = b"".join(json.dumps(r).encode() + b"\n" for r in ROWS) + b'{"problem_id": 9'
    lines = list(hub._lines(io.BytesIO(payload), chunk=7))
    assert b"".join(lines) == payload
    rows = list(iter_jsonl(lines, "hf://x/test.jsonl"))
    assert ids(rows[:5]) == [0, 1, 2, 3, 4]
    assert rows[5]["__line__"] == 6 and "truncated" in rows[5]["__error__"]


# ------------------------------------------------------------------------------------------- one-line errors


def one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and message
    return message


def test_missing_file(tmp_path):
    with pytest.raises(DatasetError) as info:
        open_rows(str(tmp_path / "nope.jsonl"))
    assert "nope.jsonl" in one_line(info) and "no such file" in one_line(info)


def test_unknown_extension(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("a,b\n")
    with pytest.raises(DatasetError) as info:
        open_rows(str(path))
    assert "rows.csv" in one_line(info) and ".jsonl" in one_line(info)


def test_folder_without_split(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", ROWS)
    with pytest.raises(DatasetError) as info:
        open_rows(str(tmp_path))
    assert str(tmp_path) in one_line(info) and "test.jsonl" in one_line(info) and "--apps-split" in one_line(info)


def test_jsonl_that_is_not_json_lines_is_fatal(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("problem_id,question\n0,hello\n")
    with pytest.raises(DatasetError) as info:
        open_rows(str(path))
    assert "line 1 is not JSON" in one_line(info)
    listed = tmp_path / "list.jsonl"
    listed.write_text(json.dumps(ROWS))
    with pytest.raises(DatasetError, match="a JSON list of rows belongs in a .json file"):
        open_rows(str(listed))


def test_gzip_named_jsonl(tmp_path):
    import gzip

    path = tmp_path / "test.jsonl"
    path.write_bytes(gzip.compress(b'{"problem_id": 0}\n'))
    with pytest.raises(DatasetError, match="gzip"):
        open_rows(str(path))


def test_truncated_jsonl_marks_the_last_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    text = write_jsonl(path, ROWS).read_text()
    path.write_text(text[: len(text) - 40])  # cut inside the last row
    rows = list(open_rows(str(path))[1])
    assert ids(rows[:4]) == [0, 1, 2, 3]
    assert rows[4]["__line__"] == 5 and "truncated" in rows[4]["__error__"] and "\n" not in rows[4]["__error__"]


def test_bad_rows_become_markers(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [ROWS[0], [1, 2], {"question": "no id"}, ROWS[1]])
    rows = list(open_rows(str(path))[1])
    assert rows[0] == ROWS[0] and rows[3] == ROWS[1]
    assert rows[1]["__line__"] == 2 and "not a JSON object" in rows[1]["__error__"]
    assert rows[2]["__line__"] == 3 and "problem_id" in rows[2]["__error__"]


def test_truncated_json_file(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(ROWS)[:-30])
    with pytest.raises(DatasetError) as info:
        open_rows(str(path))
    assert "rows.json" in one_line(info) and "truncated" in one_line(info)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_unreadable_parquet_is_fatal(tmp_path, damage):
    path = write_parquet(tmp_path / "test.parquet", ROWS)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"not parquet at all" * 10)
    with pytest.raises(DatasetError) as info:
        open_rows(str(path))
    assert "test.parquet" in one_line(info) and "Parquet" in one_line(info)


def test_parquet_without_problem_id(tmp_path):
    path = write_parquet(tmp_path / "test.parquet", [{"text": "hello"}])
    with pytest.raises(DatasetError, match="no problem_id column"):
        open_rows(str(path))


# ----------------------------------------------------------------------------------------------- the sample


def test_bundled_sample_resolves():
    path = loading.sample_path()
    assert path == Path(loading.__file__).resolve().parent.parent / "data" / "sample.jsonl"  # the package's
    assert path.is_file()
    source, rows = open_rows("sample", split="ignored")
    rows = list(rows)
    assert source.dataset == "sample" and source.resolved_revision
    assert rows and all("__error__" not in r for r in rows)
    assert all(isinstance(r["problem_id"], int) for r in rows)


# ------------------------------------------------------------------------------------------- hub cache, offline

SHA = "21e74ddf8de9e0a3b2e5b8b4c3f1a2d5e6f70812"
CONVERT_SHA = "0f10e424e13e1c2a69f851e153097b71b6734a1f"


def build_hub_cache(home: Path, repo_id: str, sha: str, files: dict[str, bytes], ref: str | None = "main") -> Path:
    """Lay files out as huggingface_hub's cache does: blobs by hash, refs/<ref> -> sha, snapshot symlinks."""
    repo = home / "hub" / ("datasets--" + repo_id.replace("/", "--"))
    for name, content in files.items():
        blob = repo / "blobs" / hashlib.sha256(content).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = repo / "snapshots" / sha / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref:
        (repo / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(sha)
    return repo


def jsonl_bytes(rows) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


@pytest.fixture
def warm_cache(tmp_path) -> Path:
    home = tmp_path / "hf"
    build_hub_cache(
        home,
        "codeparrot/apps",
        SHA,
        {
            "test.jsonl": jsonl_bytes(ROWS),
            "train.jsonl": jsonl_bytes([make_row(9000)]),
            "apps.py": b"# the legacy loading script datasets>=4 refuses\n",
            "README.md": b"---\nlicense: mit\n---\n",
        },
    )
    return home


def test_hub_default_loads_offline_from_warm_cache(warm_cache):
    result, _ = run_isolated(warm_cache, "codeparrot/apps", "test", None, None)
    assert isinstance(result, dict), result
    assert result["source"] == {"dataset": "codeparrot/apps", "split": "test", "revision": None, "resolved_revision": SHA}
    assert result["rows"] == ROWS
    result, _ = run_isolated(warm_cache, "codeparrot/apps", "train", None, 1)
    assert ids(result["rows"]) == [9000]


def test_hub_pinned_revision_and_stop_offline(warm_cache):
    result, _ = run_isolated(warm_cache, "codeparrot/apps", "test", SHA, 2)
    assert result["source"]["revision"] == SHA and result["source"]["resolved_revision"] == SHA
    assert ids(result["rows"]) == [0, 1]


def test_hub_pinned_commit_in_the_cache_asks_the_hub_nothing(warm_cache):
    """Online, with the revision pinned to a cached commit: no request at all (a commit cannot change)."""
    import http.server
    import threading

    seen = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802
            seen.append(self.path)
            self.send_error(500)

        do_GET = do_HEAD

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        result, _ = run_isolated(warm_cache, "codeparrot/apps", "test", SHA, None, offline=False, endpoint=endpoint)
        assert ids(result["rows"]) == ids(ROWS) and result["source"]["resolved_revision"] == SHA
        assert seen == []
        result, _ = run_isolated(warm_cache, "codeparrot/apps", "test", None, 2, offline=False, endpoint=endpoint)
        assert ids(result["rows"]) == [0, 1] and seen  # unpinned: the hub is asked which commit main is
    finally:
        server.shutdown()
        server.server_close()


def test_hub_unreachable_falls_back_to_warm_cache_quickly(warm_cache):
    # Not flagged offline, but the endpoint refuses connections: one quick attempt, then the cache.
    result, elapsed = run_isolated(warm_cache, "codeparrot/apps", "test", None, 3, offline=False, endpoint="http://127.0.0.1:9")
    assert isinstance(result, dict), result
    assert ids(result["rows"]) == [0, 1, 2] and result["source"]["resolved_revision"] == SHA
    assert elapsed < 10


def test_hub_parquet_conversion_revision_offline(tmp_path):
    home = tmp_path / "hf"
    buf = {}
    for name, rows in {"all/test/0000.parquet": ROWS[:2], "all/test/0001.parquet": ROWS[2:],
                       "interview/test/0000.parquet": ROWS[:1]}.items():
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows), sink)
        buf[name] = sink.getvalue()
    build_hub_cache(home, "codeparrot/apps", CONVERT_SHA, buf, ref="refs/convert/parquet")
    result, _ = run_isolated(home, "codeparrot/apps", "test", "refs/convert/parquet", None)
    assert isinstance(result, dict), result
    assert ids(result["rows"]) == [0, 1, 2, 3, 4]
    assert result["source"]["resolved_revision"] == CONVERT_SHA


@pytest.mark.parametrize("offline", [True, False], ids=["HF_HUB_OFFLINE", "unreachable"])
def test_hub_without_cache_fails_with_one_line_quickly(tmp_path, offline):
    home = tmp_path / "empty"
    home.mkdir()
    result, elapsed = run_isolated(home, "codeparrot/apps", "test", None, 50, offline=offline, endpoint="http://127.0.0.1:9")
    assert isinstance(result, str) and result.startswith("DatasetError: "), result
    assert "\n" not in result
    assert "codeparrot/apps" in result and "not in the Hugging Face cache" in result
    assert "--apps-dataset=path/to/test.jsonl" in result and "huggingface.co/datasets/codeparrot/apps" in result
    assert ("HF_HUB_OFFLINE" in result) == offline
    # quickly: no retries against the hub; measured beyond what starting the interpreter with the loader's
    # imports costs right now (seconds on a loaded machine)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import pytest_apps.dataset.loading, huggingface_hub, pyarrow.parquet"],
                   check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                       [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])})
    start_up = time.perf_counter() - started
    assert elapsed - start_up < 8, f"took {elapsed:.1f}s, of which {start_up:.1f}s starting the interpreter"


def test_unknown_hub_id_offline_says_it_is_not_local_either(tmp_path):
    result, _ = run_isolated(tmp_path, "someone/nothing-here", "test", None, None)
    assert result.startswith("DatasetError: ") and "no local file or folder 'someone/nothing-here'" in result


# ------------------------------------------------------------------------ hub Parquet, streamed over HTTP
# A local server answers as the hub does (tests/fakehub.py): the Parquet files are really read with range
# requests through huggingface_hub, and the server counts the bytes a run takes.

CONVERT_REF = "refs/convert/parquet"
TIER_NAMES = ("introductory", "interview", "competition")


def parquet_bytes(rows, row_group_size: int | None = None) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink, row_group_size=row_group_size)
    return sink.getvalue()


def big_row(pid: int) -> dict:
    """About 100 KB that does not compress, so the bytes on the wire count rows."""
    rng = random.Random(pid)
    tests = [rng.randbytes(5000).hex() for _ in range(10)]
    io_ = json.dumps({"inputs": tests, "outputs": ["1\n"] * 10})
    return make_row(pid, difficulty=TIER_NAMES[pid % 3], input_output=io_)


def conversion_layout(rows, per_file: int, row_group_size: int | None = None) -> dict[str, bytes]:
    """The Parquet conversion's layout: config ``all`` and one config per tier, each with the split's rows."""
    files = {}
    for k in range(0, len(rows), per_file):
        files[f"all/test/{k // per_file:04d}.parquet"] = parquet_bytes(rows[k : k + per_file], row_group_size)
    for tier in TIER_NAMES:
        files[f"{tier}/test/0000.parquet"] = parquet_bytes([r for r in rows if r["difficulty"] == tier], row_group_size)
    files["all/train/0000.parquet"] = parquet_bytes([make_row(9000)])
    return files


def local_digest(tmp_path: Path, rows) -> str:
    """What run_isolated(digest=True) gives for ``rows`` read from a local JSON Lines file."""
    path = write_jsonl(tmp_path / "same-rows.jsonl", rows)
    text = json.dumps(list(open_rows(str(path))[1]), sort_keys=True).encode()
    return hashlib.sha256(text).hexdigest()


def test_hub_parquet_is_streamed_a_row_group_at_a_time_and_a_full_run_fills_the_cache(tmp_path):
    rows = [big_row(i) for i in range(240)]
    files = conversion_layout(rows, per_file=120, row_group_size=10)  # two files of ~12 MB
    first, second = files["all/test/0000.parquet"], files["all/test/0001.parquet"]
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("codeparrot/apps", CONVERT_SHA, files, refs=(CONVERT_REF,))
        limited, _ = run_isolated(home, "codeparrot/apps", "test", CONVERT_REF, 2, offline=False,
                                  endpoint=hub.endpoint, digest=True)
        assert isinstance(limited, dict), limited
        assert limited["ids"] == [0, 1] and limited["source"]["resolved_revision"] == CONVERT_SHA
        streamed = hub.bytes_sent(".parquet")
        touched = {r.path.split(f"/resolve/{CONVERT_SHA}/")[-1] for r in hub.file_requests()}
        assert touched == {"all/test/0000.parquet"}, touched  # never the second file, nor a tier folder
        assert 0 < streamed < len(first) / 2, f"{streamed} bytes for 2 rows of a {len(first)}-byte file"
        assert not list((home / "hub").rglob("*.parquet")), "a limited run keeps nothing in the hub cache"

        hub.reset()
        full, _ = run_isolated(home, "codeparrot/apps", "test", CONVERT_REF, None, offline=False,
                               endpoint=hub.endpoint, digest=True)
        assert full["ids"] == list(range(240))  # all/ only: each row once, not again from its tier folder
        assert full["digest"] == local_digest(tmp_path, rows)  # the very rows a .jsonl file gives
        assert hub.bytes_sent(".parquet") == len(first) + len(second)  # downloaded once, into the cache

        hub.reset()
        pinned, _ = run_isolated(home, "codeparrot/apps", "test", CONVERT_SHA, 3, offline=False,
                                 endpoint=hub.endpoint, digest=True)
        assert pinned["ids"] == [0, 1, 2] and hub.requests == []  # a cached commit: no request at all
    offline, _ = run_isolated(home, "codeparrot/apps", "test", CONVERT_REF, None, digest=True)
    assert offline["ids"] == list(range(240)) and offline["source"]["resolved_revision"] == CONVERT_SHA


def test_hub_parquet_tier_folder_is_a_config_when_named(tmp_path):
    rows = [make_row(i, difficulty=TIER_NAMES[i % 3]) for i in range(12)]
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("codeparrot/apps", CONVERT_SHA, conversion_layout(rows, per_file=5), refs=(CONVERT_REF,))
        every, _ = run_isolated(home, "codeparrot/apps", "test", CONVERT_REF, None, offline=False, endpoint=hub.endpoint)
        assert ids(every["rows"]) == list(range(12)) and every["rows"] == rows
        tier, _ = run_isolated(home, "codeparrot/apps/interview", "test", CONVERT_REF, 2, offline=False,
                               endpoint=hub.endpoint)
        assert ids(tier["rows"]) == [1, 4]
        assert tier["source"] == {"dataset": "codeparrot/apps/interview", "split": "test", "revision": CONVERT_REF,
                                  "resolved_revision": CONVERT_SHA}
        train, _ = run_isolated(home, "codeparrot/apps", "train", CONVERT_REF, None, offline=False, endpoint=hub.endpoint)
        assert ids(train["rows"]) == [9000]
        missing, _ = run_isolated(home, "codeparrot/apps/nope", "test", CONVERT_REF, None, offline=False,
                                  endpoint=hub.endpoint)
        assert missing.startswith("DatasetError: ") and "no test.jsonl or Parquet files" in missing, missing


def test_hub_parquet_copy_with_extra_columns_and_data_shards(tmp_path):
    """A Parquet copy as push_to_hub writes it (``data/<split>-NNNNN-of-NNNNN.parquet``, a README with configs),
    with a column of its own: the APPS columns come out as from a .jsonl file."""
    rows = [make_row(i) for i in range(6)]
    extra = [{**r, "prompt_tokens": list(range(50))} for r in rows]
    readme = b"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*\n---\n"
    files = {
        "README.md": readme,
        "data/test-00000-of-00002.parquet": parquet_bytes(extra[:4]),
        "data/test-00001-of-00002.parquet": parquet_bytes(extra[4:]),
    }
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("metr-evals/apps", SHA, files)
        result, _ = run_isolated(home, "metr-evals/apps", "test", None, 5, offline=False, endpoint=hub.endpoint)
    assert result["rows"] == rows[:5] and result["source"]["resolved_revision"] == SHA


def test_hub_parquet_errors_are_one_line(tmp_path):
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("someone/not-apps", SHA, {"data/test-00000-of-00001.parquet": parquet_bytes([{"text": "hi"}])})
        hub.add("someone/broken", SHA, {"data/test-00000-of-00001.parquet": b"PAR1 this is not Parquet " * 100})
        for repo, expected in (("someone/not-apps", "no problem_id column"), ("someone/broken", "not a readable Parquet file")):
            result, _ = run_isolated(home, repo, "test", None, 2, offline=False, endpoint=hub.endpoint)
            assert isinstance(result, str) and result.startswith("DatasetError: "), result
            assert expected in result and repo in result and "\n" not in result


def test_hub_parquet_configs_without_a_default_name_the_choices(tmp_path):
    """A pull request that adds one Parquet config per tier and no ``all``: which folder to read is the user's."""
    files = {f"{tier}/test-00000-of-00001.parquet": parquet_bytes([make_row(i, difficulty=tier)])
             for i, tier in enumerate(TIER_NAMES)}
    home = tmp_path / "hf"
    home.mkdir()
    with FakeHub() as hub:
        hub.add("codeparrot/apps", CONVERT_SHA, files, refs=("refs/pr/5",))
        result, _ = run_isolated(home, "codeparrot/apps", "test", "refs/pr/5", None, offline=False, endpoint=hub.endpoint)
        assert result == (
            "DatasetError: codeparrot/apps@refs/pr/5: several folders of the repository hold split 'test' "
            "(competition, interview, introductory); pass one of them, e.g. --apps-dataset codeparrot/apps/competition"
        )
        chosen, _ = run_isolated(home, "codeparrot/apps/interview", "test", "refs/pr/5", None, offline=False,
                                 endpoint=hub.endpoint)
        assert ids(chosen["rows"]) == [1]


def test_the_plugin_runs_a_hub_parquet_revision_reading_only_its_rows(sample_project, monkeypatch, tmp_path):
    """End to end: pytest with -n 2 on the sample laid out as the Parquet conversion on the (local) hub."""
    rows = [json.loads(line) for line in loading.sample_path().read_text().splitlines()]
    padding = [big_row(1000 + i) for i in range(60)]  # after the sample, so that the file is worth streaming
    files = conversion_layout(rows + padding, per_file=len(rows) + len(padding), row_group_size=2)
    whole = len(files["all/test/0000.parquet"])
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with FakeHub() as fake:
        fake.add("codeparrot/apps", CONVERT_SHA, files, refs=(CONVERT_REF,))
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        result = run(sample_project, "--apps-dataset", "codeparrot/apps", "--apps-revision", CONVERT_REF,
                     "--apps-limit", "4", "-n", "2")
        assert result.ret == 0, result.stdout.str()
        report = read_report(sample_project)
        assert [p["id"] for p in report["problems"]] == ["900001", "900002", "900003", "900004"]
        assert report["summary"]["passed"] == 4 and report["source"]["resolved_revision"] == CONVERT_SHA
        assert 0 < fake.bytes_sent(".parquet") < whole / 2

        result = run(sample_project, "--apps-dataset", "codeparrot/apps/competition", "--apps-revision", CONVERT_REF,
                     "--apps-limit", "2", "--apps-report", "reports/tier.json")
        assert result.ret == 0, result.stdout.str()
        tier = read_report(sample_project, "reports/tier.json")
        assert [p["id"] for p in tier["problems"]] == ["900005", "900006"]
        assert tier["source"]["dataset"] == "codeparrot/apps/competition"


def test_reports_name_the_split_the_rows_came_from_not_the_one_asked_for():
    """A one-file run with --apps-split=train is not labelled "split train" in the Markdown or HTML report."""
    from pytest_apps.report.html import render_html
    from pytest_apps.report.markdown import markdown_text

    assert loading.shown_split({"dataset": "rows.jsonl", "split": ""}, {"split": "train"}) == loading.ONE_FILE_TEXT
    assert loading.shown_split({"split": "train"}, {"split": "train"}) == "train"
    assert loading.shown_split({}, {"split": "test"}) == "test"  # a report from before sources kept the split
    doc = {"source": {"dataset": "rows.jsonl", "split": ""}, "settings": {"dataset": "rows.jsonl", "split": "train"},
           "summary": {"problems": 0}, "problems": []}
    md = markdown_text(doc)
    assert "split `one file: no splits`" in md and "`train`" not in md
    page = render_html(doc)
    assert "one file: no splits" in page and ">train<" not in page


def test_the_markdown_meant_for_pr_comments_shows_no_machine_path_of_the_dataset():
    from pytest_apps.report.markdown import markdown_text

    def shown(dataset: str, rootdir: str = "/home/ci/project") -> str:
        doc = {"source": {"dataset": dataset, "split": ""}, "settings": {"dataset": dataset, "rootdir": rootdir},
               "summary": {"problems": 0}, "problems": []}
        return markdown_text(doc)

    assert "dataset `data/rows.jsonl`" in shown("/home/ci/project/data/rows.jsonl")
    assert "dataset `rows.jsonl`" in shown("/mnt/shared/rows.jsonl") and "/mnt/shared" not in shown("/mnt/shared/rows.jsonl")
    assert "dataset `codeparrot/apps`" in shown("codeparrot/apps")
