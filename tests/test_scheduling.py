"""The xdist scheduler: same grouping as loadscope, linear cost. Driven with stand-in worker nodes
(xdist's own objects need live gateways), and end to end through real workers in test_plugin.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from xdist.scheduler import LoadScopeScheduling

from pytest_apps.plugin.scheduling import ProblemScheduling


class Node:
    def __init__(self, name: str) -> None:
        self.name, self.sent, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indexes):
        self.sent.append(list(indexes))

    def shutdown(self):
        self.shutting_down = True

    def __repr__(self) -> str:
        return self.name


def config(workers: int):
    option = SimpleNamespace(loadscopereorder=False, tx=["popen"] * workers, numprocesses=workers, dist="loadscope")
    return SimpleNamespace(option=option, getvalue=lambda name: getattr(option, name), hook=None)


def collection(problems: int, cases: int) -> list[str]:
    return [f"solutions/{p}.py::test_{c}" for p in range(problems) for c in range(cases)]


def drive(sched_cls, problems: int, cases: int, workers: int = 2):
    """Run a whole session against the scheduler; return which worker ran each test."""
    sched = sched_cls(config(workers))
    nodes = [Node(f"gw{i}") for i in range(workers)]
    items = collection(problems, cases)
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, items)
    sched.schedule()
    ran: dict[str, str] = {}
    done = {node: 0 for node in nodes}
    while not sched.tests_finished:
        progressed = False
        for node in nodes:
            queue = [i for batch in node.sent for i in batch]
            while done[node] < len(queue):
                index = queue[done[node]]
                done[node] += 1
                ran[items[index]] = node.name
                sched.mark_test_complete(node, index)
                progressed = True
        assert progressed, "the scheduler stalled"
    return ran


@pytest.mark.parametrize("problems, cases", [(1, 5), (7, 3), (40, 20)])
def test_every_test_runs_once_and_a_problem_stays_on_one_worker(problems, cases):
    ran = drive(ProblemScheduling, problems, cases)
    assert sorted(ran) == sorted(collection(problems, cases))
    by_problem: dict[str, set[str]] = {}
    for nodeid, worker in ran.items():
        by_problem.setdefault(nodeid.split("::")[0], set()).add(worker)
    assert all(len(workers) == 1 for workers in by_problem.values())
    if problems > 1:
        assert len(set(ran.values())) == 2  # both workers got work


def test_same_decisions_as_xdist_loadscope():
    assert drive(ProblemScheduling, 30, 10) == drive(LoadScopeScheduling, 30, 10)
