"""The same verdicts on a saturated machine: CPU-bound, memory-bound and mixed programs at 65% and 160% of the limit.

Each round runs the workload calm, beside 2 and 4 CPU-bound neighbours and beside a memory-bandwidth neighbour
(started and stopped here, by pid), at -n 1 and -n 2, twice: with the speed credit (the executor's probe) and
with the old measure (plain own time: the probe pinned at x1.0 through PYTEST_APPS_SPEED_FACTOR). Per run it
prints the slowdown range the probe saw, how many tests that should pass ran for the limit or longer in plain own
time (the old measure applied to that very run: in the new measure's runs, the verdicts the credit kept), and the
per-test verdict differences against the expected verdicts (65% passes, 160% times out); rounds repeat so that the
host's slow spells, which come and go, are met.
With --overhead, the real rows and model programs (--max-tests, -n 2) alternately with the probe and pinned at
x1.0, for the probe's wall-time cost on a quiet machine. With --watch MINUTES, it waits for the host's slow spells
instead of making load of its own: it samples the reference loop's rate every few seconds for that long, prints
the machine's speed over time (a line a minute: the slowest and fastest sample against the quiet rate), and when
two samples in a row find the machine --spell times slower than quiet or more, runs the workload calm at -n 1
and -n 2 with both measures at once (the old measure first at every other spell), the run's own lines as in a
round. With --watch MINUTES --paired, no trigger: for that long the workload runs back to back at -n 1 with the
two measures at the same time, side by side, so that a spell too brief for the trigger still meets both.

    python benchmarks/bench_saturated.py [--rounds 3] [--timeout 1] [--quick] [--overhead]
    python benchmarks/bench_saturated.py --watch 120 [--spell 1.3] [--every 5]
    python benchmarks/bench_saturated.py --watch 120 --paired
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
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pytest_apps.executor import speed  # noqa: E402

# a program is a fixed amount of work: `reps` repetitions of a loop whose quiet-machine rate is measured here
CPU_LOOP = "def step(n):\n    t = 0\n    for i in range(n):\n        t = (t + i * i) % 1000003\n    return t\n"
MEM_LOOP = ("import array\nA = array.array('q', range(1 << 22))\n"
            "def step(n):\n    t, m, j = 0, len(A) - 1, 1\n    for _ in range(n):\n"
            "        j = (j * 1103515245 + 12345) & m\n        t += A[j]\n    return t\n")
CHUNK = 20000


def program(loop: str, reps: int, sleep: float) -> str:
    return (f"import time\n{loop}time.sleep({sleep})\nfor _ in range({reps}):\n    step({CHUNK})\n"
            "print('done')\n")


def rate(loop: str) -> float:
    """Chunks per CPU second on this machine, the fastest of several samples (the quiet figure)."""
    scope: dict = {}
    exec(loop, scope)
    best = 0.0
    for _ in range(7):
        t = time.thread_time()
        scope["step"](CHUNK)
        best = max(best, 1 / max(time.thread_time() - t, 1e-9))
    return best


def workload(limit: float) -> dict[str, tuple[str, bool]]:
    """name -> (program, passes): 65% and 160% of the limit, CPU-bound, memory-bound and mixed."""
    cpu, mem = rate(CPU_LOOP), rate(MEM_LOOP)
    out = {}
    for share in (0.65, 1.6):
        need = share * limit
        out[f"cpu-{share:.0%}"] = (program(CPU_LOOP, max(1, round(need * cpu)), 0.0), share < 1)
        out[f"mem-{share:.0%}"] = (program(MEM_LOOP, max(1, round(need * mem)), 0.0), share < 1)
        # compute plus sleep: a third of the time asleep
        out[f"mixed-{share:.0%}"] = (program(CPU_LOOP, max(1, round(need * 2 / 3 * cpu)), need / 3), share < 1)
    return out


FIRST_ID = 910000  # the workload's problem ids: FIRST_ID + the program's place in it


def name_of(problem: dict, names: list[str]) -> str:
    """The workload program a report's problem ran."""
    return names[int(problem["id"]) - FIRST_ID]


def write_project(folder: Path, programs: dict[str, tuple[str, bool]], copies: int) -> list[str]:
    names = []
    rows = []
    for k, (name, (source, _)) in enumerate(programs.items()):
        pid = FIRST_ID + k
        rows.append({"problem_id": pid, "question": name, "solutions": "", "difficulty": "interview", "url": "",
                     "starter_code": "",
                     "input_output": json.dumps({"inputs": ["\n"] * copies, "outputs": ["done\n"] * copies})})
        (folder / "cands").mkdir(exist_ok=True)
        (folder / "cands" / f"{pid}.py").write_text(source)
        names.append(name)
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return names


