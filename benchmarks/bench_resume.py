"""Resume after SIGKILL, on the real APPS rows and model-written candidates (every test, -n 2).

Run by hand (not part of the test suite; it takes minutes):

    python benchmarks/bench_resume.py [--max-tests 0] [-n 2] [--at 0.5]

Reads ../shared/apps-data (override with APPS_SHARED_DATA): every program in candidates.jsonl whose problem has
a full-test row in apps_test_rows.jsonl. In one session it measures:

1. an uninterrupted run (its own record store);
2. a run with a fresh store whose controller is killed with SIGKILL once `--at` of the cases have records,
   then the same command with --apps-resume;
3. that command again, with nothing changed (every case reused).

It prints executed cases / cases over the killed and the resumed run (target 1.00-1.02), the resumed run's wall
time / the remaining cases' share of the uninterrupted run's wall time (their share of its per-test wall
times), and the unchanged rerun's wall time / the uninterrupted run's (target under 0.05), and checks that the
resumed report's per-test records are the uninterrupted run's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shareddata import REPO, shared, write_model_candidates  # (beside this script)

sys.path.insert(0, str(REPO))

from pytest_apps.engine.records import RecordStore, read_segment  # noqa: E402


def command(base: list[str], report: Path, store: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", "--apps-report",
            str(report), "--apps-records", str(store), *base, *extra]


def run(cmd: list[str], cwd: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    return wall, json.loads(Path(cmd[cmd.index("--apps-report") + 1]).read_text())


def stored(store: Path) -> set[tuple[str, int, int]]:
    out = set()
    for path in RecordStore(store).segments():
        out.update((r.problem, r.sample, r.case) for _, _, r in read_segment(path).entries)
    return out


def per_test(report: dict) -> dict[tuple[str, int], tuple[str, str]]:
    return {(p["id"], t["case"]): (t["kind"], t["step"]) for p in report["problems"] for t in p["tests"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tests", default="0", help="tests per problem (0 = every test)")
    parser.add_argument("-n", default="2", help="xdist workers")
    parser.add_argument("--at", type=float, default=0.5, help="share of the cases recorded when the kill lands")
    opts = parser.parse_args()
    data = shared()
    rows = data / "apps_test_rows.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gens = work / "candidates.jsonl"
        write_model_candidates(data, gens)
        base = ["--apps-dataset", str(rows), "--apps-candidates", str(gens), "--apps-max-tests", opts.max_tests,
                "-n", opts.n]
        full_wall, full = run(command(base, work / "full.json", work / "full-records"), work)
        cases = full["run"]["cases"]

        store = work / "records"
        killed = subprocess.Popen(command(base, work / "killed.json", store), cwd=work, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        while len(stored(store)) < opts.at * cases and killed.poll() is None:
            time.sleep(0.02)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        time.sleep(1.0)
        try:  # what the killed controller leaves behind (its workers notice the lost channel and end)
            os.killpg(killed.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        before = stored(store)
        resume = command(base, work / "resumed.json", store, "--apps-resume")
        resumed_wall, resumed = run(resume, work)
        unchanged_wall, unchanged = run(resume, work)

    executed = len(before) + resumed["run"]["executed"]
    # the remaining cases' share of the uninterrupted run: their part of its per-test wall times
    walls = {(p["id"], t["case"]): t["wall_time"] for p in full["problems"] for t in p["tests"]}
    left = sum(w for (pid, case), w in walls.items() if (pid, 0, case) not in before)
    share = full_wall * left / (sum(walls.values()) or 1.0)
    print(f"cases: {cases}; recorded when killed: {len(before)} ({len(before) / cases:.0%})")
    print(f"{'run':<22}{'wall s':>9}{'executed':>10}{'reused':>8}")
    print(f"{'uninterrupted':<22}{full_wall:>9.1f}{full['run']['executed']:>10}{full['run']['reused']:>8}")
    print(f"{'killed (SIGKILL)':<22}{'':>9}{len(before):>10}{'':>8}")
    print(f"{'resumed':<22}{resumed_wall:>9.1f}{resumed['run']['executed']:>10}{resumed['run']['reused']:>8}")
    print(f"{'unchanged rerun':<22}{unchanged_wall:>9.1f}{unchanged['run']['executed']:>10}"
          f"{unchanged['run']['reused']:>8}")
    print(f"executed / cases over killed + resumed: {executed / cases:.3f} (target 1.00-1.02)")
    print(f"resumed wall / remaining share of the uninterrupted run ({share:.1f} s): {resumed_wall / share:.2f}")
    print(f"unchanged rerun wall / uninterrupted wall: {unchanged_wall / full_wall:.3f} (target under 0.05)")
    print(f"resumed per-test records equal the uninterrupted run's: {per_test(resumed) == per_test(full)}; "
          f"resumed report complete: {resumed['run']['complete']}")
    differ = differences(full, resumed)
    for (pid, case), (then, now) in differ[:20]:
        print(f"  problem {pid} test {case}: uninterrupted {then}, resumed {now}")
    if differ:
        near = sum(1 for _, sides in differ if any("borderline" in side for side in sides))
        print(f"  {len(differ)} tests differ; {near} of them near the time limit (borderline) in one run or both")


def differences(a: dict, b: dict) -> list[tuple[tuple[str, int], tuple[str, str]]]:
    """The tests whose (kind, step) differ between two reports, each side as `kind/step (borderline)`."""
    def tests(report: dict) -> dict[tuple[str, int], str]:
        return {(p["id"], t["case"]): f"{t['kind']}/{t['step']}" + (" (borderline)" if t.get("borderline") else "")
                for p in report["problems"] for t in p["tests"]}

    ta, tb = tests(a), tests(b)
    keys = sorted(set(ta) | set(tb))
    return [(k, (ta.get(k, "absent"), tb.get(k, "absent"))) for k in keys
            if ta.get(k, "absent").split(" ")[0] != tb.get(k, "absent").split(" ")[0]]


if __name__ == "__main__":
    main()
