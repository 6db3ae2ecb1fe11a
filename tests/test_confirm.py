"""Confirmation: a timeout or near-limit verdict met while the machine was measured slower than quiet runs again,
alone on the machine, before it is final; on a quiet machine nothing is run twice. Slow spells cannot be made on
demand, so the measured slowdown is pinned through the executor's seam (PYTEST_APPS_SPEED_FACTOR), and the spell
the probe missed is a real stall of the program's process (SIGSTOP from outside, as a hypervisor taking the CPU:
its own time grows, its CPU time does not)."""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager

import pytest

from pytest_apps.executor.slots import Slot, pool_folder, remove_pool

pytestmark = pytest.mark.xdist_group("time-limits")  # they load the machine on purpose, like test_time_limits


# -- holding the whole pool ------------------------------------------------------------------------------------


def _free(run_name: str, index: int) -> bool:
    import fcntl

    fd = os.open(os.path.join(pool_folder(run_name), f"slot-{index}"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_a_slot_can_hold_the_whole_pool_and_waits_for_every_slot_in_use():
    run_name = f"test-whole-{os.getpid()}"
    mine, theirs = Slot(run_name, 0, 2), Slot(run_name, 1, 2)
    got, release, seen = threading.Event(), threading.Event(), []

    def alone() -> None:
        with mine.whole():
            got.set()
            with mine:  # its own run inside: takes nothing more, gives nothing back
                pass
            seen.append(_free(run_name, 0) or _free(run_name, 1))
            release.wait(5)

    try:
        with theirs:  # another worker's program runs: the whole pool waits for it
            holder = threading.Thread(target=alone)
            holder.start()
            time.sleep(0.3)
            assert not got.is_set()
        assert got.wait(5)
        assert not _free(run_name, 0) and not _free(run_name, 1)
        release.set()
        holder.join(5)
        assert seen == [False]
        assert _free(run_name, 0) and _free(run_name, 1)  # all given back
    finally:
        release.set()
        mine.close()
        theirs.close()
        remove_pool(run_name)


def test_two_workers_holding_the_whole_pool_at_once_take_turns_without_deadlock():
    run_name = f"test-turns-{os.getpid()}"
    slots = [Slot(run_name, k, 2) for k in range(2)]
    held: list[tuple[int, float, float]] = []

    def confirm(k: int) -> None:
        for _ in range(5):
            with slots[k].whole():
                started = time.monotonic()
                time.sleep(0.02)
                held.append((k, started, time.monotonic()))

    remove_pool(run_name)  # a worker that ended first removes the pool's folder: the others go on with it
    try:
        workers = [threading.Thread(target=confirm, args=(k,)) for k in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(20)
        assert not any(w.is_alive() for w in workers), "deadlock"
        spans = sorted((s, e) for _, s, e in held)
        assert len(spans) == 10 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # never both at once
    finally:
        for slot in slots:
            slot.close()
        remove_pool(run_name)