@contextmanager
def neighbours(kind: str, count: int):
    code = {"cpu": "while True:\n    pass\n",
            "mem": "import numpy as np\na = np.ones(1 << 24)\nb = np.empty_like(a)\nwhile True:\n"
                   "    np.copyto(b, a)\n    np.copyto(a, b)\n"}[kind]
    procs = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True) for _ in range(count)]
    time.sleep(0.3)
    try:
        yield
    finally:
        for p in procs:  # ours, by pid
            p.kill()
            p.wait()


def launch(folder: Path, workers: str, timeout: float, pinned: str | None, extra: list[str] = ()):
    """Start the workload in `folder` (its report there); `finish` waits for it."""
    env = dict(os.environ)
    env.pop(speed.ENV, None)
    if pinned:
        env[speed.ENV] = pinned
    report = folder / "report.json"
    report.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                             "--apps-report", str(report), "--apps-timeout", str(timeout), "-n", workers, *extra],
                            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, time.perf_counter(), report


def finish(started) -> tuple[float, dict]:
    proc, start, report = started
    proc.wait()
    return time.perf_counter() - start, json.loads(report.read_text())


def run(folder: Path, workers: str, timeout: float, pinned: str | None, extra: list[str] = ()) -> tuple[float, dict]:
    return finish(launch(folder, workers, timeout, pinned, extra))


def differences(doc: dict, names: list[str], programs: dict) -> list[str]:
    out = []
    for p in doc["problems"]:
        name = name_of(p, names)
        want = "pass" if programs[name][1] else "timeout"
        bad = [t for t in p["tests"] if t["kind"] != want]
        if bad:
            t = bad[0]  # its figures say what slowed: the CPU (CPU time up) or the rest (own time beyond CPU + sleep)
            out.append(f"{name}: {len(bad)}/{len(p['tests'])} {t['kind']} (own {t['time']:.2f} s, CPU "
                       f"{t['cpu_time']:.2f} s, wall {t['wall_time']:.2f} s)")
    return out


RUN_COLUMNS = (f"{'round':<6}{'condition':<10}{'-n':<4}{'measure':<9}{'wall s':>8}{'slowdown seen':>16}"
               f"{'credited':>9}{'confirmed':>10}{'65% CPU':>14}{'plain>lim':>10}{'diffs':>6}  differing tests")


def peak_cpu(doc: dict, names: list[str], programs: dict, limit: float) -> tuple[float, str]:
    """The most CPU time a test of the programs sized at 65% of the limit took, as a share of the limit (how near
    a slow CPU brought them to it: at 1.0 the old measure times them out), and its program's kind."""
    shares = []
    for p in doc["problems"]:
        name = name_of(p, names)
        if programs[name][1]:
            shares += [(t["cpu_time"] / limit, name.split("-")[0]) for t in p["tests"]]
    return max(shares, default=(0.0, "-"))


def plain_over(doc: dict, names: list[str], programs: dict, limit: float) -> int:
    """How many tests of the programs that should pass ran, in this very run, for as long as the limit or longer in
    plain own time (their CPU time not divided by the slowdown credited): the old measure's timeouts among them had
    it judged these same runs. Under the old measure itself they are its differing verdicts."""
    def plain(t: dict) -> float:
        factor = t.get("speed_factor") or 1.0
        return t["time"] + min(t["cpu_time"], t["time"] * factor) * (1 - 1 / factor)
    return sum(plain(t) >= limit for p in doc["problems"] if programs[name_of(p, names)][1] for t in p["tests"])


WORKLOAD = ["--apps-dataset", "rows.jsonl", "--apps-candidates", "cands"]


def run_line(rnd: object, label: str, workers: str, measure: str, wall: float, doc: dict, opts, names: list[str],
             programs: dict, totals: dict[str, int]) -> list[str]:
    """Print one run's line, add its differing verdicts (and, for the new measure, the tests plain own time would
    have timed out) to `totals`; the differing tests."""
    diffs = differences(doc, names, programs)
    totals[measure] += len(diffs)
    s = doc["summary"]
    seen = s.get("speed_range")
    seen_text = "-" if not seen else f"x{seen[0]:.2f}-x{seen[1]:.2f}"
    peak = peak_cpu(doc, names, programs, opts.timeout)
    over = plain_over(doc, names, programs, opts.timeout)
    if measure == "new":
        totals["plain"] = totals.get("plain", 0) + over
    print(f"{rnd!s:<6}{label:<10}{workers:<4}{measure:<9}{wall:>8.1f}{seen_text:>16}"
          f"{s.get('speed_credited', 0):>9}{s.get('confirmations', 0):>10}{peak[0]:>8.2f} {peak[1]:<5}{over:>10}"
          f"{len(diffs):>6}  {'; '.join(diffs)}", flush=True)
    return diffs


