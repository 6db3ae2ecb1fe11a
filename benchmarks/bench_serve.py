"""`python -m pytest_apps serve` under a trainer's load, beside `pytest_apps.rewards` in the same run, on the real
rows' model programs (run by hand):

    APPS_SHARED_DATA=../shared/apps-data python benchmarks/bench_serve.py [--clients 64] [--max-tests 10]
        [--programs 0] [--workers N] [--timeout 4] [--repeat 1] [--rounds 3] [--trace FILE]

* per test: `--clients` concurrent clients, one `POST /run_code` per (program, test), the output compared on the
  client (stdout, trailing newlines stripped, equal to the expected text): verl's `sandbox_fusion` pattern;
* batched: the same clients, one `POST /judge` per program (every test, no fail-fast);
* in process: `CodeReward("fraction")` on the same programs and tests (one call, dedup and cache off).

The batched and in-process runs alternate for `--rounds` rounds (the order swapped each round), so that a slow
spell of the machine falls on both sides alike; each round's CPU ratio is printed and the median is the figure.
Each side's count of verdicts confirmed by a second run (engine/confirm.py: a near-limit verdict met while the
machine was measured slower than quiet) is printed too, with the ratio less one run of each such test: both sides
confirm by the same rule, but how many tests they confirm turns on the machine's speed during each run, and one
test at the time limit run twice is 4.6 s of a program's CPU, more than a tenth of a round's harness and programs
together.

For each: requests per second, latency p50 and p99, the requests lost or failed (not 200, or a SandboxError), and
the CPU per test: the server's (its process and everything under it: executor servers, zygotes, programs; read
from /proc before and after) or this process's for the in-process run, beside the programs' own CPU per test (as
the executors measured it), and the clients' own CPU per test; and the latency beyond the program's run (the queue,
HTTP and the harness: the request's latency less its runs' wall-clock time). The per-test latencies are given
again over the requests whose program ran under a second of its own time: a program at its time limit takes the
limit's own time and slows every run beside it while it lasts, so where more than 1% of the requests run to the
limit, the overall p99 is theirs. The targets: per-test CPU over HTTP at most 1.3x the in-process API's, batched at
most 1.1x, p99 below 10x p50 under the clients, nothing lost.

During the per-test requests the server's /health is read every 0.2 s: how long every place beside the workers was
taken, and how long a long run held a worker while it waited for one of them (`held`), the usual cause of a tail.
The answers that came after verl's read timeout (compile_timeout + run_timeout + 10 s) are counted: verl scores
those tests as failures. `--trace FILE` keeps the readings and each request's start, latency, own time and status.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from shareddata import shared

from pytest_apps.rewards import CodeReward
from pytest_apps.serve.pool import ASIDE_PER_WORKER

TICK = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parent.parent


def tree_cpu(root: int) -> float:
    """CPU seconds of process `root` and all under it (each one's own and its reaped children's)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += sum(int(v) for v in stats[pid][11:15])  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return total / TICK


def work(folder: Path, max_tests: int, programs: int) -> list[tuple[str, dict[str, list], str]]:
    """(problem id, its tests capped, program) for the model programs of the rows' problems."""
    rows = {}
    for row in map(json.loads, (folder / "apps_test_rows.jsonl").read_text().splitlines()):
        io = json.loads(row["input_output"])
        rows[str(row["problem_id"])] = {"inputs": io["inputs"][:max_tests], "outputs": io["outputs"][:max_tests]}
    out = [(str(r["problem_id"]), rows[str(r["problem_id"])], r["code"])
           for r in map(json.loads, (folder / "candidates.jsonl").read_text().splitlines())
           if str(r["problem_id"]) in rows]
    return out[:programs] if programs > 0 else out


