"""xdist scheduling for APPS runs: a candidate's cases kept together, split only when a worker would idle.

pytest-xdist's `loadscope` keeps the right grouping (a scope is a node id's parent: one candidate's
cases) but recounts every pending test on each finished test and finds each test's position by a list
scan, which grows quadratically: minutes of controller time on the full test split. This subclass keeps
the same decisions with a queue per worker and a position table.

Loadscope alone ends badly when one candidate is much slower than the rest (a weak model program that
times out on dozens of tests): once the queue of whole candidates is empty, the worker holding it runs
alone while the others sit idle. With work stealing on (the default), a worker that is about to run out
of work (two tests left, the one running and the one it has already taken as next) while no whole
candidate is left takes unstarted cases from the worker with the most estimated work left:

- the victim keeps its first two queued cases (running and next; the worker has already popped the
  second from its queue, so asking for it would make xdist refuse the whole request);
- the thief asks for the tail of the rest, until both hold about the same estimated time, where a
  case's estimate is the mean time of the finished cases of its candidate (else of every finished
  case); so the heavy cases move, not a count of cheap ones, and each side then runs its share in the
  candidate's order. A move that would not shorten the longer of the two queues is not made;
- one request is in flight at a time; xdist's worker hands back either every case asked for or none
  (when it has started one meanwhile); either way the answer re-plans from the updated queues;
- a worker is shut down (and so runs its last queued case) only when no other worker has anything left
  to give; with `--apps-fail-fast`, cases of a candidate that has failed are never taken (the victim
  skips them at once), and a candidate's cases are taken only once one of them has finished, so that a
  candidate failing its first case is not run twice.

Decisions are plain data and stand-in nodes drive them in tests (`tests/test_scheduling.py`).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from xdist.scheduler import LoadScopeScheduling

from ..core.wording import counted

LOW = 2  # a worker with this many unfinished tests or fewer asks for more (loadscope's watermark)
HEAD = 2  # the victim's unfinished tests never taken: the one it runs and the one it holds as next


def steal_plan(
    queues: dict[Any, Sequence[int]],
    thief: Any,
    estimate: Callable[[int], float],
    eligible: Callable[[int], bool],
    waitable: Callable[[int], bool],
) -> tuple[Any, list[int], bool]:
    """What a `thief` about to run dry should ask for: (victim, indices in the victim's queue order, wait).

    `queues` holds each live worker's unfinished test indices in the order it runs them; `estimate`
    gives a test's expected seconds; only `eligible` tests may be taken. The victim is the worker with
    the most estimated work that has something to take; the thief takes tests from its tail until both
    hold about the same, and only if that shortens the longer of the two (so one test never bounces
    between two workers). `wait` is true when nothing is taken now but may be soon: the thief is still
    busy and a victim has tests beyond its head, or some of those are `waitable` (may become eligible).
    Otherwise, with nothing taken, the thief should be shut down."""
    own = sum(estimate(i) for i in queues[thief])
    busy = len(queues[thief]) >= 2  # running one test with the next in hand
    best: tuple[float, Any, list[int]] | None = None
    wait = False
    for victim, queue in queues.items():
        if victim is thief or len(queue) <= HEAD:
            continue
        rest = list(itertools.islice(queue, HEAD, None))
        takeable = [i for i in rest if eligible(i)]
        wait = wait or busy or any(waitable(i) for i in rest)
        if takeable:
            load = sum(estimate(i) for i in queue)
            if best is None or load > best[0]:
                best = (load, victim, takeable)
    if best is None:
        return None, [], wait
    load, victim, takeable = best
    target = (load - own) / 2  # what the thief should take for both to hold the same
    taken: list[int] = []
    got = 0.0
    for index in reversed(takeable):  # from the tail, as close to the target as it gets
        cost = estimate(index)
        if abs(target - got - cost) >= abs(target - got) or own + got + cost >= load:
            break
        taken.append(index)
        got += cost
    if not taken:
        return None, [], wait
    taken.reverse()
    return victim, taken, False


class ProblemScheduling(LoadScopeScheduling):
    def __init__(self, config: Any, log: Any = None, *, stealing: bool = True, fail_fast: bool = False,
                 held: Iterable[str] = (), report_held: Callable[[list[str]], None] | None = None,
                 has_verdict: Callable[[str], bool] | None = None) -> None:
        super().__init__(config, log)
        # whether a case's verdict reached the controller (its record came before its worker was lost)
        self.has_verdict = has_verdict or (lambda nodeid: False)
        self.crashed: set[str] = set()  # cases a lost worker was running
        self.run_again: set[str] = set()  # those given to another worker (once: a case never crashes two)
        self.lost = 0  # workers lost so far
        self.stealing = stealing
        self.fail_fast = fail_fast
        # node ids the controller reports from their records (--apps-resume): never sent to a worker
        self.held = frozenset(held)  # cases the controller reports itself (from their records): never sent
        self.report_held = report_held
        self._positions: dict[Any, dict[str, int]] = {}
        self._queues: dict[Any, deque[int]] = {}  # per worker: its unfinished test indices, in its run order
        self._times: dict[str, list[float]] = {}  # scope -> [seconds, finished tests]
        self._all_times = [0.0, 0]
        self._failed: set[str] = set()  # scopes with a failed test (used with fail-fast)
        self._victim: Any = None  # the worker asked to hand tests back; None when no request is in flight
        self._thief: Any = None  # the worker the answer goes to
        self.steals = 0  # tests moved between workers (each move is logged with --debug)

    # -- bookkeeping ------------------------------------------------------------------------------------

    def add_node(self, node: Any) -> None:
        super().add_node(node)
        self._queues[node] = deque()

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        super().add_node_collection(node, collection)
        if node in self.registered_collections:
            self._positions[node] = {nodeid: i for i, nodeid in enumerate(self.registered_collections[node])}

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.workqueue or self._victim is not None:
            return False
        return all(len(queue) < 2 for queue in self._queues.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.workqueue) or any(self._queues.values())

    def _send(self, node: Any, units: Iterable[tuple[str, dict[str, bool]]]) -> None:
        """Give `node` these units' unfinished tests, merged into what it holds of the same scopes."""
        workload = self.assigned_work.setdefault(node, {})
        positions = self._positions[node]
        indexes = []
        for scope, unit in units:
            mine = workload.setdefault(scope, {})
            for nodeid, done in unit.items():
                if not done:
                    mine[nodeid] = False
                    indexes.append(positions[nodeid])
        if indexes:
            self._queues[node].extend(indexes)
            node.send_runtest_some(indexes)

    def _assign_work_unit(self, node: Any) -> None:
        self._send(node, [self.workqueue.popitem(last=False)])

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        scope = self._split_scope(nodeid)
        self.assigned_work[node][scope][nodeid] = True
        queue = self._queues[node]
        if queue and queue[0] == item_index:
            queue.popleft()  # a worker runs its queue in order
        elif item_index in queue:
            queue.remove(item_index)
        times = self._times.setdefault(scope, [0.0, 0])
        times[0] += duration
        times[1] += 1
        self._all_times[0] += duration
        self._all_times[1] += 1
        self._reschedule(node)
        if self.stealing and not self.workqueue:
            self._balance()

    def note_failure(self, nodeid: str) -> None:
        """A test failed (told by the controller's report hook): with fail-fast, its candidate's remaining
        cases are skipped where they are, so they are not worth moving."""
        self._failed.add(self._split_scope(nodeid))

    def stops_after(self, lost: int) -> bool:
        """Whether xdist ends the run once this many workers were lost (`--max-worker-restart`, by default four
        per worker asked for): then a lost worker's case is not handed out again, since nothing would run it."""
        option = getattr(self.config.option, "maxworkerrestart", None)
        if option is None:
            workers = getattr(self.config.option, "numprocesses", None)
            return bool(workers) and isinstance(workers, int) and lost > 4 * workers
        return lost > int(option)

    def remove_node(self, node: Any) -> str | None:
        """A worker finished or crashed. A crashed worker's unfinished tests go back to the queue and the test it
        was running is returned. That one goes back too (`run_again`), unless its verdict had reached the
        controller or it was running on a lost worker before: each case runs again once, and counts once."""
        workload = self.assigned_work.pop(node)
        queue = self._queues.pop(node, deque())
        if self._victim is node:  # it will not answer
            self._victim = self._thief = None
        if self._thief is node:
            self._thief = None  # the answer goes to the queue
        if not queue:
            if self.stealing and not self.workqueue:
                self._balance()
            return None
        crashitem = self.registered_collections[node][queue[0]]
        self.lost += 1
        again = (crashitem not in self.crashed and not self.has_verdict(crashitem)
                 and not self.stops_after(self.lost))
        self.crashed.add(crashitem)
        if again:
            self.run_again.add(crashitem)
        for scope, unit in workload.items():
            left = {nodeid: False for nodeid, done in unit.items()
                    if not done and (nodeid != crashitem or again) and not self.has_verdict(nodeid)}
            if left:
                self.workqueue.setdefault(scope, {}).update(left)
        for other in self.nodes:
            self._reschedule(other)
        return crashitem

    # -- decisions ----------------------------------------------------------------------------------------

    def schedule(self) -> None:
        if (not self.stealing and not self.held) or self.collection is not None:
            super().schedule()  # the first time without stealing; else a worker joined (one crashed)
            if self.stealing and not self.workqueue:
                self._balance()
            return
        # As loadscope, except that workers beyond the number of candidates are kept: they take cases from
        # the others at once.
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        units: dict[str, dict[str, bool]] = {}
        held = []
        for nodeid in self.collection:
            if nodeid in self.held:
                held.append(nodeid)
            else:
                units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
        if held and self.report_held is not None:
            self.report_held(held)
        # --no-loadscope-reorder (pytest-xdist >= 3.7; before it, no option: the largest units first, as its default)
        reorder = getattr(self.config.option, "loadscopereorder", True)
        order = sorted(units.items(), key=lambda item: -len(item[1])) if reorder else units.items()
        self.workqueue = OrderedDict(order)
        if not self.stealing:  # as loadscope: no more workers than candidates
            for _ in range(len(self.nodes) - len(self.workqueue)):
                unused, _work = self.assigned_work.popitem()
                unused.shutdown()
        for node in self.nodes:
            if self.workqueue and not node.shutting_down:
                self._assign_work_unit(node)
        for node in self.nodes:
            self._reschedule(node)
        if not self.workqueue:
            if self.stealing:
                self._balance()
            else:
                for node in self.nodes:
                    if not node.shutting_down:
                        node.shutdown()

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            if not self.stealing:
                node.shutdown()  # loadscope: with nothing left to hand out, every worker finishes its queue
            return  # with stealing, _balance decides
        if len(self._queues[node]) > LOW:
            return
        self._assign_work_unit(node)

    def _balance(self) -> None:
        """No whole candidate is left: each worker about to run dry takes tests from the busiest other
        one, or is shut down when there is nothing to take."""
        if self._victim is not None:
            return  # one request at a time; its answer comes back here
        live = {node: queue for node, queue in self._queues.items()
                if not node.shutting_down and node in self._positions}
        for thief, queue in live.items():
            if len(queue) > LOW:
                continue
            victim, take, wait = steal_plan(live, thief, self._estimate(thief), self._eligible(thief),
                                            self._waitable(thief))
            if take:
                self._victim, self._thief = victim, thief
                self.log(f"{thief} asks {victim} for {len(take)} of its {counted(len(self._queues[victim]), 'test')}")
                victim.send_steal(take)
                return
            if not wait:
                thief.shutdown()

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        """The victim's answer: the tests it took out of its queue (all asked for, or none)."""
        thief = self._thief if node is self._victim else None
        if node is self._victim:
            self._victim = self._thief = None
        if indices and node in self._queues:
            gone = set(indices)
            self._queues[node] = deque(i for i in self._queues[node] if i not in gone)
            collection = self.registered_collections[node]
            workload = self.assigned_work[node]
            units: dict[str, dict[str, bool]] = {}
            for index in indices:
                nodeid = collection[index]
                scope = self._split_scope(nodeid)
                del workload[scope][nodeid]
                if not workload[scope]:
                    del workload[scope]
                units.setdefault(scope, {})[nodeid] = False
            self.steals += len(indices)
            if thief is not None and thief in self._queues and not thief.shutting_down:
                self._send(thief, units.items())
            else:  # the thief is gone or the session is stopping: back to the queue
                for scope, unit in units.items():
                    self.workqueue.setdefault(scope, {}).update(unit)
                for other in self.nodes:
                    self._reschedule(other)
        if not self.workqueue:
            self._balance()

    def _estimate(self, node: Any) -> Callable[[int], float]:
        collection = self.registered_collections[node]
        everything = self._all_times[0] / self._all_times[1] if self._all_times[1] else 1.0

        def estimate(index: int) -> float:
            scope = self._split_scope(collection[index])
            if self.fail_fast and scope in self._failed:
                return 0.0  # skipped at once
            times = self._times.get(scope)
            return times[0] / times[1] if times and times[1] else everything

        return estimate

    def _eligible(self, node: Any) -> Callable[[int], bool]:
        if not self.fail_fast:
            return lambda index: True
        collection = self.registered_collections[node]

        def eligible(index: int) -> bool:
            scope = self._split_scope(collection[index])
            return scope not in self._failed and scope in self._times

        return eligible

    def _waitable(self, node: Any) -> Callable[[int], bool]:
        if not self.fail_fast:
            return lambda index: False
        collection = self.registered_collections[node]
        return lambda index: self._split_scope(collection[index]) not in self._failed
