"""The Evaluator's executors as Ray actors (`Evaluator(ray=True)`, `engine.cluster`) on a real two-node local
Ray cluster (`ray.cluster_utils.Cluster`, one CPU per node), running real programs: the same verdicts as one
machine, test data loaded once per node, and a node lost mid-batch whose work goes to the other node.

One cluster for the module (Ray takes tens of seconds to start here); the tests run in one xdist group so
that a single worker holds it."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_apps import Evaluator, load_problems
from pytest_apps.dataset.loading import sample_path
from pytest_apps.rewards import CodeReward

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'pytest-apps[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"
STORE = 80 * 1024 * 1024  # object store per node: the tests' data is small
# a program that needs 0.3 s of CPU per test before answering: long enough to lose a node under it
SLOW = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Cluster, Any]]:
    # quick health checks, so that a removed node is known dead in about a second (default: tens of seconds)
    system = {"health_check_period_ms": 500, "health_check_failure_threshold": 3, "health_check_initial_delay_ms": 0}
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": STORE, "include_dashboard": False, "_system_config": system})
    worker = c.add_node(num_cpus=1, object_store_memory=STORE, resources={"apps": 1})  # a node meant for programs
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    try:
        yield c, worker
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def sample() -> Any:
    return load_problems("sample")


def light(results: list[Any]) -> list[tuple[Any, ...]]:
    return [(r.id, r.verdict, r.tests_passed, r.tests_run, [(t["case"], t["kind"], t["step"]) for t in r.tests])
            for r in results]


def work_of(sample: Any) -> list[tuple[Any, str | None]]:
    """Every sample problem with its solution, a wrong program and no program, twice over (several per problem)."""
    out: list[tuple[Any, str | None]] = []
    for p in sample:
        out += [(p, (SOLUTIONS / f"{p.id}.py").read_text()), (p, "print(42)\n"), (p, None)]
    return out * 2


def test_same_verdicts_as_one_machine_with_test_data_once_per_node(cluster: Any, sample: Any) -> None:
    work = work_of(sample)
    with Evaluator(timeout=1.0, workers=2) as local:
        here = local.score_many(work)
        here_fast = local.score_batch(work, fail_fast=True)
    with Evaluator(timeout=1.0, ray=True) as ev:
        assert len(ev.cluster.nodes()) == 2 and set(ev.cluster.nodes().values()) == {1}
        there = ev.score_many(work)
        there_fast = ev.score_batch(work, fail_fast=True)
        stats = ev.cluster.stats()
    assert light(there) == light(here)
    assert light(there_fast) == light(here_fast)
    assert {r.verdict for r in there} >= {"pass", "fail", "no_code"}
    assert all(s["programs"] > 0 for s in stats.values())  # both nodes ran programs
    assert all(s["loads"] <= len(sample) for s in stats.values())  # each problem's data once per node at most
    assert sum(s["programs"] for s in stats.values()) > sum(s["loads"] for s in stats.values())


def kill_actor_once_busy(ev: Evaluator, node_id: str) -> tuple[threading.Thread, threading.Event, int]:
    """A thread that SIGKILLs `node_id`'s actor process once it runs a program (its node stays alive)."""
    victim = ev.cluster.pids()[node_id]
    killed = threading.Event()

    def kill() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # once the node's actor is running a program
            if ev.cluster.stats().get(node_id, {}).get("programs", 0) > 0:
                break
            time.sleep(0.05)
        os.kill(victim, signal.SIGKILL)  # the actor's worker process dies; its node stays
        killed.set()

    return threading.Thread(target=kill), killed, victim


@pytest.mark.parametrize("budget", [90.0, None], ids=["budget", "no-budget"])
def test_an_actor_killed_mid_batch_is_replaced_and_the_batch_returns_every_score_within_its_budget(
    cluster: Any, sample: Any, budget: float | None,
) -> None:
    c, worker = cluster
    problem = next(p for p in sample if p.id == "900001")  # 5 tests: 1.5 s of CPU per program
    program = SLOW + (SOLUTIONS / "900001.py").read_text()
    with Evaluator(timeout=2.0, ray=True) as ev:
        killer, killed, victim = kill_actor_once_busy(ev, worker.node_id)
        killer.start()
        started = time.monotonic()
        results = ev.score_batch([(problem, program)] * 6, budget=budget)
        took = time.monotonic() - started
        killer.join()
        assert killed.is_set()
        assert budget is None or took < budget
        assert [r.verdict if r else None for r in results] == ["pass"] * 6  # every score, none lost, none as 0
        assert ev.cluster.resent >= 1
        replaced = ev.cluster.pids()
        assert set(replaced) == {worker.node_id, *replaced} and replaced[worker.node_id] != victim  # a new actor
        # the next batch runs on both nodes' actors
        assert [r.verdict for r in ev.score_many([(problem, program)] * 2)] == ["pass"] * 2


