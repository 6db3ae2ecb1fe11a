"""Executors that live in Ray actors, one actor per node of a Ray cluster: `Evaluator(ray=True)`.

Only where the executors live differs from one machine; what runs is the same loop (`problem.run_problem`:
the executor, the judge, the records), so a program gets the same verdicts on a cluster as on one machine. A
timeout or near-limit verdict met while the node was measured slower than quiet is confirmed where it needs it
(`confirm.needs_confirmation`) on that node, on the same executor, right after its program (`confirm.confirm`;
the node's other executors may be busy then).

* One `NodeRunner` actor per alive node (hard node affinity), holding that node's warm executors: one fork
  server each, started when the actor starts and kept across batches. The actor is named after its node and
  the run's settings and got-or-created (`get_if_exists`), so every caller on the cluster with the same
  settings (verl's reward workers, each rank of a trainer) shares it: one pool of executors per node, however
  many callers. Each caller attaches to it; the last to detach stops it (and it dies with the process that
  created it, as Ray's actors do: the others then start it again, as after any lost actor). A node without
  CPUs, or without the resource `resource` names when given, gets none. The actor is threaded
  (`max_concurrency` = its executors); each thread takes an executor for a whole problem. The executor's
  server is a separate process started with `subprocess` (fork and exec at once), so the actor's threads
  never fork a Python interpreter. Two programs per executor are sent to a node at a time (one runs, one
  waits there for an executor), so a node never idles between programs and a lost node loses only those.
* A problem's test data is put in Ray's object store once by the caller and sent to actors by reference,
  inside a list so that Ray does not resolve (and deserialise) it on every call: an actor fetches it on its
  first case of that problem (Ray moves an object to a node once) and keeps it, so the data crosses to each
  node once and is decoded once per node.
* A node lost mid-batch (its actor dies: `RayActorError`, `ActorUnavailableError`) loses only the programs in
  flight there: each is sent again to a live node, up to `RETRIES` times; where the node is still alive (only
  the actor's process died) a new actor is started there at once, and nodes that joined are picked up. A
  result is matched to the actor it was sent to, so a dead actor's late answers never drop its replacement.
* Every wait (for results, for an actor to start) ends at the batch's deadline.
  A program is never scored from a partial run; one whose work could not be placed anywhere is reported as
  not scored (None), and no live node at all is an error.
* A batch deadline (seconds from the call) is checked by the caller and by each actor before each case: what
  is not done by then comes back as None (not scored).

Imports `ray` only when a `RayExecutors` is made (the optional extra ``pytest-apps[ray]``).
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..candidates.sources import Candidate
from ..core.record import CaseRecord
from ..core.wording import counted
from ..dataset.problems import Cases, Problem
from ..core.settings import Settings
from ..executor import Executor
from .confirm import confirm, pending
from .problem import run_problem
from .spec import run_spec

RETRIES = 3  # how many times one program's work may be lost with its node before it is reported not scored
IN_FLIGHT = 2  # programs sent to a node per executor: one running, one waiting there (no idle gap between them)
CACHED_PROBLEMS = 512  # problems' test data an actor keeps decoded (least recently used dropped first)
STARTUP_TIMEOUT = 120.0  # seconds for an actor to start its executors
NAMESPACE = "pytest_apps"  # the Ray namespace of the shared executor actors
# the actor's threads for attach/detach/ready/stats/close, apart from those running programs: with many callers
# every program thread is busy, and a caller attaching or closing must not wait behind their work
CONTROL = "control"


class ClusterError(RuntimeError):
    """The Ray cluster cannot take the work (no live node, or an actor that does not start)."""


@dataclass(frozen=True)
class Work:
    """One program on one problem, as the caller hands it over: `key` names the problem's test data."""

    problem: Problem
    candidate: Candidate
    key: int
    cases: Cases


@dataclass(frozen=True)
class Setup:
    """What every actor needs to judge as the caller does (plain data, sent once per actor): the run's settings,
    from which it builds the caller's run spec (engine/spec.py)."""

    settings: Settings  # its checkers an absolute folder, "builtin" or None: must exist on every node
    executors: int
    confirm: bool = True  # timeout and near-limit verdicts of a slow machine run again on the node (confirm.py)


