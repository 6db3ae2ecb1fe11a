"""Each xdist worker's executor on a CPU of its own when the workers fill the machine, and never otherwise."""

from __future__ import annotations

import json
import os

import pytest
from conftest import on_cpus, read_report, run

from pytest_apps.plugin.cpus import executor_cpu, worker_index
from pytest_apps.executor import Executor, Limits, Program


@pytest.mark.parametrize("worker_id, count, cpus, expected", [
    ("gw0", 2, {0, 1}, 0),
    ("gw1", 2, {0, 1}, 1),
    ("gw1", 2, {4, 9}, 9),  # the CPUs this process may use, in order, whatever their numbers
    ("gw5", 8, {0, 1, 2, 3}, 1),  # more workers than CPUs: round the CPUs again
    ("gw0", 1, {0, 1}, None),  # -n 1 on two CPUs: the zygote and the controller use the other one
    ("gw3", 4, {0, 1, 2, 3, 4, 5, 6, 7}, None),
    ("gw0", 1, {3}, 3),
    (None, None, {0, 1}, None),  # not an xdist worker
    ("gw0", 2, set(), None),  # the platform cannot tell
    ("laptop", 4, {0, 1}, None),  # a gateway given its own name (--tx id=laptop//popen)
])
def test_which_cpu_a_worker_executor_gets(worker_id, count, cpus, expected):
    assert executor_cpu("auto", worker_id, count, cpus) == expected


def test_off_pins_nothing():
    assert executor_cpu("off", "gw0", 2, {0, 1}) is None


def test_worker_index():
    assert [worker_index(w) for w in ("gw0", "gw12", "gw", "gw1a", "x3")] == [0, 12, None, None, None]


AFFINITY = "import os\nprint(sorted(os.sched_getaffinity(0)))\n"


def available_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def test_a_pinned_executor_runs_its_children_on_that_cpu():
    cpu = max(available_cpus())
    with Executor(Limits(timeout=10), cpu=cpu) as ex:
        out = ex.run_stdin(Program(AFFINITY), "")
        assert (out.status, out.stdout) == ("exited", f"[{cpu}]\n")
        assert os.sched_getaffinity(ex._server_pid()) == {cpu}  # the server itself runs there


def test_an_unpinned_executor_leaves_its_children_free():
    with Executor(Limits(timeout=10)) as ex:
        out = ex.run_stdin(Program(AFFINITY), "")
        assert out.stdout == f"{sorted(available_cpus())}\n"
        assert os.sched_getaffinity(ex._server_pid()) == available_cpus()


def test_a_cpu_this_process_may_not_use_leaves_the_executor_unpinned():
    cpu = max(available_cpus()) + 1000
    with Executor(Limits(timeout=10), cpu=cpu) as ex:
        out = ex.run_stdin(Program(AFFINITY), "")
        assert (out.status, out.stdout) == ("exited", f"{sorted(available_cpus())}\n")
        assert os.sched_getaffinity(ex._server_pid()) == available_cpus()


@pytest.mark.parametrize("workers, mode, pinned", [("2", "auto", True), ("2", "off", False), ("1", "auto", False)])
def test_two_workers_on_two_cpus_each_keep_their_candidates_on_one(pytester: pytest.Pytester, workers, mode, pinned):
    """End to end on a machine of two CPUs: with -n 2, every candidate of a worker sees that worker's CPU
    only (auto), or both (off); with -n 1, both. The candidates print what they see; the report keeps it as
    their wrong output."""
    cpus = sorted(available_cpus())
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    two = set(cpus[:2])
    for pid in ("900001", "900003", "900005"):  # the sample's stdin problems
        (pytester.path / "cands").mkdir(exist_ok=True)
        (pytester.path / "cands" / f"{pid}.py").write_text(AFFINITY)
    with on_cpus(two):
        result = run(pytester, "--apps-dataset", "sample", "--apps-candidates", "cands", "--apps-max-tests", "1",
                     "-n", workers, "--apps-cpu-pinning", mode)
    result.assert_outcomes(failed=6)  # and the three problems without a program: no code
    seen = [json.loads(p["first_failure_detail"]["got"]) for p in read_report(pytester)["problems"]
            if p["first_failure_detail"]]
    assert len(seen) == 3
    if pinned:
        assert all(len(got) == 1 and set(got) <= two for got in seen), seen
    else:
        assert all(got == sorted(two) for got in seen), seen
