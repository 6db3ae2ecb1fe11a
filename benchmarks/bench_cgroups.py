"""The harness's CPU per test for a per-test cgroup (run by hand, as root, not by pytest):

    python benchmarks/bench_cgroups.py [--tests 1000] [--version 1|2]

For each cgroup layout the machine offers (or `--version`'s), `--tests` times:

- server: take a ready group, read its CPU and memory peak, kill it (already empty, as after a test whose
  processes all ended) and recycle it (counters zeroed, back among the ready ones): CPU of this process;
- spare: a forked child writes b"0" to each of the group's cgroup.procs descriptors and exits: the children's
  CPU less that of the same fork and exit without the writes, measured alternately in the same run, and the
  wall time of the writes (what a spare's setup waits for);
- remake: instead of a reset, remove the group and make a new one (the other way to get zeroed counters);
- a kill of a group that still holds a process (a test that left one behind), `--tests`/10 times.

The figures are the least per-test mean of `--rounds` rounds.
"""

from __future__ import annotations

import argparse
import os
import resource
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_apps.executor.cgroups import CgroupPool, Group  # noqa: E402


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def server_side(pool: CgroupPool, n: int) -> float:
    t = time.process_time()
    for _ in range(n):
        g = pool.take()
        g.cpu_ns()
        g.memory_peak()
        pool.recycle(g)
    return (time.process_time() - t) / n


def spawn(fds: list[int], w: int) -> None:
    pid = os.fork()
    if pid == 0:
        t = time.perf_counter()
        for fd in fds:
            os.write(fd, b"0")
        os.write(w, struct.pack("d", time.perf_counter() - t))
        os._exit(0)
    os.waitpid(pid, 0)


def spare_side(pool: CgroupPool, n: int) -> tuple[float, float]:
    """(CPU of the writes per spare, wall time of the writes per spare)."""
    g = pool.take()
    r, w = os.pipe()
    joined = plain = wall = 0.0
    for i in range(2 * n):
        c = children_cpu()
        spawn(g.attach_fds() if i % 2 else [], w)
        took = children_cpu() - c
        if i % 2:
            joined += took
            wall += struct.unpack("d", os.read(r, 8))[0]
        else:
            plain += took
            os.read(r, 8)
    os.close(r)
    os.close(w)
    pool.recycle(g)
    return (joined - plain) / n, wall / n


def remake(pool: CgroupPool, n: int) -> float:
    g = pool.take()
    t = time.process_time()
    for _ in range(n):
        g.remove()
        g = pool._make()  # noqa: SLF001 - what prepare() does, one group at a time
    cost = (time.process_time() - t) / n
    pool.recycle(g)
    return cost


def sleepers() -> tuple[int, int, int]:
    """A helper, forked once, that forks a sleeping process on each byte it reads and writes back its pid: the
    processes killed are not this process's children, so this process pays no copy-on-write faults for them (as
    the server pays none for the zygote's children). Returns (pid, request fd, answer fd)."""
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(req_w)
        os.close(ans_r)
        while os.read(req_r, 1):
            try:
                while os.wait3(os.WNOHANG)[0]:  # the killed ones
                    pass
            except ChildProcessError:
                pass
            child = os.fork()
            if child == 0:
                time.sleep(60)
                os._exit(0)
            os.write(ans_w, struct.pack("i", child))
        os._exit(0)
    os.close(req_r)
    os.close(ans_w)
    return pid, req_w, ans_r


def kill_one(pool: CgroupPool, n: int) -> tuple[float, float]:
    """(CPU, wall) of the kill of a group holding one sleeping process."""
    helper, req, ans = sleepers()
    cpu = wall = 0.0
    for _ in range(n):
        g = pool.take()
        os.write(req, b"x")
        pid = struct.unpack("i", os.read(ans, 4))[0]
        for fd in g.attach_fds():
            os.write(fd, str(pid).encode())
        t, c = time.perf_counter(), time.process_time()
        g.kill()
        wall += time.perf_counter() - t
        cpu += time.process_time() - c
        pool.recycle(g)
    os.close(req)
    os.close(ans)
    os.waitpid(helper, 0)
    return cpu / n, wall / n


def one_layout(version: int, n: int, rounds: int) -> None:
    pool = CgroupPool(version)
    reason = pool.setup("pytest-apps-bench", pids_max=64)
    if reason:
        print(f"cgroup v{version}: not available ({reason})")
        return
    try:
        pool.prepare(2)
        server = min(server_side(pool, n) for _ in range(rounds))
        spare = min((spare_side(pool, n) for _ in range(rounds)), key=lambda x: x[0])
        again = min(remake(pool, n) for _ in range(rounds))
        kill = kill_one(pool, max(1, n // 10))
        print(f"{pool.describe()}, {n} tests x {rounds} rounds, least per-test mean:")
        print(f"  server (take, cpu+memory read, kill of the empty group, reset): {server * 1e6:7.1f} us CPU")
        print(f"  spare (joining: {len(Group.attach_fds(pool.take()))} writes):"
              f"{' ' * 24}{spare[0] * 1e6:7.1f} us CPU, {spare[1] * 1e6:7.1f} us wall")
        print(f"  total per test:{' ' * 48}{(server + spare[0]) * 1e6:7.1f} us CPU")
        print(f"  (a remove and make instead of the reset:{' ' * 22}{again * 1e6:7.1f} us CPU)")
        print(f"  (a kill of a group holding one process:{' ' * 23}{kill[0] * 1e6:7.1f} us CPU, "
              f"{kill[1] * 1e6:7.1f} us wall)")
    finally:
        pool.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--version", type=int, choices=(1, 2))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_cgroups: per-test cgroups need root; run it as root")
    for version in [args.version] if args.version else [1, 2]:
        one_layout(version, args.tests, args.rounds)


if __name__ == "__main__":
    main()