class NodeRunner:
    """The executors of one node (made a Ray actor by `RayExecutors`; a plain class, testable without Ray)."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.spec = run_spec(setup.settings)  # the caller's spec, built here from the same settings
        self.judging = self.spec.judging
        self._idle: queue.LifoQueue[Executor] = queue.LifoQueue()
        self._executors = [self.spec.executor() for _ in range(setup.executors)]
        for executor in self._executors:
            executor.isolation()  # starts its server now: warm before the first program arrives
            self._idle.put(executor)
        self._cases: OrderedDict[int, Cases] = OrderedDict()
        self._lock = threading.Lock()
        self.loads = 0  # test data fetched and decoded here (once per problem while it stays cached)
        self.programs = 0
        self.callers = 0  # callers attached (a shared actor is stopped by the last to detach)

    def ready(self) -> dict[str, Any]:
        import os

        return {"pid": os.getpid(), "executors": len(self._executors), "callers": self.callers}

    def attach(self) -> dict[str, Any]:
        """One more caller uses these executors; `ready()`'s answer."""
        with self._lock:
            self.callers += 1
        return self.ready()

    def detach(self) -> int:
        """One caller is done with these executors: how many callers are left."""
        with self._lock:
            self.callers = max(0, self.callers - 1)
            return self.callers

    def knows(self, key: int) -> bool:
        """Whether the test data of `key` is kept here."""
        with self._lock:
            return key in self._cases

    def stats(self) -> dict[str, int]:
        return {"loads": self.loads, "programs": self.programs, "cached": len(self._cases)}

    def run(self, problem: Problem, candidate: Candidate, key: int, boxed: list[Any],
            seconds_left: float | None, fail_fast: bool) -> list[CaseRecord] | None:
        """Run one program on one problem here; None when the deadline (`seconds_left` from now) came first."""
        stop_at = None if seconds_left is None else time.monotonic() + seconds_left
        stop = None if stop_at is None else (lambda: time.monotonic() >= stop_at)
        if stop is not None and stop():
            return None
        cases = self._cases_of(key, boxed)
        executor = self._idle.get()
        try:
            self.programs += 1
            records = run_problem(executor, problem, candidate, cases, self.judging, fail_fast, stop)
            if records is not None and self.setup.confirm and pending(records) and not (stop is not None and stop()):
                records, _ = confirm(executor, problem, candidate, cases, self.judging, fail_fast, records)
            return records
        finally:
            self._idle.put(executor)

    def _cases_of(self, key: int, boxed: list[Any]) -> Cases:
        with self._lock:
            found = self._cases.get(key)
            if found is not None:
                self._cases.move_to_end(key)
                return found
        import ray

        cases = boxed[0] if isinstance(boxed[0], Cases) else ray.get(boxed[0])
        with self._lock:
            if key not in self._cases:
                self.loads += 1
                self._cases[key] = cases
                while len(self._cases) > CACHED_PROBLEMS:
                    self._cases.popitem(last=False)
        return cases

    def close(self) -> None:
        for executor in self._executors:
            executor.close()


def control(actor: Any, method: str) -> Any:
    """Call `method` of a node's actor on its control threads (never queued behind programs)."""
    return getattr(actor, method).options(concurrency_group=CONTROL).remote()


def setup_digest(setup: Setup) -> str:
    """A short name for these settings: callers with the same settings share executors."""
    return hashlib.sha256(repr(setup).encode()).hexdigest()[:16]


def shared_name(node_id: str, setup: Setup) -> str:
    """The Ray actor name of a node's executors for these settings."""
    return f"executors-{node_id[:24]}-{setup_digest(setup)}"


