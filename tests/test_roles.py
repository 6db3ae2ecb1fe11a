"""Each role's run state, built whole by its plain function (the controller's in plugin/controller.py, a worker's
in plugin/worker.py): what the controller, a local xdist worker and a remote xdist worker each have, and what
they lack."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from pytest_apps.candidates.sources import Candidate
from pytest_apps.core.settings import Settings
from pytest_apps.executor.slots import pool_folder, remove_pool
from pytest_apps.plugin.nodeids import FileIds
from pytest_apps.plugin.plan import Plan, PlanTestData
from pytest_apps.plugin.remote import ControllerTestData, RemoteFile
from pytest_apps.plugin.controller import controller_state
from pytest_apps.plugin.remote import put_checkers
from pytest_apps.plugin.state import ControllerState, RunState
from pytest_apps.plugin.worker import (PLACE_KEY, SLOTS_KEY, checker_copies, remote_explicit, remove_folders,
                                       worker_state)

from conftest import make_problem

CONTROLLER_ONLY = ("workers_down", "cases_not_run", "remote_isolation", "worker_lost", "never_ran")
PROBLEM = make_problem("7", index=0, n=2)


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "0.json").write_text(json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["a", "b"]}))
    return Plan(tmp_path, {"checkers": None}, {}, [PROBLEM], [], [],
                {"7": [Candidate("7", "f.py", "print(1)", 0, "")]})


@pytest.fixture
def run_name():
    name = f"test-roles-{uuid.uuid4().hex[:8]}"
    yield name
    remove_pool(name)


def test_the_controller_owns_the_plan_reads_its_files_and_keeps_what_its_workers_did(plan: Plan) -> None:
    state = controller_state(Settings(cpu_pinning="off"), plan, cpus={0, 1}, workers=3, explicit=["a::b"])
    assert isinstance(state, ControllerState)
    assert state.workers == 3 and state.cpus == 2 and state.slot is None
    assert state.explicit == {"a::b"} and state.narrow == []
    assert isinstance(state.test_data, PlanTestData)
    assert state.test_data.get(PROBLEM).inputs == ["1\n", "2\n"]
    # what happens to its workers, told through its methods
    assert state.workers_down == [] and state.cases_not_run == 0 and state.remote_isolation == {}
    state.worker_lost({"worker": "gw1", "crashed": None})
    state.worker_crashed("gw0", "f.py::test_1")  # not a lost worker: nothing changes
    state.worker_crashed("gw1", "f.py::test_0")
    state.machine_isolation("h2", ("landlock",))
    state.never_ran(4)
    assert state.workers_down == [{"worker": "gw1", "crashed": "f.py::test_0"}]
    assert state.remote_isolation == {"h2": ["landlock"]} and state.cases_not_run == 4
    state.close()


def test_a_local_worker_reads_the_plan_runs_on_its_slot_and_has_no_controller_part(
        plan: Plan, run_name: str) -> None:
    workerinput = {"workerid": "gw3", "workercount": 4, SLOTS_KEY: run_name, PLACE_KEY: (1, 2)}
    state = worker_state(Settings(cpu_pinning="off"), plan, workerinput, cpus={0, 1}, explicit=["f.py::test_1"])
    assert type(state) is RunState and state.explicit == {"f.py::test_1"}
    assert not any(hasattr(state, name) for name in CONTROLLER_ONLY)
    # placed as the controller said: the second of its machine's two workers, on slot 1 of 2
    assert state.workers == 2 and state.slot is not None and (state.slot.index, state.slot.count) == (1, 2)
    assert Path(pool_folder(run_name), "slot-1").exists()
    assert isinstance(state.test_data, PlanTestData) and state.test_data.get(PROBLEM).outputs == ["a", "b"]
    state.note_failure(("7", 0), "f.py::test_0")
    state.note_failure(("7", 0), "f.py::test_1")
    assert state.first_failure(("7", 0)) == "f.py::test_0" and state.first_failure(("8", 0)) is None
    state.close()


def test_without_a_pool_a_worker_has_no_slot(plan: Plan) -> None:
    state = worker_state(Settings(cpu_pinning="off"), plan, {"workerid": "gw0", "workercount": 3}, cpus={0})
    assert state.slot is None and state.workers == 3 and state.cpus == 1


class Controller:
    """The controller's end of a remote worker's channel: answers a request for a problem's test data."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def send(self, message: tuple) -> None:
        self.asked.append(message)

    def receive(self, timeout: float) -> tuple:
        kind, pid, ask = self.asked[-1]
        return "ok", ask, json.dumps({"inputs": ["from the controller\n"], "outputs": ["x"]}).encode(), \
            json.dumps({"0": "print(2)"})


