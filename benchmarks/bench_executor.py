"""Per-test overhead of the executor against a fresh interpreter per test (run by hand, not by pytest).

    python benchmarks/bench_executor.py [--echo N] [--rows N] [--tests-per-row N]

Two workloads, each run through our `Executor` and through a fresh `python prog.py < input` subprocess
per test, in the same run:
  1. a trivial echo program over a few hundred tests (the time is all overhead);
  2. the real rows and candidates in `$APPS_SHARED_DATA` (default `<repo>/../shared/apps-data`):
     `apps_test_rows.jsonl` (codeparrot schema) and `candidates.jsonl` (problem_id, code).
For the real workload the overhead is estimated, for both, as wall time minus the program's own CPU time
(measured once, in our child, from the moment its test arrived), per test: a fresh interpreter's start-up
is overhead, not the program's work.
The machine may be shared: each figure is the median of several rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_apps.executor import Executor, Limits, Program  # noqa: E402

ECHO = "import sys\nsys.stdout.write(sys.stdin.read())\n"


def fresh(source: str, stdin: str, timeout: float, tmp: Path) -> tuple[float, str, float]:
    path = tmp / "prog.py"
    path.write_text(source)
    t = time.perf_counter()
    before = os.times()
    try:
        p = subprocess.run([sys.executable, str(path)], input=stdin.encode(), capture_output=True,
                           timeout=timeout, cwd=tmp)
        out = p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        out = ""
    after = os.times()
    wall = time.perf_counter() - t
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, out, cpu


def echo_bench(ex: Executor, n: int, tmp: Path, rounds: int) -> tuple[float, float]:
    prog = Program(ECHO, "echo.py")
    ours, theirs = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        for i in range(n):
            o = ex.run_stdin(prog, f"{i}\n")
            assert o.stdout == f"{i}\n", o
        ours.append((time.perf_counter() - t) / n)
        m = max(20, n // 5)
        t = time.perf_counter()
        for i in range(m):
            _, out, _ = fresh(ECHO, f"{i}\n", 4, tmp)
            assert out == f"{i}\n"
        theirs.append((time.perf_counter() - t) / m)
    return statistics.median(ours), statistics.median(theirs)


def load_real(data: Path, rows_limit: int, per_row: int) -> list[tuple[str, str, list[str]]]:
    cands = {}
    with open(data / "candidates.jsonl") as f:
        for line in f:
            c = json.loads(line)
            cands.setdefault(str(c["problem_id"]), c["code"])
    work = []
    if rows_limit <= 0:
        return work
    with open(data / "apps_test_rows.jsonl") as f:
        for line in f:
            row = json.loads(line)
            pid = str(row["problem_id"])
            if pid not in cands:
                continue
            try:
                io = json.loads(row["input_output"])
            except (TypeError, ValueError):
                continue
            if not isinstance(io, dict) or io.get("fn_name") or not io.get("inputs"):
                continue  # standard-input rows only: the fresh-subprocess baseline needs a real program
            ins = [x if isinstance(x, str) else "\n".join(map(str, x)) for x in io["inputs"][:per_row]]
            work.append((pid, cands[pid], ins))
            if len(work) >= rows_limit:
                break
    return work


def real_bench(ex: Executor, work, tmp: Path) -> dict:
    n = sum(len(ins) for _, _, ins in work)
    ours_wall = ours_cpu = 0.0
    t = time.perf_counter()
    for pid, code, ins in work:
        prog = Program(code, f"{pid}.py")
        for x in ins:
            o = ex.run_stdin(prog, x)
            ours_wall += o.wall_time
            ours_cpu += o.cpu_time
    ours_total = time.perf_counter() - t
    theirs_total = theirs_cpu = 0.0
    for pid, code, ins in work:
        for x in ins:
            w, _, c = fresh(code, x, 4, tmp)
            theirs_total += w
            theirs_cpu += c
    return {"tests": n, "ours_total": ours_total, "ours_cpu": ours_cpu, "theirs_total": theirs_total,
            "theirs_cpu": theirs_cpu}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--echo", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--tests-per-row", type=int, default=10)
    args = ap.parse_args()
    data = Path(os.environ.get("APPS_SHARED_DATA", REPO.parent / "shared" / "apps-data"))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    with Executor(Limits(timeout=4)) as ex, tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        print("isolation:", ", ".join(ex.isolation()))
        ours, theirs = echo_bench(ex, args.echo, tmp, args.rounds)
        print(f"echo x{args.echo} (median of {args.rounds} rounds): executor {ours * 1e3:.2f} ms/test, "
              f"fresh subprocess {theirs * 1e3:.2f} ms/test, ratio {theirs / ours:.1f}x")
        if args.rows > 0 and (data / "apps_test_rows.jsonl").exists():
            work = load_real(data, args.rows, args.tests_per_row)
            r = real_bench(ex, work, tmp)
            n = r["tests"]
            o = (r["ours_total"] - r["ours_cpu"]) / n
            f = (r["theirs_total"] - r["ours_cpu"]) / n
            print(f"real rows: {len(work)} programs, {n} tests: executor {r['ours_total'] / n * 1e3:.2f} ms/test "
                  f"(overhead ~{o * 1e3:.2f} ms), fresh subprocess {r['theirs_total'] / n * 1e3:.2f} ms/test "
                  f"(overhead ~{f * 1e3:.2f} ms), overhead ratio {f / o:.1f}x, "
                  f"total-time ratio {r['theirs_total'] / r['ours_total']:.1f}x")
        else:
            print(f"no real rows at {data}; set APPS_SHARED_DATA")


if __name__ == "__main__":
    main()
