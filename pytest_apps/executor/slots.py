"""Execution slots: at most as many candidate children running at once, on one machine, as a run has CPUs.

With `-n 8` on two CPUs, eight children would share two CPUs; each program's own time stays right (clock.py), but
every run would take four times its own time of the wall clock, and the wall-clock backstop would come within
reach of a correct program. So the processes of a run share a pool of slots on each machine: a slot is one lock
file in a folder named after the run, and an executor holds its slot (an exclusive `flock`) while its test runs.
Waiting for a slot is not the program's time: the program starts when its executor has the slot.

Workers are given slots in turn (worker k takes slot k mod the slot count), as CPU pinning gives them CPUs, so
that the workers pinned to one CPU take turns on it. A lock held by a process that dies is released by the
kernel. The folder holds nothing but empty lock files, and candidates cannot reach it (their Landlock rules allow
no writes outside their own work folder).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time

PREFIX = "pytest-apps-slots-"


def pool_folder(run: str) -> str:
    """This machine's folder of the run's slots (a run started on one machine may have workers on others)."""
    return os.path.join(tempfile.gettempdir(), PREFIX + run)


def remove_pool(run: str) -> None:
    shutil.rmtree(pool_folder(run), ignore_errors=True)


class Slot:
    """One slot of a run's pool on this machine. `with slot:` waits for it and holds it; `waited` is the last wait
    in seconds."""

    def __init__(self, run: str, index: int, count: int) -> None:
        if count < 1:
            raise ValueError(f"a pool needs at least one slot, not {count}")
        self.index = index % count
        self.count = count
        folder = pool_folder(run)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        self._fd = os.open(os.path.join(folder, f"slot-{self.index}"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.waited = 0.0

    def __enter__(self) -> Slot:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.waited = 0.0
        except BlockingIOError:
            started = time.monotonic()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            self.waited = time.monotonic() - started
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
