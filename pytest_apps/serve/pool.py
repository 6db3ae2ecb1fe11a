"""The server's executors and its admission: at most `workers` requests run at once, each on a warm executor of its
own (`executor.Executor`, one fork server each, started on first use and kept), in a thread of its own; others wait
in a bounded queue, first come first served, each until its deadline. A single program's run still going after a
second steps aside (up to four per worker at once; one that finds those places taken steps aside as soon as one
frees), so that programs at their time limit hold no queue of short runs behind them.

A request that cannot start in time, or finds the queue full, is `Busy` (answered 504, which trainers' clients
retry); nothing is ever started late. A request never shares its executor while it runs, so one request's program
cannot change another's verdict; the executor's own fence keeps their files and processes apart. Closing stops
what waits, tells running work to stop at its next test, gives it `grace` seconds, then stops every executor
(killing whatever still runs in it).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from ..executor import Executor, Limits
from ..core.wording import counted

T = TypeVar("T")
ASIDE_AFTER = 1.0  # seconds after which a program's run still going steps aside (Pool.run)
ASIDE_PER_WORKER = 4  # runs that may step aside at once, per worker


class Busy(Exception):
    """No executor became free before the request's deadline, or the queue was full."""


class Closing(Exception):
    """The server is stopping: the request was not started."""


