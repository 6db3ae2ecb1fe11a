"""A program's own time, measured from outside: what the time limit counts.

The limit should measure the program, not the machine: the same program must get the same verdict alone, at
`-n 8` on two CPUs, or beside a busy neighbour. Linux keeps, for every task (thread), three numbers in
`/proc/<pid>/task/<tid>/schedstat`: nanoseconds on a CPU, nanoseconds waiting on a run queue for a CPU that
other work held (`run_delay`), and time slices. So, for the tasks of a test's process tree (the child, its
threads, every process it starts):

    own time = max(wall - D, C)

where D is the largest run-queue wait of any one task and C the CPU time of all tasks together.

- A single-threaded program: its wall time is its CPU time, plus the time it is blocked (sleeping, waiting on a
  pipe), plus D; so wall - D is CPU time plus blocked time, and on an idle machine (D near 0) it is the wall time.
- A program whose work runs in another thread or process (a deep recursion in a thread with a big stack, a
  subprocess) while the main thread waits for it: that worker's wait for a CPU is the largest D.
- Work in parallel (several busy threads or processes) counts as its CPU time C, which does not depend on how
  many CPUs the program happened to get.

Tasks are sampled while the program runs and once when it has exited (its leader stays readable until it is
reaped), and each task's figures are kept after it is gone: a thread that ends between two samples loses at most
one interval of its figures, which only makes the own time larger (stricter), never smaller.

The kernel adds a wait for a CPU to `run_delay` only when the task gets the CPU, so while a task is still
waiting, that wait is missing and looks like blocked (own) time. On a machine loaded far beyond its CPUs a
program can wait most of a second: a running program
is stopped on the least own time it can have had (`OwnClock.settled`: less the longest wait that may not be
counted yet), which for a program that does get its CPU is at most one sample interval less than its own
time; the verdict itself is taken on the exact figures once the program has ended.

Standard library only: the server imports this as part of its private package.
"""

from __future__ import annotations

import os
from collections.abc import Callable

SAMPLE_INTERVAL = 0.1  # seconds between samples of a running program's tasks


def task_times(pid: int, runnable: set[int] | None = None) -> dict[int, tuple[int, int]]:
    """tid -> (CPU ns, run-queue wait ns) for every live task of `pid` and of the processes below it; the
    tids of those that are running or waiting for a CPU (state R) are added to `runnable` when given."""
    out: dict[int, tuple[int, int]] = {}
    stack = [pid]
    while stack:
        proc = stack.pop()
        try:
            tids = os.listdir(f"/proc/{proc}/task")
        except OSError:
            continue
        for tid in tids:
            base = f"/proc/{proc}/task/{tid}/"
            try:
                with open(base + "schedstat", "rb") as f:
                    fields = f.read().split()
                out[int(tid)] = (int(fields[0]), int(fields[1]))
                if runnable is not None:
                    with open(base + "stat", "rb") as f:
                        if f.read().rpartition(b")")[2].split()[:1] == [b"R"]:
                            runnable.add(int(tid))
                with open(base + "children", "rb") as f:
                    stack.extend(int(x) for x in f.read().split())
            except (OSError, ValueError, IndexError):
                continue
    return out


class OwnClock:
    """The figures of one test's process tree, kept across samples. `start()` right before the test is handed
    over (the child was forked and fenced ahead of time: what it used before is not the program's), `sample()`
    while it runs, `finish()` once it has exited or been killed (before it is reaped)."""

    __slots__ = ("pid", "tasks", "base", "previous", "since", "pending", "floor", "exact")

    def __init__(self, pid: int, exact: Callable[[], float] | None = None) -> None:
        """`exact`: the whole tree's CPU seconds so far from an exact count (a cgroup's), read at each sample."""
        self.pid = pid
        self.exact = exact
        self.tasks: dict[int, tuple[int, int]] = {}
        self.base = (0, 0)  # the leader's figures when the test was handed over
        self.previous = 0.0  # when the last sample was taken (time.monotonic)
        self.since = 0.0  # the program has had a CPU at some moment after this time
        self.pending = 0.0  # at the last sample: the longest wait for a CPU the kernel may not have counted yet
        self.floor = 0.0  # CPU seconds of the whole tree known from an exact count (rusage, a cgroup)

    def start(self, now: float) -> None:
        self.base = leader_times(self.pid) or (0, 0)
        self.previous = self.since = now

    def sample(self, now: float) -> None:
        """Read every task's figures at time `now`. The kernel adds a wait for a CPU to a task's figures only
        once the task gets the CPU, so a runnable program may be waiting since it last ran, uncounted: at most
        since the sample before the last one at which its CPU time grew. `pending` is that bound (0 when no
        task is runnable: a blocked task's waits are all counted), and `settled` subtracts it."""
        before = self.cpu
        runnable: set[int] = set()
        for tid, figures in task_times(self.pid, runnable).items():
            self._keep(tid, figures)
        if self.exact is not None:
            self.count_at_least(self.exact())
        if self.cpu > before:
            self.since = self.previous
        self.previous = now
        self.pending = now - self.since if runnable else 0.0

    def finish(self) -> None:
        """The leader's last figures (before it is reaped) and the exact count so far."""
        figures = leader_times(self.pid)
        if figures is not None:
            self._keep(self.pid, figures)
        self.count_exact()

    def count_exact(self) -> None:
        """The exact count (a cgroup's) as it stands now, if there is one: once nothing of the test runs, its last."""
        if self.exact is not None:
            self.count_at_least(self.exact())

    def count_at_least(self, seconds: float) -> None:
        """An exact count of the whole tree's CPU time (the rusage of what was reaped, a cgroup's usage): the CPU
        time C is at least that, whatever the samples saw."""
        self.floor = max(self.floor, seconds)

    def _keep(self, tid: int, figures: tuple[int, int]) -> None:
        old = self.tasks.get(tid)
        # a task's figures only grow (a tid reused within one test would be undercounted: stricter)
        self.tasks[tid] = figures if old is None else (max(figures[0], old[0]), max(figures[1], old[1]))

    def _figures(self):
        for tid, (cpu, delay) in self.tasks.items():
            if tid == self.pid:
                cpu, delay = cpu - self.base[0], delay - self.base[1]
            yield max(cpu, 0), max(delay, 0)

    @property
    def delay(self) -> float:
        """D: the largest run-queue wait of one task since the start, in seconds."""
        return max((d for _, d in self._figures()), default=0) / 1e9

    @property
    def cpu(self) -> float:
        """C: the CPU time of all tasks together since the start, in seconds (at least the exact count, if any)."""
        return max(sum(c for c, _ in self._figures()) / 1e9, self.floor)

    def own(self, wall: float) -> float:
        return own_time(wall, self.delay, self.cpu)

    def settled(self, wall: float) -> float:
        """The least own time the program can have had at the last sample: what a running program is stopped
        on (once it has ended, `finish` has counted every wait, and `own` is exact)."""
        return own_time(wall, self.delay + self.pending, self.cpu)


def leader_times(pid: int) -> tuple[int, int] | None:
    """(CPU ns, run-queue wait ns) of the process's main task; readable until the process is reaped."""
    try:  # (twice a test: plain descriptors, without the io objects open() builds)
        fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            fields = os.read(fd, 256).split()
        finally:
            os.close(fd)
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def own_time(wall: float, delay: float, cpu: float) -> float:
    """The program's own time from its wall time, the largest run-queue wait of a task and the total CPU time."""
    return max(wall - delay, cpu, 0.0)
