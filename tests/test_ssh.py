"""xdist over ssh with nothing shared: a real OpenSSH server (tests/sshserver.py) whose sessions see an empty
/tmp, while the controller keeps everything it reads and writes under /tmp (the pytester folder with a copy
of the dataset and the candidates, the plan folder, the index cache). The remote workers get the plan and the
test data through execnet only.

Skipped, with the reason, where the machine cannot run the server (no OpenSSH, not root); `.ci/run` installs
OpenSSH.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sshserver import ALIAS, SshServer, Unavailable

from conftest import UNUSED_PLUGINS, cmdline, junit_outcomes, kill_tree, parent_of, permutation_project, read_report, run

# The real rows, minus 7 and 17, whose most common programs time out on a hundred tests (minutes of waiting
# that show nothing more): 19 problems, every one of their 2,000 tests.
REAL_IDS = "15,16,18,19,20,203,747,771,1079,1303,3040,3177,4001,4002,4003,4004,4245,4559,4655"


@pytest.fixture(scope="module")
def sshd() -> SshServer:
    server = SshServer()
    try:
        server.start()
    except Unavailable as exc:
        pytest.skip(f"no test ssh server: {exc}")
    yield server
    server.stop()


def tx(server: SshServer, workers: int = 2) -> str:
    """The recipe of docs/remote.md: `N*ssh=HOST//python=PYTHON`, here with the test server's ssh_config. (Runs give
    `--max-worker-restart 0` too: with `--tx` and no `-n`, xdist replaces a crashed worker without end, and a
    worker that cannot start would open sessions until the machine runs out of memory.)"""
    return f"{workers}*ssh={ALIAS}//ssh_config={server.config}//python={sys.executable}"


TIMINGS = ("time", "memory", "cpu_time", "wall_time", "borderline")  # measured anew in every run


def comparable(report: dict) -> dict:
    """A report without what differs between two runs of the same programs: what is measured (times,
    memory, which verdicts came near the time limit, the machine's speed), the report's own path, and
    whether the problem index was built or found in the cache; and the layers by machine (the test host's
    sessions may have one the controller's checkout lacks, such as a private /tmp where the checkout lies
    under /tmp), of which the common `isolation` stays."""
    report = json.loads(json.dumps(report))
    report.pop("isolation_by_machine", None)
    for key in ("wall_time", "borderline"):
        report["summary"].pop(key, None)
    report.get("machine", {}).pop("speed", None)
    report["settings"].pop("report")
    report["source"].pop("index")
    for problem in report["problems"]:
        for test in problem["tests"]:
            for key in TIMINGS:
                test.pop(key, None)
    return report


def remote_entries(server: SshServer) -> list[str]:
    """What the test host's sessions see in /tmp and in xdist's remote folder (~/pyexecnetcache)."""
    found = server.ssh("cd /tmp && find . ~/pyexecnetcache -mindepth 1")
    assert found.returncode == 0, found.stderr
    return server.not_the_package(found.stdout.split())


def test_ssh_workers_sharing_nothing_report_what_local_workers_report(
    sshd: SshServer, pytester: pytest.Pytester, shared_data: Path
) -> None:
    assert pytester.path.is_relative_to("/tmp") and os.environ["PYTEST_APPS_CACHE"].startswith("/tmp/")
    assert sshd.ssh(f"test -e {pytester.path} || echo absent").stdout.strip() == "absent"
    (pytester.path / "rows.jsonl").write_bytes((shared_data / "apps_test_rows.jsonl").read_bytes())
    (pytester.path / "cands.jsonl").write_bytes((shared_data / "candidates.jsonl").read_bytes())
    base = ["--apps-dataset", "rows.jsonl", "--apps-candidates", "cands.jsonl", "--apps-only", REAL_IDS,
            "--apps-select", "most-common", "--apps-max-tests", "12", "--apps-timeout", "1"]
    run(pytester, *base, "-n", "2", "--apps-report", "reports/local.json", "--junitxml", "local.xml")
    local_cases = {p: p.read_bytes() for p in (pytester.path / "reports" / "cases").rglob("*") if p.is_file()}
    assert local_cases
    for path in local_cases:
        path.unlink()
    before = remote_entries(sshd)
    # no --rsyncdir, no chdir, no shared folder: xdist's default remote folder on the test host
    remote = run(pytester, *base, "--dist", "loadscope", "--tx", tx(sshd), "--max-worker-restart", "0",
                 "--apps-report", "reports/ssh.json", "--junitxml", "ssh.xml")
    assert "not relative to an rsync root" not in remote.stdout.str() + remote.stderr.str()
    assert sshd.log().count("Accepted publickey") >= 2  # the workers did log in over ssh

    local, over_ssh = read_report(pytester, "reports/local.json"), read_report(pytester, "reports/ssh.json")
    assert over_ssh["summary"]["tests_run"] == over_ssh["summary"]["tests_total"] > 150  # every test ran
    assert "workers_down" not in over_ssh
    assert comparable(over_ssh) == comparable(local)
    # the same node ids and outcomes, test by test, as pytest reports them
    assert junit_outcomes(pytester.path / "ssh.xml") == junit_outcomes(pytester.path / "local.xml")
    # failing cases' files were written on the controller, where the failure text says they are
    remote_cases = {p: p.read_bytes() for p in (pytester.path / "reports" / "cases").rglob("*") if p.is_file()}
    assert remote_cases == local_cases
    assert "input written to reports/cases/" in remote.stdout.str()
    # nothing of the run is left on the test host
    assert remote_entries(sshd) == before


@pytest.mark.interfaces
def test_the_controllers_checker_folder_reaches_the_ssh_workers(sshd: SshServer, pytester: pytest.Pytester) -> None:
    """A checker folder under the controller's /tmp, which the test host cannot see: its checker still decides
    the problem's tests there, and its copy is gone when the workers end."""
    base = permutation_project(pytester)[:-2]  # (without its --rootdir: a remote pytest would look for it)
    before = remote_entries(sshd)
    run(pytester, *base, "-n", "2", "--apps-checkers", "mine", "--apps-report", "reports/local.json")
    run(pytester, *base, "--dist", "loadscope", "--tx", tx(sshd), "--max-worker-restart", "0",
        "--apps-checkers", "mine",
        "--apps-report", "reports/ssh.json")
    local, over_ssh = read_report(pytester, "reports/local.json"), read_report(pytester, "reports/ssh.json")
    assert [t["step"] for t in over_ssh["problems"][0]["tests"]] == ["checker"] * 3
    assert over_ssh["problems"][0]["verdict"] == "pass"
    assert comparable(over_ssh) == comparable(local)
    assert remote_entries(sshd) == before


@pytest.mark.interfaces
def test_a_gateway_lost_mid_run_leaves_its_cases_unpassed(sshd: SshServer, pytester: pytest.Pytester) -> None:
    """Kill one remote worker while it runs cases, with xdist's restarts off: what it had not finished is
    reported as not run (its problems incomplete) and the report names it; nothing that did not run passes."""
    folder = pytester.path / "slow"
    folder.mkdir()
    for solution in (Path(__file__).resolve().parent.parent / "solutions").glob("*.py"):
        (folder / solution.name).write_text("import time\ntime.sleep(1)\n" + solution.read_text())
    args = [sys.executable, "-m", "pytest", *UNUSED_PLUGINS, "-p", "no:cacheprovider",
            "--apps-dataset", "sample", "--apps-limit", "6", "--apps-candidates", "slow",
            "--dist", "loadscope", "--tx", tx(sshd), "--max-worker-restart", "0",
            "--junitxml", "junit.xml", "-rA"]
    controller = subprocess.Popen(args, cwd=pytester.path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
    output = Output(controller)
    try:
        victim, seen_in_tmp = running_worker(sshd, controller, output)
        # the host is lost: its worker and everything the worker started end at once
        kill_tree(victim)
        controller.wait(timeout=300)
    finally:
        if controller.poll() is None:
            controller.kill()
    text = output.text(wait=True)
    assert controller.returncode == 1, text
    # while it ran, the remote side held no test data on disk: its /tmp had only the children's work folders
    # (and the run's execution slots: empty lock files)
    assert all(name.startswith(("./pytest-apps-exec-", "./pytest-apps-slots-")) for name in seen_in_tmp), seen_in_tmp

    report = read_report(pytester)
    [down] = report["workers_down"]
    assert down["machine"] == ALIAS and down["unfinished"] >= 1 and down["crashed"], down
    assert f"worker {down['worker']} on {ALIAS} went down" in text
    summary = report["summary"]
    assert summary["tests_run"] < summary["tests_total"] and summary["incomplete"] >= 1
    problems = {p["id"]: p for p in report["problems"]}
    crashed_problem = down["crashed"].split("/")[-1].split(".py")[0]
    assert problems[crashed_problem]["verdict"] == "incomplete"
    for problem in problems.values():
        if problem["verdict"] == "pass":
            assert problem["tests_run"] == problem["tests_total"]
    # what the report counts as passed is exactly what pytest saw pass, case by case
    passed_in_report = {(f"slow.{p['id']}", f"test_{t['case']}") for p in problems.values() for t in p["tests"]
                        if t["kind"] == "pass"}
    junit = junit_outcomes(pytester.path / "junit.xml")
    assert passed_in_report == {key for key, outcome in junit.items() if outcome == "passed"}
    assert junit[(f"slow.{crashed_problem}", down["crashed"].split("::")[-1])] in ("failure", "error")


class Output:
    """A process's output as it comes (read by a thread), so that a test can wait for a line of it."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for chunk in iter(lambda: stream.read1(4096), b""):
            self._chunks.append(chunk)

    def text(self, wait: bool = False) -> str:
        if wait:
            self._thread.join(60)
        return b"".join(self._chunks).decode(errors="replace")


def running_worker(server: SshServer, controller: subprocess.Popen[bytes], output: Output,
                   timeout: float = 120.0) -> tuple[int, list[str]]:
    """A remote worker (pid) once the run's first test has finished (every case sleeps a second, so both
    workers are then in the middle of one), and what the test host's /tmp held then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert controller.poll() is None, "the run ended before a worker could be stopped:\n" + output.text()
        # a worker is the parent of an executor's server that is not itself one (the zygote and the children are
        # forked from the server, and carry its command line); not the lowest pid: pids wrap around
        executors = {pid for pid in server.sessions() if b"executor/serve.py" in cmdline(pid)}
        workers = {parent_of(pid) for pid in executors} - executors - {None}
        if workers and re.search(r"\[\d+ items?\]\s*\n\s*[.FEsx]", output.text()):  # a test's progress mark
            tmp = server.not_the_package(server.ssh("cd /tmp && find . -mindepth 1 -maxdepth 1").stdout.split())
            return min(workers), tmp
        time.sleep(0.05)
    raise AssertionError("no remote worker ran a case:\n" + output.text())
