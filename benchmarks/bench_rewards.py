"""Reward throughput and cost on real rows and model programs, GRPO-shaped: completions scored per second per
core, the CPU spent per completion against the programs' own CPU, and the completions' latency (p50, p99), at
batch sizes 1, 64 and 512, synchronous and async, with and without deduplication, side by side in one run
(run by hand); then, unless --no-ray, the 512 batch on a two-node local Ray cluster, and 8 callers at once on
that cluster (verl's 8 reward workers): the executor actors per node, their executors, processes and memory.

    APPS_SHARED_DATA=../shared/apps-data python benchmarks/bench_rewards.py [--sizes 1,64,512] [--shape strict]
        [--max-tests 20] [--timeout 4] [--no-ray] [--callers-only]

The batch is groups of 8 completions per problem (a GRPO group), drawn from the model programs of
`candidates.jsonl` for the problems of `apps_test_rows.jsonl` (problems with fewer than 8 programs repeat
them, and each problem comes back in later groups: the duplicates a training batch holds), each wrapped in
model text (a draft inside a think block that differs per completion, the answer in a python fence), with the
rows' own ``input_output``.

* sync: `CodeReward` called as TRL calls it, one call per batch (a batch of 1 is 64 calls of one completion).
* async: `compute_score_async` as verl's reward loop calls it: every completion of the batch a concurrent call
  on one event loop (gathered into one batch by pytest-apps).
* dedup off: ``dedup=False`` (every completion runs, nothing reused).

CPU is that of this process and every process under it (executor servers, zygotes, the programs), read from
/proc before and after; "programs' CPU" is the sum of the programs' own CPU time over the tests that ran, as
the executors measured it. Each configuration runs on fresh executors warmed by one small batch first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from shareddata import shared

from pytest_apps.rewards import CodeReward, RewardDetail, batch_figures, close_scorers, compute_score_async

GROUP = 8
TICK = os.sysconf("SC_CLK_TCK")


def grpo_batch(folder: Path, size: int) -> tuple[list[str], list[str], list[str]]:
    rows = {str(r["problem_id"]): r["input_output"]
            for r in map(json.loads, (folder / "apps_test_rows.jsonl").read_text().splitlines())}
    programs: dict[str, list[str]] = {}
    for record in map(json.loads, (folder / "candidates.jsonl").read_text().splitlines()):
        pid = str(record["problem_id"])
        if pid in rows:
            programs.setdefault(pid, []).append(record["code"])
    ids = sorted(programs, key=int)
    texts, ios, pids = [], [], []
    for n in range(size):
        group, k = divmod(n, GROUP)
        pid = ids[group % len(ids)]
        mine = programs[pid]
        code = mine[(group // len(ids) * GROUP + k) % len(mine)]
        texts.append(f"<think>\n```python\nprint('draft {n}')\n```\n</think>\n```python\n{code.rstrip()}\n```\n")
        ios.append(rows[pid])
        pids.append(pid)
    return texts, ios, pids


def tree_cpu() -> float:
    """CPU seconds of this process and all under it (each one's own and its reaped children's)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        stats[pid] = fields
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is not None:
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return total / TICK


def run_sync(reward: CodeReward, texts: list[str], ios: list[str], pids: list[str], size: int) -> list[RewardDetail]:
    out: list[RewardDetail] = []
    for start in range(0, len(texts), size):
        end = start + size
        reward(completions=texts[start:end], input_output=ios[start:end], problem_id=pids[start:end])
        out += reward.last
    return out


def run_async(options: dict[str, Any], texts: list[str], ios: list[str], pids: list[str], size: int) -> list[dict]:
    async def batch(lo: int, hi: int) -> list[dict]:
        return list(await asyncio.gather(*[
            compute_score_async("apps", texts[i], ios[i], {"problem_id": pids[i], "index": i}, **options)
            for i in range(lo, hi)]))

    async def every() -> list[dict]:
        out: list[dict] = []
        for start in range(0, len(texts), size):
            out += await batch(start, min(len(texts), start + size))
        return out

    return asyncio.run(every())


