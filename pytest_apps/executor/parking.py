"""Parking: a running test held off the CPUs for a while at its client's request, its own time not counting on.

A sandbox server with more programs at their time limits than its CPUs can serve (serve/pool.py) parks the one
there longest, so that the CPUs go to the runs behind it, and resumes it when the others leave room. Parking
freezes the test's cgroup: none of its processes runs or forks until it is thawed, and each stays killable. The
time it was frozen then counts, for each task that was running or waiting for a CPU when it was frozen, as a wait
for a CPU: not the program's own time (clock.py), as if the machine had given its CPUs to other work. So a
program's verdict is the same parked or not.

A test none of whose tasks is runnable (it sleeps, or waits on a pipe) is not parked: it uses no CPU, and frozen,
the time it would have slept on would pass uncounted. Nor is one with less own time than the share of its limit
its client asks for (a server parks the runs nearest their limit, most of which time out, not those about to
end), nor one without a cgroup that can freeze. Such a test runs on; the client is told whether the test was
parked. A test is never parked longer than its wall-clock backstop: it is resumed then whatever its client said,
and the backstop moves on by the time it was parked, so a parked test is stopped by its own limits only.

Standard library only: the server imports this as part of its private package.
"""

from __future__ import annotations

import time

from .cgroups import Group
from .clock import OwnClock


class Parking:
    """One test's parking: `park()` and `resume()` as its client asks, `parked` while frozen, `total` seconds."""

    __slots__ = ("group", "clock", "t0", "limit", "since", "tids", "total", "count")

    def __init__(self, group: Group | None, clock: OwnClock, t0: float, limit: float) -> None:
        self.group = group
        self.clock = clock
        self.t0 = t0  # when the test was handed over
        self.limit = limit  # its time limit (seconds of its own time)
        self.since: float | None = None  # when it was frozen
        self.tids: set[int] = set()  # its tasks then runnable
        self.total = 0.0
        self.count = 0

    @property
    def parked(self) -> bool:
        return self.since is not None

    def figures(self) -> dict[str, float]:
        """For the run's answer: the seconds it was parked and how many times (nothing when it never was)."""
        return {"parked": self.total, "parked_times": self.count} if self.count else {}

    def park(self, now: float, min_share: float = 0.0) -> bool:
        """Freeze the test if it can be, uses a CPU and has had `min_share` of its limit in own time or more
        (sampled at `now`); whether it was."""
        if self.since is not None or self.group is None or not self.group.can_freeze():
            return False
        runnable = self.clock.sample(now)
        if not runnable or self.clock.settled(now - self.t0) < min_share * self.limit:
            return False
        try:
            self.group.freeze(True)
        except OSError:
            return False
        self.since = time.monotonic()  # (frozen from here at the latest: what is counted as held is no more)
        self.tids = runnable
        self.count += 1
        return True

    def resume(self) -> float:
        """Thaw the test: the seconds it was parked (0 when it was not), each runnable task's as a wait."""
        if self.since is None:
            return 0.0
        now = time.monotonic()
        held = now - self.since  # (before the thaw: no time it may have run counts as held)
        self.since = None
        assert self.group is not None
        self.group.freeze(False)
        self.clock.waited(self.tids, held, now)
        self.total += held
        return held
