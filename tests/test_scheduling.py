"""The xdist scheduler: loadscope's grouping at linear cost, and work stealing at the end of a run.

Driven by a simulation of xdist's workers (their own objects need live gateways): each stand-in worker
behaves as `xdist.remote.WorkerInteractor` does: it runs its queue in order, takes the next test out of
the queue before running the current one (so it needs two queued tests, or a shutdown, to run one), and
answers a steal request with every test asked for or none. Messages take a little time each way, so the
scheduler's view of a worker lags behind it. End to end through real workers in test_plugin.py."""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from types import SimpleNamespace

import pytest
from xdist.scheduler import LoadScopeScheduling

from pytest_apps.plugin.scheduling import ProblemScheduling, steal_plan

pytestmark = pytest.mark.interfaces  # (noxfile.py runs these against the oldest releases too)

SHUTDOWN = object()


class Worker:
    """A stand-in for xdist's WorkerController (the scheduler's side) and WorkerInteractor (the worker)."""

    def __init__(self, sim: Sim, name: str) -> None:
        self.sim, self.name = sim, name
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.torun: deque = deque()
        self.next = None  # the test taken out of the queue to run after the current one
        self.running = False
        self.started = False
        self.done = False
        self.crashed = False

    def __repr__(self) -> str:
        return self.name

    # what the scheduler calls
    def send_runtest_some(self, indexes) -> None:
        self.sim.to_worker(self, self.torun.extend, list(indexes))

    def send_steal(self, indexes) -> None:
        self.sim.steal_requests += 1
        self.sim.to_worker(self, self.steal, list(indexes))

    def shutdown(self) -> None:
        if not self.shutting_down:
            self.shutting_down = True
            self.sim.to_worker(self, self.torun.append, SHUTDOWN)

    # the worker's side
    def steal(self, indexes) -> None:
        wanted = set(indexes)
        stolen = [i for i in self.torun if i in wanted]
        if len(stolen) == len(wanted):
            self.torun = deque(i for i in self.torun if i not in wanted)
        else:
            stolen = []
        self.sim.to_controller(self.sim.sched.remove_pending_tests_from_node, self, stolen)

    def progress(self) -> None:
        if self.done or self.crashed or self.running:
            return
        if not self.started:
            if not self.torun:
                return
            self.next, self.started = self.torun.popleft(), True
        if self.next is SHUTDOWN:
            self.done = True
            self.sim.to_controller(self.sim.finished, self)
            return
        if not self.torun:
            return  # blocked until more tests or a shutdown arrive
        current, self.next = self.next, self.torun.popleft()
        self.running = True
        duration = self.sim.duration(self.sim.items[current])
        self.sim.at(duration, self.complete, current, duration)

    def complete(self, index: int, duration: float) -> None:
        if self.crashed:
            return
        self.running = False
        self.sim.ran.append((self.sim.items[index], self.name, self.sim.now))
        self.sim.to_controller(self.sim.sched.mark_test_complete, self, index, duration)
        self.progress()


