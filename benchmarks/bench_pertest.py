"""The harness's own CPU per test, by process kind and by step (run by hand, not by pytest):

    python benchmarks/bench_pertest.py [--tests 2000] [--rounds 3] [--without private-tmp,landlock,ipc-ns,seccomp,own-uid,cgroup-per-test] [--baseline DIR]
        [--call]

Runs `--tests` tests of `print(input())` through `Executor` directly (no pytest), `--rounds` times, and prints
the least CPU per test of each process kind:

- client: the caller's process (the pytest worker's side: framing, the Outcome);
- server: the executor server (the protocol, the work folders, watching the child, cleaning up after it);
- zygote: forking each child and reaping it;
- child setup: the forked child until its test arrives (copy-on-write faults, fencing, limits);
- child program: what the child reports as the program's own CPU (its code and its interpreter's finish);
- child exit: the rest of the child's CPU (closing its files, tearing its memory down);

against the floor measured in the same run: a fork and exit of a warm Python. Then the server's and the zygote's
steps (CPU per test of each, inclusive of the steps inside it), from a copy of the server started through a
wrapper that times them. `--without` repeats the kinds with isolation layers left out, to show what each costs
(a measurement only: the executor itself has no switch to leave a layer out), through the timed copy, beside a
round of the timed copy with every layer on (the copy's timers cost CPU of their own). `--baseline DIR` runs the same rounds
with the executor server of another checkout (this checkout's client talks to it), alternating with this one's;
`--call` adds rounds of call-based tests of a function that returns its argument.

The split of the child's CPU comes from the wrapper too (a line the child writes to its report before the
program runs); the server's and zygote's figures from /proc/<pid>/schedstat (nanoseconds), the children's from
the zygote's cutime and cstime (clock ticks: the totals over many tests are what count).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_latency import fork_exit_cpu  # noqa: E402

from pytest_apps.executor import Executor, Limits, Program  # noqa: E402
from pytest_apps.executor import client as client_module  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

# The wrapper the server is started through: the executor's own modules, with timers around the steps, and the
# chosen layers left out. Its figures are written to a file when the server (and, for its own, the zygote) ends.
WRAPPER = r'''
import os, sys, time, types, json, resource
package = types.ModuleType("_apps_executor")
package.__path__ = [{folder!r}]
sys.modules[package.__name__] = package
from _apps_executor import server, zygote, child, isolation, fence, workdirs, protocol, clock, reaper
OUT, WITHOUT = {out!r}, {without!r}
totals = {{}}

def timed(owner, name, label=None):
    real = getattr(owner, name)
    label = label or name
    def wrapper(*args, **kwargs):
        t = time.thread_time_ns()
        try:
            return real(*args, **kwargs)
        finally:
            e = totals.setdefault(label, [0, 0])
            e[0] += time.thread_time_ns() - t
            e[1] += 1
    setattr(owner, name, wrapper)

if "private-tmp" in WITHOUT:
    isolation.Layers.setup_private_tmp = lambda self, dirs, size: None
if "landlock" in WITHOUT:
    fence.landlock_abi = lambda: 0
real_setup = isolation.Layers.setup
def setup(self, *args, **kwargs):
    real_setup(self, *args, **kwargs)
    if "ipc-ns" in WITHOUT:
        self.ipc = False
    if "seccomp" in WITHOUT:
        self.seccomp = False
    if "own-uid" in WITHOUT:
        self.uid = None
    if "cgroup-per-test" in WITHOUT and self.cgroups.available:
        self.cgroups.close()
        self.cgroups = type(self.cgroups)()
isolation.Layers.setup = setup

for name in ("recv_frame", "send_frame", "outcome", "last_words", "drain", "read_ready"):  # (where it has one)
    if hasattr(server, name):
        timed(server, name, "server." + name)
for name in ("run", "settle", "after_run", "_live_spare", "_watch", "_wait", "_request_spare", "_sweep",
             "_exit_status", "_drain"):
    if hasattr(server.Server, name):
        timed(server.Server, name, "server." + name)
timed(server.Compiler, "get", "server.compile_lookup")
timed(server, "send_go", "server.send_go")
timed(server.workdirs.WorkDirs, "take", "server.workdir_take")
timed(server.workdirs.WorkDirs, "recycle", "server.workdir_recycle")
timed(server.OwnClock, "start", "server.clock_start")
timed(server.OwnClock, "finish", "server.clock_finish")
timed(server.OwnClock, "count_exact", "server.clock_count_exact")
timed(server, "kill_group", "server.kill_group")
timed(server.Probe, "take", "server.speed_probe")
timed(server.os, "memfd_create", "server.memfd_create")
timed(server.os, "pipe2", "server.pipe2")
timed(server.socket, "send_fds", "server.send_fds")
timed(server.os, "pidfd_open", "server.pidfd_open")

child_setup = [0, 0]
setup_seen = []  # the last child's setup CPU (seconds), read from its report before its program's line
forked = [0.0, 0]
real_spare_main = zygote.spare_main
def spare_main(cfg, fds, parent, maxfd):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    forked[:] = [ru.ru_utime + ru.ru_stime, ru.ru_minflt]
    real_spare_main(cfg, fds, parent, maxfd)
zygote.spare_main = spare_main
real_child_main = child.child_main
def child_main(req, code, args_blob, main, limits_applied):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    child.write_all(3, b'{{"kind": "bench", "setup": %r, "forked": %r, "faults": %d, "forked_faults": %d}}\n' % (
        ru.ru_utime + ru.ru_stime, forked[0], ru.ru_minflt, forked[1]))
    real_child_main(req, code, args_blob, main, limits_applied)
child.child_main = child_main
real_finish = child._finish
def finish(status):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    child.write_all(3, b'{{"kind": "bench_program", "cpu": %r}}\n' % (ru.ru_utime + ru.ru_stime))
    real_finish(status)
child._finish = finish

real_outcome = server.outcome
def outcome(end):
    for line in bytes(end.rep).split(b"\n"):
        if line.startswith(b'{{"kind": "bench"'):
            b = json.loads(line)
            setup_seen[:] = [b["setup"]]
            child_setup[0] += round(b["setup"] * 1e9)
            child_setup[1] += 1
            for key, value in (("child.setup: fork's return", b["forked"] * 1e9),
                               ("child.setup: faults (count)", b["faults"] * 1e6),
                               ("child.setup: fork's return faults (count)", b["forked_faults"] * 1e6)):
                e = totals.setdefault(key, [0, 0])
                e[0] += round(value)
                e[1] += 1
        elif line.startswith(b'{{"kind": "bench_program"'):  # the child's CPU when the program ends, less its setup
            e = totals.setdefault("child.program", [0, 0])
            e[0] += round(json.loads(line)["cpu"] * 1e9) - round(setup_seen[-1] * 1e9 if setup_seen else 0)
            e[1] += 1
    return real_outcome(end)
server.outcome = outcome

zygote_totals = {{}}
real_fork = zygote.fork_without_hooks
def fork():
    t = time.thread_time_ns()
    pid = real_fork()
    if pid != 0:
        e = zygote_totals.setdefault("zygote.fork", [0, 0])
        e[0] += time.thread_time_ns() - t
        e[1] += 1
    return pid
zygote.fork_without_hooks = fork
real_reap = zygote._reap
def reap(ended, pid, flags):
    t = time.thread_time_ns()
    try:
        return real_reap(ended, pid, flags)
    finally:
        e = zygote_totals.setdefault("zygote.reap", [0, 0])
        e[0] += time.thread_time_ns() - t
        e[1] += 1
zygote._reap = reap
real_serve = zygote._serve
def serve(ctl, maxfd):
    t = time.thread_time_ns()
    try:
        real_serve(ctl, maxfd)
    finally:
        zygote_totals["zygote.all"] = [time.thread_time_ns() - t, 1]
        with open(OUT + ".zygote", "w") as f:
            json.dump(zygote_totals, f)
zygote._serve = serve

try:
    server.main()
finally:
    totals["child.setup"] = child_setup
    with open(OUT, "w") as f:
        json.dump(totals, f)
'''


def schedstat_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def children_ticks(pid: int) -> float:
    """Seconds of CPU of `pid`'s reaped children (cutime + cstime)."""
    fields = stat_fields(pid)
    return (int(fields[13]) + int(fields[14])) / TICK


def stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: fields[7] is minflt, [8] its reaped children's (cminflt)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def faults(pid: int) -> tuple[int, int]:
    """Minor (copy-on-write, first touch) page faults of `pid` and of its reaped children: counts, not times, so
    the same on a busy machine as on a quiet one."""
    fields = stat_fields(pid)
    return int(fields[7]), int(fields[8])


def own_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def one_round(tests: int, wrapper: Path | None, out: Path | None, call: bool = False) -> dict:
    """CPU seconds per test by kind, for `tests` echo tests on a fresh executor (started and warmed first), its
    server started through `wrapper` when given; with `call`, call-based tests of `def f(x): return x`."""
    saved = client_module.SERVER_SCRIPT
    if wrapper is not None:
        client_module.SERVER_SCRIPT = str(wrapper)
    try:
        ex = Executor(Limits(timeout=4))
        prog = Program("def f(x):\n    return x\n" if call else "print(input())\n", "echo.py")

        def run(i: int) -> tuple[object, str]:
            if call:
                o = ex.run_call(prog, "f", [i])
                return o, o.value_json == str(i)
            o = ex.run_stdin(prog, f"{i}\n")
            return o, o.stdout == f"{i}\n"

        for i in range(50):  # warm: the program compiled, the spares forked, the folders made
            run(i)
        stats = ex._stats()
        server_pid, zygote_pid = stats["pid"], stats["zygote"]
        s0, z0, c0, me0 = schedstat_ns(server_pid), schedstat_ns(zygote_pid), children_ticks(zygote_pid), own_cpu()
        sf0, zf0 = faults(server_pid)[0], faults(zygote_pid)
        program = 0.0
        for i in range(tests):
            o, right = run(i)
            if not right:
                raise SystemExit(f"wrong output at test {i}: {o}")
            program += o.cpu_time
        me1 = own_cpu()
        ex._stats()  # the last test's end is settled
        s1, z1, c1 = schedstat_ns(server_pid), schedstat_ns(zygote_pid), children_ticks(zygote_pid)
        sf1, zf1 = faults(server_pid)[0], faults(zygote_pid)
        layers = ex.isolation()
        ex.close()
    finally:
        client_module.SERVER_SCRIPT = saved
    res = {"client": (me1 - me0) / tests, "server": (s1 - s0) / 1e9 / tests, "zygote": (z1 - z0) / 1e9 / tests,
           "children": (c1 - c0) / tests, "program (clock)": program / tests, "layers": layers,
           "server faults": (sf1 - sf0) / tests, "zygote faults": (zf1[0] - zf0[0]) / tests,
           "children faults": (zf1[1] - zf0[1]) / tests}
    if out is not None and out.exists():
        res["steps"] = json.loads(out.read_text())
        zyg = Path(str(out) + ".zygote")
        if zyg.exists():
            res["steps"].update(json.loads(zyg.read_text()))
    return res