def test_an_actor_not_started_by_the_batchs_deadline_is_left_for_the_next_batch(cluster: Any, sample: Any) -> None:
    """A node that joins between batches gets its actor at the next batch; one that cannot start before that batch's
    deadline holds the batch no longer than its budget, costs no error and no 0 (what was not scored is None), and
    is started again by the next batch."""
    c, worker = cluster
    problem = next(p for p in sample if p.id == "900001")
    program = (SOLUTIONS / "900001.py").read_text()
    with Evaluator(timeout=2.0, ray=True) as ev:
        assert len(ev.cluster.nodes()) == 2
        joined = c.add_node(num_cpus=1, object_store_memory=STORE)
        try:
            c.wait_for_nodes()
            budget = 0.3  # far less than a Ray worker process takes to start and warm its executor
            started = time.monotonic()
            results = ev.score_batch([(problem, program)] * 2, budget=budget)
            took = time.monotonic() - started
            assert took < budget + 5.0, took  # the wait for the new actor ended at the deadline, not at 120 s
            assert all(r is None or r.verdict == "pass" for r in results)  # not scored, never scored 0
            assert joined.node_id not in ev.cluster.nodes()  # the actor that was not ready was stopped
            # the next batch, without a budget, starts the new node's actor and runs on all three
            again = ev.score_many([(problem, program)] * 6)
            assert [r.verdict for r in again] == ["pass"] * 6
            assert set(ev.cluster.nodes()) >= {joined.node_id, worker.node_id}
        finally:
            c.remove_node(joined)


# the Caller actor's code goes to its worker by value: this test module is not importable there
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@ray.remote(num_cpus=0)
class Caller:
    """A process that scores as verl's reward workers do: its own Evaluator on the cluster."""

    def __init__(self) -> None:
        self.ev = Evaluator(timeout=1.0, ray=True)

    def pids(self) -> dict[str, int]:
        return self.ev.cluster.pids()

    def score(self) -> list[str]:
        """The verdicts of the test's work, on problems loaded here (test data stays with its process)."""
        return [r.verdict for r in self.ev.score_many(work_of(load_problems("sample"))[:6])]

    def close(self) -> None:
        self.ev.close()


def test_every_caller_shares_one_executor_actor_per_node(cluster: Any, sample: Any) -> None:
    work = work_of(sample)[:6]
    with Evaluator(timeout=1.0, ray=True) as first:
        callers = [Caller.remote() for _ in range(3)]
        mine = first.cluster.pids()
        assert len(mine) == 2
        assert ray.get([c.pids.remote() for c in callers]) == [mine] * 3  # the same actor on each node
        actor = next(iter(first.cluster._actors.values()))[0]
        assert ray.get(actor.ready.remote())["callers"] == 4
        verdicts = ray.get([c.score.remote() for c in callers])
        assert verdicts == [[r.verdict for r in first.score_many(work)]] * 3
        ray.get([c.close.remote() for c in callers])
        assert ray.get(actor.ready.remote())["callers"] == 1  # the others detached; it stays for this one
    with pytest.raises(ray.exceptions.RayActorError):  # the last caller's close stopped it
        ray.get(actor.ready.remote(), timeout=30)


def test_a_node_resource_keeps_the_executors_off_the_other_nodes(cluster: Any, sample: Any) -> None:
    c, worker = cluster
    with Evaluator(timeout=1.0, ray=True, ray_resource="apps") as ev:
        assert list(ev.cluster.nodes()) == [worker.node_id]
        assert [r.verdict for r in ev.score_many(work_of(sample)[:3])] == ["pass", "fail", "no_code"]
    with pytest.raises(Exception, match="resource 'gpu_free'"):
        Evaluator(timeout=1.0, ray=True, ray_resource="gpu_free").score_many(work_of(sample)[:1])


def test_latency_on_ray_is_per_program_not_the_batch_time(cluster: Any, sample: Any) -> None:
    problem = next(p for p in sample if p.id == "900001")  # 5 tests: 1.5 s of CPU for the slow program
    fast = (SOLUTIONS / "900001.py").read_text()
    timings: list[Any] = []
    with Evaluator(timeout=2.0, ray=True) as ev:
        ev.score_many([(problem, fast)] * 2)  # the actors started: what follows times the programs alone
        ev.score_batch([(problem, SLOW + fast)] + [(problem, fast)] * 3, timings=timings)
    slow_took, fast_took = timings[0][1], min(t[1] for t in timings[1:])
    assert slow_took >= 5 * 0.3 * 0.9 and fast_took < slow_took / 2  # each its own, not the batch's


# last: it removes the worker node for good
def test_a_node_lost_mid_batch_has_its_work_rescheduled_never_scored_zero(cluster: Any, sample: Any) -> None:
    c, worker = cluster
    problem = next(p for p in sample if p.id == "900001")  # 5 tests: 1.5 s of CPU per program
    program = SLOW + (SOLUTIONS / "900001.py").read_text()
    with Evaluator(timeout=2.0, ray=True) as ev:
        assert len(ev.cluster.nodes()) == 2
        removed = threading.Event()

        def remove() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # once the worker node is running a program
                stats = ev.cluster.stats() if not removed.is_set() else {}
                if any(s["programs"] > 0 for n, s in stats.items() if n == worker.node_id):
                    break
                time.sleep(0.05)
            c.remove_node(worker)
            removed.set()

        killer = threading.Thread(target=remove)
        killer.start()
        results = ev.score_many([(problem, program)] * 6)
        killer.join()
        assert removed.is_set()
        assert [r.verdict for r in results] == ["pass"] * 6  # every program scored, fully, none as a failure
        assert all(r.tests_passed == r.tests_total == 5 for r in results)
        assert ev.cluster.lost_nodes == [worker.node_id] and ev.cluster.resent >= 1
        assert len(ev.cluster.nodes()) == 1
        # the reward function over the same evaluator goes on on the node that is left
        with CodeReward("strict", evaluator=ev) as reward:
            io = json.loads(sample_path().read_text().splitlines()[0])["input_output"]
            text = "```python\n" + (SOLUTIONS / "900001.py").read_text() + "```"
            assert reward(prompts=["p"], completions=[text], completion_ids=None, input_output=[io]) == [1.0]

