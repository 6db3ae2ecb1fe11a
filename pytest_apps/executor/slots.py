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

`with slot.whole():` holds every slot of the pool on this machine, so that no other program of the run runs
meanwhile (a verdict confirmed alone, engine/confirm.py). It takes the pool's confirmation lock first, then the
slots in index order: a worker running a test holds one slot and waits for none while holding it, and two workers
that want the whole pool at once take turns on the confirmation lock, so no two wait on each other.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

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
        # every lock file of the pool is opened now: a worker that ends first removes the folder, and what is open
        # stays shared with the others (a file opened after that would be a new lock, held by nobody else)
        self._all = [_open(folder, f"slot-{k}") for k in range(count)] + [_open(folder, "confirming")]
        self._fd = self._all[self.index]
        self._whole = False  # holding every slot of the pool (`whole`): its own slot is held already
        self.waited = 0.0

    def __enter__(self) -> Slot:
        if self._whole:
            self.waited = 0.0
            return self
        self.waited = _lock(self._fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._whole:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextmanager
    def whole(self) -> Iterator[Slot]:
        """Hold every slot of the pool on this machine (see the module's note); `waited` is the wait for them."""
        order = [self._all[-1], *self._all[:-1]]  # the confirmation lock first, then the slots in index order
        taken: list[int] = []
        try:
            waited = 0.0
            for fd in order:
                waited += _lock(fd)
                taken.append(fd)
            self._whole, self.waited = True, waited
            yield self
        finally:
            self._whole = False
            for fd in reversed(taken):
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        while self._all:
            os.close(self._all.pop())
        self._fd = -1


def _open(folder: str, name: str) -> int:
    return os.open(os.path.join(folder, name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def _lock(fd: int) -> float:
    """Take the exclusive lock on `fd`, waiting as long as it takes: the seconds waited."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return 0.0
    except BlockingIOError:
        started = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)
        return time.monotonic() - started
