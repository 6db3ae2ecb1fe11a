"""Where people wait, against baselines measured in the same run. Run by hand:

    python benchmarks/bench_latency.py [--runs 5] [--skip-full]

1. Dormant cost: `pytest -q` on one trivial test with the plugin installed (not turned on) against
   `-p no:apps`. Target: at most 50 ms more.
2. A pasted node id: `pytest solutions/17.py::test_0` (an ini holding the dataset, one real row) against a bare
   pytest run of one trivial test. Target: within 0.6 s.
3. `-n 2` on that one problem against pytest-xdist's own `-n 2` start on one trivial test. Target: within 1.5 s.
4. The echo workload (20 problems x 100 tests of `print(input())`) at `-n 2` and `-n 1`: the CPU of every
   process per test, split by process kind (controller, workers, executor servers, zygotes with the programs
   they forked), against the floor: a pytest-xdist item that does nothing (`-n 2`, start-up shared out) plus a
   fork and exit of a warm Python. Target: at most 1.15x, and `-n 2` clearly faster than `-n 1`. Beside it, the
   executor alone (no pytest) on as many tests: what a harness built on it costs before any of the plugin's own.
5. The full run of the real rows (their first reference solution, every test) at `-n 2`: wall time against
   its CPU floor, the programs' own time divided by the CPUs. Target: at most 1.18x. Beside it, pytest-xdist's
   own run of as many items that do nothing, against the same floor: what no harness can go below.

Each figure is the minimum over `--runs` runs, the runs of the two sides alternating, so a shared machine's
drift falls on both. Python's bytecode cache is on (in a folder of its own) as it is for an installed package,
even where the environment turns it off. Wall times are only meaningful on a quiet machine; the CPU times are
printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shareddata import REPO, shared  # noqa: E402

ECHO_PROBLEMS, ECHO_TESTS = 20, 100


def environment(work: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(work / "pyc"), PYTEST_APPS_CACHE=str(work / "cache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Kinds(threading.Thread):
    """Samples /proc while a run goes on: the last CPU figures of each process of the run, by kind. A process's
    own time is utime+stime; a zygote's reaped children (the programs' processes) add its cutime+cstime."""

    def __init__(self, top: int) -> None:
        super().__init__(daemon=True)
        self.top, self.done, self.last = top, threading.Event(), {}

    def run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self.done.is_set():
            table = {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        cmd = f.read()
                except OSError:
                    continue
                table[int(entry)] = (int(fields[1]), cmd, [int(x) / tick for x in fields[11:15]])
            for pid, (ppid, cmd, times) in table.items():
                kind = self.kind(pid, ppid, cmd, table)
                if kind:
                    self.last[pid] = (kind, times)
            self.done.wait(0.05)

    def kind(self, pid: int, ppid: int, cmd: bytes, table: dict) -> str | None:
        if pid == self.top:
            return "controller"
        if not self.below_top(ppid, table):
            return None  # (another run's process: the machine is shared)
        if b"executor/serve.py" in cmd:
            parent = table.get(ppid)
            return "zygote+programs" if parent and b"executor/serve.py" in parent[1] else "server"
        if ppid == self.top:
            return "worker"
        return None

    def below_top(self, pid: int, table: dict) -> bool:
        for _ in range(64):
            if pid == self.top:
                return True
            if pid not in table:
                return False
            pid = table[pid][0]
        return False

    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for kind, (ut, st, cut, cst) in self.last.values():
            out[kind] = out.get(kind, 0.0) + ut + st + (cut + cst if kind == "zygote+programs" else 0.0)
        return out


def timed(cmd: list[str], cwd: Path, env: dict[str, str], kinds: bool = False, ok=(0,)) -> dict:
    """Wall time and the CPU of every process the command started (reaped: RUSAGE_CHILDREN)."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = Kinds(proc.pid) if kinds else None
    if sampler:
        sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    if sampler:
        sampler.done.set()
        sampler.join()
    if proc.returncode not in ok:
        raise SystemExit(f"exit {proc.returncode}: {' '.join(cmd)} (in {cwd})\n" + "\n".join(out.splitlines()[-15:]))
    return {"wall": wall, "cpu": children_cpu() - cpu0, "kinds": sampler.totals() if sampler else {}, "out": out}


def pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def best(runs: int, *commands) -> list[dict]:
    """Each of `commands` (a function giving a result) `runs` times, alternating; the run of least wall time
    of each (its CPU beside it) and the least CPU."""
    results: list[list[dict]] = [[] for _ in commands]
    for _ in range(runs):
        for i, command in enumerate(commands):
            results[i].append(command())
    return [dict(min(r, key=lambda x: x["wall"]), least_cpu=min(x["cpu"] for x in r)) for r in results]


