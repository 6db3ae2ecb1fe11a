"""Balance of a full run on the real APPS rows and candidates: wall time against the floor. Run by hand:

    python benchmarks/bench_balance.py               # -n 2 with and without work stealing, then -n 1 (~15 min)
    python benchmarks/bench_balance.py --rounds 3    # three alternating rounds of each
    python benchmarks/bench_balance.py --skip-n1     # -n 2 only
    python benchmarks/bench_balance.py --only 17     # one problem's candidates (996 tests; ~6 min): a quick look

Reads ../shared/apps-data (override with APPS_SHARED_DATA): the 21 rows with full tests and, in one run, the
first 5 reference solutions of each row plus every model program written for those rows (189 candidates,
15,591 tests with --apps-max-tests 0), laid out in a temporary generations folder as `<id>/ref_<k>.py` and
`<id>/model_<j>.py`.

The floor is the sum of the per-test wall times of the JSON report (`wall_time`; `time` in reports that
have no `wall_time`) divided by the workers: the wall time a perfect split of the tests' own running
would take. (`time` is a program's own time, without its waits for a CPU; on a quiet machine the two are
the same, on a busy one the floor from `time` is printed too.) The harness's work per test (the pytest
protocol, the hand-offs to the executor and back, the reports to the controller), start-up and the
session's end are on top of the floor and no scheduler removes them, so each run also prints them: each
worker's busy time (the pytest protocol of its tests, from a probe plugin, `-p _bench_probe`, written next
to the candidates), what that adds per test over the tests' wall time, wall time against the busy time per
worker (the scheduling's own figure: 1.0 is a perfect split with free start-up), start-up and end.

The figure is wall time / floor, with `--apps-work-stealing on` (the default) and `off` (all of a
candidate's cases on one worker, as `--dist loadscope` does) in the same round, then `-n 1` both ways
(stealing has no one to take from: it must cost nothing). Rounds alternate, since a shared machine's speed
drifts; each round prints its own ratios. Beside them: how long each worker sat idle before the last
worker finished, the candidates whose cases ran on both workers, and whether every report holds the same
per-test records.

Runs print as pytest prints by default, as `pytest -n 8` runs (-v's line per test adds about 0.2 ms of CPU
a test in all, in the controller and in the workers, which write it too). Beside each round's -n 2 runs:
pytest-xdist by itself, the same number of tests doing nothing on the same workers, without our plugin. Its
wall time is what pytest's own protocol and xdist's traffic cost for that many items on this machine, which
any harness that makes each test a pytest item pays; (floor + that) / floor is the least wall/floor such a
harness could print here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 1.15

PROBE = '''
"""Benchmark probe: when each process ran its first and last test, how many it ran, and which files."""
import json, os, time
import pytest

_T = {"first": None, "last": None, "tests": 0, "busy": 0.0, "files": set()}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    if _T["first"] is None:
        _T["first"] = start
    yield
    _T["last"] = time.time()
    _T["tests"] += 1
    _T["busy"] += _T["last"] - start
    _T["files"].add(os.path.relpath(str(item.path), os.getcwd()))


def pytest_sessionfinish(session):
    wi = getattr(session.config, "workerinput", None)
    if wi and _T["tests"]:
        with open(os.path.join(os.environ["BENCH_PROBE_DIR"], wi["workerid"] + ".json"), "w") as f:
            json.dump(dict(_T, files=sorted(_T["files"])), f)
'''


def shared() -> Path:
    return Path(os.environ.get("APPS_SHARED_DATA", REPO.parent / "shared" / "apps-data"))


def write_candidates(data: Path, folder: Path, refs: int = 5) -> int:
    rows = [json.loads(line) for line in (data / "apps_test_rows.jsonl").open()]
    ids = {row["problem_id"] for row in rows}
    count = 0

    def put(pid: int, name: str, code: str) -> None:
        nonlocal count
        path = folder / str(pid) / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
        count += 1

    for row in rows:
        for k, code in enumerate((json.loads(row["solutions"]) if row["solutions"] else [])[:refs]):
            put(row["problem_id"], f"ref_{k}", code)
    seen: dict[int, int] = {}
    for line in (data / "candidates.jsonl").open():
        rec = json.loads(line)
        if rec["problem_id"] in ids:
            j = seen[rec["problem_id"]] = seen.get(rec["problem_id"], -1) + 1
            put(rec["problem_id"], f"model_{j}", rec["code"])
    return count


def comparable(report: dict) -> list:
    """Each problem's verdict and every test's record, without what legitimately differs (time, memory)."""
    return [(p["id"], p["verdict"], p["tests_passed"], p["tests_run"],
             [(t["case"], t.get("sample"), t["kind"], t["step"]) for t in p["tests"]]) for p in report["problems"]]


def by_test(report: dict) -> dict:
    """Each test's verdict and timing, by (problem, sample, case): to show what differs between runs."""
    return {(p["id"], t.get("sample"), t["case"]): (t["kind"], t["step"], t.get("borderline"), t["time"])
            for p in report["problems"] for t in p["tests"]}