def both_measures(folder: Path, opts, names: list[str], programs: dict, rnd: object, label: str,
                  totals: dict[str, int], old_first: bool = False) -> None:
    """The workload at -n 1 and -n 2, each with the speed credit and with the old measure (the old first when
    `old_first`: a brief spell meets the first run more often): a line per run."""
    measures = [("new", None), ("old", "1.0")]
    for workers in ("1", "2"):
        for measure, pinned in (measures[::-1] if old_first else measures):
            wall, doc = run(folder, workers, opts.timeout, pinned, WORKLOAD)
            run_line(rnd, label, workers, measure, wall, doc, opts, names, programs, totals)


def side_by_side(folders: dict[str, Path], opts, names: list[str], programs: dict, rnd: object,
                 totals: dict[str, int]) -> None:
    """The workload at -n 1 with the speed credit and with the old measure at the same time, each in its own
    folder, so that whatever the host does meets both: a line per run, and the pair counted in `totals` when the
    old measure's verdicts differ and the credit's do not (a flip the credit repaired)."""
    started = {measure: launch(folders[measure], "1", opts.timeout, pinned, WORKLOAD)
               for measure, pinned in (("new", None), ("old", "1.0"))}
    diffs = {}
    for measure in ("new", "old"):
        wall, doc = finish(started[measure])
        diffs[measure] = run_line(rnd, "paired", "1", measure, wall, doc, opts, names, programs, totals)
    if diffs["old"] and not diffs["new"]:
        totals["repaired"] = totals.get("repaired", 0) + 1


