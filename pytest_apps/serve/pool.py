"""The server's executors and its admission: at most `workers` requests run at once, each on a warm executor of its
own (`executor.Executor`, one fork server each, started on first use and kept), in a thread of its own; others wait
in a bounded queue, first come first served, each until its deadline. A single program's run still going after
half a second steps aside (up to four per worker at once; one that finds those places taken steps aside as soon as
one frees, and has the run there longest parked to free one once that run is near its time limit; while every
worker is so held, the newest such run goes on beyond the places), so that programs at their time limit hold no
queue of short runs behind them. The run aside keeps its executor, so the worker needs another at once: the pool
keeps executors started in standby, off the requests' path (on a machine whose CPUs the runs aside keep busy, an
executor's start takes most of a second, and a burst of long runs, each waiting for one in turn, stopped the gate
for seconds).

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
ASIDE_AFTER = 0.5  # seconds after which a program's run still going steps aside (Pool.run)
ASIDE_PER_WORKER = 4  # runs that may step aside at once, per worker
PARK_AFTER = 2.0  # seconds aside after which a run may be parked to give its place to a newer one (Pool.run)
PARK_FROM = 0.75  # the share of its time limit a run's own time has reached before it is parked
DECLINED_WAIT = 0.5  # seconds before a run that was not parked is asked again
STANDBY_PER_WORKER = 1  # executors kept started, beyond those in use, for the workers that runs aside leave


class Busy(Exception):
    """No executor became free before the request's deadline, or the queue was full."""


class Closing(Exception):
    """The server is stopping: the request was not started."""


class _Run:
    """A job that may step aside, as the pool sees it: its executor once it has one, and `done` once the job has
    given it back (both under the pool's lock, so that no other job's test is ever parked); in the loop, whether
    it holds its place at the gate, when it stepped aside, how it does, and whether it runs beyond the places."""

    __slots__ = ("executor", "done", "at_gate", "aside_at", "declined_until", "step", "beyond", "_gate", "_top_up")

    def __init__(self, gate: asyncio.Semaphore, top_up: Callable[[], None]) -> None:
        self.executor: Executor | None = None
        self.done = False
        self.at_gate = True
        self.aside_at = 0.0
        self.declined_until = 0.0  # its executor did not park it: not asked again before then
        self.step: Callable[[], bool] = lambda: False  # steps aside if a place is free (Pool.run)
        self.beyond = False  # waits for a place beyond the places, its worker given back (Pool._free_a_worker)
        self._gate, self._top_up = gate, top_up

    def leave(self) -> None:
        """Give its place at the gate to the next request, its run going on (with an executor started in standby
        for the worker it leaves)."""
        self.at_gate = False
        self._top_up()
        self._gate.release()