def projects(work: Path, data: Path) -> None:
    bare = work / "bare"
    bare.mkdir()
    (bare / "pytest.ini").write_text("[pytest]\n")
    (bare / "test_one.py").write_text("def test_one():\n    pass\n")
    (bare / "test_many.py").write_text("import pytest\n\n@pytest.mark.parametrize('i', range("
                                       f"{ECHO_PROBLEMS * ECHO_TESTS}))\ndef test_nothing(i):\n    pass\n")
    one = work / "one"
    (one / "solutions").mkdir(parents=True)
    row = next(r for r in map(json.loads, (data / "apps_test_rows.jsonl").open()) if r["problem_id"] == 17)
    (one / "row.jsonl").write_text(json.dumps(row) + "\n")
    (one / "pytest.ini").write_text("[pytest]\napps_dataset = row.jsonl\n")
    (one / "solutions" / "17.py").write_text(json.loads(row["solutions"])[0])
    echo = work / "echo"
    (echo / "solutions").mkdir(parents=True)
    with (echo / "rows.jsonl").open("w") as f:
        for pid in range(ECHO_PROBLEMS):
            ins = [f"{pid} {i}\n" for i in range(ECHO_TESTS)]
            f.write(json.dumps({"problem_id": pid, "question": "echo", "solutions": "[]", "starter_code": "",
                                "difficulty": "introductory", "url": "",
                                "input_output": json.dumps({"inputs": ins, "outputs": ins})}) + "\n")
            (echo / "solutions" / f"{pid}.py").write_text("print(input())\n")
    (echo / "pytest.ini").write_text("[pytest]\napps = true\napps_dataset = rows.jsonl\napps_max_tests = 0\n")


def fork_exit_cpu(env: dict[str, str], n: int = 2000) -> float:
    """CPU per fork and exit of a warm Python (the parent's fork and wait, the child's exit), in seconds."""
    code = ("import os, resource, numpy, unittest.mock\n"
            "def cpu():\n"
            "    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime\n"
            f"t = cpu()\nfor _ in range({n}):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n        os._exit(0)\n"
            "    os.waitpid(pid, 0)\n"
            f"print((cpu() - t) / {n})\n")
    return float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)


EXECUTOR_ALONE = ("import sys\nfrom pytest_apps.executor import Executor, Program\n"
                  "prog = Program('print(input())\\n', 'echo.py')\n"
                  "with Executor() as ex:\n"
                  "    for i in range(int(sys.argv[1])):\n"
                  "        assert ex.run_stdin(prog, f'{i}\\n').stdout == f'{i}\\n'\n")


def executor_alone_cpu(env: dict[str, str], tests: int) -> float:
    """CPU per test of the executor with no pytest around it (the caller, its server, zygote and children, every
    isolation layer): the difference between runs of `tests` + 200 and 200 tests, so that starting it does not
    count."""
    def cpu(n: int) -> float:
        before = children_cpu()
        subprocess.run([sys.executable, "-c", EXECUTOR_ALONE, str(n)], env=env, check=True)
        return children_cpu() - before

    return min(cpu(tests + 200) - cpu(200) for _ in range(2)) / tests