def show_differences(name: str, mine: dict, reference: dict, limit: int = 10) -> None:
    """The tests whose verdict differs from the first run's, with their own times and borderline flags: a
    verdict within the time limit's band may flip between runs whatever the scheduling."""
    keys = sorted(set(mine) | set(reference), key=str)
    differ = [k for k in keys if (mine.get(k) or ())[:2] != (reference.get(k) or ())[:2]]
    if not differ:
        return
    fragile = sum(1 for k in differ if (mine.get(k) or (0, 0, False))[2] or (reference.get(k) or (0, 0, False))[2])
    print(f"    {len(differ)} tests differ from the first run ({fragile} of them borderline in either run):")
    for k in differ[:limit]:
        print(f"      problem {k[0]} sample {k[1]} test {k[2]}: first run {reference.get(k)}, {name} {mine.get(k)}")


class Runner:
    def __init__(self, work: Path, rows: Path, only: str | None = None) -> None:
        self.work, self.rows, self.only = work, rows, only
        self.probes = work / "probes"
        (work / "_bench_probe.py").write_text(textwrap.dedent(PROBE))

    def run(self, workers: int, stealing: str) -> dict:
        for old in self.probes.glob("*.json"):
            old.unlink()
        self.probes.mkdir(exist_ok=True)
        report = self.work / "report.json"
        env = dict(os.environ, BENCH_PROBE_DIR=str(self.probes), PYTEST_APPS_CACHE=str(self.work / "cache"))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.work), env.get("PYTHONPATH", "")]))
        cmd = [sys.executable, "-m", "pytest", "-p", "_bench_probe", "-p", "no:cacheprovider",
               "-p", "no:benchmark", "--apps-dataset", str(self.rows), "--apps-candidates", "gens",
               "--apps-max-tests", "0", "--apps-report", str(report), "-n", str(workers),
               "--apps-work-stealing", stealing, *(["--apps-only", self.only] if self.only else [])]
        start = time.time()
        proc = subprocess.run(cmd, cwd=self.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.time() - start
        if proc.returncode not in (0, 1) or not report.is_file():
            tail = "\n".join(proc.stdout.splitlines()[-15:])
            raise SystemExit(f"pytest failed (exit {proc.returncode}): {' '.join(cmd[3:])}\n{tail}")
        doc = json.loads(report.read_text())
        tests = [t for p in doc["problems"] for t in p["tests"]]
        test_time = sum(t.get("wall_time", t["time"]) for t in tests)
        own_time = sum(t["time"] for t in tests)
        probes = {p.stem: json.loads(p.read_text()) for p in self.probes.glob("*.json")}
        where: dict[str, set[str]] = {}
        for wid, probe in probes.items():
            for file in probe["files"]:
                where.setdefault(file, set()).add(wid)
        return {"wall": wall, "time": test_time, "floor": test_time / workers, "own": own_time / workers,
                "records": comparable(doc), "by_test": by_test(doc),
                "tests": doc["summary"]["tests_run"], "split": sorted(c for c, w in where.items() if len(w) > 1),
                "probes": probes, "start": start, "end": start + wall, "workers": workers}

    def alone(self, tests: int, workers: int) -> float:
        """Wall time of pytest-xdist by itself: as many tests as the real run, each doing nothing, on as many
        workers, printed as pytest prints by default; our plugin not loaded."""
        folder = self.work / "alone"
        folder.mkdir(exist_ok=True)
        (folder / "test_alone.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('case', range({tests}))\n"
            "def test_case(case):\n    assert case >= 0\n")
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:apps",
               "-n", str(workers), "test_alone.py"]
        start = time.time()
        proc = subprocess.run(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"pytest failed (exit {proc.returncode}): {' '.join(cmd[3:])}\n{proc.stdout[-2000:]}")
        return time.time() - start


