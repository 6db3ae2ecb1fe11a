"""Reading a hub repository's Parquet files: bytes a limited run fetches against a full read, and how the
process exits, for our reader and for `datasets`' streaming Parquet reader (run by hand).

    python benchmarks/bench_hub_parquet.py [--rows 600] [--row-kb 100] [--row-group 10] [--exits 20]

A synthetic APPS split laid out as the hub's Parquet conversion lays it out (``all/test/NNNN.parquet`` plus one
folder per tier holding the same rows) is served on 127.0.0.1 by ``tests/fakehub.py``, which answers the hub's
endpoints (range requests included) and counts the bytes it sends. Every reading runs in a fresh interpreter
with ``HF_ENDPOINT`` pointing at it and an empty hub cache:

* ``open_rows`` (what ``--apps-limit N`` and ``load_problems(limit=N)`` call) with ``stop`` 2, 50 and none;
* ``datasets.load_dataset("parquet", data_files=<the same hf:// files>, streaming=True)``, stopped after 2 rows
  and read to the end: the baseline, the same bytes read by `datasets`, with its default scan options
  (pyarrow pre-buffers up to 32 MiB at a time) and with pre-buffering off (what reads only the row groups
  it needs);
* ``datasets.load_dataset(<repo>, revision="refs/convert/parquet", streaming=True)``: how many rows it yields.

The `datasets` baseline needs `datasets` installed (``pip install 'pytest-apps[datasets]'``). With
``--exits N`` each of the readers but "stop 50" runs N times and the exit statuses are counted (0 is a clean
exit; -6 is an abort, "hang" a process still running after 30 s).
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakehub import FakeHub  # noqa: E402

REPO_ID = "codeparrot/apps"
SHA = "0f10e424e13e1c2a69f851e153097b71b6734a1f"
REF = "refs/convert/parquet"
TIERS = ("introductory", "interview", "competition")

OURS = """
import json, sys
from pytest_apps.dataset.loading import open_rows
source, rows = open_rows("{repo}", "test", "{ref}", stop={stop})
print(json.dumps({{"rows": sum(1 for _ in rows)}}), flush=True)
"""
DATASETS_FILES = """
import json, sys, datasets, pyarrow.dataset
files = {files!r}
options = {{}} if {prebuffer} else {{"fragment_scan_options": pyarrow.dataset.ParquetFragmentScanOptions(pre_buffer=False)}}
stream = datasets.load_dataset("parquet", data_files={{"test": files}}, split="test", streaming=True, **options)
n = 0
for row in stream:
    n += 1
    if {stop} is not None and n >= {stop}:
        break
print(json.dumps({{"rows": n}}), flush=True)
"""
DATASETS_REPO = """
import json, datasets
stream = datasets.load_dataset("{repo}", revision="{ref}", split="test", streaming=True)
print(json.dumps({{"rows": sum(1 for _ in stream)}}), flush=True)
"""


def row(pid: int, kb: int) -> dict:
    rng = random.Random(pid)
    tests = [rng.randbytes(kb * 50).hex() for _ in range(10)]  # ~kb KB that does not compress
    return {
        "problem_id": pid,
        "question": f"Question {pid}",
        "solutions": json.dumps(["print(1)"]),
        "input_output": json.dumps({"inputs": tests, "outputs": ["1\n"] * 10}),
        "difficulty": TIERS[pid % 3],
        "url": "",
        "starter_code": "",
    }


def parquet(rows: list[dict], row_group: int) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink, row_group_size=row_group)
    return sink.getvalue()


def layout(n: int, kb: int, row_group: int, per_file: int) -> dict[str, bytes]:
    rows = [row(i, kb) for i in range(n)]
    files = {}
    for k in range(0, n, per_file):
        files[f"all/test/{k // per_file:04d}.parquet"] = parquet(rows[k : k + per_file], row_group)
    for tier in TIERS:
        files[f"{tier}/test/0000.parquet"] = parquet([r for r in rows if r["difficulty"] == tier], row_group)
    return files


def run(hub: FakeHub, script: str, timeout: float = 120) -> tuple[str | int, dict | None, float, int, int]:
    """(exit status or "hang", printed JSON, seconds, bytes the hub sent, file requests) of a fresh interpreter."""
    hub.reset()
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
        env.update(HF_HOME=home, HF_ENDPOINT=hub.endpoint, HF_HUB_DISABLE_TELEMETRY="1",
                   PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        out = ""
        try:
            out, _ = proc.communicate(timeout=timeout)
            status: str | int = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            status = "hang"
        elapsed = time.perf_counter() - started
    line = next((x for x in (out or "").splitlines() if x.startswith("{")), None)
    return status, (json.loads(line) if line else None), elapsed, hub.bytes_sent(".parquet"), len(hub.file_requests())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=600, help="rows in the split")
    parser.add_argument("--row-kb", type=int, default=100, help="size of a row, KB")
    parser.add_argument("--row-group", type=int, default=10, help="rows per row group")
    parser.add_argument("--per-file", type=int, default=300, help="rows per Parquet file")
    parser.add_argument("--exits", type=int, default=0, help="runs per reader for the exit-status count")
    args = parser.parse_args()

    files = layout(args.rows, args.row_kb, args.row_group, args.per_file)
    split = sorted(n for n in files if n.startswith("all/test/"))
    split_bytes = sum(len(files[n]) for n in split)
    urls = [f"hf://datasets/{REPO_ID}@{SHA}/{n}" for n in split]
    print(f"split: {args.rows} rows of ~{args.row_kb} KB, {len(split)} files, {split_bytes / 1e6:.1f} MB in all/test/, "
          f"row groups of {args.row_group} rows")
    readers = {
        "ours, stop 2": OURS.format(repo=REPO_ID, ref=REF, stop=2),
        "ours, stop 50": OURS.format(repo=REPO_ID, ref=REF, stop=50),
        "ours, all rows": OURS.format(repo=REPO_ID, ref=REF, stop=None),
        "datasets streaming, stop 2": DATASETS_FILES.format(files=urls, stop=2, prebuffer=True),
        "datasets streaming, all rows": DATASETS_FILES.format(files=urls, stop=None, prebuffer=True),
        "datasets, no pre-buffer, stop 2": DATASETS_FILES.format(files=urls, stop=2, prebuffer=False),
        "datasets, no pre-buffer, all rows": DATASETS_FILES.format(files=urls, stop=None, prebuffer=False),
    }
    with FakeHub() as hub:
        hub.add(REPO_ID, SHA, files, refs=(REF,))
        print(f"\n{'reader':36} {'rows':>6} {'MB fetched':>11} {'of split':>9} {'requests':>9} {'seconds':>8}  exit")
        for name, script in readers.items():
            status, out, seconds, sent, requests = run(hub, script)
            rows = out["rows"] if out else "-"
            print(f"{name:36} {rows:>6} {sent / 1e6:>11.2f} {sent / split_bytes:>9.1%} {requests:>9} "
                  f"{seconds:>8.1f}  {status}")
        status, out, seconds, _, _ = run(hub, DATASETS_REPO.format(repo=REPO_ID, ref=REF))
        print(f"\ndatasets.load_dataset({REPO_ID!r}, revision={REF!r}, streaming=True) yields "
              f"{out['rows'] if out else '-'} rows for a split of {args.rows} (exit {status})")

        if args.exits:
            print(f"\nexit statuses over {args.exits} fresh interpreters each:")
            for name in [n for n in readers if "stop 50" not in n]:
                counts = collections.Counter(str(run(hub, readers[name], timeout=30)[0]) for _ in range(args.exits))
                print(f"  {name:36} " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