def write_wrapper(work: Path, name: str, without: list[str]) -> tuple[Path, Path]:
    out = work / f"{name}.json"
    path = work / f"{name}.py"
    folder = os.path.dirname(os.path.abspath(client_module.SERVER_SCRIPT))
    path.write_text(WRAPPER.format(folder=folder, out=str(out), without=without))
    return path, out


def least(results: list[dict]) -> dict:
    keys = ("client", "server", "zygote", "children", "program (clock)", "server faults", "zygote faults",
            "children faults")
    return {k: min(r[k] for r in results) for k in keys} | {"layers": results[0]["layers"]}


def show_kinds(name: str, r: dict, floor: float) -> None:
    total = r["client"] + r["server"] + r["zygote"] + r["children"]
    print(f"  {name}: {total * 1e3:.2f} ms per test ({total / floor:.2f}x the floor): client {r['client'] * 1e3:.2f}, "
          f"server {r['server'] * 1e3:.2f}, zygote {r['zygote'] * 1e3:.2f}, children {r['children'] * 1e3:.2f} "
          f"(programs' own time by the clock {r['program (clock)'] * 1e3:.2f})")
    print(f"    page faults per test: server {r['server faults']:.1f}, zygote {r['zygote faults']:.1f}, children "
          f"{r['children faults']:.1f}; layers: {', '.join(r['layers'])}")