def measure(mode: str, size: int, dedup: bool, data: tuple[list[str], list[str], list[str]], args: Any,
            cores: int) -> dict[str, Any]:
    texts, ios, pids = data
    count = max(size, 64)  # a batch of 1: 64 calls
    texts, ios, pids = texts[:count], ios[:count], pids[:count]
    options = dict(shape=args.shape, timeout=args.timeout, max_tests=args.max_tests, workers=cores, dedup=dedup,
                   cache=4096 if dedup else 0)
    warm = [f"```python\nprint({i})\n```" for i in range(cores * 2)]
    if mode == "sync":
        reward = CodeReward(**options)
        reward(completions=warm, input_output=ios[:len(warm)], problem_id=["warm"] * len(warm))
        before, started = tree_cpu(), time.perf_counter()
        details = run_sync(reward, texts, ios, pids, size)
        took, cpu = time.perf_counter() - started, tree_cpu() - before
        reward.close()
        figures = batch_figures(details) if size >= count else None
        rows = [(d.ran, d.deduplicated, d.cpu_time, d.latency, d.tests_run) for d in details]
    else:
        run_async(options, warm, ios[:len(warm)], ["warm"] * len(warm), len(warm))
        before, started = tree_cpu(), time.perf_counter()
        results = run_async(options, texts, ios, pids, size)
        took, cpu = time.perf_counter() - started, tree_cpu() - before
        close_scorers()
        figures = None
        rows = [(None, None, 0.0, r["batch_latency_p50_s"], 0) for r in results]
        p50 = sorted(r["batch_latency_p50_s"] for r in results)[len(results) // 2]
        p99 = max(r["batch_latency_p99_s"] for r in results)
        deduplicated = sum(r["batch_deduplicated"] for r in results) / max(1, min(size, count))
    if mode == "sync":
        latencies = sorted(d[3] for d in rows if d[0]) or [0.0]  # over the programs that ran, as batch_figures
        p50, p99 = latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
        deduplicated = sum(bool(d[1]) for d in rows)
        own = sum(d[2] for d in rows if d[0])
        tests = sum(d[4] for d in rows if d[0])
    else:
        own, tests = 0.0, 0  # the async results carry no per-test CPU: the sync row of the same batch gives it
    return {"mode": mode, "size": size, "dedup": dedup, "completions": count, "took": took, "cpu": cpu, "own": own, "tests": tests,
            "p50": p50, "p99": p99, "deduplicated": deduplicated, "figures": figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,64,512")
    parser.add_argument("--shape", default="strict", choices=["strict", "fraction"])
    parser.add_argument("--max-tests", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=4.0)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--callers-only", action="store_true",
                        help="only the 8 callers on the two-node Ray cluster (executors per node and their memory)")
    parser.add_argument("--pool-only", action="store_true",
                        help="only the 8 caller processes on this machine, with and without shared=True")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    sizes = [int(s) for s in args.sizes.split(",")]
    data = grpo_batch(shared(), max(max(sizes), 64))
    if args.callers_only:
        ray_run(args, data, cores)
        return
    if args.pool_only:
        pool_run(args, data, CALLERS)
        return
    print(f"GRPO-shaped: {GROUP} completions per problem, {len(set(data[2]))} problems, shape {args.shape}, "
          f"max {args.max_tests} tests, {cores} cores; load {os.getloadavg()[0]:.1f}")
    print(f"{'size':>5} {'mode':<5} {'dedup':<5} {'compl/s/core':>12} {'CPU/compl ms':>12} {'own CPU ms':>10} "
          f"{'CPU/own':>7} {'p50 s':>7} {'p99 s':>7} {'dedup#':>6} {'tests':>6} {'extra ms/test':>13}")
    own_of: dict[tuple[int, bool], tuple[float, int]] = {}
    for size in sizes:
        for dedup in (False, True):
            for mode in ("sync", "async"):
                m = measure(mode, size, dedup, data, args, cores)
                if mode == "sync":
                    own_of[(size, dedup)] = (m["own"], m["tests"])
                own, tests = own_of.get((size, dedup), (0.0, 0))
                rate = m["completions"] / m["took"] / cores
                ratio = f"{m['cpu'] / own:7.2f}" if own else "      -"
                print(f"{size:>5} {mode:<5} {'on' if dedup else 'off':<5} {rate:>12.1f} "
                      f"{1000 * m['cpu'] / m['completions']:>12.1f} {1000 * own / m['completions']:>10.1f} {ratio} "
                      f"{m['p50']:>7.2f} {m['p99']:>7.2f} {m['deduplicated']:>6.0f} {tests:>6} "
                      f"{1000 * (m['cpu'] - own) / max(1, tests):>13.2f}", flush=True)
    print("CPU/own: the CPU of the whole process tree over the programs' own CPU in the tests that ran (the sync "
          "run's figure is used for the async row); dedup#: completions that took another's result; extra ms/test: "
          "CPU beyond the programs' own, per test run")
    pool_run(args, data, CALLERS)
    if not args.no_ray:
        ray_run(args, data, cores)


def ray_run(args: Any, data: tuple[list[str], list[str], list[str]], cores: int) -> None:
    import ray
    from ray.cluster_utils import Cluster

    per_node = max(1, cores // 2)
    store = 100 * 1024 * 1024
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": per_node, "object_store_memory": store,
                                                            "include_dashboard": False})
    cluster.add_node(num_cpus=per_node, object_store_memory=store)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    texts, ios, pids = data
    try:
        if args.callers_only:
            callers_run(args, data, CALLERS)
            return
        with CodeReward(args.shape, timeout=args.timeout, max_tests=args.max_tests, ray=True) as reward:
            reward(completions=texts[:16], input_output=ios[:16], problem_id=pids[:16])
            with CodeReward(args.shape, timeout=args.timeout, max_tests=args.max_tests, workers=cores) as local:
                local(completions=texts[:16], input_output=ios[:16], problem_id=pids[:16])
                for name, r in (("one machine", local), ("Ray, 2 local nodes", reward)):
                    r.cache = 0  # both measured on the whole batch, not on the warm-up's results
                    started = time.perf_counter()
                    r(completions=texts, input_output=ios, problem_id=pids)
                    took = time.perf_counter() - started
                    f = batch_figures(r.last, "apps")
                    print(f"{name:<20} {len(texts)} completions in {took:.2f} s, {len(texts) / took / cores:.1f}/s/core, "
                          f"p50 {f['apps/latency_p50_s']:.2f} s, p99 {f['apps/latency_p99_s']:.2f} s, "
                          f"{f['apps/deduplicated']:.0f} deduplicated")
        callers_run(args, data, CALLERS)
    finally:
        ray.shutdown()
        cluster.shutdown()


