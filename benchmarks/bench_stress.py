"""Verdicts that never flicker: the real rows' reference solutions, run again and again beside load, must get the
same verdict on every test every time (run by hand, not by pytest):

    python benchmarks/bench_stress.py [--repeat 20] [--load 4] [-n 2] [--problems 19,23] [--max-tests 0]
                                      [--verdicts FILE]

Runs the plugin as users do (`pytest --apps-dataset <rows> --apps-candidates=reference -n N`, records off) on the
shared APPS rows (../shared/apps-data, or APPS_SHARED_DATA), `--repeat` times, with `--load` CPU-bound processes
beside it, and compares each run's per-test verdicts with the first run's. Prints one line per run (wall time,
tests, how many differ from the first run, and the first few that do) and a closing total; the target is 0
differing verdicts. `--problems` keeps some problems only (a verdict once seen flickering on problem 19's fifth
reference, test 152: `--problems 19` repeats it quickly); `--max-tests` caps the tests per problem (0: all).
`--verdicts FILE` keeps the verdicts to compare with across invocations: an existing FILE is the first run every run
is compared with; a missing one is written from this invocation's first run, so repetitions split over several
invocations count against one set.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_saturated import neighbours  # noqa: E402
from shareddata import shared  # noqa: E402


def write_rows(data: Path, folder: Path, problems: set[int] | None) -> Path:
    rows = folder / "rows.jsonl"
    with rows.open("w") as out:
        for line in (data / "apps_test_rows.jsonl").open():
            if problems is None or json.loads(line)["problem_id"] in problems:
                out.write(line)
    return rows


def verdicts(report: dict) -> dict[str, str]:
    """test -> its verdict kind, keyed by problem, sample (the reference solution) and test case."""
    out = {}
    for p in report["problems"]:
        for t in p["tests"]:
            out[f"{p['id']}/solution_{t.get('sample', 0)}/test_{t['case']}"] = t["kind"]
    return out


def one_run(folder: Path, rows: Path, workers: str, max_tests: int) -> tuple[float, dict[str, str]]:
    report = folder / "report.json"
    report.unlink(missing_ok=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                    "--apps-dataset", str(rows), "--apps-candidates=reference", "--apps-records=off",
                    "--apps-max-tests", str(max_tests), "--apps-report", str(report), "-n", workers],
                   cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, verdicts(json.loads(report.read_text()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--load", type=int, default=4, help="CPU-bound processes beside the runs")
    ap.add_argument("-n", default="2", help="xdist workers")
    ap.add_argument("--problems", default="", help="comma-separated problem ids (default: every row)")
    ap.add_argument("--max-tests", type=int, default=0, help="tests per problem (0: all)")
    ap.add_argument("--verdicts", type=Path, help="verdicts to compare with (read if it exists, else written)")
    opts = ap.parse_args()
    problems = {int(p) for p in opts.problems.split(",") if p.strip()} or None
    with tempfile.TemporaryDirectory(prefix="bench-stress-") as tmp:
        folder = Path(tmp)
        rows = write_rows(shared(), folder, problems)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, -n {opts.n}, {opts.load} CPU-bound "
              f"neighbours, {opts.repeat} runs of every reference solution of {rows}", flush=True)
        first: dict[str, str] | None = None
        if opts.verdicts and opts.verdicts.exists():
            first = json.loads(opts.verdicts.read_text())
            print(f"comparing with {len(first)} verdicts from {opts.verdicts}", flush=True)
        total = 0
        with neighbours("cpu", opts.load):
            for k in range(opts.repeat):
                wall, seen = one_run(folder, rows, opts.n, opts.max_tests)
                if first is None:
                    first = seen
                    if opts.verdicts:
                        opts.verdicts.write_text(json.dumps(seen, sort_keys=True))
                differ = sorted(t for t in set(first) | set(seen) if first.get(t) != seen.get(t))
                total += len(differ)
                shown = ", ".join(f"{t} {first.get(t)}->{seen.get(t)}" for t in differ[:5])
                print(f"run {k + 1:>3}  {wall:7.1f} s  {len(seen):>6} tests  {len(differ):>3} differ  {shown}",
                      flush=True)
        print(f"{total} differing verdicts in {opts.repeat} runs (target 0)")


if __name__ == "__main__":
    main()