def show(name: str, r: dict) -> None:
    print(f"  {name:<22} wall {r['wall']:6.1f} s   floor {r['floor']:6.1f} s   wall/floor {r['wall'] / r['floor']:.2f}"
          f"   ({r['tests']} tests, their wall time {r['time']:.1f} s)", flush=True)
    if abs(r["own"] - r["floor"]) > 0.02 * r["floor"]:
        print(f"    floor from the tests' own time (no waits for a CPU): {r['own']:.1f} s, wall/that "
              f"{r['wall'] / r['own']:.2f}")
    probes = r["probes"]
    if probes:
        end = max(p["last"] for p in probes.values())
        for wid, p in sorted(probes.items()):
            print(f"    {wid}: {p['tests']:5d} tests, busy {p['busy']:6.1f} s, idle before the last worker finished "
                  f"{end - p['last']:5.1f} s")
        busy = sum(p["busy"] for p in probes.values()) / r["workers"]
        first = min(p["first"] for p in probes.values())
        print(f"    the tests' time plus the harness's per-test work, per worker: {busy:.1f} s "
              f"({1000 * (busy * r['workers'] - r['time']) / r['tests']:.1f} ms a test over the tests' wall time);"
              f" wall / that: {r['wall'] / busy:.2f}")
        print(f"    start-up until the first test: {first - r['start']:.1f} s; after the last test until the exit: "
              f"{r['end'] - end:.1f} s")
    if r["split"]:
        shown = ", ".join(r["split"][:4]) + (" ..." if len(r["split"]) > 4 else "")
        print(f"    candidates run on both workers: {len(r['split'])} ({shown})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds (default 1)")
    parser.add_argument("--skip-n1", action="store_true", help="only the -n 2 runs")
    parser.add_argument("--only", metavar="IDS", help="only these problems (comma-separated), e.g. 17")
    opts = parser.parse_args()
    data = shared()
    if not (data / "apps_test_rows.jsonl").is_file():
        sys.exit(f"no shared APPS data at {data}; set APPS_SHARED_DATA")
    with tempfile.TemporaryDirectory(prefix="bench-balance-") as tmp:
        work = Path(tmp)
        count = write_candidates(data, work / "gens")
        print(f"{count} candidates on the {data / 'apps_test_rows.jsonl'} rows"
              f"{f' (run: problems {opts.only})' if opts.only else ''}, every test; this process may use "
              f"{len(os.sched_getaffinity(0))} CPUs; load average now {os.getloadavg()[0]:.1f}", flush=True)
        runner = Runner(work, data / "apps_test_rows.jsonl", opts.only)
        on_ratios, off_ratios, n1, least_ratios = [], [], [], []
        same = True
        reference = None
        first_tests: dict = {}
        for round_ in range(1, opts.rounds + 1):
            print(f"\nround {round_} (load average {os.getloadavg()[0]:.1f})", flush=True)
            plan = [(2, "on"), (2, "off")] if round_ % 2 else [(2, "off"), (2, "on")]
            if not opts.skip_n1:
                plan += [(1, "on"), (1, "off")] if round_ % 2 else [(1, "off"), (1, "on")]
            results = {}
            for workers, stealing in plan:
                r = results[(workers, stealing)] = runner.run(workers, stealing)
                show(f"-n {workers}, stealing {stealing}", r)
                reference = reference or r["records"]
                first_tests = first_tests or r["by_test"]
                same = same and r["records"] == reference
                show_differences(f"-n {workers}, stealing {stealing}", r["by_test"], first_tests)
            on, off = results[(2, "on")], results[(2, "off")]
            xdist = runner.alone(on["tests"], 2)
            least = (on["floor"] + xdist) / on["floor"]
            beyond = on["wall"] / (on["floor"] + xdist)
            print(f"  pytest-xdist by itself, {on['tests']} tests that do nothing at -n 2: {xdist:.1f} s "
                  f"({1000 * xdist / on['tests']:.2f} ms a test); so the least wall/floor of any harness made of "
                  f"pytest items: {least:.2f}; stealing on, wall / (floor + that): {beyond:.2f}", flush=True)
            least_ratios.append(least)
            on_ratios.append(on["wall"] / on["floor"])
            off_ratios.append(off["wall"] / off["floor"])
            print(f"  -n 2 wall, stealing on / off: {on['wall'] / off['wall']:.2f}")
            if not opts.skip_n1:
                n1.append(results[(1, "on")]["wall"] / results[(1, "off")]["wall"])
                print(f"  -n 1 wall, stealing on / off: {n1[-1]:.2f}")
        print("\nsummary (medians over rounds)")
        ratio = statistics.median(on_ratios)
        print(f"  -n 2 wall/floor, stealing on:  {ratio:.2f}   target <= {TARGET}   {'ok' if ratio <= TARGET else 'MISSED'}")
        print(f"  -n 2 wall/floor, stealing off: {statistics.median(off_ratios):.2f}")
        print(f"  -n 2 least wall/floor with pytest-xdist's own time per test and nothing else: "
              f"{statistics.median(least_ratios):.2f}")
        if n1:
            print(f"  -n 1 wall, stealing on / off:  {statistics.median(n1):.2f}   target <= 1.00 (within noise)")
        print(f"  every run's per-test records the same: {same}")


if __name__ == "__main__":
    main()