CALLERS = 8  # verl's default reward.num_workers


def tree(pid: int) -> list[int]:
    """`pid` and every process under it, from /proc (the local cluster's nodes are all on this machine)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS"))
            total += int(line.split()[1])
        except (OSError, StopIteration):
            continue
    return total / 1024


def callers_run(args: Any, data: tuple[list[str], list[str], list[str]], callers: int) -> None:
    """`callers` processes scoring at once as verl's reward workers do (each a Ray actor with its own
    `CodeReward(ray=True)`): the executor actors per node, their executors, processes and memory."""
    import ray

    @ray.remote(num_cpus=0)
    class Worker:
        def __init__(self) -> None:
            self.reward = CodeReward(args.shape, timeout=args.timeout, max_tests=args.max_tests, ray=True)

        def score(self, texts: list[str], ios: list[str], pids: list[str]) -> int:
            return len(self.reward(completions=texts, input_output=ios, problem_id=pids))

        def close(self) -> None:
            self.reward.close()

    texts, ios, pids = data
    workers = [Worker.remote() for _ in range(callers)]
    started = time.perf_counter()
    share = max(1, len(texts) // callers)
    ray.get([w.score.remote(texts[i * share:(i + 1) * share], ios[i * share:(i + 1) * share],
                            pids[i * share:(i + 1) * share]) for i, w in enumerate(workers)])
    took = time.perf_counter() - started
    named = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "pytest_apps"]
    print(f"{callers} callers, {share} completions each, in {took:.2f} s: {len(named)} executor actors for "
          f"{len(ray.nodes())} nodes")
    for entry in named:
        actor = ray.get_actor(entry["name"], namespace="pytest_apps")
        ready = ray.get(actor.ready.remote())
        procs = tree(ready["pid"])
        print(f"  {entry['name'][:40]:<40} executors {ready['executors']}, callers {ready['callers']}, "
              f"{len(procs)} processes (actor + servers), {rss_mib(procs):.0f} MiB RSS "
              f"(actor {rss_mib([ready['pid']]):.0f} MiB)")
    ray.get([w.close.remote() for w in workers])


def cmdline_of(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def parent_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def pools_in(folder: str) -> list[int]:
    """The machine-pool servers serving from `folder` (``python -m pytest_apps.engine.machine <folder> <name>``)."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit()
            and b"pytest_apps.engine.machine\0" + folder.encode() + b"\0" in cmdline_of(int(e))]


