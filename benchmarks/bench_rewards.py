"""Reward throughput on real rows and model programs: completions scored per second per core, and the latency
of one training batch, on one machine and on a two-node local Ray cluster, printed in the same run (run by hand).

    APPS_SHARED_DATA=../shared/apps-data python benchmarks/bench_rewards.py [--batch 512] [--shape strict]
        [--max-tests 20] [--timeout 4] [--no-ray]

The batch is `--batch` completions drawn round-robin from the model programs of `candidates.jsonl` for the
problems of `apps_test_rows.jsonl` (several per problem, as a GRPO group has), each wrapped in model text (a
draft inside a think block, the answer in a python fence), scored through `CodeReward` exactly as TRL calls
it, with the rows' own ``input_output`` column. Each configuration is warmed with one small batch first (the
executors' start-up is not a training step's cost), then timed over `--rounds` batches; the figure is the
median. "per core" divides by the cores that ran programs (the executors). The Ray cluster is two nodes of
`cores // 2` CPUs each on this machine, so it measures the actors' overhead against one machine, not a speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from pytest_apps.rewards import CodeReward
from shareddata import shared


def batch_of(folder: Path, size: int) -> tuple[list[str], list[str], list[str]]:
    rows = {str(r["problem_id"]): r["input_output"]
            for r in map(json.loads, (folder / "apps_test_rows.jsonl").read_text().splitlines())}
    programs: dict[str, list[str]] = {}
    for record in map(json.loads, (folder / "candidates.jsonl").read_text().splitlines()):
        pid = str(record["problem_id"])
        if pid in rows:
            programs.setdefault(pid, []).append(record["code"])
    ids = sorted(programs, key=int)
    texts, ios, pids = [], [], []
    for i in range(size):
        pid = ids[i % len(ids)]
        code = programs[pid][(i // len(ids)) % len(programs[pid])]
        texts.append(f"<think>\n```python\nprint('draft')\n```\n</think>\n```python\n{code.rstrip()}\n```\n")
        ios.append(rows[pid])
        pids.append(pid)
    return texts, ios, pids


def measure(reward: CodeReward, texts: list[str], ios: list[str], pids: list[str], rounds: int) -> dict[str, Any]:
    reward(prompts=None, completions=texts[:16], completion_ids=None, input_output=ios[:16], problem_id=pids[:16])
    times, out = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        out = reward(prompts=None, completions=texts, completion_ids=None, input_output=ios, problem_id=pids)
        times.append(time.perf_counter() - started)
    assert out is not None
    tests = sum(d.tests_run for d in reward.last)
    return {"latency": statistics.median(times), "rewards": out, "tests": tests,
            "verdicts": [(d.reward, d.verdict, d.tests_passed, d.tests_run) for d in reward.last]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--shape", default="strict", choices=["strict", "fraction"])
    parser.add_argument("--max-tests", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    texts, ios, pids = batch_of(shared(), args.batch)
    print(f"{args.batch} completions over {len(set(pids))} problems, shape {args.shape}, max {args.max_tests} tests, "
          f"{cores} cores")
    rows = []
    with CodeReward(args.shape, timeout=args.timeout, max_tests=args.max_tests, workers=cores) as reward:
        local = measure(reward, texts, ios, pids, args.rounds)
    rows.append(("one machine", cores, local))
    if not args.no_ray:
        import ray
        from ray.cluster_utils import Cluster

        per_node = max(1, cores // 2)
        store = 100 * 1024 * 1024
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": per_node, "object_store_memory": store,
                                                                "include_dashboard": False})
        cluster.add_node(num_cpus=per_node, object_store_memory=store)
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        try:
            with CodeReward(args.shape, timeout=args.timeout, max_tests=args.max_tests, ray=True) as reward:
                on_ray = measure(reward, texts, ios, pids, args.rounds)
        finally:
            ray.shutdown()
            cluster.shutdown()
        rows.append(("Ray, 2 local nodes", 2 * per_node, on_ray))
    base = local["latency"]
    print(f"{'where':<20} {'cores':>5} {'batch latency s':>16} {'completions/s/core':>19} {'tests/s':>8} {'vs one':>7}")
    for name, used, m in rows:
        rate = args.batch / m["latency"] / used
        print(f"{name:<20} {used:>5} {m['latency']:>16.2f} {rate:>19.1f} {m['tests'] / m['latency']:>8.0f} "
              f"{m['latency'] / base:>7.2f}")
    scored = [r for r in local["rewards"] if r is not None]
    same = "not run"
    if len(rows) > 1:
        differ = sum(a != b for a, b in zip(local["verdicts"], rows[1][2]["verdicts"]))
        same = "yes" if not differ else f"no, {differ} completions differ (a time-limit verdict near the limit?)"
    print(f"mean reward {statistics.mean(scored) if scored else 0:.3f}, {len(scored)}/{args.batch} scored, "
          f"{local['tests']} tests run; same verdicts on Ray: {same}")


if __name__ == "__main__":
    main()
