"""Workers on other machines (plugin/remote.py): what they receive, and what the remote path costs per case.
Run by hand, never by pytest:

    python benchmarks/bench_remote.py            # 5,000-row plan with 10 samples each; 3 rounds of runs
    python benchmarks/bench_remote.py --quick    # 1,000 rows, 2 rounds
    python benchmarks/bench_remote.py --tx 2*ssh=HOST//python=PYTHON   # also time that gateway spec

It generates the synthetic split of `bench_scale.py` (same shape as `codeparrot/apps` test) and measures:

1. the plan a remote worker receives in `workerinput`, for the whole split with 10 samples per problem
   (a generations file of 1.5 KB programs): its size beside the plan folder's index (which carries the
   programs), and the time to make it (once, on the controller) and to read it (once per worker);
2. the cost of the remote path on this machine, where only the path differs: `-n 2` (workers read the plan
   folder and the index cache) against `--tx 2*popen//chdir=DIR --dist loadscope` (workers receive the
   plan, ask the controller for each problem's tests and send failing cases' files back), on cheap
   candidates, every test of the first problems. Runs alternate, since a shared machine's speed drifts;
   the figure is the median ratio of neighbouring runs' wall times (target: within 10%).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import generate  # noqa: E402

TARGET_RATIO = 1.10
PROGRAM = "import sys\n" + "".join(f"# line {i} of a model-written program, padded to a usual size\n"
                                   for i in range(24)) + "print(len(sys.stdin.read().split()))\n"


def plan_figures(work: Path, samples: int) -> None:
    from pytest_apps.core.settings import Settings
    from pytest_apps.plugin.nodeids import arguments
    from pytest_apps.plugin.plan import PLAN_FILE, build_plan, load_plan
    from pytest_apps.plugin.remote import plan_text, read_plan_text, remote_files

    rows = [json.loads(line)["problem_id"] for line in (work / "test.jsonl").open()]
    gens = work / "gens.jsonl"
    with gens.open("w") as out:
        for pid in rows:
            out.write(json.dumps({"problem_id": pid, "code": [PROGRAM] * samples}) + "\n")
    settings = Settings(dataset=str(work / "test.jsonl"), candidates=str(gens), max_tests=0, rootdir=str(work))
    t = time.perf_counter()
    plan = build_plan(settings, folder=work / "plan")
    built = time.perf_counter() - t
    t = time.perf_counter()
    files = remote_files(plan, arguments([str(gens)], work), work, work)
    text = plan_text(plan, files)
    made = time.perf_counter() - t
    t = time.perf_counter()
    read_plan_text(text)
    read = time.perf_counter() - t
    t = time.perf_counter()
    load_plan(work / "plan")
    local_read = time.perf_counter() - t
    n_cands = sum(len(c) for c in plan.candidates.values())
    print(f"1. the plan of {len(plan.problems)} problems, {n_cands} programs ({len(PROGRAM)} bytes each); "
          f"planned in {built:.1f} s")
    print(f"   plan folder's index (with programs):       {(work / 'plan' / PLAN_FILE).stat().st_size / 1e6:7.1f} MB "
          f"(read by each local worker in {local_read:.2f} s)")
    print(f"   what a remote worker receives (without):   {len(text.encode()) / 1e6:7.1f} MB "
          f"(made once in {made:.2f} s, read by each worker in {read:.2f} s)")


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        sys.exit(f"run failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 rows and 2 rounds")
    parser.add_argument("--rounds", type=int, help="runs of each kind (default 3, or 2 with --quick)")
    parser.add_argument("--problems", type=int, default=150, help="problems in each run (every test)")
    parser.add_argument("--tx", help="also time this gateway spec (e.g. 2*ssh=HOST//python=PYTHON)")
    opts = parser.parse_args()
    rows = 1000 if opts.quick else 5000
    rounds = opts.rounds or (2 if opts.quick else 3)
    work = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    try:
        info = generate(work, rows)
        print(f"synthetic split: {info['rows']} rows, {info['tests']} tests, in {work}; {os.cpu_count()} CPUs")
        plan_figures(work, samples=10)

        base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", "-q",
                "--apps-dataset", str(work / "test.jsonl"), "--apps-candidates", "candidates",
                "--apps-limit", str(opts.problems), "--apps-max-tests", "0"]  # (no --rootdir: remote
        # workers would look for it; run from the work folder, it is the rootdir)
        remote_dir = work / "remote-cwd"
        kinds = {"-n 2 (local path)": ["-n", "2"],
                 "popen//chdir (remote path)": ["--tx", f"2*popen//chdir={remote_dir}", "--dist", "loadscope"]}
        if opts.tx:
            kinds["--tx (given)"] = ["--tx", opts.tx, "--dist", "loadscope"]
        timed(base + ["-n", "2"], work)  # builds nothing (a limit reads the rows) but warms the disk cache
        walls: dict[str, list[float]] = {k: [] for k in kinds}
        print(f"\n2. every test of the first {opts.problems} problems, cheap candidates, {rounds} rounds")
        for r in range(rounds):
            for kind, extra in kinds.items():
                wall, out = timed(base + extra, work)
                walls[kind].append(wall)
                tail = out.strip().splitlines()[-1] if out.strip() else ""
                print(f"   round {r + 1}: {kind:32s} {wall:6.1f} s   {tail}", flush=True)
        local = walls["-n 2 (local path)"]
        for kind, values in walls.items():
            ratio = statistics.median(v / b for v, b in zip(values, local))
            mark = "" if not kind.startswith("popen") else (
                f"   target <= {TARGET_RATIO:.2f}: {'ok' if ratio <= TARGET_RATIO else 'MISSED'}")
            print(f"   {kind:32s} median {statistics.median(values):6.1f} s, ratio to -n 2 {ratio:.2f}{mark}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
