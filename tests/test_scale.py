"""Scale paths at small size: several xdist gateways, a loader that reads only the rows it needs, and
concurrent first loads of one dataset. (The timings at full size are benchmarks/bench_scale.py's job.)"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from conftest import UNUSED_PLUGINS, read_report, run
from pytest_apps.dataset.loading import sample_path

BROKEN = {
    "900001": "a, b = map(int, input().split())\nprint(a - b)\n",  # wrong answer on most tests
    "900003": "def broken(:\n    pass\n",  # compile error
}


def strip_timing(value: Any) -> Any:
    """The report without what legitimately differs between two runs: wall time, per-test times and memory, the
    machine section (workers, speed), and whether the problem index came from the cache (`source.index`)."""
    if isinstance(value, dict):
        if "resolved_revision" in value:
            value = {k: v for k, v in value.items() if k != "index"}
        return {k: strip_timing(v) for k, v in value.items()
                if k not in ("wall_time", "time", "cpu_time", "memory", "machine")}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


@pytest.fixture
def mixed_project(sample_project: pytest.Pytester) -> pytest.Pytester:
    """The sample's solutions with a wrong and a non-compiling one, so the report has failures to compare."""
    for pid, code in BROKEN.items():
        (sample_project.path / "solutions" / f"{pid}.py").write_text(code)
    return sample_project


def test_two_local_gateways_give_the_single_process_report(mixed_project: pytest.Pytester) -> None:
    base = ("--apps-dataset", "sample")
    reports = {}
    for name, extra in {
        "single": ("-p", "no:xdist"),
        "tx": ("--tx", "2*popen", "--dist", "loadscope"),
        "n2": ("-n", "2"),
    }.items():
        result = run(mixed_project, *base, *extra)
        assert result.ret == 1, result.stdout.str()  # the two broken candidates fail
        if name != "single":
            # really distributed: both gateways came up and ran cases
            result.stdout.fnmatch_lines(["*2 workers*"])
        reports[name] = strip_timing(read_report(mixed_project))
    single = reports["single"]
    assert single["summary"]["problems"] == 6 and single["summary"]["passed"] == 4
    assert single["summary"]["tests_run"] == single["summary"]["tests_total"] == 27
    assert reports["tx"] == single
    assert reports["n2"] == single


def test_limit_reads_only_the_rows_it_needs(sample_project: pytest.Pytester) -> None:
    rows = sample_path().read_bytes().splitlines(keepends=True)
    garbage = [
        b"this is not JSON at all\n",
        b"\xff\xfe not UTF-8 either\n",
        b"[1, 2, 3]\n",
        b'{"problem_id": "nope", "question": ',  # truncated, no newline
    ]
    data = sample_project.path / "rows.jsonl"
    data.write_bytes(b"".join(rows[:2] + garbage))
    result = run(sample_project, "--apps-dataset", str(data), "--apps-limit", "2")
    assert result.ret == 0, result.stdout.str()
    report = read_report(sample_project)
    assert [p["id"] for p in report["problems"]] == ["900001", "900002"]
    assert report["summary"]["strict_accuracy"] == 1.0
    # the rows after the second were never read, so none of them is counted as skipped
    assert report["summary"]["skipped_rows"] == 0 and report["skipped_rows"] == []


def test_concurrent_first_loads_of_one_dataset(sample_project: pytest.Pytester) -> None:
    # Each controller reads the dataset and writes its own private plan; nothing is shared but the file.
    data = sample_project.path / "rows.jsonl"
    data.write_bytes(sample_path().read_bytes())
    procs = [
        subprocess.Popen(
            [
                sys.executable, "-m", "pytest", *UNUSED_PLUGINS, "-p", "no:cacheprovider", "-q",
                "--apps-dataset", str(data), "-p", "no:xdist", "--apps-report", f"reports/run{i}.json",
            ],
            cwd=sample_project.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    first, second = (strip_timing(read_report(sample_project, f"reports/run{i}.json")) for i in range(2))
    for report in (first, second):
        report["settings"].pop("report")
    assert first == second
    assert first["summary"]["strict_accuracy"] == 1.0 and first["summary"]["tests_run"] == 27
    assert first["source"]["resolved_revision"]  # the local file's fingerprint is pinned in the report
