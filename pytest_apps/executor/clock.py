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

`run_delay` is not always a wait: under load, Linux (6.18 here, rarely) can add a whole sleep to a sleeping task's
figure (a program sleeping 0.3 s, 305 ms of "wait", an own time of 0.001 s). A task seen blocked at a sample cannot
have waited since for longer than the time that has passed less the CPU time it had, so D takes each reading only up
to that room, and a reading far beyond it, none of it (`_Waits`). A sleep that no sample falls into (shorter than
the sample interval) can still be taken for a wait: it is at most one interval.

A test parked by its client (parking.py) is frozen: its tasks neither run nor wait on a run queue meanwhile, so
the kernel counts nothing, and `waited` adds the time to each task that was runnable when it was frozen, as a wait.

Standard library only: the server imports this as part of its private package.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

SAMPLE_INTERVAL = 0.1  # seconds between samples of a running program's tasks
SKEW = (0.002, 0.01)  # seconds, and a share of the time measured: how far the scheduler's clock and ours may part


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
                if runnable is not None:  # (its state first: seen blocked, every wait it had is in the figures after)
                    with open(base + "stat", "rb") as f:
                        if f.read().rpartition(b")")[2].split()[:1] == [b"R"]:
                            runnable.add(int(tid))
                with open(base + "schedstat", "rb") as f:
                    fields = f.read().split()
                out[int(tid)] = (int(fields[0]), int(fields[1]))
                with open(base + "children", "rb") as f:
                    stack.extend(int(x) for x in f.read().split())
            except (OSError, ValueError, IndexError):
                continue
    return out


class OwnClock:
    """The figures of one test's process tree, kept across samples. `start()` right before the test is handed
    over (the child was forked and fenced ahead of time: what it used before is not the program's), `sample()`
    while it runs, `finish()` once it has exited or been killed (before it is reaped)."""

    __slots__ = ("pid", "waits", "base", "previous", "since", "pending", "floor", "exact")

    def __init__(self, pid: int, exact: Callable[[], float] | None = None) -> None:
        """`exact`: the whole tree's CPU seconds so far from an exact count (a cgroup's), read at each sample."""
        self.pid = pid
        self.exact = exact
        self.waits: dict[int, _Waits] = {}  # each task's figures, and what of its run-queue wait is taken off (take)
        self.base = (0, 0)  # the leader's figures when the test was handed over
        self.previous = 0.0  # when the last sample was taken (time.monotonic)
        self.since = 0.0  # the program has had a CPU at some moment after this time
        self.pending = 0.0  # at the last sample: the longest wait for a CPU the kernel may not have counted yet
        self.floor = 0.0  # CPU seconds of the whole tree known from an exact count (rusage, a cgroup)

    def start(self, now: float) -> None:
        self.base = leader_times(self.pid) or (0, 0)
        self.previous = self.since = now
        self.waits[self.pid] = _Waits(self.base, now)

    def sample(self, now: float) -> set[int]:
        """Read every task's figures at time `now`; the tasks then running or waiting for a CPU. The kernel adds a
        wait for a CPU to a task's figures only once the task gets the CPU, so a runnable program may be waiting
        since it last ran, uncounted: at most since the sample before the last one at which its CPU time grew.
        `pending` is that bound (0 when no task is runnable: a blocked task's waits are all counted), and
        `settled` subtracts it."""
        before = self.cpu
        runnable: set[int] = set()
        figures = task_times(self.pid, runnable)
        self.take(figures, runnable, now, time.monotonic())
        if self.exact is not None:
            self.count_at_least(self.exact())
        if self.cpu > before:
            self.since = self.previous
        self.previous = now
        self.pending = now - self.since if runnable else 0.0
        return runnable

    def waited(self, tids: set[int], seconds: float, now: float) -> None:
        """Tasks `tids` were kept off the CPUs for `seconds` until `now` by their server (parking.py), as runnable as
        when they were last sampled: a wait for a CPU the kernel does not count, taken off as one. A wait it may
        not have counted yet (`pending`) begins at `now` at the earliest."""
        self.previous = self.since = max(self.since, now)
        for tid in tids:
            waits = self.waits.get(tid)
            if waits is not None:
                waits.held(int(seconds * 1e9))

    def take(self, figures: dict[int, tuple[int, int]], runnable: set[int] | None, at: float, until: float) -> None:
        """Keep one reading of tasks' figures, read between `at` and `until` (each task's state before its figures;
        `runnable` the tasks then running or waiting for a CPU, None when their states were not read).

        A task seen blocked cannot have waited for a CPU since, beyond the time that has passed less the CPU time
        it had (`_Waits`): a reading that adds far more wait than that was not all a wait for a CPU (see the
        module's docstring), and none of it is taken off the program's time."""
        for tid, (cpu, delay) in figures.items():
            waits = self.waits.get(tid)
            if waits is None:  # first seen: begun since the reading before (its figures are its own since)
                waits = self.waits[tid] = _Waits((0, 0), self.previous)
            waits.take(cpu, delay, until, None if runnable is None or tid in runnable else at)

    def finish(self) -> None:
        """The leader's last figures (before it is reaped) and the exact count so far."""
        figures = leader_times(self.pid)
        if figures is not None:
            now = time.monotonic()
            self.take({self.pid: figures}, None, now, now)
        self.count_exact()

    def count_exact(self) -> None:
        """The exact count (a cgroup's) as it stands now, if there is one: once nothing of the test runs, its last."""
        if self.exact is not None:
            self.count_at_least(self.exact())

    def count_at_least(self, seconds: float) -> None:
        """An exact count of the whole tree's CPU time (the rusage of what was reaped, a cgroup's usage): the CPU
        time C is at least that, whatever the samples saw."""
        self.floor = max(self.floor, seconds)

    @property
    def delay(self) -> float:
        """D: the largest run-queue wait of one task since the start, in seconds (as `take` admits it)."""
        return max((w.taken for w in self.waits.values()), default=0) / 1e9

    @property
    def cpu(self) -> float:
        """C: the CPU time of all tasks together since the start, in seconds (at least the exact count, if any)."""
        total = sum(w.cpu for w in self.waits.values()) - (self.base[0] if self.pid in self.waits else 0)
        return max(total / 1e9, self.floor)

    def own(self, wall: float) -> float:
        return own_time(wall, self.delay, self.cpu)

    def settled(self, wall: float) -> float:
        """The least own time the program can have had at the last sample: what a running program is stopped
        on (once it has ended, `finish` has counted every wait, and `own` is exact)."""
        return own_time(wall, self.delay + self.pending, self.cpu)


