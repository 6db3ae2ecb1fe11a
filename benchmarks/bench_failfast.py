"""Full run vs --apps-fail-fast on the real APPS rows and model-written candidates, in one run.

Run by hand (not part of the test suite; it takes minutes):

    python benchmarks/bench_failfast.py [--max-tests 0] [-n 2]

Reads ../shared/apps-data (override with APPS_SHARED_DATA): every program in candidates.jsonl whose
problem has a full-test row in apps_test_rows.jsonl. Prints the wall time of each run, their ratio, and
checks that strict accuracy and every per-problem verdict are the same.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shareddata import shared, write_model_candidates


def run(args: list[str], report: Path, cwd: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--apps-report", str(report), *args],
        cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )
    return time.perf_counter() - start, json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tests", default="0", help="tests per problem (0 = every test)")
    parser.add_argument("-n", default="0", help="xdist workers")
    opts = parser.parse_args()
    data = shared()
    rows = data / "apps_test_rows.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gens = work / "candidates.jsonl"
        programs = write_model_candidates(data, gens)
        base = ["--apps-dataset", str(rows), "--apps-candidates", str(gens), "--apps-max-tests",
                opts.max_tests, "-n", opts.n]
        full_time, full = run(base, work / "full.json", work)
        fast_time, fast = run([*base, "--apps-fail-fast"], work / "fast.json", work)
    same = [(p["id"], p["verdict"]) for p in full["problems"]] == [(p["id"], p["verdict"]) for p in fast["problems"]]
    fs, ff = full["summary"], fast["summary"]
    print(f"programs on full-test rows: {programs}, tests per problem: {opts.max_tests} (0 = all)")
    print(f"{'run':<12}{'wall s':>10}{'tests run':>12}{'strict acc':>12}{'pass@1':>10}")
    for name, t, s in (("full", full_time, fs), ("fail-fast", fast_time, ff)):
        print(f"{name:<12}{t:>10.1f}{s['tests_run']:>12}{s['strict_accuracy']:>12.4f}{str(s.get('pass_at_k', {}).get('pass@1', '-')):>10}")
    print(f"speed-up: {full_time / fast_time:.1f}x; same strict accuracy and verdicts: "
          f"{same and fs['strict_accuracy'] == ff['strict_accuracy']}")


if __name__ == "__main__":
    main()
