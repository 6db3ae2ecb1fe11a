"""Per-test overhead of the Python API next to the plugin's, on the same workload (run by hand).

    python benchmarks/bench_api.py [--copies 20] [--small 2] [--workers 1 2] [--rounds 3]

The workload is the bundled sample replicated `--copies` times under fresh problem ids, each problem
scored with its correct solution (27 tests per copy; every program is quick, so what is measured is the
harness). Each front end runs a big and a small workload; the marginal cost per test,
(time(big) - time(small)) / (tests(big) - tests(small)), cancels fixed costs (pytest start-up and
collection, executor start-up). The "executor" row (one worker) is the floor: the same tests run on a
bare warm `Executor`, with no judging or roll-up. Also shown: the plain wall time per test of the big run, and the mean
time the programs themselves took (the children's own wall time, from the report).

The plugin runs as users run it (`python -m pytest --apps-dataset ... -n W`, `-n 0` for one worker), timed
from outside the process; the API is timed around `score_many` with warm executors, as an optimizer
loop would call it, and also including `Evaluator` start-up ("api cold").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_apps import Evaluator, load_problems
from pytest_apps.api import _STORE
from pytest_apps.dataset.problems import CALL, parse_call_args, stdin_text
from pytest_apps.executor import Executor, Limits, Program
from pytest_apps.dataset.loading import sample_path

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"


def make_workload(folder: Path, copies: int) -> tuple[Path, Path, int]:
    """rows.jsonl and solutions/ for `copies` copies of the sample; returns (rows, solutions, tests)."""
    rows_out, sols = folder / "rows.jsonl", folder / "solutions"
    sols.mkdir(parents=True)
    rows = [json.loads(line) for line in sample_path().read_text().splitlines() if line.strip()]
    lines, tests = [], 0
    for k in range(copies):
        for row in rows:
            pid = int(row["problem_id"]) + 1_000_000 * (k + 1)
            lines.append(json.dumps({**row, "problem_id": pid}))
            shutil.copy(SOLUTIONS / f"{row['problem_id']}.py", sols / f"{pid}.py")
            tests += len(json.loads(row["input_output"])["inputs"])
    rows_out.write_text("\n".join(lines) + "\n")
    return rows_out, sols, tests


def child_time(report: dict) -> float:
    times = [t["time"] for p in report["problems"] for t in p["tests"]]
    return statistics.mean(times) if times else 0.0


def run_plugin(rows: Path, sols: Path, workers: int, folder: Path) -> tuple[float, dict]:
    report = folder / f"plugin-{workers}.json"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--apps-dataset", str(rows),
           "--apps-candidates", str(sols), "--apps-report", str(report), "-n", str(0 if workers == 1 else workers),
           "--rootdir", str(folder)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"plugin run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return wall, json.loads(report.read_text())


def run_api(rows: Path, sols: Path, workers: int) -> tuple[float, float, dict]:
    """(cold seconds incl. Evaluator start-up, warm seconds of score_many, report)."""
    problems = load_problems(dataset=str(rows))
    pairs = [(p, (sols / f"{p.id}.py").read_text()) for p in problems]
    t0 = time.perf_counter()
    with Evaluator(workers=workers) as ev:
        ev.score_many(pairs[:workers] * 2)  # start and warm every executor
        t1 = time.perf_counter()
        results = ev.score_many(pairs)
        t2 = time.perf_counter()
        report = ev.report(results, problems)
    assert report["summary"]["passed"] == len(problems), report["summary"]
    return (t2 - t0), (t2 - t1), report


def run_executor(rows: Path, sols: Path) -> float:
    """The floor: one warm executor running every test directly (no judging, no roll-up), seconds."""
    problems = load_problems(dataset=str(rows))
    with Executor(Limits()) as ex:
        ex.isolation()  # start the server
        t0 = time.perf_counter()
        for p in problems:
            program, cases = Program((sols / f"{p.id}.py").read_text()), _STORE.get(p)
            for raw in cases.inputs[: p.n_cases]:
                if p.fmt == CALL:
                    assert p.fn_name is not None
                    ex.run_call(program, p.fn_name, parse_call_args(raw))
                else:
                    ex.run_stdin(program, stdin_text(raw))
        return time.perf_counter() - t0


def best(values: list[float]) -> float:
    return min(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=20, help="copies of the sample in the big workload")
    ap.add_argument("--small", type=int, default=2, help="copies in the small workload")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, min(2, os.cpu_count() or 1)])
    ap.add_argument("--rounds", type=int, default=3, help="repeat each measurement; the best is shown")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        root = Path(tmp)
        big = make_workload(root / "big", args.copies)
        small = make_workload(root / "small", args.small)
        n_big, n_small = big[2], small[2]
        print(f"workload: {n_big} tests ({args.copies} copies of the sample), small {n_small} tests; "
              f"best of {args.rounds}; machine: {os.cpu_count()} cores")
        header = f"{'front end':<12}{'workers':>8}{'wall big s':>12}{'ms/test':>10}{'marginal ms/test':>18}{'program ms/test':>17}"
        print(header)
        print("-" * len(header))
        for workers in sorted(set(args.workers)):
            plugin_big, plugin_small, api_cold_big, api_cold_small, api_big, api_small = [], [], [], [], [], []
            floor_big, floor_small = [], []
            child = {}
            for _ in range(args.rounds):
                w, rep = run_plugin(big[0], big[1], workers, root / "big")
                plugin_big.append(w)
                child["plugin"] = child_time(rep)
                plugin_small.append(run_plugin(small[0], small[1], workers, root / "small")[0])
                cold, warm, rep = run_api(big[0], big[1], workers)
                api_cold_big.append(cold)
                api_big.append(warm)
                child["api"] = child_time(rep)
                cold, warm, _ = run_api(small[0], small[1], workers)
                api_cold_small.append(cold)
                api_small.append(warm)
                if workers == 1:
                    floor_big.append(run_executor(big[0], big[1]))
                    floor_small.append(run_executor(small[0], small[1]))
            rows = [("executor", floor_big, floor_small, child["api"])] if floor_big else []
            for name, b, s, c in (
                *rows,
                ("plugin", plugin_big, plugin_small, child["plugin"]),
                ("api cold", api_cold_big, api_cold_small, child["api"]),
                ("api warm", api_big, api_small, child["api"]),
            ):
                wall_b, wall_s = best(b), best(s)
                marginal = (wall_b - wall_s) / (n_big - n_small) * 1000
                print(f"{name:<12}{workers:>8}{wall_b:>12.2f}{wall_b / n_big * 1000:>10.2f}{marginal:>18.2f}{c * 1000:>17.2f}")


if __name__ == "__main__":
    main()