class _Waits:
    """One task's run-queue wait as the clock takes it off: `taken` (ns) of what the kernel counted. A task cannot
    wait for a CPU longer than the time since it was last seen blocked, less the CPU time it had since: a reading
    is taken up to that room, and once the task has been seen blocked, a reading that goes beyond it by more than
    the two clocks can drift apart (SKEW) is not a wait for a CPU at all, and none of it is taken."""

    __slots__ = ("cpu", "delay", "taken", "blocked_at", "seen", "cpu_then", "since_then")

    def __init__(self, figures: tuple[int, int], blocked_at: float) -> None:
        self.cpu, self.delay = figures  # its figures at the last reading (they only grow: a tid reused within one
        # test would be undercounted, which is stricter)
        self.taken = 0
        self.blocked_at = blocked_at  # when it was last seen blocked (or, until `seen`, begun or handed its test)
        self.seen = False
        self.cpu_then = figures[0]  # its CPU time at blocked_at
        self.since_then = 0  # wait taken since blocked_at

    def take(self, cpu: int, delay: int, until: float, blocked_at: float | None) -> None:
        grown = delay - self.delay
        if grown > 0:
            span = until - self.blocked_at
            room = max(int(span * 1e9) - max(cpu - self.cpu_then, 0) - self.since_then, 0)
            if self.seen and grown > room + (SKEW[0] + SKEW[1] * span) * 1e9:
                grown = 0
            grown = min(grown, room)
            self.taken += grown
            self.since_then += grown
        self.cpu, self.delay = max(cpu, self.cpu), max(delay, self.delay)
        if blocked_at is not None:
            self.blocked_at, self.seen, self.cpu_then, self.since_then = blocked_at, True, self.cpu, 0

    def held(self, ns: int) -> None:
        """A wait the kernel does not count (the task was frozen while runnable): taken, and out of the room."""
        self.taken += ns
        self.since_then += ns


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
