"""-n 2 against -n 8 on the same CPU-bound workload, side by side in one run (time limits, execution slots).

Run by hand (not part of the test suite; it takes a few minutes):

    python benchmarks/bench_limits.py [--rounds 3] [--cpu 0.5] [--samples 16] [--tests 4] [--neighbours 0]

A synthetic problem whose candidate programs each need `--cpu` seconds of CPU per test (a correct program,
well inside the 4 s limit), `--samples` of them with `--tests` tests each. Runs alternate between -n 2 and -n 8
(a shared machine's speed drifts), on the first two CPUs this process may use; with `--neighbours K`, K busy
processes run beside pytest on those CPUs. Prints each run's wall time and strict accuracy, the median ratio
of neighbouring -n 8 / -n 2 runs, and checks that every run gave every test the same verdict.
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

PROGRAM = """import time
t = time.process_time()
while time.process_time() - t < {cpu}:
    pass
a, b = map(int, input().split())
print(a + b)
"""


def workload(folder: Path, cpu: float, samples: int, tests: int) -> None:
    inputs = [f"{i} {i + 1}\n" for i in range(tests)]
    row = {"problem_id": 1, "question": "Print the sum.", "solutions": "", "difficulty": "interview", "url": "",
           "starter_code": "", "input_output": json.dumps({"inputs": inputs,
                                                           "outputs": [f"{2 * i + 1}\n" for i in range(tests)]})}
    (folder / "rows.jsonl").write_text(json.dumps(row) + "\n")
    cands = folder / "cands" / "1"
    cands.mkdir(parents=True)
    for k in range(samples):
        (cands / f"s{k}.py").write_text(PROGRAM.format(cpu=cpu))


def run(folder: Path, workers: str, report: str) -> tuple[float, dict]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--apps-dataset", "rows.jsonl",
                    "--apps-candidates", "cands", "--apps-report", report, "-n", workers],
                   cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started, json.loads((folder / report).read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=float, default=0.5, help="CPU seconds each program needs per test")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--tests", type=int, default=4)
    parser.add_argument("--neighbours", type=int, default=0, help="busy processes beside the run")
    opts = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))[:2]
    if len(cpus) < 2:
        sys.exit("needs two CPUs")
    os.sched_setaffinity(0, set(cpus))  # pytest and everything it starts run on these two
    hogs = [subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"], start_new_session=True)
            for _ in range(opts.neighbours)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            workload(folder, opts.cpu, opts.samples, opts.tests)
            total = opts.cpu * opts.samples * opts.tests
            print(f"workload: {opts.samples} programs x {opts.tests} tests x {opts.cpu:g} s CPU = {total:g} s of CPU "
                  f"on CPUs {cpus}; {opts.neighbours} busy neighbours")
            walls: dict[str, list[float]] = {"2": [], "8": []}
            verdicts = set()
            for round_ in range(opts.rounds):
                for workers in ("2", "8"):
                    wall, report = run(folder, workers, f"n{workers}.json")
                    walls[workers].append(wall)
                    kinds = tuple((t.get("sample", 0), t["case"], t["kind"]) for p in report["problems"]
                                  for t in p["tests"])
                    verdicts.add(kinds)
                    worst = max((t["time"] for p in report["problems"] for t in p["tests"]), default=0)
                    print(f"round {round_ + 1} -n {workers}: {wall:6.1f} s wall, strict accuracy "
                          f"{report['summary']['strict_accuracy']:.2f}, at most {worst:.2f} s of own time per test, "
                          f"{report['machine']['children_at_once']} programs at once")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    ratios = [b / a for a, b in zip(walls["2"], walls["8"])]
    print(f"-n 2: median {statistics.median(walls['2']):.1f} s; -n 8: median {statistics.median(walls['8']):.1f} s")
    print(f"-n 8 / -n 2 wall time: median {statistics.median(ratios):.3f} (neighbouring runs "
          f"{min(ratios):.3f} to {max(ratios):.3f}); floor (CPU / 2 CPUs): {total / 2:.1f} s")
    print("every run gave every test the same verdict" if len(verdicts) == 1
          else f"VERDICTS DIFFER between runs ({len(verdicts)} different sets)")


if __name__ == "__main__":
    main()