def introduce(opts) -> dict[str, tuple[str, bool]]:
    programs = workload(opts.timeout)
    print(f"limit {opts.timeout:g} s; programs at 65% and 160% of it (CPU-bound, memory-bound, mixed), "
          f"{opts.copies} tests each; load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    return programs


def saturated(opts) -> None:
    programs = introduce(opts)
    conditions = [("calm", None, 0), ("2 cpu", "cpu", 2), ("4 cpu", "cpu", 4), ("membw", "mem", 1)]
    if opts.quick:
        conditions = [conditions[0], conditions[2]]
    print(RUN_COLUMNS)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        names = write_project(folder, programs, opts.copies)
        totals: dict[str, int] = {"new": 0, "old": 0}
        for rnd in range(1, opts.rounds + 1):
            for label, kind, count in conditions:
                with (neighbours(kind, count) if kind else _nothing()):
                    both_measures(folder, opts, names, programs, rnd, label, totals)
        print(f"verdicts differing from the expected ones over all runs: new measure {totals['new']}, "
              f"old measure {totals['old']}; tests the old measure would have timed out in the new measure's own "
              f"runs: {totals.get('plain', 0)}")


def watch(opts) -> None:
    """Wait for the host's slow spells (no load of our own): the machine's speed over time, and the workload run
    calm, with both measures, whenever two samples in a row find the machine slow."""
    machine = speed.Speed()
    machine.calibrate()  # the quiet rate as the executor's servers know it
    quiet = machine.quiet
    programs = introduce(opts)
    print(f"watching for {opts.watch:g} min: a sample every {opts.every:g} s; a spell is x{opts.spell:g} or slower",
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        names = write_project(folder, programs, opts.copies)
        totals: dict[str, int] = {"new": 0, "old": 0}
        end, minute, seen, spells, slow = time.monotonic() + opts.watch * 60, time.monotonic(), [], 0, 0
        while time.monotonic() < end:
            now = speed.rate(speed.SAMPLES)
            slowdown = quiet / now if now > 0 else float("inf")
            seen.append(slowdown)
            slow = slow + 1 if slowdown >= opts.spell else 0
            if slow >= 2:  # two samples in a row: a spell, not one sample slowed by something passing
                slow = 0
                spells += 1
                print(f"{time.strftime('%H:%M:%S')} slow spell: x{slowdown:.2f}; load average "
                      f"{os.getloadavg()[0]:.1f}\n{RUN_COLUMNS}", flush=True)
                both_measures(folder, opts, names, programs, time.strftime("%H:%M"), "spell", totals,
                              old_first=spells % 2 == 0)
                after = quiet / max(speed.rate(), 1e-9)
                print(f"{time.strftime('%H:%M:%S')} after the runs: x{after:.2f}", flush=True)
            if time.monotonic() - minute >= 60:
                print(f"{time.strftime('%H:%M:%S')} speed over the last minute: x{min(seen):.2f}-x{max(seen):.2f} "
                      f"({len(seen)} samples); load average {os.getloadavg()[0]:.1f}", flush=True)
                minute, seen = time.monotonic(), []
            time.sleep(opts.every)
        print(f"{spells} slow spells met; verdicts differing from the expected ones in their runs: new measure "
              f"{totals['new']}, old measure {totals['old']}; tests the old measure would have timed out in the new "
              f"measure's own runs (plain own time at the limit or over): {totals.get('plain', 0)}")


def paired(opts) -> None:
    """For --watch minutes, the workload back to back at -n 1 with both measures running at the same time (each
    the other's one neighbour), so that a slow spell of the host, however brief, meets both: no trigger to wait for,
    and no spell over before its runs start. The machine's speed is sampled between pairs."""
    machine = speed.Speed()
    machine.calibrate()
    quiet = machine.quiet
    programs = introduce(opts)
    print(f"paired runs for {opts.watch:g} min: the new measure and the old side by side, -n 1 each", flush=True)
    print(RUN_COLUMNS)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {m: Path(tmp) / m for m in ("new", "old")}
        for folder in folders.values():
            folder.mkdir()
            names = write_project(folder, programs, opts.copies)
        totals: dict[str, int] = {"new": 0, "old": 0}
        end, pairs = time.monotonic() + opts.watch * 60, 0
        while time.monotonic() < end:
            before = quiet / max(speed.rate(speed.SAMPLES), 1e-9)
            print(f"{time.strftime('%H:%M:%S')} speed before the pair: x{before:.2f}; load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            side_by_side(folders, opts, names, programs, time.strftime("%H:%M"), totals)
            pairs += 1
        print(f"{pairs} pairs; verdicts differing from the expected ones: new measure {totals['new']}, old measure "
              f"{totals['old']}; pairs in which only the old measure's differed: {totals.get('repaired', 0)}; tests "
              f"the old measure would have timed out in the new measure's own runs: {totals.get('plain', 0)}")


@contextmanager
def _nothing():
    yield


def overhead(opts) -> None:
    from shareddata import shared, write_model_candidates

    data = shared()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        gens = folder / "candidates.jsonl"
        write_model_candidates(data, gens)
        base = ["--apps-dataset", str(data / "apps_test_rows.jsonl"), "--apps-candidates", str(gens),
                "--apps-max-tests", opts.max_tests]
        times: dict[str, list[float]] = {"probe": [], "pinned": []}
        verdicts = {}
        for _ in range(opts.rounds):
            for name, pinned in (("probe", None), ("pinned", "1.0")):
                wall, doc = run(folder, "2", 4.0, pinned, base)
                times[name].append(wall)
                verdicts[name] = [(t["kind"]) for p in doc["problems"] for t in p["tests"]]
        ratio = statistics.median(a / b for a, b in zip(times["probe"], times["pinned"]))
        print(f"real rows, -n 2, {opts.rounds} alternating pairs: with the probe {statistics.median(times['probe']):.1f} s, "
              f"pinned at x1.0 {statistics.median(times['pinned']):.1f} s (medians); median ratio {ratio:.3f}; "
              f"same verdicts: {verdicts['probe'] == verdicts['pinned']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--copies", type=int, default=2, help="tests per program")
    parser.add_argument("--quick", action="store_true", help="calm and 4 CPU-bound neighbours only")
    parser.add_argument("--overhead", action="store_true", help="the real rows with and without the probe")
    parser.add_argument("--max-tests", default="5", help="with --overhead: tests per problem (0 = every test)")
    parser.add_argument("--watch", type=float, default=0.0, help="minutes to wait for the host's slow spells")
    parser.add_argument("--spell", type=float, default=1.3, help="with --watch: the slowdown that counts as a spell")
    parser.add_argument("--every", type=float, default=5.0, help="with --watch: seconds between samples")
    parser.add_argument("--paired", action="store_true",
                        help="with --watch: both measures side by side, back to back, instead of waiting for spells")
    opts = parser.parse_args()
    if opts.watch and opts.paired:
        paired(opts)
    elif opts.watch:
        watch(opts)
    elif opts.overhead:
        overhead(opts)
    else:
        saturated(opts)


if __name__ == "__main__":
    main()
