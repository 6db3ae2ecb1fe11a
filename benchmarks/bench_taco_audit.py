"""The reference audit of a TACO problem: how many of its own solutions pass under each judge.

Runs ``--apps-candidates reference`` on TACO's test[0] (the shared row, 137 solutions, 209 tests) under the seed,
apps and taco judges (``--spj``: each also with TACO's special-judge list), and prints the solutions passing. By
hand (minutes; every test with ``--max-tests 0``)::

    APPS_SHARED_DATA=/path/to/apps-data python benchmarks/bench_taco_audit.py [-n 2] [--max-tests N] [--spj]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(rows: Path, judge: str, spj: Path | None, workers: str, max_tests: int, folder: Path) -> dict:
    report = folder / f"{judge}-{'spj' if spj else 'plain'}.json"
    cmd = [sys.executable, "-m", "pytest", "-p", "pytest_apps", "--apps", "--apps-dataset", str(rows),
           "--apps-only", "0", "--apps-candidates", "reference", "--apps-judge", judge,
           "--apps-max-tests", str(max_tests), "--apps-generations", str(folder / "gen"),
           "--apps-report", str(report), "-n", workers, "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           "--rootdir", str(folder)]
    if spj:
        cmd += ["--apps-special-judge", str(spj)]
    started = time.perf_counter()
    subprocess.run(cmd, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    doc = json.loads(report.read_text())
    problem = doc["problems"][0]
    failing = [s for s in problem["sample_results"] if s["verdict"] != "pass"]
    kinds: dict[str, int] = {}
    for s in failing:
        kind = s["reason"].split(": ", 1)[-1].split(" ")[0] if s["reason"] else s["verdict"]
        kinds[kind] = kinds.get(kind, 0) + 1
    return {"judge": judge, "special_judge": bool(spj), "solutions": problem["samples"],
            "passed": problem["samples_passed"], "tests": problem["tests_total"] // max(problem["samples"], 1),
            "failing_by_first_failure": kinds, "seconds": round(time.perf_counter() - started, 1),
            "steps": doc["summary"].get("pass_steps")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", default="2")
    parser.add_argument("--max-tests", type=int, default=20)
    parser.add_argument("--spj", action="store_true", help="also run each judge with the special-judge list")
    args = parser.parse_args()
    shared = Path(os.environ.get("APPS_SHARED_DATA", "")) / "taco"
    rows, spj = shared / "taco_test_rows.jsonl", shared / "output_spj.jsonl"
    with tempfile.TemporaryDirectory(prefix="taco-audit-") as tmp:
        for judge in ("seed", "apps", "taco"):
            for with_spj in ((None, spj) if args.spj else (None,)):
                print(json.dumps(run(rows, judge, with_spj, args.n, args.max_tests, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