def per_kind(result: dict, tests: int) -> str:
    return ", ".join(f"{k} {v / tests * 1000:.2f}" for k, v in sorted(result["kinds"].items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-full", action="store_true", help="leave out the full run of the real rows")
    ap.add_argument("--parts", default="1,2,3,4,5", help="which of the five figures to measure (default all)")
    args = ap.parse_args()
    data = shared()
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        work = Path(tmp)
        env = environment(work)
        projects(work, data)
        bare, one, echo = work / "bare", work / "one", work / "echo"
        timed(pytest("test_one.py"), bare, env)  # fills the bytecode cache
        timed(pytest("solutions/17.py::test_0"), one, env)

        parts = {int(p) for p in args.parts.split(",")} - ({5} if args.skip_full else set())
        if 1 in parts:
            dormant(args.runs, bare, env)
        if 2 in parts:
            pasted(args.runs, one, bare, env)
        if 3 in parts:
            started(args.runs, one, bare, env)
        if 4 in parts:
            echo_workload(args.runs, work, bare, echo, env)
        if 5 in parts:
            full_run(work, data, env)


def dormant(runs: int, bare: Path, env: dict[str, str]) -> None:
    print("1. dormant: pytest -q on one trivial test")
    plain, off = best(runs, lambda: timed(pytest("test_one.py"), bare, env),
                      lambda: timed(pytest("-p", "no:apps", "test_one.py"), bare, env))
    print(f"   installed {plain['wall']:.3f} s (CPU {plain['least_cpu']:.3f} s), -p no:apps {off['wall']:.3f} s "
          f"(CPU {off['least_cpu']:.3f} s): +{(plain['wall'] - off['wall']) * 1000:.0f} ms wall, "
          f"+{(plain['least_cpu'] - off['least_cpu']) * 1000:.0f} ms CPU (target 50 ms)")



def pasted(runs: int, one: Path, bare: Path, env: dict[str, str]) -> None:
    print("2. a pasted node id against a bare pytest run of one trivial test")
    node, base = best(runs, lambda: timed(pytest("solutions/17.py::test_0"), one, env),
                      lambda: timed(pytest("test_one.py"), bare, env))
    print(f"   node id {node['wall']:.2f} s (CPU {node['least_cpu']:.2f} s), bare {base['wall']:.2f} s "
          f"(CPU {base['least_cpu']:.2f} s): +{node['wall'] - base['wall']:.2f} s (target 0.6 s)")



def started(runs: int, one: Path, bare: Path, env: dict[str, str]) -> None:
    print("3. -n 2 on one problem against pytest-xdist's own -n 2 start")
    two, xd = best(runs, lambda: timed(pytest("-n", "2", "solutions/17.py"), one, env),
                   lambda: timed(pytest("-n", "2", "test_one.py"), bare, env))
    print(f"   -n 2 one problem {two['wall']:.2f} s (CPU {two['least_cpu']:.2f} s), xdist alone "
          f"{xd['wall']:.2f} s (CPU {xd['least_cpu']:.2f} s): +{two['wall'] - xd['wall']:.2f} s (target 1.5 s)")



def echo_workload(runs: int, work: Path, bare: Path, echo: Path, env: dict[str, str]) -> None:
    tests = ECHO_PROBLEMS * ECHO_TESTS
    print(f"4. echo workload, {ECHO_PROBLEMS} problems x {ECHO_TESTS} tests of print(input()), CPU per test")
    fork = min(fork_exit_cpu(env) for _ in range(3))
    report = work / "echo.json"
    e2, e1, nothing = best(
        max(2, runs // 2),
        lambda: timed(pytest("-n", "2", "--apps-report", str(report)), echo, env, kinds=True),
        lambda: timed(pytest("-p", "no:xdist", "--apps-report", str(report)), echo, env, kinds=True),
        lambda: timed(pytest("-n", "2", "-p", "no:apps", "test_many.py"), bare, env, kinds=True))
    own = sum(t["time"] for p in json.loads(report.read_text())["problems"] for t in p["tests"]) / tests
    floor = nothing["least_cpu"] / tests + fork
    for name, r in (("-n 2", e2), ("-n 1", e1)):
        cpu = r["least_cpu"] / tests
        print(f"   {name}: {cpu * 1000:.2f} ms per test ({cpu / floor:.2f}x the floor; target 1.15x at -n 2), "
              f"wall {r['wall']:.1f} s; by kind (ms): {per_kind(r, tests)}")
    print(f"   floor {floor * 1000:.2f} ms = xdist item doing nothing {nothing['least_cpu'] / tests * 1000:.2f} ms "
          f"(by kind: {per_kind(nothing, tests)}) + fork and exit of a warm Python {fork * 1000:.2f} ms; "
          f"the programs' own time {own * 1000:.2f} ms per test")
    print(f"   -n 2 against -n 1 wall: {e2['wall'] / e1['wall']:.2f}")
    alone = executor_alone_cpu(env, tests)
    least = nothing["least_cpu"] / tests + alone
    print(f"   the executor alone (no pytest: its caller, server, zygote, children and every isolation layer) "
          f"{alone * 1000:.2f} ms per test, {alone / fork:.2f}x a fork and exit; with the xdist item doing nothing "
          f"that is {least * 1000:.2f} ms, {least / floor:.2f}x the floor, before any cost of the plugin's own")



def full_run(work: Path, data: Path, env: dict[str, str]) -> None:
    print("5. the real rows, first reference solution, every test, -n 2: wall time against the CPU floor")
    full = work / "full.json"
    rows = data / "apps_test_rows.jsonl"
    r = timed(pytest("-n", "2", "--apps-dataset", str(rows), "--apps-candidates", "reference", "--apps-samples", "1",
                     "--apps-max-tests", "0", "--apps-report", str(full), "--rootdir", str(work)),
              work, env, ok=(0, 1))
    times = [t["time"] for p in json.loads(full.read_text())["problems"] for t in p["tests"]]
    own, cpus = sum(times), min(2, len(os.sched_getaffinity(0)))
    floor = own / cpus
    print(f"   wall {r['wall']:.1f} s, CPU floor {floor:.1f} s (programs' own time {own:.1f} s over "
          f"{cpus} CPUs, {len(times)} tests): {r['wall'] / floor:.2f}x (target 1.18x); all processes' CPU "
          f"{r['cpu']:.1f} s")
    # what pytest-xdist itself costs for as many items, each doing nothing: no harness can go below it
    bare = work / "bare"
    (bare / "test_as_many.py").write_text("import pytest\n\n@pytest.mark.parametrize('i', range("
                                          f"{len(times)}))\ndef test_nothing(i):\n    pass\n")
    xd = timed(pytest("-n", "2", "-p", "no:apps", "test_as_many.py"), bare, env)
    print(f"   pytest-xdist alone, {len(times)} items doing nothing at -n 2: wall {xd['wall']:.1f} s "
          f"({xd['wall'] / floor:.2f}x the same floor), CPU {xd['cpu']:.1f} s")


if __name__ == "__main__":
    main()
