"""LiveCodeBench and CodeContests runs against an APPS run of the same tests (run by hand, not by pytest):

    python benchmarks/bench_datasets.py [--problems 20] [--tests 40] [--rounds 3]
        [--hub-problems 1055] [--hub-kb 64] [--hub-rounds 3] [--skip-pertest] [--skip-hub]

The same problems (each test an input line of hex that `print(input())` echoes) are written in each dataset's own
schema: an APPS row's ``input_output``; a LiveCodeBench row's public test and its private tests encoded as
LiveCodeBench encodes them (base64 of zlib of a pickled JSON text); a CodeContests row's public, private and
generated test sets. Each dataset runs under its own judge profile and limits (APPS: the default `seed` and fixed
limits; LiveCodeBench: ``--apps-judge=lcb --apps-limits=row``; CodeContests: ``--apps-judge=codecontests
--apps-limits=row`` with every test set counted), one pytest process per run (``-n 0``), the program the same
everywhere.

* **Per-test harness cost** (target: LiveCodeBench's and CodeContests' within 5% of APPS's): the CPU of the whole
  process tree (pytest, the executor server, its zygote and children: what the run waited for) of a run of every
  test, minus that of a run of 2 tests per problem, over the tests between them: the cost of one more test, with
  loading, collection and start-up cancelled out. The datasets alternate within each round, each round starting
  with the next one (a shared machine's speed drifts); the median of the rounds is printed with their range (the
  machine's noise), and each dataset's ratio to APPS.
* **Time to the first result from the hub** (target: LiveCodeBench's the same as APPS's): a repository of
  `--hub-problems` problems (1055: LiveCodeBench ``release_v6``) of about `--hub-kb` KB each, served on 127.0.0.1
  by ``tests/fakehub.py`` in each hub's layout: ``livecodebench/code_generation_lite`` as its six release files
  ``test.jsonl`` .. ``test6.jsonl`` (read by name at ``release_latest``), ``codeparrot/apps`` as the Parquet
  conversion at ``refs/convert/parquet`` (``all/test/NNNN.parquet`` and a folder per tier). Seconds from starting
  ``pytest --apps-dataset=<name> -v`` with an empty hub cache to its first PASSED line, median of `--hub-rounds`
  alternating rounds, and the ratio.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import pickle
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakehub import FakeHub  # noqa: E402

PROGRAM = "print(input())\n"
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest",
          "-p", "no:anyio", "-n", "0"]
RUNS = {  # dataset -> (file of rows, options of its own judge and limits)
    "APPS": ("apps.jsonl", []),
    "LiveCodeBench": ("lcb.jsonl", ["--apps-judge=lcb", "--apps-limits=row"]),
    "CodeContests": ("cc.jsonl", ["--apps-judge=codecontests", "--apps-limits=row",
                                  "--apps-test-sets=public,private,generated"]),
}
SHA = {"codeparrot/apps": "a" * 40, "livecodebench/code_generation_lite": "5" * 40}
TIERS = ("introductory", "interview", "competition")


def tests_of(seed: int, count: int, size: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.randbytes(max(1, size // 2)).hex() + "\n" for _ in range(count)]


def apps_row(i: int, tests: list[str]) -> dict:
    return {"problem_id": i, "question": f"Echo {i}", "solutions": "[]", "difficulty": TIERS[i % 3], "url": "",
            "starter_code": "", "input_output": json.dumps({"inputs": tests, "outputs": tests})}


def lcb_row(i: int, tests: list[str]) -> dict:
    cases = [{"input": t, "output": t, "testtype": "stdin"} for t in tests]
    private = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases[1:])))).decode()
    return {"question_title": f"Echo {i}", "question_content": f"Echo {i}", "platform": "atcoder",
            "question_id": f"q{i}", "contest_id": "c", "contest_date": f"2024-{i % 12 + 1:02d}-01T00:00:00",
            "starter_code": "", "difficulty": ("easy", "medium", "hard")[i % 3],
            "public_test_cases": json.dumps(cases[:1]), "private_test_cases": private, "metadata": "{}"}


def cc_row(i: int, tests: list[str]) -> dict:
    third = max(1, len(tests) // 3)
    parts = (tests[:1], tests[1:1 + third], tests[1 + third:])
    sets = {f"{name}_tests": {"input": part, "output": part}
            for name, part in zip(("public", "private", "generated"), parts)}
    return {"name": f"{1000 + i}_A. Echo", "description": f"Echo {i}", **sets, "source": 2, "difficulty": 7,
            "solutions": {"language": [], "solution": []}, "incorrect_solutions": {"language": [], "solution": []},
            "cf_rating": 800, "cf_tags": [], "time_limit": {"seconds": 4, "nanos": 0},
            "memory_limit_bytes": 256 << 20, "input_file": "", "output_file": ""}


def candidate_ids(i: int) -> dict[str, str]:
    return {"APPS": str(i), "LiveCodeBench": f"q{i}", "CodeContests": f"{1000 + i}_A"}


def write_local(work: Path, problems: int, tests: int) -> None:
    """Each dataset's rows as a local file, and the one program as every problem's candidate."""
    makers = {"APPS": apps_row, "LiveCodeBench": lcb_row, "CodeContests": cc_row}
    (work / "cands").mkdir(parents=True, exist_ok=True)
    for name, (file, _) in RUNS.items():
        with (work / file).open("w") as out:
            for i in range(problems):
                out.write(json.dumps(makers[name](i, tests_of(i, tests, 32))) + "\n")
    for i in range(problems):
        for pid in candidate_ids(i).values():
            (work / "cands" / f"{pid}.py").write_text(PROGRAM)


def tree_cpu(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(CPU seconds of the process and every descendant it waited for, wall seconds, output) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed (exit {proc.returncode}): {' '.join(cmd[3:])}\n{proc.stdout[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.stdout


def pertest(args: argparse.Namespace) -> None:
    print(f"per-test harness cost: {args.problems} problems x {args.tests} tests of print(input()), "
          f"{args.rounds} rounds (-n 0)", flush=True)
    costs: dict[str, list[float]] = {name: [] for name in RUNS}
    with tempfile.TemporaryDirectory(prefix="bench-datasets-") as folder:
        work = Path(folder)
        write_local(work, args.problems, args.tests)
        for round_ in range(args.rounds):
            for name, (file, options) in rotated(RUNS, round_):
                base = [*PYTEST, f"--apps-dataset={file}", "--apps-candidates=cands", *options]
                few, _, _ = tree_cpu([*base, "--apps-max-tests=2"], work)
                every, wall, _ = tree_cpu([*base, "--apps-max-tests=0"], work)
                per = (every - few) / (args.problems * (args.tests - 2))
                costs[name].append(per)
                print(f"  round {round_ + 1} {name:14} {per * 1e3:7.3f} ms CPU per test (full run {every:6.2f} s CPU,"
                      f" {wall:6.2f} s wall)", flush=True)
    against_apps(costs, "ms CPU per test", 1e3)


def rotated(runs: dict[str, tuple], round_: int) -> list[tuple[str, tuple]]:
    """The runs of a round, each round starting one dataset later (no dataset always runs first, or last)."""
    items = list(runs.items())
    shift = round_ % len(items)
    return items[shift:] + items[:shift]


def against_apps(values: dict[str, list[float]], unit: str, scale: float) -> None:
    """Each dataset's median (and the range of its rounds: the machine's noise) and its ratio to APPS's median
    (target: 1.05 at most)."""
    base = statistics.median(values["APPS"])
    print(f"\n  {'dataset':14} {unit:>22} {'rounds from-to':>16} {'vs APPS':>8}   target <= 1.05")
    for name, measured in values.items():
        median = statistics.median(measured)
        spread = f"{min(measured) * scale:.3f}-{max(measured) * scale:.3f}"
        if base <= 0:
            print(f"  {name:14} {median * scale:22.3f} {spread:>16} {'-':>8}   APPS's median is not above 0: the "
                  "runs' noise exceeds the tests' cost (give more --problems or --tests)")
            continue
        mark = "" if name == "APPS" else ("ok" if median / base <= 1.05 else "MISSED")
        print(f"  {name:14} {median * scale:22.3f} {spread:>16} {median / base:8.3f}   {mark}", flush=True)


def parquet(rows: list[dict]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink, row_group_size=50)
    return sink.getvalue()


def hub_files(problems: int, kb: int) -> dict[str, dict[str, bytes]]:
    """Each repository's files in its hub layout, the same tests in both (8 tests of about kb/8 KB a row)."""
    apps_rows = [apps_row(i, tests_of(i, 8, kb * 64)) for i in range(problems)]  # 8 inputs, 8 outputs
    lcb_rows = [lcb_row(i, tests_of(i, 8, kb * 64)) for i in range(problems)]
    per_file = max(1, -(-problems // 6))
    lcb = {("test.jsonl" if n == 0 else f"test{n + 1}.jsonl"):
           "".join(json.dumps(r) + "\n" for r in lcb_rows[n * per_file:(n + 1) * per_file]).encode()
           for n in range(6)}
    lcb["code_generation_lite.py"] = b"# the repository's loading script\n"
    apps = {f"all/test/{k // 500:04d}.parquet": parquet(apps_rows[k:k + 500]) for k in range(0, problems, 500)}
    for tier in TIERS:
        apps[f"{tier}/test/0000.parquet"] = parquet([r for r in apps_rows if r["difficulty"] == tier])
    return {"codeparrot/apps": apps, "livecodebench/code_generation_lite": lcb}


def first_result(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds from starting pytest to the first PASSED line on its output. The run is then interrupted as Ctrl-C
    does (pytest closes its executors), and whatever of its process group is left after a minute is killed."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, start_new_session=True)
    assert proc.stdout is not None
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if " PASSED" in line:
                return time.perf_counter() - started
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of the run is left (nothing, when it closed cleanly)
        except ProcessLookupError:
            pass
        proc.communicate()
    raise SystemExit(f"no PASSED line from {' '.join(cmd[3:])}:\n{''.join(seen[-30:])}")


def hub_env(endpoint: str, home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HOME=home, HF_HUB_CACHE=os.path.join(home, "hub"), HF_ENDPOINT=endpoint,
               HF_HUB_DISABLE_TELEMETRY="1", PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return env


def hub(args: argparse.Namespace) -> None:
    files = hub_files(args.hub_problems, args.hub_kb)
    sizes = {repo: sum(map(len, f.values())) / 1e6 for repo, f in files.items()}
    print(f"\ntime to the first result from the hub: {args.hub_problems} problems of ~{args.hub_kb} KB "
          f"({', '.join(f'{repo} {mb:.1f} MB' for repo, mb in sizes.items())}), empty hub cache, "
          f"{args.hub_rounds} rounds", flush=True)
    runs = {"APPS": ("codeparrot/apps", []), "LiveCodeBench": ("livecodebench/code_generation_lite",
                                                               ["--apps-judge=lcb", "--apps-limits=row"])}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    with FakeHub() as server, tempfile.TemporaryDirectory(prefix="bench-datasets-hub-") as folder:
        server.add("codeparrot/apps", SHA["codeparrot/apps"], files["codeparrot/apps"],
                   refs=("main", "refs/convert/parquet"))
        server.add("livecodebench/code_generation_lite", SHA["livecodebench/code_generation_lite"],
                   files["livecodebench/code_generation_lite"])
        work = Path(folder)
        (work / "cands").mkdir()
        for i in range(args.hub_problems):
            for pid in list(candidate_ids(i).values())[:2]:
                (work / "cands" / f"{pid}.py").write_text(PROGRAM)
        for round_ in range(args.hub_rounds):
            for name, (repo, options) in rotated(runs, round_):
                home = tempfile.mkdtemp(dir=work, prefix="hf-")
                cmd = [*PYTEST, "-v", f"--apps-dataset={repo}", "--apps-candidates=cands", *options]
                seconds[name].append(first_result(cmd, work, hub_env(server.endpoint, home)))
                print(f"  round {round_ + 1} {name:14} {seconds[name][-1]:6.2f} s to the first result", flush=True)
    against_apps(seconds, "s to the first result", 1.0)


NUMBERS = (  # the options that take a number: (name, default, what it is)
    ("--problems", 20, "problems per dataset in the per-test runs"),
    ("--tests", 40, "tests per problem in the per-test runs (3 or more)"),
    ("--rounds", 3, "alternating rounds of the per-test runs"),
    ("--hub-problems", 1055, "problems in each hub repository"),
    ("--hub-kb", 64, "size of a problem's tests, KB"),
    ("--hub-rounds", 3, "alternating rounds of the first-result runs"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default, what in NUMBERS:
        parser.add_argument(name, type=int, default=default, help=what)
    parser.add_argument("--skip-pertest", action="store_true", help="only the time to the first result")
    parser.add_argument("--skip-hub", action="store_true", help="only the per-test cost")
    args = parser.parse_args()
    if args.tests < 3:
        parser.error("--tests: give 3 or more (the cost is measured between 2 tests and all of them)")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    if not args.skip_pertest:
        pertest(args)
    if not args.skip_hub:
        hub(args)


if __name__ == "__main__":
    main()