class Pool:
    """`workers` executors behind a queue of at most `queue` waiting requests, each waiting at most `wait` seconds.

    `run(job, preload)` calls ``job(executor)`` in a worker thread with an executor whose zygote preloads `preload`
    (the judge profile's modules), made with `limits` and kept warm for the next request that needs the same. The
    pool keeps one executor per worker, per run aside and per run parked, and `standby_per_worker` x `workers`
    more, started in the background as executors are taken (`_top_up`)."""

    def __init__(self, workers: int, queue: int, wait: float, limits: Limits, aside_after: float = ASIDE_AFTER,
                 aside_per_worker: int = ASIDE_PER_WORKER, park_after: float = PARK_AFTER,
                 standby_per_worker: int = STANDBY_PER_WORKER) -> None:
        self.workers = workers
        self.queue = queue
        self.wait = wait
        self.limits = limits
        self.aside_after = aside_after
        self.aside_places = aside_per_worker * workers
        self.park_after = park_after
        self.standby = standby_per_worker * workers
        self.waiting = 0  # requests in the queue now
        self.running = 0
        self.stepped = 0  # runs that ever stepped aside
        self.parks = 0  # times a run aside was parked for a newer one
        self.went_beyond = 0  # times a run waiting for a place gave its worker back and went on beyond the places
        self.faults = 0  # runs the executors failed (each made once more on a renewed executor)
        self.cold_starts = 0  # executors started while a request waited for one
        self.standby_starts = 0  # executors started ahead of the request that will use them
        self.stopping = threading.Event()  # jobs ask it between tests (run_problem's `stop`)
        self._gate: asyncio.Semaphore | None = None
        self._stepping: deque[_Run] = deque()  # runs past `aside_after` waiting for a place aside, in turn
        self._aside: list[_Run] = []  # the runs in the places aside, the longest there first
        self._parked: deque[_Run] = deque()  # runs parked to give their place to a newer one, the oldest first
        self._asking: _Run | None = None  # the run asked to be parked, until its executor answers
        self._retry: asyncio.TimerHandle | None = None  # the next time one is asked (_ask_to_park)
        # (a thread for each worker, each place aside, each run parked (at most as many as the places) and each run
        # beyond the places (at most as many as the workers)
        self._threads = ThreadPoolExecutor(max_workers=2 * workers + 2 * self.aside_places,
                                           thread_name_prefix="apps-serve")
        self._starter = ThreadPoolExecutor(max_workers=max(1, self.standby), thread_name_prefix="apps-serve-start")
        self._starting = 0  # standby executors being started (counted in _count)
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
        trainer sends a completion's tests at once, so a program that times out on one often does on all).
        One that finds those places taken keeps its worker until a place frees (not to its end: held for the whole
        limit, every request behind it waited as long), and has the run there longest parked to free one
        (`_ask_to_park`); while every worker is so held, the newest such run gives its worker back and goes on beyond
        the places (`_free_a_worker`). The executors made for such runs are closed once they are no longer needed."""
        gate = await self._admit()
        me, loop = _Run(gate, lambda: self._top_up(preload)), asyncio.get_running_loop()

        def step() -> bool:
            if not me.at_gate or ended[0]:
                return False
            if self.aside >= self.aside_places:
                if me not in self._stepping:  # (it steps aside when a place frees: _aside_freed)
                    self._stepping.append(me)
                self._ask_to_park(loop)
                self._free_a_worker(loop.time())
                return False
            me.leave()
            self.stepped += 1
            me.aside_at = loop.time()
            self._aside.append(me)
            return True

        me.step, ended = step, [False]
        timer: list[asyncio.TimerHandle] = []

        def arm() -> None:  # (in the loop, once its executor is ready: from then on it is its program's run)
            if step_aside and not ended[0]:
                timer.append(loop.call_later(self.aside_after, step))

        try:
            if self.stopping.is_set():
                raise Closing("the server is stopping")
            return await loop.run_in_executor(self._threads, self._on_executor, job, preload,
                                              lambda: loop.call_soon_threadsafe(arm), me)
        finally:
            ended[0] = True
            self.running -= 1
            for t in timer:
                t.cancel()
            if me in self._stepping:
                self._stepping.remove(me)
            if me.at_gate:
                gate.release()
            elif me in self._parked:  # (ended parked: its executor resumed it after the backstop, or it used no CPU)
                self._parked.remove(me)
            elif me.beyond:  # (ended while it waited for a place beyond them: another held may go there)
                me.beyond = False
                self._free_a_worker(loop.time())
            else:
                self._aside.remove(me)
                self._aside_freed(loop.time())

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

    def _aside_freed(self, now: float) -> None:
        """Places beside the workers are free (in the loop): a run waiting for one (holding its worker, or beyond the
        places) takes it first, the longest waiting first; then a parked run is resumed, the oldest first."""
        while self.aside < self.aside_places:
            if self._stepping:
                run = self._stepping.popleft()
                if run.beyond:
                    run.beyond = False
                    self.stepped += 1
                    run.aside_at = now
                    self._aside.append(run)
                else:
                    run.step()
            elif self._parked:
                run = self._parked.popleft()
                with self._lock:
                    if not run.done and run.executor is not None:
                        run.executor.resume()
                run.aside_at = now
                self._aside.append(run)
            else:
                break
        self._free_a_worker(now)  # (a run beyond the places took one: a run held may go there)

    def _ask_to_park(self, loop: asyncio.AbstractEventLoop) -> None:
        """Ask the executor of the run aside longest (for `park_after` seconds or more) to park it, so that a run
        waiting for a place takes its place once it is parked (`_park_answered`, in the loop). At most as many runs
        are parked as there are places, and one is asked at a time; they go back to the places as these free, the
        oldest first (`_aside_freed`).

        Parking (the executor's `park`) freezes the test and stops its own time, so its verdict does not change;
        the executor parks only a test whose own time has reached `PARK_FROM` of its limit, most of which time
        out, not those about to end. The places are bounded so that each run there gets enough of the CPUs to
        reach its own-time limit well within the wall-clock backstop; parking keeps that bound when the long runs
        ask for more CPU than the machine has, and the new runs, most of which end within a few seconds, pass
        the ones at their limit."""
        now = loop.time()
        if self._asking is not None or len(self._parked) >= self.aside_places:
            return
        for run in self._aside:
            if now - run.aside_at < self.park_after:
                break  # (the others came later)
            if now < run.declined_until:
                continue

            def answered(parked: bool, run: _Run = run) -> None:  # (in the run's thread)
                loop.call_soon_threadsafe(self._park_answered, loop, run, parked)

            with self._lock:  # (not given back: the test parked is this job's)
                asked = not run.done and run.executor is not None and run.executor.park(PARK_FROM, answered)
            if asked:
                self._asking = run
                return
        if self._retry is None:  # (none to ask now: asked again in a moment, while a run waits for a place)
            self._retry = loop.call_later(DECLINED_WAIT, self._ask_again, loop)

    def _ask_again(self, loop: asyncio.AbstractEventLoop) -> None:
        self._retry = None
        if self._stepping:
            self._ask_to_park(loop)

    def _free_a_worker(self, now: float) -> None:
        """While every worker is held by a run waiting for a place beside the workers, the newest such run gives its
        worker back and goes on beyond the places, up to `workers` such runs, each taking a place in its turn. So
        as many long runs run at once as when every worker was held, and a worker serves the queue meanwhile (with
        every worker held by the long runs of a burst, no short request behind them ends until a place frees).
        Such a run is not parked while it waits: frozen then, whatever its own time, a program under its limit
        can be answered after a trainer's read timeout."""
        held = [run for run in self._stepping if not run.beyond]
        if len(held) < self.workers or len(self._stepping) - len(held) >= self.workers:
            return
        run = held[-1]
        run.beyond = True
        run.aside_at = now
        self.went_beyond += 1
        run.leave()

    def _park_answered(self, loop: asyncio.AbstractEventLoop, run: _Run, parked: bool) -> None:
        """The executor's answer for `run` (in the loop): parked, its place goes to a run waiting for one; not, the
        next run aside is asked."""
        self._asking = None
        if parked and run in self._aside:
            self._aside.remove(run)
            self._parked.append(run)
            self.parks += 1
            self._aside_freed(loop.time())
            return
        run.declined_until = loop.time() + DECLINED_WAIT
        if self._stepping:
            self._ask_to_park(loop)

    def _on_executor(self, job: Callable[[Executor], T], preload: tuple[str, ...], ready: Callable[[], None],
                     me: _Run) -> T:
        executor = self._checkout(preload)
        executor.isolation()  # started and ready: a new executor's start is not the program's run
        with self._lock:
            me.executor = executor
        self._top_up(preload)
        ready()
        before = executor.faults
        surplus = None
        try:
            return job(executor)
        finally:
            with self._lock:
                me.done = True
                self.faults += executor.faults - before
                # (beyond those kept once this job's place aside is given back: made while runs stood aside)
                if self._count > self._kept() - (1 if me.aside_at else 0):
                    self._count -= 1
                    self._all.remove(executor)
                    surplus = executor
                else:
                    self._idle.append(executor)
            if surplus is not None:  # (stopped beside the answer: a server's clean-up is not the request's wait)
                threading.Thread(target=surplus.close, name="apps-serve-close", daemon=True).start()

    def _checkout(self, preload: tuple[str, ...]) -> Executor:
        """An idle executor preloading `preload` (the warmest), else a new one; at the executors the pool keeps
        (`_kept`), an idle one preloading other modules is stopped to make room (the gate lets at most that many
        jobs in, so one is idle)."""
        with self._lock:
            for i in range(len(self._idle) - 1, -1, -1):
                if self._idle[i].preload == preload:
                    return self._idle.pop(i)
            other = self._idle.pop(0) if self._count >= self._kept() and self._idle else None
            self.cold_starts += 1
            if other is None:
                self._count += 1
            else:
                self._all.remove(other)
            executor = Executor(self.limits, preload=preload)
            self._all.append(executor)
        if other is not None:
            other.close()
        return executor

    def _top_up(self, preload: tuple[str, ...]) -> None:
        """An executor was taken, or a run steps aside with its own: start executors preloading `preload` in the
        background until `standby` are idle or starting, so that the next request let in finds one started."""
        if self.stopping.is_set():
            return
        with self._lock:
            ready = sum(1 for e in self._idle if e.preload == preload) + self._starting
            for _ in range(min(self.standby - ready, self._kept() - self._count)):
                try:  # (the starter waits for the lock to count itself done)
                    self._starter.submit(self._start_standby, preload)
                except RuntimeError:  # (the pool is closing)
                    return
                self._starting += 1
                self._count += 1

    def _start_standby(self, preload: tuple[str, ...]) -> None:
        """Start an executor (in a starter thread) and keep it idle, behind those already used: the warmest go first.
        One that cannot start is given up (the request that needs an executor starts its own and is told why)."""
        executor, started = None, False
        try:
            executor = Executor(self.limits, preload=preload)
            started = bool(executor.isolation())  # (an executor up has its base layers at least; none: it failed)
        finally:
            with self._lock:
                self._starting -= 1
                keep = started and not self.stopping.is_set()
                if keep:
                    self.standby_starts += 1
                    self._all.append(executor)
                    self._idle.insert(0, executor)
                else:
                    self._count -= 1
            if not keep and executor is not None:
                executor.close()

    @property
    def aside(self) -> int:
        """Long runs that stepped aside (see run), running beside the `workers` now."""
        return len(self._aside)

    def _kept(self) -> int:
        """Executors the pool keeps: one per worker, per run aside, per run parked and per run beyond the places, and
        `standby` more."""
        return self.workers + self.aside + self.parked() + self.beyond() + self.standby

    def held(self) -> int:
        """Runs past `aside_after` that hold their worker because every place beside the workers is taken."""
        return sum(1 for run in self._stepping if not run.beyond)

    def beyond(self) -> int:
        """Runs waiting for a place beside the workers that gave their worker back (`_free_a_worker`)."""
        return sum(1 for run in self._stepping if run.beyond)

    def parked(self) -> int:
        """Runs parked to give their place beside the workers to a newer one."""
        return len(self._parked)

    def executors(self) -> int:
        with self._lock:
            return len(self._all)

    def close(self, grace: float = 5.0) -> None:
        """Stop taking work, let running jobs end (they stop at their next test) for up to `grace` seconds, then
        stop every executor. Idempotent."""
        self.stopping.set()
        self._starter.shutdown(wait=True, cancel_futures=True)  # (one starting ends and is closed: stopping is set)
        with self._lock:  # (parked tests run again, to end by their own limits like the rest)
            for run in list(self._parked):
                if not run.done and run.executor is not None:
                    run.executor.resume()
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