def pool_caller(shape: str, timeout: float, max_tests: int, pooled: bool, chunk: tuple[list, list, list],
                done: Any, leave: Any) -> None:
    """One caller process (a reward worker, a trainer's rank): its own `CodeReward`, one batch, then it waits to be
    counted before it closes."""
    texts, ios, pids = chunk
    with CodeReward(shape, timeout=timeout, max_tests=max_tests, shared=pooled) as reward:
        reward(completions=texts, input_output=ios, problem_id=pids)
        done.put(os.getpid())
        leave.wait(300)


def pool_run(args: Any, data: tuple[list[str], list[str], list[str]], callers: int) -> None:
    """`callers` processes on this machine scoring at once, each with its own `CodeReward` (verl's reward workers
    without Ray, a trainer's ranks): with ``shared=True`` (one pool per machine) and without (each caller its own
    executors). The executor servers on the machine while every caller is connected, the processes and memory of
    the pool (or of the callers' own executors), and the time to score every caller's share."""
    import multiprocessing
    import tempfile

    context = multiprocessing.get_context("spawn")
    texts, ios, pids = data
    share = max(1, len(texts) // callers)
    chunks = [(texts[i * share:(i + 1) * share], ios[i * share:(i + 1) * share], pids[i * share:(i + 1) * share])
              for i in range(callers)]
    for pooled in (True, False):
        with tempfile.TemporaryDirectory() as folder:
            os.environ["PYTEST_APPS_POOL_DIR"] = folder  # a pool of this run's own (the callers inherit it)
            os.environ["PYTEST_APPS_POOL_IDLE"] = "5"
            done, leave = context.Queue(), context.Event()
            procs = [context.Process(target=pool_caller, args=(args.shape, args.timeout, args.max_tests, pooled,
                                                               chunk, done, leave)) for chunk in chunks]
            started = time.perf_counter()
            for proc in procs:
                proc.start()
            for _ in procs:
                done.get(timeout=600)
            took = time.perf_counter() - started
            pools = pools_in(folder)
            # the processes that run programs: the pool's (its server, executors, zygotes) or the callers'
            # executors (each caller's own servers and their zygotes), never the callers themselves
            held = sorted({q for p in pools for q in tree(p)} if pooled else
                          {q for proc in procs for q in tree(proc.pid)} - {proc.pid for proc in procs})
            # (a server's zygote and spare children are forks of it, with its command line)
            servers = [p for p in held if b"executor/serve.py" in cmdline_of(p)
                       and b"executor/serve.py" not in cmdline_of(parent_of(p))]
            print(f"{callers} callers on one machine, shared={pooled}: {share} completions each in {took:.2f} s; "
                  f"{len(servers)} executor servers for {len(os.sched_getaffinity(0))} CPUs"
                  f"{f', in {len(pools)} pool process' if pooled else ''}; {len(held)} processes, "
                  f"{rss_mib(held):.0f} MiB RSS", flush=True)
            leave.set()
            for proc in procs:
                proc.join(60)
    os.environ.pop("PYTEST_APPS_POOL_DIR", None)


if __name__ == "__main__":
    main()