class Pool:
    """`workers` executors behind a queue of at most `queue` waiting requests, each waiting at most `wait` seconds.

    `run(job, preload)` calls ``job(executor)`` in a worker thread with an executor whose zygote preloads `preload`
    (the judge profile's modules), made with `limits` and kept warm for the next request that needs the same."""

    def __init__(self, workers: int, queue: int, wait: float, limits: Limits, aside_after: float = ASIDE_AFTER,
                 aside_per_worker: int = ASIDE_PER_WORKER) -> None:
        self.workers = workers
        self.queue = queue
        self.wait = wait
        self.limits = limits
        self.aside_after = aside_after
        self.aside_places = aside_per_worker * workers
        self.waiting = 0  # requests in the queue now
        self.running = 0
        self.aside = 0  # long runs that stepped aside (see run), running beside the `workers`
        self.stepped = 0  # runs that ever stepped aside
        self.faults = 0  # runs the executors failed (each made once more on a renewed executor)
        self.stopping = threading.Event()  # jobs ask it between tests (run_problem's `stop`)
        self._gate: asyncio.Semaphore | None = None
        self._stepping: deque[Callable[[], bool]] = deque()  # runs past `aside_after` that found no place aside
        self._threads = ThreadPoolExecutor(max_workers=workers + self.aside_places, thread_name_prefix="apps-serve")
        self._lock = threading.Lock()
        self._idle: list[Executor] = []  # the most recently used last
        self._count = 0
        self._all: list[Executor] = []

    async def run(self, job: Callable[[Executor], T], preload: tuple[str, ...] = (), step_aside: bool = False) -> T:
        """``job(executor)``'s value, once an executor is free; Busy when none is before the deadline.

        A `step_aside` job (one program's run) still running `aside_after` seconds after its executor was ready (the
        start of a new one is not the program's run: counted as one, every request that met a new executor would
        step aside and make the next start another, until the places beside the workers were full) gives its place
        to the next request in the queue and runs on beside the workers, up to `aside_per_worker` x `workers` such
        runs at once: programs at their time limit, or sleeping, then hold no queue of short runs behind them (a
        trainer sends a completion's tests at once, so a program that times out on one often does on all). One that
        finds those places taken keeps its place and steps aside as soon as one frees, the longest waiting first
        (not at its end: held for the whole limit, every request behind it waited as long). Its verdict does not
        change, since its limit counts its own time, not time spent waiting for a CPU. The executors made for such
        runs are closed once they are no longer needed."""
        gate, place = await self._admit(), [True]  # (whether this job still holds its place at the gate)

        def step() -> bool:
            if not place[0] or ended[0]:
                return False
            if self.aside >= self.aside_places:  # (it steps aside when a place frees: _aside_freed)
                if step not in self._stepping:
                    self._stepping.append(step)
                return False
            place[0] = False
            self.aside += 1
            self.stepped += 1
            gate.release()
            return True

        loop = asyncio.get_running_loop()
        timer: list[asyncio.TimerHandle] = []
        ended = [False]

        def arm() -> None:  # (in the loop, once its executor is ready: from then on it is its program's run)
            if step_aside and not ended[0]:
                timer.append(loop.call_later(self.aside_after, step))

        try:
            if self.stopping.is_set():
                raise Closing("the server is stopping")
            return await loop.run_in_executor(self._threads, self._on_executor, job, preload,
                                              lambda: loop.call_soon_threadsafe(arm))
        finally:
            ended[0] = True
            self.running -= 1
            for t in timer:
                t.cancel()
            if step in self._stepping:
                self._stepping.remove(step)
            if place[0]:
                gate.release()
            else:
                self.aside -= 1
                self._aside_freed()

    async def _admit(self) -> asyncio.Semaphore:
        """A place at the gate, once one is free (the gate, held); Busy when none is before the deadline or the
        queue is full, Closing when the server stops."""
        if self.stopping.is_set():
            raise Closing("the server is stopping")
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.workers)
        if self.waiting >= self.queue and self._gate.locked():
            raise Busy(f"the queue is full ({counted(self.queue, 'request')} wait for "
                       f"{counted(self.workers, 'worker')})")
        self.waiting += 1
        try:
            async with asyncio.timeout(self.wait):  # (not wait_for: it can lose an acquisition made as it times out)
                await self._gate.acquire()
        except TimeoutError:
            raise Busy(f"no worker became free within {self.wait:g} s ({counted(self.workers, 'worker')}, "
                       f"{counted(self.waiting - 1, 'request')} waiting)") from None
        finally:
            self.waiting -= 1
        self.running += 1
        return self._gate

    def _aside_freed(self) -> None:
        """A place beside the workers is free: the run that has waited longest for one takes it (in the loop)."""
        while self._stepping and self.aside < self.aside_places:
            if self._stepping.popleft()():
                return

    def _on_executor(self, job: Callable[[Executor], T], preload: tuple[str, ...], ready: Callable[[], None]) -> T:
        executor = self._checkout(preload)
        executor.isolation()  # started and ready: a new executor's start is not the program's run
        ready()
        before = executor.faults
        surplus = None
        try:
            return job(executor)
        finally:
            with self._lock:
                self.faults += executor.faults - before
                if self._count > self.workers + self.aside:  # (made while runs stood aside: not kept warm)
                    self._count -= 1
                    self._all.remove(executor)
                    surplus = executor
                else:
                    self._idle.append(executor)
            if surplus is not None:  # (stopped beside the answer: a server's clean-up is not the request's wait)
                threading.Thread(target=surplus.close, name="apps-serve-close", daemon=True).start()

    def _checkout(self, preload: tuple[str, ...]) -> Executor:
        """An idle executor preloading `preload` (the warmest), else a new one; at `workers` executors (and as many
        more as runs stepped aside), an idle one preloading other modules is stopped to make room (the gate lets at
        most that many jobs in, so one is idle)."""
        with self._lock:
            for i in range(len(self._idle) - 1, -1, -1):
                if self._idle[i].preload == preload:
                    return self._idle.pop(i)
            other = self._idle.pop(0) if self._count >= self.workers + self.aside and self._idle else None
            if other is None:
                self._count += 1
            else:
                self._all.remove(other)
            executor = Executor(self.limits, preload=preload)
            self._all.append(executor)
        if other is not None:
            other.close()
        return executor

    def held(self) -> int:
        """Runs past `aside_after` that hold their worker because every place beside the workers is taken."""
        return len(self._stepping)

    def executors(self) -> int:
        with self._lock:
            return len(self._all)

    def close(self, grace: float = 5.0) -> None:
        """Stop taking work, let running jobs end (they stop at their next test) for up to `grace` seconds, then
        stop every executor. Idempotent."""
        self.stopping.set()
        done = threading.Event()
        waiter = threading.Thread(target=lambda: (self._threads.shutdown(wait=True, cancel_futures=True),
                                                  done.set()), daemon=True)
        waiter.start()
        done.wait(max(0.0, grace))
        with self._lock:
            executors, self._all, self._idle = list(self._all), [], []
        for executor in executors:
            executor.close()


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