def test_a_remote_worker_gets_its_test_data_from_the_controller_and_removes_its_checker_copy(
        plan: Plan, run_name: str) -> None:
    """What remote.worker_setup read out of `workerinput` makes its state: the node ids the controller's command
    line named in its files always run, and the copy of the controller's checker folder made here is removed
    at its end (worker.RemoteWorker.put_away), not the plan's own folder."""
    copy = put_checkers({"7.py": "def check(case, output):\n    return True\n"})
    ids = FileIds("f.py", "f.py", (), "f.py", "f.py")
    files = [RemoteFile("/controller/f.py", ids, (("test_1",), ()))]
    channel = Controller()
    settings = Settings(cpu_pinning="off", checkers=copy)
    state = worker_state(settings, plan, {"workerid": "gw1", SLOTS_KEY: run_name}, cpus={0, 1},
                         explicit=remote_explicit(files), test_data=ControllerTestData(channel))
    assert type(state) is RunState and not any(hasattr(state, name) for name in CONTROLLER_ONLY)
    assert state.explicit == {"f.py::test_1"} and state.slot is not None
    # the test data and the program come over the channel, not from the plan's files
    assert state.test_data.get(PROBLEM).inputs == ["from the controller\n"]
    assert state.test_data.program(PROBLEM, plan.candidates["7"][0]).code == "print(2)"
    assert [m[:2] for m in channel.asked] == [("cases", "7")]
    state.close()
    assert checker_copies(Settings(checkers=None), plan) == []  # the plan's own folder (here: none) stays
    temporary = checker_copies(settings, plan)
    assert temporary == [copy] and Path(copy, "7.py").is_file()
    remove_folders(temporary)
    assert temporary == [] and not Path(copy).exists()


def test_the_controller_takes_its_machines_isolation_and_speed_from_a_worker_there(plan: Plan) -> None:
    """Under xdist the controller runs no case: what a worker on its machine found is its machine's, and asking
    for it starts no executor; a figure the controller already has (its header asked) stays its own."""
    state = controller_state(Settings(cpu_pinning="off"), plan, cpus={0, 1}, workers=2)
    state.local_machine(["fork-server", "landlock-abi7"], 0.0123)
    assert state.isolation() == ["fork-server", "landlock-abi7"] and state.machine_speed() == 0.0123
    assert not state.started()
    state.local_machine(["fork-server"], 0.5)  # a second worker's: the first one's stays
    assert state.isolation() == ["fork-server", "landlock-abi7"] and state.machine_speed() == 0.0123
    state.close()


def test_the_controller_takes_a_cases_record_and_a_workers_warning_out_of_a_reports_properties() -> None:
    """What --junitxml sees of a report is the user's own properties: the record (a dict) and the case-files
    warning are the controller's."""
    from pytest_apps.core.record import CaseRecord
    from pytest_apps.plugin.collect import CASE_FILES_KEY, RECORD_KEY
    from pytest_apps.plugin.controller import taken_out

    first, last = CaseRecord("7", 0, "wrong_answer"), CaseRecord("7", 0, "passed", nodeid="f.py::test_0")
    properties = [("mine", 1), (RECORD_KEY, first.to_json()), (CASE_FILES_KEY, "disk full"),
                  (RECORD_KEY, last.to_json()), (CASE_FILES_KEY, "later")]
    record, unwritten, others = taken_out(properties)
    assert record == last and unwritten == "disk full" and others == [("mine", 1)]
    assert taken_out([("mine", 1)]) == (None, "", [("mine", 1)])


def test_an_incomplete_run_keeps_a_complete_runs_reports_and_a_complete_one_removes_a_stale_junit_file(
        tmp_path: Path) -> None:
    from pytest_apps.plugin.controller import keep_complete_reports

    settings = Settings(rootdir=str(tmp_path), report=str(tmp_path / "apps.json"))
    junit = tmp_path / "junit.xml"
    # no report yet: an incomplete run writes at the paths
    run: dict = {"complete": False}
    assert keep_complete_reports(run, settings, tmp_path, junit) is None and "kept" not in run
    (tmp_path / "apps.json").write_text(json.dumps({"problems": [], "run": {"complete": True}}))
    junit.write_text("<testsuites/>")
    assert keep_complete_reports(run, settings, tmp_path, junit) == tmp_path / "junit.incomplete.xml"
    assert run["kept"] == "apps.json" and run["beside"] == ["apps.incomplete.json", "junit.incomplete.xml"]
    (tmp_path / "junit.incomplete.xml").write_text("<testsuites/>")
    assert keep_complete_reports({"complete": True}, settings, tmp_path, junit) is None
    assert not (tmp_path / "junit.incomplete.xml").exists() and junit.exists()


def test_the_controllers_closing_lines_say_what_failed_loudest() -> None:
    from pytest_apps.plugin.controller import closing_lines
    from pytest_apps.plugin.writers import REPORT_NOT_WRITTEN
    from pytest_apps.report.gates import Gate

    assert closing_lines("", [], None, None, None, []) == []
    lines = closing_lines("disk full", ["the JSON report r.json could not be written (No space left on device)"],
                          None, Gate(False, "FAIL: strict accuracy 10.0% is under 50%"), None, [])
    assert lines == [
        ("WARNING: disk full", {"bold": True}),
        ("ERROR: the JSON report r.json could not be written (No space left on device): exit status "
         f"{REPORT_NOT_WRITTEN}", {"bold": True, "red": True}),
        ("FAIL: strict accuracy 10.0% is under 50%", {"bold": True, "red": True}),
    ]
    passed = closing_lines("", [], None, None, Gate(True, "no regression"), [])
    assert passed == [("no regression", {"bold": True, "red": False})]
