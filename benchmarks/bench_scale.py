"""Scale benchmark: the whole APPS test split, synthetic, on this machine. Run by hand, never by pytest:

    python benchmarks/bench_scale.py            # the full shape: 5,000 rows, ~106k tests (a few minutes)
    python benchmarks/bench_scale.py --quick    # 1,000 rows, for a smoke run (well under a minute)
    python benchmarks/bench_scale.py --keep DIR # keep the generated dataset and candidates in DIR

It generates, in a temporary folder, a dataset with the shape of ``codeparrot/apps`` split ``test``:
5,000 rows in the hub's JSON Lines schema (problem_id, question, solutions, input_output as a JSON string,
difficulty by id range, starter_code, url), realistic case counts (median ~20, a long tail to a few
hundred, ~106k tests in all), mostly small inputs and a few megabyte-size ones, ~10% call-based. It writes
one cheap candidate program per problem (reads its input, prints something) and, for throughput, a
folder of CPU-bound candidates (a ~20 ms loop per test). Then it measures, printing each figure beside
its target:

1. collection of the full split with every test (``--apps-max-tests 0 --collect-only``): wall time and
   peak memory (ru_maxrss) of the pytest process (this first run builds the problem index, cached in the
   work folder), the same again from the cached index; then the same collection on two xdist workers
   (``-n 2``; the tests are not run), with each worker's collection time and ru_maxrss;
2. time to the first test result for ``--apps-limit 50`` (``-v``; the first PASSED/FAILED line on
   stdout), from a warm start (the second of two runs);
3. throughput (tests/s) with ``-n 1`` and ``-n 2`` on the CPU-bound candidates, and their ratio: in steady
   state (completed tests per second on the controller, from the 10th to the last; start-up and session end
   are fixed costs, printed too, that a longer run amortises). This machine's speed drifts by tens of per
   cent from minute to minute, so ``-n 1`` and ``-n 2`` runs alternate and the figure is the median of
   the ratios of neighbouring runs. After each ``-n 2`` run it also measures the machine's own ceiling:
   two processes running the candidates' busy function against one, without pytest; and a third run in
   each turn, ``-n 2 --apps-cpu-pinning off``, shows what keeping each worker's executor on its own CPU
   gives;
4. the session's end when most tests fail (every cheap candidate's answer is wrong), from the last result to
   the exit, with twice as many failures: pytest's terminal summary, left alone, scans every setup and teardown
   report once per failure (quadratic; hours on the full split); the time per failure must not grow;
5. with --full-run, every test of the split on two workers, cheap candidates: wall time, the end of the
   session, and each process's peak memory.

Memory and per-process times come from a tiny plugin (``-p _bench_probe``) written next to the data: it
records ru_maxrss and collection times in every pytest process, and, when asked, stops the session at its
first item, so that a full-split collection on xdist workers is measured without executing 106k cases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

TARGET_COLLECT_S = 20.0
TARGET_RSS_MB = 500.0
TARGET_FIRST_S = 3.0
TARGET_RATIO = 1.8
TARGET_END_GROWTH = 1.5  # linear: 1; quadratic: 2

PROBE = '''
"""Benchmark probe: records ru_maxrss and collection times of this pytest process (controller or worker)."""
import json, os, resource, time
import pytest

_OUT = os.environ["BENCH_PROBE_DIR"]
_T = {"start": float(os.environ.get("BENCH_T0", time.time()))}


def _role(config):
    wi = getattr(config, "workerinput", None)
    return wi["workerid"] if wi else "main"


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    _T["collect_start"] = time.time()
    yield
    _T["collect_end"] = time.time()
    _T["items"] = len(session.items)


def pytest_xdist_node_collection_finished(node, ids):
    _T.setdefault("nodes", {})[node.gateway.id] = {"time": time.time(), "ids": len(ids)}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if os.environ.get("BENCH_SKIP_RUN"):
        # Only the collection is measured: the first item errors without running, and -x stops the session.
        # (Completing 106k items without running them would measure xdist's loadscope bookkeeping instead,
        # which is quadratic in the number of items: minutes at this size.)
        raise RuntimeError("bench: collection measured, not running")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    _T["loop_start"] = time.time()


def pytest_runtest_logreport(report):
    if report.when == "teardown":  # a test is complete (on the controller: its worker reported it)
        _T.setdefault("done", []).append(time.time())
        node = getattr(report, "node", None)
        _T.setdefault("done_on", []).append(node.gateway.id if node is not None else "-")


def pytest_sessionfinish(session):
    _T["end"] = time.time()
    _T["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _write(session.config)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    # the peak of the whole process, reports and terminal summary included
    _T["maxrss_exit_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _T["exit"] = time.time()
    _write(config)


def _write(config):
    with open(os.path.join(_OUT, _role(config) + ".json"), "w") as fh:
        json.dump(_T, fh)
'''


# ------------------------------------------------------------------------------------------ the data


def tier_of(pid: int) -> str:
    return "interview" if pid < 3000 else "competition" if pid < 4000 else "introductory"


def case_counts(rng: random.Random, n: int) -> list[int]:
    """Median ~20, a long tail to a few hundred, ~21.2 tests per problem on average (~106k for 5,000)."""
    counts = []
    for _ in range(n):
        r = rng.random()
        if r < 0.01:
            counts.append(rng.randint(120, 350))  # the long tail
        elif r < 0.045:
            counts.append(rng.randint(40, 90))
        else:
            counts.append(max(1, round(rng.triangular(3, 30, 20))))
    return counts


def small_input(rng: random.Random, size: int) -> str:
    k = max(1, size // 6)
    return f"{k}\n" + " ".join(str(rng.randint(1, 99999)) for _ in range(k)) + "\n"


def big_input(rng: random.Random, size: int) -> str:
    line = " ".join(str(rng.randint(1, 10**9)) for _ in range(20)) + "\n"
    lines = max(1, size // len(line))
    return f"{lines}\n" + line * lines


def make_row(pid: int, n_cases: int, rng: random.Random, big: dict[int, int]) -> dict:
    call = rng.random() < 0.10
    inputs, outputs = [], []
    for c in range(n_cases):
        if call:
            inputs.append([rng.randint(1, 1000), [rng.randint(1, 50) for _ in range(rng.randint(1, 8))]])
            outputs.append([rng.randint(1, 1000)])
        else:
            size = big.get(c) if c in big else int(rng.lognormvariate(4.5, 1.0))
            inputs.append(big_input(rng, size) if c in big else small_input(rng, size))
            outputs.append(f"{rng.randint(0, 10**6)}\n")
    io = {"inputs": inputs, "outputs": outputs}
    if call:
        io["fn_name"] = "solve"
    question = f"Problem {pid}. " + "Given a list of numbers, compute the answer. " * rng.randint(10, 60)
    solutions = [f"n = int(input())\nprint(sum(map(int, input().split())) % {k + 2})\n" * 4 for k in range(rng.randint(1, 8))]
    return {
        "problem_id": pid,
        "question": question,
        "solutions": json.dumps(solutions),
        "input_output": json.dumps(io),
        "difficulty": tier_of(pid),
        "url": f"https://example.invalid/problem/{pid}",
        "starter_code": "class Solution:\n    def solve(self, n, xs):\n        " if call else "",
    }


CHEAP_STDIN = "import sys\ndata = sys.stdin.buffer.read().split()\nprint(len(data))\n"
CHEAP_CALL = "class Solution:\n    def solve(self, n, xs):\n        return n + len(xs)\n"
BUSY = "def _busy():\n    s = 0\n    for i in range({loops}):\n        s += i * i\n    return s\n"
BUSY_STDIN = BUSY + "import sys\ndata = sys.stdin.buffer.read().split()\n_busy()\nprint(len(data))\n"
BUSY_CALL = BUSY + "class Solution:\n    def solve(self, n, xs):\n        _busy()\n        return n + len(xs)\n"


def generate(folder: Path, rows: int, seed: int = 6) -> dict:
    """Write test.jsonl, candidates/ and busy/ into folder; return the dataset's figures."""
    rng = random.Random(seed)
    counts = case_counts(rng, rows)
    # A few megabyte-size inputs (the real split has problems with inputs of several MB).
    big_problems = {pid: {0: rng.randint(1 << 20, 4 << 20)} for pid in rng.sample(range(rows), max(1, rows // 250))}
    for pid in rng.sample(range(rows), max(1, rows // 25)):  # and some of tens to hundreds of KB
        big_problems.setdefault(pid, {})[1] = rng.randint(20_000, 400_000)
    data = folder / "test.jsonl"
    cands = folder / "candidates"
    busy = folder / "busy"
    cands.mkdir()
    busy.mkdir()
    loops = calibrate_busy_loops(0.020)
    call_ids = 0
    with data.open("w", encoding="utf-8") as out:
        for pid in range(rows):
            row = make_row(pid, counts[pid], rng, big_problems.get(pid, {}))
            call = '"fn_name"' in row["input_output"]
            call_ids += call
            out.write(json.dumps(row) + "\n")
            (cands / f"{pid}.py").write_text(CHEAP_CALL if call else CHEAP_STDIN)
            (busy / f"{pid}.py").write_text((BUSY_CALL if call else BUSY_STDIN).format(loops=loops))
    return {
        "rows": rows,
        "tests": sum(counts),
        "median": statistics.median(counts),
        "max": max(counts),
        "call_based": call_ids,
        "bytes": data.stat().st_size,
        "busy_loops": loops,
    }


def calibrate_busy_loops(seconds: float) -> int:
    """Loops for BUSY's `_busy()` to take `seconds` of CPU as a child runs it: a freshly compiled function,
    called once (median of five)."""
    n = 200_000
    took = []
    for _ in range(5):
        namespace: dict = {}
        exec(compile(BUSY.format(loops=n), "busy.py", "exec"), namespace)
        start = time.process_time()
        namespace["_busy"]()
        took.append(time.process_time() - start)
    return max(10_000, int(n * seconds / statistics.median(took)))


def machine_parallel_ratio(loops: int, calls: int = 60) -> float:
    """How much more CPU-bound work this machine does with two processes than with one, right now: the
    candidates' own busy function, freshly compiled per call as in a child, in one process, then in two."""
    script = (f"import sys\nsrc = {BUSY.format(loops=loops)!r}\nfor _ in range({calls}):\n"
              "    ns = {}\n    exec(compile(src, 'busy.py', 'exec'), ns)\n    ns['_busy']()\n")
    rates = []
    for procs in (1, 2):
        start = time.perf_counter()
        running = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(procs)]
        for p in running:
            p.wait()
        rates.append(procs * calls / (time.perf_counter() - start))
    return rates[1] / rates[0]


# ------------------------------------------------------------------------------------------- the runs


class Runner:
    def __init__(self, work: Path, data: Path) -> None:
        self.work = work
        self.data = data
        self.probe_dir = work / "probe"
        (work / "_bench_probe.py").write_text(textwrap.dedent(PROBE))

    def env(self, skip_run: bool = False) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.work), env.get("PYTHONPATH", "")]))
        env["BENCH_PROBE_DIR"] = str(self.probe_dir)
        env["BENCH_T0"] = repr(time.time())
        env["PYTEST_APPS_CACHE"] = str(self.work / "cache")  # the problem index, removed with the work folder
        env.pop("BENCH_SKIP_RUN", None)
        if skip_run:
            env["BENCH_SKIP_RUN"] = "1"
        return env

    def base(self, candidates: str, *args: str) -> list[str]:
        return [
            sys.executable, "-m", "pytest", "-p", "_bench_probe", "-p", "no:cacheprovider", "-p", "no:benchmark",
            "--apps-dataset", str(self.data), "--apps-candidates", str(self.work / candidates),
            "--apps-report", str(self.work / "report.json"), *args,
        ]

    def run(self, cmd: list[str], skip_run: bool = False) -> tuple[float, dict[str, dict], str]:
        shutil.rmtree(self.probe_dir, ignore_errors=True)
        self.probe_dir.mkdir()
        env = self.env(skip_run)
        start = time.time()
        proc = subprocess.run(cmd, cwd=self.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.time() - start
        probes = {p.stem: json.loads(p.read_text()) for p in self.probe_dir.glob("*.json")}
        allowed = (0, 1, 2, 5) if skip_run else (0, 1, 5)  # 2: xdist reports the -x stop as an interruption
        if proc.returncode not in allowed or "main" not in probes:
            tail = "\n".join(proc.stdout.splitlines()[-15:])
            raise SystemExit(f"pytest failed (exit {proc.returncode}): {' '.join(cmd[3:])}\n{tail}")
        return wall, probes, proc.stdout

    def first_result(self, cmd: list[str]) -> float:
        """Seconds from starting pytest to the first PASSED/FAILED line on its stdout."""
        env = self.env()
        env["PYTHONUNBUFFERED"] = "1"
        start = time.time()
        proc = subprocess.Popen(cmd, cwd=self.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        first = None
        assert proc.stdout is not None
        for line in proc.stdout:
            if first is None and (" PASSED" in line or " FAILED" in line):
                first = time.time() - start
        proc.wait()
        if first is None:
            raise SystemExit(f"no PASSED/FAILED line from: {' '.join(cmd[3:])}")
        return first


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def line(name: str, value: str, target: str, ok: bool | None = None) -> None:
    mark = "" if ok is None else verdict(ok)
    print(f"  {name:<52}{value:>14}   target {target:<10} {mark}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 rows and a shorter throughput run")
    parser.add_argument("--rows", type=int, help="rows to generate (default 5000, or 1000 with --quick)")
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    parser.add_argument("--throughput-problems", type=int, default=None, help="problems in each throughput run")
    parser.add_argument("--full-run", action="store_true",
                        help="also run every test of the split on -n 2 (cheap candidates; several minutes)")
    parser.add_argument("--rounds", type=int, default=None, help="throughput runs of each -n (default 5, or 2 with --quick)")
    opts = parser.parse_args()
    rows = opts.rows or (1000 if opts.quick else 5000)
    tp_problems = opts.throughput_problems or (20 if opts.quick else 60)
    end_problems = 60 if opts.quick else 200

    if opts.keep:
        work = opts.keep.resolve()
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        t = time.time()
        info = generate(work, rows)
        print(
            f"synthetic split: {info['rows']} rows, {info['tests']} tests (median {info['median']:.0f}, max "
            f"{info['max']}), {info['call_based']} call-based, {info['bytes'] / 1e6:.0f} MB jsonl; "
            f"generated in {time.time() - t:.1f} s in {work}",
            flush=True,
        )
        r = Runner(work, work / "test.jsonl")

        print("\n1. collection of the whole split, every test (--apps-max-tests 0)")
        wall, probes, out = r.run(r.base("candidates", "--apps-max-tests", "0", "--collect-only", "-q"))
        main_p = probes["main"]
        items = main_p.get("items", 0)
        line("items collected", f"{items}", f"{info['tests']}", items == info["tests"])
        line("--collect-only, one process: wall", f"{wall:.1f} s", f"< {TARGET_COLLECT_S:.0f} s", wall < TARGET_COLLECT_S)
        plan_s = main_p["collect_start"] - main_p["start"]
        line("  of which start-up + plan (read, select, write)", f"{plan_s:.1f} s", "")
        line("  of which collection of the items", f"{main_p['collect_end'] - main_p['collect_start']:.1f} s", "")
        line("--collect-only, one process: ru_maxrss", f"{main_p['maxrss_mb']:.0f} MB", f"< {TARGET_RSS_MB:.0f} MB", main_p["maxrss_mb"] < TARGET_RSS_MB)
        wall, probes, out = r.run(r.base("candidates", "--apps-max-tests", "0", "--collect-only", "-q"))
        main_p = probes["main"]
        line("the same again, problem index cached: wall", f"{wall:.1f} s", f"< {TARGET_COLLECT_S:.0f} s", wall < TARGET_COLLECT_S)
        line("  of which start-up + plan (from the cached index)", f"{main_p['collect_start'] - main_p['start']:.1f} s", "")

        wall, probes, out = r.run(r.base("candidates", "--apps-max-tests", "0", "-n", "2", "-q", "-x"), skip_run=True)
        ctrl = probes["main"]
        workers = {k: v for k, v in probes.items() if k != "main"}
        nodes = ctrl.get("nodes", {})
        both = max((n["time"] for n in nodes.values()), default=float("nan")) - ctrl["start"]
        line("-n 2: until the controller has both collections", f"{both:.1f} s", f"< {TARGET_COLLECT_S:.0f} s", both < TARGET_COLLECT_S)
        for wid, w in sorted(workers.items()):
            line(f"  {wid}: collection ({w.get('items', 0)} items)", f"{w['collect_end'] - w['collect_start']:.1f} s", "")
            line(f"  {wid}: ru_maxrss", f"{w['maxrss_mb']:.0f} MB", f"< {TARGET_RSS_MB:.0f} MB", w["maxrss_mb"] < TARGET_RSS_MB)
        line("  controller: ru_maxrss", f"{ctrl['maxrss_mb']:.0f} MB", f"< {TARGET_RSS_MB:.0f} MB", ctrl["maxrss_mb"] < TARGET_RSS_MB)
        line("  whole -n 2 session, stopped at the first item: wall", f"{wall:.1f} s", "")

        print("\n2. time to the first test result, --apps-limit 50 (-v, warm start = second run)")
        cmd = r.base("candidates", "--apps-limit", "50", "-v")
        cold = r.first_result(cmd)
        warm = r.first_result(cmd)
        line("first PASSED/FAILED line, cold (first run)", f"{cold:.2f} s", "")
        line("first PASSED/FAILED line, warm", f"{warm:.2f} s", f"< {TARGET_FIRST_S:.0f} s", warm < TARGET_FIRST_S)
        warm2 = r.first_result([*cmd, "-n", "2"])
        line("  the same with -n 2 (warm)", f"{warm2:.2f} s", "")

        rounds = opts.rounds or (2 if opts.quick else 5)
        print(f"\n3. throughput on CPU-bound candidates (~20 ms per test), {tp_problems} problems x ~20 tests;\n"
              f"   -n 1, -n 2 and -n 2 --apps-cpu-pinning off take turns, {rounds} runs of each; a ratio is of two\n"
              f"   neighbouring runs; this process may use {len(os.sched_getaffinity(0))} CPUs (pinning applies to -n 2 only when\n"
              f"   that is 2 or fewer)")
        seq = ["1", "2", "off"] * rounds
        rates, machine = [], []
        for i, n in enumerate(seq):
            extra = ["-n", "2", "--apps-cpu-pinning", "off"] if n == "off" else ["-n", n]
            wall, probes, out = r.run(r.base("busy", "--apps-limit", str(tp_problems), *extra, "-q"))
            ctrl = probes["main"]
            tests = json.loads((work / "report.json").read_text())["summary"]["tests_run"]
            nodes = ctrl.get("nodes", {})
            began = max((v["time"] for v in nodes.values()), default=ctrl["loop_start"])
            done = sorted(ctrl["done"])
            # steady state: from the 10th completed test to the last one (start-up and session end excluded)
            rates.append((len(done) - 10) / (done[-1] - done[9]))
            name = "-n 2, pinning off" if n == "off" else f"-n {n}"
            line(f"run {i + 1}, {name}: {tests} tests, tests/s in steady state", f"{rates[-1]:.1f}", "")
            line("  once collected, session end included / whole wall time",
                 f"{tests / (ctrl['end'] - began):.1f} / {tests / wall:.1f}", "")
            if n == "2":
                machine.append(machine_parallel_ratio(info["busy_loops"]))
                line("  the machine itself now: 2 busy processes / 1 (no pytest)", f"{machine[-1]:.2f}x", "")

        def against_n1(variant: str) -> list[float]:
            """A variant's rate over the -n 1 runs before and after it."""
            out = []
            for i, n in enumerate(seq):
                if n == variant:
                    first = i - seq[i::-1].index("1")
                    out.append(rates[i] / rates[first])
                    if first + 3 < len(seq):
                        out.append(rates[i] / rates[first + 3])
            return out

        ratios = against_n1("2")
        ratio = statistics.median(ratios)
        print(f"  -n 2 / -n 1 of neighbouring runs: {', '.join(f'{x:.2f}' for x in ratios)}")
        line("-n 2 / -n 1, median", f"{ratio:.2f}x", f">= {TARGET_RATIO}x", ratio >= TARGET_RATIO)
        ceiling = statistics.median(machine)
        line("  the machine's own ceiling, median (no pytest)", f"{ceiling:.2f}x", "")
        line("  the harness's share of it (ratio / ceiling)", f"{100 * ratio / ceiling:.0f}%", "")
        line("  -n 2 with --apps-cpu-pinning off / -n 1, median", f"{statistics.median(against_n1('off')):.2f}x", "")
        gains = [rates[i] / rates[i + 1] for i, n in enumerate(seq) if n == "2"]
        line("  what pinning gives: -n 2 / -n 2 pinning off, median", f"{statistics.median(gains):.2f}x", "")

        print("\n4. session end when most tests fail (the terminal's failure summary), -n 2, twice the problems")
        per_failure = []
        for problems in (end_problems, 2 * end_problems):
            wall, probes, out = r.run(r.base("candidates", "--apps-limit", str(problems), "-n", "2", "-q"))
            ctrl = probes["main"]
            failed = json.loads((work / "report.json").read_text())["summary"]["tests_run"]
            end = ctrl["start"] + wall - max(ctrl["done"])
            per_failure.append(end / failed)
            line(f"{problems} problems, {failed} failing tests: after the last result", f"{end:.1f} s", "")
        growth = per_failure[1] / per_failure[0]
        line("end time per failure, twice the failures / once", f"{growth:.2f}x", f"< {TARGET_END_GROWTH}x",
             growth < TARGET_END_GROWTH)

        if opts.full_run:
            print("\n5. every test of the split, -n 2, cheap candidates (most fail): the whole run")
            wall, probes, out = r.run(r.base("candidates", "--apps-max-tests", "0", "-n", "2", "-q"))
            ctrl = probes["main"]
            tests = json.loads((work / "report.json").read_text())["summary"]["tests_run"]
            line(f"{tests} tests: wall", f"{wall:.0f} s", "")
            line("  tests/s, whole run", f"{tests / wall:.0f}", "")
            line("  after the last result, until the exit", f"{ctrl['exit'] - max(ctrl['done']):.1f} s", "")
            for who, p in sorted(probes.items()):
                line(f"  {who}: peak memory (ru_maxrss at exit)", f"{p['maxrss_exit_mb']:.0f} MB", "")
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