class Sim:
    """An xdist session in simulated time: the scheduler under test on the controller, workers as above."""

    def __init__(self, sched_cls, items, workers=2, duration=lambda nodeid: 0.01, latency=0.0005, **kwargs):
        option = SimpleNamespace(loadscopereorder=False, tx=["popen"] * workers, numprocesses=workers,
                                 dist="loadscope")
        config = SimpleNamespace(option=option, getvalue=lambda name: getattr(option, name), hook=None)
        self.sched = sched_cls(config, **kwargs)
        self.items, self.duration, self.latency = list(items), duration, latency
        self.now, self.events, self.seq = 0.0, [], itertools.count()
        self.ran: list[tuple[str, str, float]] = []
        self.crashes: list[str] = []
        self.steal_requests = 0
        self.workers = [Worker(self, f"gw{i}") for i in range(workers)]

    def at(self, delay, fn, *args) -> None:
        heapq.heappush(self.events, (self.now + delay, next(self.seq), fn, args))

    def to_worker(self, worker, fn, *args) -> None:
        def deliver():
            if not worker.crashed:
                fn(*args)
                worker.progress()
        self.at(self.latency, deliver)

    def to_controller(self, fn, *args) -> None:
        def handle():
            fn(*args)
            if self.sched.tests_finished:  # as DSession.loop_once
                for node in self.sched.nodes:
                    node.shutdown()
        self.at(self.latency, handle)

    def finished(self, worker) -> None:
        if worker in self.sched.nodes:
            assert self.sched.remove_node(worker) is None  # as DSession.worker_workerfinished

    def crash(self, worker) -> None:
        """The worker dies; as DSession.worker_errordown, a replacement starts and joins the schedule."""
        worker.crashed = True
        crashitem = self.sched.remove_node(worker)
        if crashitem:
            self.crashes.append(crashitem)
        clone = Worker(self, f"gw{len(self.workers)}")
        self.workers.append(clone)
        self.sched.add_node(clone)
        self.sched.add_node_collection(clone, self.items)
        self.sched.schedule()

    def run(self, until=1e6, crash=None) -> Sim:
        for worker in self.workers:
            self.sched.add_node(worker)
            self.sched.add_node_collection(worker, self.items)
        self.sched.schedule()
        if crash is not None:
            self.at(crash[1], self.crash, self.workers[crash[0]])
        while self.events and self.now < until:
            self.now, _, fn, args = heapq.heappop(self.events)
            fn(*args)
        alive = [w for w in self.workers if not w.crashed]
        assert all(w.done for w in alive), f"stalled: {[(w, list(w.torun), w.next) for w in alive]}"
        return self

    @property
    def where(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for nodeid, worker, _ in self.ran:
            out.setdefault(nodeid, set()).add(worker)
        return out

    @property
    def makespan(self) -> float:
        return max(t for _, _, t in self.ran)

    def order_on(self, worker: str) -> list[str]:
        return [nodeid for nodeid, w, _ in self.ran if w == worker]


def collection(problems: int, cases: int) -> list[str]:
    return [f"solutions/{p}.py::test_{c}" for p in range(problems) for c in range(cases)]


def scope(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[0]


def heavy(slow_scope: str, slow: float = 1.0, fast: float = 0.01):
    return lambda nodeid: slow if scope(nodeid) == slow_scope else fast


@pytest.mark.parametrize("stealing", [False, True])
@pytest.mark.parametrize("problems, cases", [(1, 5), (7, 3), (40, 20)])
def test_every_test_runs_once(problems, cases, stealing):
    sim = Sim(ProblemScheduling, collection(problems, cases), stealing=stealing).run()
    assert sorted(nodeid for nodeid, _, _ in sim.ran) == sorted(collection(problems, cases))
    if problems > 1:
        assert {w for _, w, _ in sim.ran} == {"gw0", "gw1"}  # both workers got work


def test_without_stealing_a_problem_stays_on_one_worker_and_decisions_are_loadscopes():
    items = collection(30, 10)
    ours = Sim(ProblemScheduling, items, stealing=False, duration=heavy("solutions/3.py")).run()
    theirs = Sim(LoadScopeScheduling, items, duration=heavy("solutions/3.py")).run()
    assert ours.ran == theirs.ran
    by_scope: dict[str, set[str]] = {}
    for nodeid, workers in ours.where.items():
        by_scope.setdefault(scope(nodeid), set()).update(workers)
    assert all(len(w) == 1 for w in by_scope.values())


def test_a_heavy_candidate_is_split_across_workers_near_the_floor():
    # 30 light candidates and one whose 40 cases take a second each, first in the queue
    items = collection(31, 40)
    duration = heavy("solutions/0.py")
    floor = sum(duration(i) for i in items) / 2
    before = Sim(ProblemScheduling, items, duration=duration, stealing=False).run()
    after = Sim(ProblemScheduling, items, duration=duration).run()
    assert sorted(n for n, _, _ in after.ran) == sorted(items)  # each test once
    heavy_workers = {w for n, ws in after.where.items() if scope(n) == "solutions/0.py" for w in ws}
    assert heavy_workers == {"gw0", "gw1"}
    assert before.makespan / floor > 1.5
    assert after.makespan / floor < 1.05
    # each worker runs its share of a candidate in the candidate's order
    for worker in ("gw0", "gw1"):
        mine = [n for n in after.order_on(worker) if scope(n) == "solutions/0.py"]
        assert mine == sorted(mine, key=items.index)
    # light candidates stay whole: only the heavy one's cases moved
    for nodeid, workers in after.where.items():
        if scope(nodeid) != "solutions/0.py":
            light = {w for n, ws in after.where.items() if scope(n) == scope(nodeid) for w in ws}
            assert len(light) == 1, nodeid


def test_the_heavy_cases_move_not_a_count_of_cheap_ones():
    """The victim holds cheap cases and, behind them, slow ones: half of the estimated time is taken."""
    items = collection(2, 40)
    duration = heavy("solutions/1.py", slow=0.5)
    sim = Sim(ProblemScheduling, items, duration=duration, latency=0.0001)
    sim.run()
    floor = sum(duration(i) for i in items) / 2
    assert sim.makespan / floor < 1.1


def test_one_candidate_on_two_workers_is_split_from_the_start():
    items = collection(1, 30)
    sim = Sim(ProblemScheduling, items, duration=lambda n: 0.2).run()
    assert {w for _, w, _ in sim.ran} == {"gw0", "gw1"}
    assert sim.makespan < 0.2 * 30 / 2 * 1.15
    single = Sim(ProblemScheduling, items[:1], duration=lambda n: 0.2).run()  # one node id: as today
    assert [n for n, _, _ in single.ran] == items[:1]


@pytest.mark.parametrize("latency", [0.0001, 0.003, 0.05])
def test_refused_steals_are_replanned_and_nothing_is_lost(latency):
    """Messages slower than a test: the worker has often started what the scheduler asks for, and refuses."""
    items = collection(6, 25)
    sim = Sim(ProblemScheduling, items, duration=lambda n: 0.01 if "0.py" not in n else 0.03,
              latency=latency, workers=3).run()
    assert sorted(n for n, _, _ in sim.ran) == sorted(items)


def test_fail_fast_leaves_a_failed_candidate_alone():
    items = collection(3, 20)
    sim = Sim(ProblemScheduling, items, duration=heavy("solutions/0.py"), fail_fast=True)
    sim.sched.note_failure("solutions/0.py::test_0")
    sim.run()
    assert all(ws == {"gw0"} for n, ws in sim.where.items() if scope(n) == "solutions/0.py")


def test_fail_fast_waits_for_a_candidates_first_result_before_taking_its_cases():
    items = collection(1, 20)
    sim = Sim(ProblemScheduling, items, duration=lambda n: 0.3, fail_fast=True).run()
    first = sim.order_on("gw0")[0]
    assert first == items[0]
    stolen_at = min(t for n, w, t in sim.ran if w == "gw1")
    assert stolen_at > 0.3 * 2  # gw1's first case started only after gw0's first finished
    assert {w for _, w, _ in sim.ran} == {"gw0", "gw1"}


@pytest.mark.parametrize("stealing", [False, True])
def test_a_crashed_workers_tests_run_elsewhere(stealing):
    items = collection(4, 30)
    sim = Sim(ProblemScheduling, items, workers=3, duration=heavy("solutions/0.py", slow=0.1),
              stealing=stealing).run(crash=(0, 0.55))
    assert len(sim.crashes) == 1
    ran = [n for n, _, _ in sim.ran]
    assert set(ran) == set(items)
    # only the test running at the crash ran twice (as xdist's loadscope re-runs it)
    assert [n for n in set(ran) if ran.count(n) > 1] in ([], sim.crashes)


def test_steal_plan_takes_the_tail_up_to_half_the_time_and_never_the_head():
    queues = {"a": [0, 1, 2, 3, 4, 5, 6, 7], "b": [8], "c": [9, 10, 11]}
    victim, take, wait = steal_plan(queues, "b", lambda i: 1.0, lambda i: True, lambda i: False)
    assert victim == "a" and take == [5, 6, 7] and not wait  # b ends with 4 tests' time, a with 5
    costs = {i: 1.0 for i in range(12)} | {2: 10.0}
    victim, take, _ = steal_plan(queues, "b", costs.__getitem__, lambda i: True, lambda i: False)
    assert victim == "a" and take == [3, 4, 5, 6, 7]  # a holds 17 s: taking test 2 too would overshoot
    victim, take, wait = steal_plan({"a": [0, 1], "b": []}, "b", lambda i: 1.0, lambda i: True,
                                    lambda i: True)
    assert (victim, take, wait) == (None, [], False)  # nothing beyond the head: shut the thief down
    victim, take, wait = steal_plan(queues, "b", lambda i: 1.0, lambda i: False, lambda i: i == 3)
    assert (victim, take, wait) == (None, [], True)  # not yet takeable, but may become so: wait
    # a move that does not shorten the longer queue is not made (a test would bounce back and forth)
    assert steal_plan({"a": [0, 1, 2], "b": [3, 4]}, "b", lambda i: 1.0, lambda i: True,
                      lambda i: False) == (None, [], True)  # b is busy: ask again when it has finished one
    assert steal_plan({"a": [0, 1, 2], "b": [3]}, "b", lambda i: 1.0, lambda i: True,
                      lambda i: False) == ("a", [2], False)


def test_no_test_bounces_between_two_workers():
    items = collection(2, 40)
    sim = Sim(ProblemScheduling, items, duration=heavy("solutions/1.py", slow=0.5), latency=0.0001).run()
    assert sim.steal_requests < 10
    assert all(len(workers) == 1 for workers in sim.where.values())


def test_one_worker_runs_the_same_order_with_or_without_stealing():
    items = collection(12, 7)
    runs = [Sim(ProblemScheduling, items, workers=1, duration=heavy("solutions/4.py"), stealing=s).run()
            for s in (True, False)]
    assert [n for n, _, _ in runs[0].ran] == [n for n, _, _ in runs[1].ran]
    assert runs[0].steal_requests == 0


def test_a_lost_workers_case_runs_again_once_then_never():
    """The case a lost worker was running goes to another worker once; lost again there, it is not handed out a
    third time (it has no verdict: "worker lost"), and the other cases still run once each."""
    items = collection(1, 3)
    slow = lambda nodeid: 1.0 if nodeid.endswith("test_0") else 0.01  # noqa: E731
    sim = Sim(ProblemScheduling, items, workers=1, duration=slow, stealing=True)
    sim.at(1.2, lambda: sim.crash(sim.workers[-1]))  # the replacement, running the same case again
    sim.run(crash=(0, 0.5))
    assert sim.crashes == ["solutions/0.py::test_0"] * 2
    assert sim.sched.run_again == {"solutions/0.py::test_0"}
    assert sorted(n for n, _, _ in sim.ran) == items[1:]


def test_a_lost_workers_case_whose_verdict_arrived_is_not_run_again():
    items = collection(1, 3)
    slow = lambda nodeid: 1.0 if nodeid.endswith("test_0") else 0.01  # noqa: E731
    arrived = {"solutions/0.py::test_0"}  # its record reached the controller before its teardown did
    sim = Sim(ProblemScheduling, items, workers=1, duration=slow, stealing=True,
              has_verdict=arrived.__contains__).run(crash=(0, 0.5))
    assert sim.crashes == ["solutions/0.py::test_0"] and sim.sched.run_again == set()
    assert sorted(n for n, _, _ in sim.ran) == items[1:]