class RayExecutors:
    """The caller's side: one `NodeRunner` actor per alive node of the Ray cluster this process is connected
    to (``ray.init()`` is called when it is not: it connects to ``RAY_ADDRESS`` or starts a local cluster).

    `per_node`: executors per node (default: the node's CPU count in Ray's resources). `num_cpus`: CPUs each
    actor reserves from Ray's scheduler (default 0: the programs' own time is measured whatever else the node
    runs, so sharing CPUs changes how fast a batch goes, never its verdicts). `resource`: run programs only on
    the nodes whose Ray resources hold this custom resource (``ray start --resources='{"apps": 1}'`` on the
    nodes meant for it), so that GPU nodes, say, run none. Every caller with the same settings shares each
    node's actor.
    """

    kind = "ray"

    def __init__(self, settings: Settings, per_node: int | None = None, num_cpus: float = 0.0,
                 confirm: bool = True, resource: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ImportError("Evaluator(ray=True) needs Ray: pip install 'pytest-apps[ray]'") from None
        if not ray.is_initialized():
            ray.init()
        self._ray = ray
        self._settings = settings
        self._per_node, self._num_cpus, self._confirm = per_node, num_cpus, confirm
        self._resource = resource
        self._actors: dict[str, tuple[Any, int]] = {}  # node id -> (actor, executors)
        self._refs: OrderedDict[int, Any] = OrderedDict()  # problem key -> ObjectRef of its Cases
        self._lock = threading.Lock()
        self.lost_nodes: list[str] = []
        self.resent = 0  # programs sent again after their node was lost
        self.refresh()

    # -- nodes -----------------------------------------------------------------------------------------
    def refresh(self, deadline: float | None = None) -> None:
        """Start an actor on every alive node that has none (again, where one was lost); forget nodes that are
        gone. Every actor starting is waited for together, up to STARTUP_TIMEOUT, and never past `deadline`
        (time.monotonic()): an actor not ready by a batch's deadline is stopped and tried again next time."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        alive = {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}
        for node_id in list(self._actors):
            if node_id not in alive:
                self._drop(node_id)
        starting = {}
        remote = ray.remote(concurrency_groups={CONTROL: 2})(NodeRunner)
        for node_id, node in alive.items():
            if node_id in self._actors:
                continue
            cpus = int(node.get("Resources", {}).get("CPU", 0))
            executors = self._per_node or cpus
            if executors < 1:
                continue  # a node without CPUs (e.g. a head node started with num_cpus=0) runs nothing
            if self._resource and node.get("Resources", {}).get(self._resource, 0) <= 0:
                continue  # not a node meant to run programs
            setup = Setup(self._settings, executors, self._confirm)
            actor = remote.options(
                name=shared_name(node_id, setup), namespace=NAMESPACE, get_if_exists=True,
                num_cpus=self._num_cpus,
                # a thread per program in flight (IN_FLIGHT per executor), and two for attach/ready/stats/close
                max_concurrency=IN_FLIGHT * executors,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(setup)
            starting[node_id] = (actor, executors, control(actor, "attach"))
        if not starting:
            return
        started = time.monotonic()
        until = started + STARTUP_TIMEOUT if deadline is None else min(started + STARTUP_TIMEOUT, deadline)
        ready_refs = {ready: node_id for node_id, (_, _, ready) in starting.items()}
        ray.wait(list(ready_refs), num_returns=len(ready_refs), timeout=max(0.0, until - time.monotonic()))
        slow = []
        for node_id, (actor, executors, ready) in starting.items():
            try:
                ray.get(ready, timeout=0)
            except ray.exceptions.GetTimeoutError:
                self._kill(actor)
                slow.append(node_id)
                continue
            except ray.exceptions.RayError:
                continue  # the node went away while the actor started
            self._actors[node_id] = (actor, executors)
        if slow and (deadline is None or until < deadline):  # STARTUP_TIMEOUT, not the batch's deadline
            raise ClusterError(f"Ray node {slow[0]}: the executors' actor did not start within "
                               f"{STARTUP_TIMEOUT:.0f} s; check that pytest-apps is installed on every node")

    def nodes(self) -> dict[str, int]:
        """Node id -> executors, for the nodes that have an actor."""
        return {node: executors for node, (_, executors) in self._actors.items()}

    def pids(self) -> dict[str, int]:
        """Node id -> the process id of its actor (the Ray worker process that holds its executors)."""
        return {node: self._ray.get(control(actor, "ready"))["pid"] for node, (actor, _) in list(self._actors.items())}

    def stats(self) -> dict[str, dict[str, int]]:
        """Each node's counters: test data loaded, programs run, problems cached."""
        return {node: self._ray.get(control(actor, "stats")) for node, (actor, _) in list(self._actors.items())}

    def _drop(self, node_id: str, actor: Any = None) -> None:
        """Forget the node's actor; with `actor`, only if it is still that one (a replacement is kept)."""
        current, _ = self._actors.get(node_id, (None, 0))
        if current is None or (actor is not None and current is not actor):
            return
        del self._actors[node_id]
        self.lost_nodes.append(node_id)
        self._kill(current)

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor)
        except Exception:  # noqa: BLE001 - it is gone already
            pass

    # -- work ------------------------------------------------------------------------------------------
    def run(self, work: Sequence[Work], fail_fast: bool, deadline: float | None = None,
            times: list[tuple[float, float] | None] | None = None) -> list[list[CaseRecord] | None]:
        """Records per work item, in order; None for an item not scored by `deadline` (time.monotonic()).
        `times`, if given, receives per item (when it was last sent to a node, when its result came back), in
        `time.monotonic()` of this process, or None for an item not scored."""
        ray = self._ray
        lost_errors = (ray.exceptions.RayActorError, getattr(ray.exceptions, "ActorUnavailableError", ()),
                       ray.exceptions.ObjectLostError)
        with self._lock:
            self.refresh(deadline)  # nodes that joined since the last batch get their actor; gone ones are forgotten
            if not self._actors:
                wanted = f" and the resource {self._resource!r}" if self._resource else ""
                raise ClusterError(f"the Ray cluster has no alive node with CPUs{wanted} to run programs on")
            results: list[list[CaseRecord] | None] = [None] * len(work)
            pending = list(range(len(work)))[::-1]  # popped from the end: input order
            attempts = [0] * len(work)
            # each call's result is known by the actor it went to: a dead actor's late results never touch the
            # actor that replaced it on the same node
            inflight: dict[Any, tuple[int, str, Any]] = {}
            load: dict[Any, int] = {}  # actor handle -> programs in flight there
            boxes = {w.key: [self._ref(w.key, w.cases)] for w in work}
            sent: list[float] = [0.0] * len(work)
            came: list[float] = [0.0] * len(work)
            while pending or inflight:
                if deadline is not None and time.monotonic() >= deadline:
                    break
                self._send(work, pending, fail_fast, deadline, (inflight, load, boxes, sent))
                if not inflight:
                    self.refresh(deadline)
                    if not self._actors:
                        raise ClusterError(f"every Ray node was lost; {counted(len(pending), 'program')} not scored")
                    continue
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                done, _ = ray.wait(list(inflight), num_returns=1, timeout=wait)
                lost = False
                for ref in done:
                    i, node_id, actor = inflight.pop(ref)
                    load[actor] = load.get(actor, 0) - 1
                    try:
                        results[i] = ray.get(ref)
                        came[i] = time.monotonic()
                    except lost_errors:
                        self._drop(node_id, actor)
                        lost = True
                        attempts[i] += 1
                        if attempts[i] <= RETRIES:
                            self.resent += 1
                            pending.append(i)
                        # else: stays None, not scored
                if lost:
                    self.refresh(deadline)  # a new actor where the node is still alive, within the batch's time
                    if not self._actors and not inflight:
                        raise ClusterError(f"every Ray node was lost; {counted(len(pending), 'program')} not scored")
            # past the deadline, what is still in flight is left to the actors: each stops at its next case
            if times is not None:
                times.extend(None if r is None else (sent[i], came[i]) for i, r in enumerate(results))
            return results

    def _send(self, work: Sequence[Work], pending: list[int], fail_fast: bool, deadline: float | None,
              state: tuple[dict[Any, tuple[int, str, Any]], dict[Any, int], dict[int, list[Any]], list[float]]) -> None:
        """Send pending work to every node up to IN_FLIGHT programs per executor there."""
        inflight, load, boxes, sent = state
        for node_id, (actor, executors) in list(self._actors.items()):
            while pending and load.get(actor, 0) < IN_FLIGHT * executors:
                i = pending.pop()
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                ref = actor.run.remote(work[i].problem, work[i].candidate, work[i].key, boxes[work[i].key],
                                       left, fail_fast)
                inflight[ref] = (i, node_id, actor)
                sent[i] = time.monotonic()
                load[actor] = load.get(actor, 0) + 1

    def _ref(self, key: int, cases: Cases) -> Any:
        found = self._refs.get(key)
        if found is None:
            found = self._refs[key] = self._ray.put(cases)
        self._refs.move_to_end(key)
        while len(self._refs) > 4 * CACHED_PROBLEMS:
            self._refs.popitem(last=False)
        return found

    def forget(self, key: int) -> None:
        self._refs.pop(key, None)

    def close(self) -> None:
        """Detach from each node's actor; the last caller to detach stops it."""
        for actor, _ in list(self._actors.values()):
            try:
                if self._ray.get(control(actor, "detach"), timeout=30) > 0:
                    continue  # other callers still use it
            except Exception:  # noqa: BLE001 - gone already, or not answering: never stopped under its other callers
                continue
            try:
                self._ray.get(control(actor, "close"), timeout=30)
            except Exception:  # noqa: BLE001
                pass
            self._kill(actor)
        self._actors.clear()
        self._refs.clear()
