"""What the apps judge costs per test, against the seed judge in the same run (run by hand, not by pytest).

    python benchmarks/bench_judges.py [--tests N] [--rounds N]

An echo program (all of its time is overhead) run through four executors, in alternating rounds:
  seed                  the seed style on a plain executor: the baseline;
  seed, apps preload    the seed style on an executor whose zygote preloads numpy and unittest.mock (as a run
                        with --apps-judge apps or a reference audit has): what the preload costs other tests;
  apps                  the apps style (the original harness's way) on the preloading executor;
  apps, no preload      the apps style on a plain executor: each test imports numpy itself.
Also the time to the first result of a fresh executor, with and without the preload. The machine may be
shared: each figure is the median of the rounds, and the ratios are against the baseline of the same round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_apps.executor import APPS_STYLE_PRELOAD, Executor, Program  # noqa: E402

ECHO = "import sys\nsys.stdout.write(sys.stdin.read())\n"


def per_test(ex: Executor, style: str, n: int, cpu: list[float] | None = None) -> float:
    prog = Program(ECHO, "echo.py")
    start = time.perf_counter()
    for i in range(n):
        o = ex.run_stdin(prog, f"{i}\n", style=style)
        assert o.stdout == f"{i}\n", o
        if cpu is not None:
            cpu.append(o.cpu_time)
    return (time.perf_counter() - start) / n


def first_result(preload: tuple[str, ...]) -> float:
    start = time.perf_counter()
    with Executor(preload=preload) as ex:
        o = ex.run_stdin(Program(ECHO, "echo.py"), "1\n")
        assert o.stdout == "1\n"
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=200, help="tests per round and executor")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    plain, preloaded = Executor(), Executor(preload=APPS_STYLE_PRELOAD)
    runs = {"seed": (plain, "seed"), "seed, apps preload": (preloaded, "seed"), "apps": (preloaded, "apps"),
            "apps, no preload": (plain, "apps")}
    for ex, style in runs.values():
        per_test(ex, style, 5)  # warm: servers and zygotes started
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}  # the child's own CPU time per test
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (ex, style) in runs.items():
            n = args.tests if name != "apps, no preload" else max(10, args.tests // 10)
            times[name].append(per_test(ex, style, n, cpu[name]))
        for name in runs:
            ratios[name].append(times[name][-1] / times["seed"][-1])
    plain.close()
    preloaded.close()
    print(f"per test, median of {args.rounds} rounds (ratio to seed in the same round); the child's own CPU time "
          "(median over tests):")
    for name in runs:
        print(f"  {name:20s} {1000 * statistics.median(times[name]):7.2f} ms  x{statistics.median(ratios[name]):.2f}"
              f"   child CPU {1000 * statistics.median(cpu[name]):6.2f} ms")
    starts = [(first_result(()), first_result(APPS_STYLE_PRELOAD)) for _ in range(3)]
    print("time to the first result of a fresh executor (median of 3): "
          f"{statistics.median(s[0] for s in starts):.2f} s plain, "
          f"{statistics.median(s[1] for s in starts):.2f} s with the apps preload")


if __name__ == "__main__":
    main()