def show_steps(steps: dict, tests: int) -> None:
    setup = steps.get("child.setup", [0, 1])
    n = max(setup[1], 1)
    for label, (ns, count) in sorted(steps.items(), key=lambda kv: -kv[1][0]):
        if label == "zygote.all":
            continue
        per = ns / 1e6 / n if label.startswith("child.") else ns / 1e6 / tests
        unit = "per test" if "(count)" in label else "ms per test"  # (counts are kept as millionths)
        print(f"    {label:28s} {per:7.3f} {unit}  ({count} calls)")
    if "zygote.all" in steps:
        print(f"    {'zygote (all of its loop)':28s} {steps['zygote.all'][0] / 1e6 / tests:7.3f} ms per test (from the "
              f"warm-up on)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--without", default="", help="layers to leave out in extra rounds: private-tmp, landlock, ipc-ns, seccomp, own-uid, cgroup-per-test")
    ap.add_argument("--call", action="store_true", help="also rounds of call-based tests (`def f(x): return x`)")
    ap.add_argument("--baseline", default="", help="another checkout whose executor server runs the same rounds "
                                                   "(its client is this one's): before and after in one run")
    args = ap.parse_args()
    env = dict(os.environ)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}, "
          f"{args.tests} tests of print(input()) per round, least of {args.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="bench-pertest-") as tmp:
        work = Path(tmp)
        configs: list[tuple[str, Path | None, list[str]]] = [("as shipped", None, [])]
        if args.baseline:
            configs.append((f"baseline ({args.baseline})", Path(args.baseline).resolve() / "pytest_apps" / "executor"
                            / "serve.py", []))
        layers = [layer for layer in args.without.split(",") if layer]
        if layers:  # the rounds without a layer run through the timed copy: compare them with it, every layer on
            configs.append(("timed copy, every layer", None, ["(none)"]))
        for layer in layers:
            configs.append((f"without {layer}", None, [layer]))
        results: dict[str, list[dict]] = {name: [] for name, _, _ in configs}
        steps: dict = {}
        calls: dict[str, list[dict]] = {}
        forks = []
        for r in range(args.rounds):
            forks.append(fork_exit_cpu(env, 1000))
            for i, (name, script, without) in enumerate(configs):
                if without:
                    results[name].append(one_round(args.tests, *write_wrapper(work, f"w{r}-{i}", without)))
                else:
                    results[name].append(one_round(args.tests, script, None))
                if not without and args.call:
                    calls.setdefault(name, []).append(one_round(args.tests, script, None, call=True))
            wrapped = one_round(args.tests, *write_wrapper(work, f"steps{r}", []))
            if not steps or sum(v[0] for v in wrapped["steps"].values()) < sum(v[0] for v in steps.values()):
                steps = wrapped["steps"]
        floor = min(forks)
        print(f"floor: a fork and exit of a warm Python {floor * 1e3:.2f} ms of CPU")
        print("CPU per test by process kind:")
        for name, _, _ in configs:
            show_kinds(name, least(results[name]), floor)
        for name, rounds in calls.items():
            show_kinds(f"{name}, call-based", least(rounds), floor)
        print("steps (CPU per test, from the timed copy of the server; nested steps are inside their callers; the "
              "child's from its reports):")
        show_steps(steps, args.tests)
        if "child.setup" in steps:
            k = least(results["as shipped"])
            setup = steps["child.setup"][0] / 1e9 / max(steps["child.setup"][1], 1)
            prog = steps.get("child.program", [0, 1])[0] / 1e9 / max(steps.get("child.program", [0, 1])[1], 1)
            print(f"    child exit (children's CPU less setup and program) {(k['children'] - setup - prog) * 1e3:7.3f}"
                  f" ms per test")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