class Client(threading.local):
    """One keep-alive HTTP connection per client thread."""

    def post(self, host: str, port: int, path: str, body: dict) -> tuple[int, dict]:
        if getattr(self, "conn", None) is None:
            self.conn = http.client.HTTPConnection(host, port, timeout=300)
        try:
            self.conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = self.conn.getresponse()
            return resp.status, json.loads(resp.read())
        except (OSError, http.client.HTTPException, ValueError):
            self.conn.close()
            self.conn = None
            return 0, {}


class Watch(threading.Thread):
    """The server's /health every `every` seconds while a load runs: (seconds since the start, its state)."""

    def __init__(self, url: str, every: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.host, port = url.split("//")[1].split(":")
        self.port, self.every = int(port), every
        self.samples: list[tuple[float, dict]] = []
        self.done = threading.Event()
        self.t0 = time.perf_counter()

    def run(self) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        while not self.done.wait(self.every):
            try:
                conn.request("GET", "/health")
                state = json.loads(conn.getresponse().read())
            except (OSError, http.client.HTTPException, ValueError):
                conn.close()
                conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                continue
            self.samples.append((time.perf_counter() - self.t0, state))

    def summary(self, aside_cap: int) -> str:
        aside = [s.get("aside", 0) for _, s in self.samples]
        at_cap = sum(a >= aside_cap for a in aside) * self.every
        held = sum(s.get("held", 0) > 0 for _, s in self.samples) * self.every  # (the server's own count)
        return (f"the pool during the per-test requests ({len(aside)} samples): runs aside at most "
                f"{max(aside, default=0)} of {aside_cap} places, at the cap for {at_cap:.1f} s, a worker held by a "
                f"run waiting for a place for {held:.1f} s; parked at most "
                f"{max((s.get('parked', 0) for _, s in self.samples), default=0)}; queue at most "
                f"{max((s.get('queue', 0) for _, s in self.samples), default=0)}; {self.starts()}")

    def starts(self) -> str:
        """The server's count of executors started so far, while a request waited for one and in standby."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request("GET", "/metrics")
            lines = conn.getresponse().read().decode().splitlines()
        except (OSError, http.client.HTTPException) as e:
            return f"executor starts unknown ({e})"
        finally:
            conn.close()
        found = {l.split("when=")[1].split('"')[1]: l.rsplit(" ", 1)[1] for l in lines
                 if l.startswith("pytest_apps_serve_executor_starts_total{")}
        return (f"executors started while a request waited {found.get('request', '?')}, in standby "
                f"{found.get('standby', '?')}")


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def load(server: subprocess.Popen, url: str, calls: list[tuple[str, dict]], clients: int) -> dict[str, Any]:
    """`calls` (path, body) from `clients` threads: figures, and the answers in order."""
    host, port = url.split("//")[1].split(":")
    client = Client()
    latencies: list[float] = [0.0] * len(calls)
    starts: list[float] = [0.0] * len(calls)  # (seconds after the load's start)

    def one(i: int) -> tuple[int, dict]:
        started = time.perf_counter()
        status, answer = client.post(host, int(port), *calls[i])
        latencies[i] = time.perf_counter() - started
        starts[i] = started - t0
        return status, answer

    cpu0, mine0, t0 = tree_cpu(server.pid), own_cpu(), time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(one, range(len(calls))))
    wall, cpu = time.perf_counter() - t0, tree_cpu(server.pid) - cpu0
    failed = sum(s != 200 or a.get("status") == "SandboxError" for s, a in answers)
    # what the request cost beyond its program's run (the queue included): the server's share of the latency
    beyond = [t - sum(x.get("wall_time", 0.0) for x in a.get("tests", [])) - a.get("pytest_apps", {}).get(
        "wall_time", 0.0) for t, (_, a) in zip(latencies, answers)]
    return {"answers": answers, "wall": wall, "cpu": cpu, "failed": failed, "requests": len(calls),
            "latencies": latencies, "starts": starts,
            "p50": quantile(latencies, 0.5), "p99": quantile(latencies, 0.99), "client_cpu": own_cpu() - mine0,
            "beyond50": quantile(beyond, 0.5), "beyond99": quantile(beyond, 0.99)}


def own_cpu() -> float:
    """CPU seconds of this process (the clients' threads), its children apart."""
    times = os.times()
    return times.user + times.system


def start(workers: int, timeout: float) -> tuple[subprocess.Popen, str]:
    # (-P: the server imports pytest_apps as this script does, from PYTHONPATH or the installed project, never from
    # the working directory, which `-m` would put first)
    proc = subprocess.Popen([sys.executable, "-P", "-m", "pytest_apps", "serve", "--port", "0",
                             "--workers", str(workers), "--timeout", str(timeout), "--queue", "100000",
                             "--queue-timeout", "600"],
                            stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    found = re.search(r"http://\S+", proc.stdout.readline() if ready else "")
    if not found:
        proc.kill()
        sys.exit("the server did not start")
    return proc, found.group(0)


def line(name: str, figures: dict[str, Any], tests: int, programs_cpu: float) -> str:
    per_test = figures["cpu"] / tests
    text = (f"{name:<10} {figures['requests']:>6} requests {figures['requests'] / figures['wall']:>7.1f}/s  "
            f"p50 {figures['p50'] * 1000:6.1f} ms  p99 {figures['p99'] * 1000:7.1f} ms  failed {figures['failed']}  "
            f"CPU/test {per_test * 1000:5.2f} ms (programs' own {programs_cpu / tests * 1000:.2f} ms, harness "
            f"{(per_test - programs_cpu / tests) * 1000:.2f} ms)")
    if "client_cpu" in figures:
        text += (f"; clients' CPU/test {figures['client_cpu'] / tests * 1000:.2f} ms; beyond the program's run p50 "
                 f"{figures['beyond50'] * 1000:.1f} ms p99 {figures['beyond99'] * 1000:.1f} ms")
    return text


def harness(figures: dict[str, Any], tests: int) -> str:
    """One side's CPU per test, and the part of it beyond the programs' own."""
    return (f"{figures['cpu'] / tests * 1000:.2f} ms/test (harness "
            f"{(figures['cpu'] - figures['programs_cpu']) / tests * 1000:.2f} ms)")


def in_process(items: list[tuple[str, dict, str]], timeout: float, server: subprocess.Popen) -> dict[str, Any]:
    """The API's run: this process and everything under it but the server (idle meanwhile, and not the API's)."""
    def mine() -> float:
        return tree_cpu(os.getpid()) - tree_cpu(server.pid)

    with CodeReward("fraction", max_tests=0, timeout=timeout, cache=0, dedup=False) as reward:
        texts = [f"```python\n{code}\n```" for _, _, code in items]
        problems = [reward.problem_of_row(io, pid) for pid, io, _ in items]
        reward.score(texts[:2], problems[:2])  # warm executors
        results = seen_results(reward.evaluator)
        cpu0, t0 = mine(), time.perf_counter()
        details = reward.score(texts, problems)
        wall, cpu = time.perf_counter() - t0, mine() - cpu0
    lat = [d.latency for d in details]
    return {"wall": wall, "cpu": cpu, "requests": len(items), "p50": quantile(lat, 0.5), "p99": quantile(lat, 0.99),
            "failed": sum(d.reward is None for d in details), "scores": [d.reward for d in details],
            "programs_cpu": sum(d.cpu_time for d in details),
            **reruns([t for r in results if r is not None for t in r.tests])}


def seen_results(evaluator: Any) -> list[Any]:
    """The evaluator's results from now on, as it returns them (each test's record, its confirmation included)."""
    seen: list[Any] = []
    score_batch = evaluator.score_batch

    def keeping(*args: Any, **kwargs: Any) -> list[Any]:
        results = score_batch(*args, **kwargs)
        seen.extend(results)
        return results

    evaluator.score_batch = keeping
    return seen


def reruns(tests: list[dict[str, Any]]) -> dict[str, Any]:
    """The tests run a second time to confirm a near-limit verdict (engine/confirm.py), and one run's CPU of each:
    the programs' work done twice, which the machine's measured slowdown decides, not the harness."""
    confirmed = [t for t in tests if t.get("confirmed")]
    return {"confirmations": len(confirmed), "rerun_cpu": sum(float(t.get("cpu_time") or 0.0) for t in confirmed)}


def net(side: dict[str, Any]) -> float:
    """A side's CPU less one run of each test it confirmed."""
    return side["cpu"] - side["rerun_cpu"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--max-tests", type=int, default=10)
    parser.add_argument("--programs", type=int, default=0, help="the first N programs (0: all)")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--timeout", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=1, help="post the per-test requests this many times")
    parser.add_argument("--rounds", type=int, default=3, help="batched and in-process runs, alternated")
    parser.add_argument("--trace", type=Path, help="write the per-test phase here: the server's /health every 0.2 s "
                        "and each request's start, latency and own time, a JSON line each")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # (the server below is stopped on the way out)
    items = work(shared(), args.max_tests, args.programs)
    tests = sum(len(io["inputs"]) for _, io, _ in items)
    print(f"{len(items)} programs, {tests} tests; {args.clients} clients, {args.workers} workers")
    server, url = start(args.workers, args.timeout)
    rounds: list[tuple[dict[str, Any], dict[str, Any]]] = []
    try:
        load(server, url, [("/judge", {"code": code, "tests": io}) for _, io, code in items[:4]], 4)  # warm
        calls = [("/run_code", {"code": code, "stdin": i, "language": "python", "run_timeout": args.timeout})
                 for _, io, code in items for i in io["inputs"]]
        watch = Watch(url)
        watch.start()
        per_test = load(server, url, calls * args.repeat, args.clients)
        watch.done.set()
        watch.join()
        print(watch.summary(ASIDE_PER_WORKER * args.workers))
        if args.trace:
            with args.trace.open("w") as f:
                for at, state in watch.samples:
                    f.write(json.dumps({"at": round(at, 3), **state}) + "\n")
                for started, took, (_, a) in zip(per_test["starts"], per_test["latencies"], per_test["answers"]):
                    f.write(json.dumps({"start": round(started, 3), "latency": round(took, 3),
                                        "own": a.get("pytest_apps", {}).get("own_time"),
                                        "status": (a.get("run_result") or {}).get("status")}) + "\n")
        per_test["cpu"] /= args.repeat
        per_test["programs_cpu"] = sum(a.get("pytest_apps", {}).get("cpu_time", 0.0)
                                       for _, a in per_test["answers"]) / args.repeat
        per_test["client_cpu"] /= args.repeat
        judge_calls = [("/judge", {"code": code, "tests": io}) for _, io, code in items]
        for k in range(max(1, args.rounds)):
            if k % 2:
                mine = in_process(items, args.timeout, server)
                batched = load(server, url, judge_calls, args.clients)
            else:
                batched = load(server, url, judge_calls, args.clients)
                mine = in_process(items, args.timeout, server)
            batched["programs_cpu"] = sum(t["cpu_time"] for _, a in batched["answers"] for t in a.get("tests", []))
            batched.update(reruns([t for _, a in batched["answers"] for t in a.get("tests", [])]))
            rounds.append((batched, mine))
            print(f"round {k + 1}: batched {harness(batched, tests)}, in process {harness(mine, tests)}; verdicts "
                  f"confirmed by a second run: batched {batched['confirmations']}, in process {mine['confirmations']};"
                  f" CPU {batched['cpu'] / mine['cpu']:.2f}x the API's, {net(batched) / net(mine):.2f}x less one run "
                  f"of each test confirmed")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    batched, mine = sorted(rounds, key=lambda r: r[0]["cpu"] / r[1]["cpu"])[len(rounds) // 2]  # the median round
    judged = [a for _, a in batched["answers"]]
    programs_cpu = batched["programs_cpu"]
    expected = [o for _, io, _ in items for o in io["outputs"]]
    verl_pass = [a.get("status") == "Success" and (a["run_result"]["stdout"] or "").rstrip("\n") == str(o).rstrip("\n")
                 for (_, a), o in zip(per_test["answers"], expected * args.repeat)]
    limited = [a.get("pytest_apps", {}).get("own_time", 0.0) >= 1.0 for _, a in per_test["answers"]]
    # verl's client gives up on a request after compile_timeout + run_timeout + 10 s (it sends the same timeout for
    # both) and scores the test as an API error: a failure, whatever the program did
    verl_wait = 2 * args.timeout + 10
    late = [(a.get("run_result") or {}).get("status") for t, (_, a) in zip(per_test["latencies"], per_test["answers"])
            if t > verl_wait]
    print(f"per-test requests answered after verl's read timeout ({verl_wait:g} s): {len(late)} "
          f"({sum(s == 'TimeLimitExceeded' for s in late)} of them at the time limit, which fail either way)")
    print(f"per-test requests whose program ran a second or more of its own time: {sum(limited)} of "
          f"{len(limited)} ({100 * sum(limited) / max(1, len(limited)):.1f}%; {sum(a.get('run_result') is not None and a['run_result'].get('status') == 'TimeLimitExceeded' for _, a in per_test['answers'])} at the time limit)")
    timed_out = [a["pytest_apps"] for _, a in per_test["answers"]
                 if (a.get("run_result") or {}).get("status") == "TimeLimitExceeded" and "pytest_apps" in a]
    if timed_out:  # what the runs at the limit cost: their CPU (more than the limit where a slowdown was credited)
        cpu, wall = [x["cpu_time"] for x in timed_out], [x["wall_time"] for x in timed_out]
        print(f"the {len(timed_out)} runs at the time limit: CPU p50 {quantile(cpu, 0.5):.2f} s, max {max(cpu):.2f} s, "
              f"{sum(cpu):.1f} s in all; wall p50 {quantile(wall, 0.5):.2f} s, max {max(wall):.2f} s")
    print(line("per test", per_test, tests, per_test["programs_cpu"]))
    short = [t for t, long in zip(per_test["latencies"], limited) if not long]
    print(f"per test, the {len(short)} requests whose program ran under a second of its own time: p50 "
          f"{quantile(short, 0.5) * 1000:.1f} ms, p99 {quantile(short, 0.99) * 1000:.1f} ms "
          f"({quantile(short, 0.99) / max(1e-9, quantile(short, 0.5)):.1f}x)")
    print(line("batched", batched, tests, programs_cpu))
    print(line("in process", mine, tests, mine["programs_cpu"]))
    net_median = sorted(net(b) / net(m) for b, m in rounds)[len(rounds) // 2]
    print(f"CPU per test (the median of {len(rounds)} rounds): per test over HTTP {per_test['cpu'] / mine['cpu']:.2f}x "
          f"the in-process API's, batched {batched['cpu'] / mine['cpu']:.2f}x ({net_median:.2f}x less one run of "
          f"each test confirmed); p99/p50 per test {per_test['p99'] / per_test['p50']:.1f}, batched "
          f"{batched['p99'] / batched['p50']:.1f}")
    same = sum(abs(a.get("tests_passed", -1) / max(1, a.get("tests_total", 1)) - s) < 1e-9
               for a, s in zip(judged, mine["scores"]))
    print(f"scores: /judge equals the in-process reward for {same} of {len(items)} programs; tests passed by verl's "
          f"comparison over /run_code: {sum(verl_pass)} of {tests * args.repeat}, by the judge: "
          f"{sum(a.get('tests_passed', 0) for a in judged) * args.repeat}")


if __name__ == "__main__":
    main()
