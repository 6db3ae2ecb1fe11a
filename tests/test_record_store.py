"""The record store: checksummed segments, keys, resume, merged reruns, and interrupted runs' reports.

The store itself is tested as plain functions; each path through the plugin once, end to end, with real xdist
workers and real signals sent to the controller.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_apps.core.record import CaseRecord
from pytest_apps.engine.records import JudgeKey, RecordStore, case_digest, case_key, judge_key, read_segment
from pytest_apps.executor import Limits
from pytest_apps.judge.checkers import Checkers
from pytest_apps.judge.profiles import Judging
from pytest_apps.judge.special import SpecialJudges

from conftest import REPO, SOLUTIONS, UNUSED_PLUGINS, cmdline, descendants_of, kill_tree, make_problem, parent_of, read_report, run

SIGNALS = ("SIGINT", "SIGTERM", "SIGKILL")


def record(case: int, kind: str = "pass", **kw) -> CaseRecord:
    return CaseRecord("900001", case, kind, nodeid=f"solutions/900001.py::test_{case}", **kw)


# ------------------------------------------------------------------------------------------- the store itself


def test_records_survive_a_reopen_and_the_latest_record_of_a_key_wins(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "rec")
    store.append("a", record(0))
    store.append("b", record(1, "wrong_answer", reason="got 4"))
    store.close()
    later = RecordStore(tmp_path / "rec")
    later.append("a", record(0, "timeout"))
    later.close()
    loaded = RecordStore(tmp_path / "rec").load()
    assert loaded.get("a") == record(0, "timeout")
    assert loaded.get("b") == record(1, "wrong_answer", reason="got 4")
    assert not loaded.dropped


def test_a_torn_tail_and_a_damaged_line_are_dropped_and_counted(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    for i in range(4):
        store.append(f"k{i}", record(i))
    store.close()
    [segment] = store.segments()
    data = segment.read_bytes()
    lines = data.split(b"\n")
    lines[1] = lines[1].replace(b'"pass"', b'"fail"')  # the checksum no longer matches
    torn = b"\n".join(lines)[:-20]  # the last line cut short, as a killed writer leaves it
    segment.write_bytes(torn)
    read = read_segment(segment)
    assert read.dropped == 2
    assert [key for key, _, _ in read.entries] == ["k0", "k2"]
    loaded = RecordStore(tmp_path).load()
    assert set(loaded.records) == {"k0", "k2"}
    assert loaded.dropped == [(str(segment), 2)]


def test_compaction_merges_idle_segments_and_leaves_a_live_run_alone(tmp_path: Path) -> None:
    for i in range(3):
        old = RecordStore(tmp_path)
        old.append("same", record(0, "pass" if i < 2 else "timeout"))
        old.append(f"own{i}", record(i + 1))
        old.close()
    other = RecordStore(tmp_path, version="an older harness")
    other.append("old", record(9))
    other.close()
    live = RecordStore(tmp_path)  # another run, still writing (it holds its segment's lock)
    live.append("live", record(5))
    me = RecordStore(tmp_path)
    me.append("mine", record(6))
    assert me.compact(at=3) == 4
    live.close()
    me.close()
    assert len(RecordStore(tmp_path).segments()) == 3  # the merged one, the live run's and this run's
    loaded = RecordStore(tmp_path).load()
    assert loaded.get("same") == record(0, "timeout")  # the latest
    assert {"own0", "own1", "own2", "live", "mine"} <= set(loaded.records)
    assert RecordStore(tmp_path, version="an older harness").load().get("old") is None  # gone with its version


def test_the_key_changes_with_everything_that_decides_a_record() -> None:
    judge = JudgeKey("seed", False, {"timeout": 4.0, "memory": 2**32})
    test = case_digest("1 2\n", "3\n")
    base = case_key(judge, "print(3)", "stdin", None, test)
    assert base == case_key(judge, "print(3)", "stdin", None, case_digest("1 2\n", "3\n"))
    changed = [
        case_key(judge, "print(4)", "stdin", None, test),
        case_key(judge, None, "stdin", None, test),
        case_key(judge, "print(3)", "call", "f", test),
        case_key(judge, "print(3)", "stdin", None, case_digest("1 2\n", "4\n")),
        case_key(judge, "print(3)", "stdin", None, case_digest("1 3\n", "3\n")),
        case_key(judge, "print(3)", "stdin", None, test, checker="abc"),
        case_key(JudgeKey("apps", False, judge.limits), "print(3)", "stdin", None, test),
        case_key(JudgeKey("seed", True, judge.limits), "print(3)", "stdin", None, test),
        case_key(JudgeKey("seed", False, {"timeout": 8.0, "memory": 2**32}), "print(3)", "stdin", None, test),
        case_key(JudgeKey("seed", False, {"timeout": 4.0, "memory": 2**31}), "print(3)", "stdin", None, test),
        case_key(judge, "print(3)", "stdin", None, test, version="another harness"),
    ]
    assert base not in changed and len(set(changed)) == len(changed)



def test_the_judge_key_holds_a_problems_own_limits_its_special_judge_and_its_checker(tmp_path: Path) -> None:
    """What decides a problem's records besides the run's settings: the row's limits once per-problem limits are
    on, the kind TACO's list gives it, and the checker that decides it (a hook's text before a file)."""
    base = Limits(timeout=4.0)
    limited = make_problem("7", time_limit=2.0, memory_limit=256 << 20)
    plain = make_problem("7")
    fixed = judge_key(Judging(), base, limited)
    assert fixed == judge_key(Judging(), base, plain)  # fixed limits: the row's are not used, nor in the key
    row = judge_key(Judging(row_limits=True), base, limited)
    assert row.limits["timeout"] == 2.0 and row.row_memory == 256 << 20
    assert judge_key(Judging(row_limits=True, time_scale=2.0), base, limited).limits["timeout"] == 4.0
    assert judge_key(Judging(row_limits=True), base, plain) == fixed  # a row without limits runs under the run's
    special = SpecialJudges({"7": 3})
    assert judge_key(Judging(special=special), base, plain).special == 3
    assert judge_key(Judging(special=special), base, make_problem("8")).special is None
    keys = {j.text() for j in (fixed, row, judge_key(Judging(special=special), base, plain))}
    assert len(keys) == 3

    (tmp_path / "7.py").write_text("def check(i, e, g):\n    return True\n")
    from_file = Checkers(tmp_path)
    from_hook = Checkers(tmp_path, {"7": "def check(i, e, g):\n    return False\n"})
    assert from_file.digest("7") and from_file.digest("8") == ""
    assert from_hook.digest("7") != from_file.digest("7")  # the hook's text decides, so it is what the key holds
    before = from_file.digest("7")
    (tmp_path / "7.py").write_text("def check(i, e, g):\n    return False  # changed\n")
    assert Checkers(tmp_path).digest("7") != before


# ------------------------------------------------------------------------------------------------ end to end


def records_of(report: dict) -> dict[str, tuple]:
    """Per-test records of a report, without what is measured afresh each time (times, memory)."""
    out = {}
    for problem in report["problems"]:
        for test in problem["tests"]:
            out[f"{problem['id']}:{test['case']}"] = (test["kind"], test["step"])
        out[problem["id"]] = (problem["verdict"], problem["reason"], problem["tests_run"], problem["first_failure"])
    return out


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The sample's solutions, one of them wrong (problem 900003 fails its tests)."""
    folder = pytester.path / "solutions"
    folder.mkdir()
    for path in sorted(SOLUTIONS.glob("*.py")):
        text = path.read_text()
        if path.stem == "900003":
            text = "print('no')\n"
        (folder / path.name).write_text(text)
    return pytester


def test_resume_executes_only_what_changed_and_says_how_many_were_reused(project: pytest.Pytester) -> None:
    first = run(project, "--apps-dataset=sample", "-n", "2")
    first.assert_outcomes(passed=22, failed=5)
    full = read_report(project)
    assert full["run"]["complete"] and full["run"]["executed"] == 27
    again = run(project, "--apps-dataset=sample", "-n", "2", "--apps-resume", "--junitxml=j.xml")
    again.assert_outcomes(passed=22, failed=5)  # the terminal counts every case, reused or run
    again.stdout.fnmatch_lines(["records: 0 cases executed, 27 reused from their records*"])
    resumed = read_report(project)
    assert resumed["run"]["executed"] == 0 and resumed["run"]["reused"] == 27
    assert records_of(resumed) == records_of(full)
    assert len(list(ET.parse(project.path / "j.xml").getroot().iter("testcase"))) == 27
    # a new program for one problem: only its cases run again
    (project.path / "solutions" / "900003.py").write_text((SOLUTIONS / "900003.py").read_text())
    fixed = run(project, "--apps-dataset=sample", "-n", "2", "--apps-resume")
    fixed.assert_outcomes(passed=27)
    report = read_report(project)
    ran = {p["id"]: p for p in report["problems"]}["900003"]["tests_run"]
    assert report["run"]["executed"] == ran and report["run"]["reused"] == 27 - ran
    assert report["summary"]["strict_accuracy"] == 1.0


@pytest.mark.parametrize("workers", ["0", "2"])
def test_with_fail_fast_a_reused_failure_stops_its_candidate(project: pytest.Pytester, workers: str) -> None:
    """A candidate whose failure is reused has failed: its cases without a record are skipped, as the run that
    recorded the failure skipped them, and nothing runs again; a case named on the command line still runs."""
    base = ("--apps-dataset=sample", "--apps-fail-fast", "-n", workers, "-rs")
    first = run(project, *base)
    first.assert_outcomes(passed=22, failed=1, skipped=4)
    before = read_report(project)
    again = run(project, *base, "--apps-resume")
    again.assert_outcomes(passed=22, failed=1, skipped=4)
    assert again.ret == pytest.ExitCode.TESTS_FAILED  # the reused failure fails the run, as it did the first
    again.stdout.fnmatch_lines(["*problem already failed at solutions/900003.py::test_* (its record)"])
    after = read_report(project)
    assert after["run"]["executed"] == 0 and after["run"]["reused"] == 23 and after["run"]["complete"]
    assert records_of(after) == records_of(before)
    named = run(project, *base, "--apps-resume", "solutions/900003.py::test_2")
    named.assert_outcomes(failed=1)
    assert read_report(project)["run"]["executed"] == 1


def test_tests_that_repeat_each_other_are_each_reported_from_their_shared_record(pytester: pytest.Pytester) -> None:
    """APPS rows hold tests that repeat one another (the same input and output): their cases share one key and so
    one stored record, and a resumed run reports each at its own index (none goes missing)."""
    io = {"inputs": ["1\n", "2\n", "1\n", "1\n"], "outputs": ["1\n", "2\n", "1\n", "1\n"]}
    rows = [{"problem_id": pid, "question": "Echo.", "solutions": "", "input_output": json.dumps(io),
             "difficulty": "interview", "url": "", "starter_code": ""} for pid in (1, 2)]
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (pytester.path / "solutions").mkdir()
    for pid in (1, 2):  # the same program for both problems: their tests share keys too
        (pytester.path / "solutions" / f"{pid}.py").write_text("print(input())\n")
    run(pytester, "--apps-dataset=rows.jsonl", "-n", "0").assert_outcomes(passed=8)
    full = read_report(pytester)
    again = run(pytester, "--apps-dataset=rows.jsonl", "-n", "0", "--apps-resume")
    again.assert_outcomes(passed=8)
    resumed = read_report(pytester)
    assert resumed["run"]["reused"] == 8 and resumed["run"]["executed"] == 0
    assert [(p["id"], [t["case"] for t in p["tests"]]) for p in resumed["problems"]] == [("1", [0, 1, 2, 3]),
                                                                                      ("2", [0, 1, 2, 3])]
    assert records_of(resumed) == records_of(full)


def test_a_borderline_record_is_never_reused(project: pytest.Pytester) -> None:
    run(project, "--apps-dataset=sample", "-n", "0", "--apps-only", "900001").assert_outcomes(passed=5)
    store = RecordStore(project.path / ".apps-records").load()
    key, rec = next((k, r) for k, r in store.records.items() if r.case == 1)
    marked = RecordStore(project.path / ".apps-records")
    marked.append(key, CaseRecord.from_dict({**rec.to_dict(), "borderline": True}))  # as a run near the limit records it
    marked.close()
    result = run(project, "--apps-dataset=sample", "-n", "0", "--apps-only", "900001", "--apps-resume")
    result.assert_outcomes(passed=5)
    report = read_report(project)
    assert report["run"]["executed"] == 1 and report["run"]["reused"] == 4
    assert RecordStore(project.path / ".apps-records").load().get(key).borderline is False  # measured afresh


def test_a_node_id_rerun_merges_into_the_full_report(project: pytest.Pytester) -> None:
    run(project, "--apps-dataset=sample", "-n", "2").assert_outcomes(passed=22, failed=5)
    full = read_report(project)
    rerun = run(project, "--apps-dataset=sample", "-n", "2", "solutions/900003.py::test_0",
                "--apps-fail-under", "80", "--apps-markdown", "r.md")
    rerun.assert_outcomes(failed=1)
    rerun.stdout.fnmatch_lines(["*this run selected 1 of 27 cases: the report merges its rerun case*"])
    merged = read_report(project)
    assert merged["run"]["complete"] and merged["run"]["rerun"] == ["solutions/900003.py::test_0"]
    assert merged["run"]["executed"] == 1 and merged["run"]["carried"] == 26
    assert records_of(merged) == records_of(full)
    assert merged["summary"]["strict_accuracy"] == full["summary"]["strict_accuracy"]
    assert not (project.path / "r.md").read_text().startswith(">")
    # the other ways of running part of the set merge the same way
    for how, status, counted in ((("--lf",), 1, 5), (("-k", "900002 or 900004"), 0, None), (("-x",), 2, None),
                                 (("--deselect", "solutions/900001.py"), 1, None)):
        part = run(project, "--apps-dataset=sample", "-n", "2", *how)
        assert part.ret == status, how  # pytest's own status (xdist's -x stops the session: interrupted)
        again = read_report(project)
        assert again["run"]["complete"], (how, again["run"])
        assert records_of(again) == records_of(full), how
        if counted is not None:
            assert again["run"]["executed"] == counted and again["run"]["carried"] == 27 - counted, how
    merged = read_report(project)
    # without records of the other cases (a new store), the partial report says so, and the gate cannot pass
    rerun = run(project, "--apps-dataset=sample", "-n", "2", "solutions/900001.py::test_0", "--apps-records",
                "elsewhere", "--apps-fail-under", "0", "--apps-markdown", "r.md", "--junitxml", "j.xml")
    assert rerun.ret == 1
    rerun.stdout.fnmatch_lines(["*cannot pass an incomplete run*"])
    rerun.stdout.fnmatch_lines(["*the complete report reports/apps-report.json is kept*"])
    assert read_report(project) == merged  # the complete report stays; the partial one is beside it
    partial = read_report(project, "reports/apps-report.incomplete.json")
    assert not partial["run"]["complete"] and partial["run"]["without_result"] == 26
    assert not partial["run"]["complete"] and partial["run"]["kept"] == "reports/apps-report.json"
    assert (project.path / "r.incomplete.md").read_text().startswith(
        "> **Incomplete run**: 26 of 27 cases were not selected")
    assert "apps_incomplete" in junit_properties(project.path / "j.xml")


def junit_properties(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.get("name"): p.get("value") for p in root.iter("property")}


def test_the_controllers_nodeids_match_a_collection_with_several_samples(pytester: pytest.Pytester) -> None:
    """A generations file of two samples a problem: the controller names its cases as the workers collect them
    (else nothing would be reused)."""
    lines = [{"problem_id": pid, "code": (SOLUTIONS / f"{pid}.py").read_text()} for pid in ("900001", "900002")]
    (pytester.path / "gens.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines * 2))
    args = ("--apps-dataset=sample", "--apps-candidates", "gens.jsonl", "--apps-only", "900001,900002", "-n", "2")
    run(pytester, *args).assert_outcomes(passed=18)
    result = run(pytester, *args, "--apps-resume", "-v")
    result.assert_outcomes(passed=18)
    result.stdout.fnmatch_lines(["*gens.jsonl::900002::sample_1::test_0 PASSED*"])
    assert read_report(pytester)["run"]["reused"] == 18


# --------------------------------------------------------------------------------- interrupted, then resumed


SLOW = "import time\ntime.sleep(0.25)\n"


def slow_project(folder: Path) -> Path:
    """The sample's solutions, each a quarter of a second slower: a signal lands while cases still run."""
    (folder / "solutions").mkdir(parents=True)
    for path in sorted(SOLUTIONS.glob("*.py")):
        (folder / "solutions" / path.name).write_text(SLOW + path.read_text())
    return folder


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *UNUSED_PLUGINS, "-p", "no:cacheprovider", "-q",
            "--apps-dataset=sample", "-n", "2", "--apps-markdown", "r.md", "--apps-html", "r.html",
            "--junitxml", "j.xml", *args]


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def stored(folder: Path) -> int:
    return sum(len(read_segment(p).entries) for p in RecordStore(folder / ".apps-records").segments())


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = slow_project(tmp_path_factory.mktemp("whole"))
    subprocess.run(pytest_command(), cwd=folder, env=environment(), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=600, check=False)
    return json.loads((folder / "reports" / "apps-report.json").read_text())


def local_workers(controller: int) -> set[int]:
    """The controller's xdist workers: its children that are not executor servers (its own server measures the
    machine's speed)."""
    return {pid for pid in descendants_of(controller)
            if parent_of(pid) == controller and b"executor/serve.py" not in cmdline(pid)}


@pytest.mark.parametrize("name", [*SIGNALS, "lost-worker"])
def test_a_run_stopped_by_a_signal_resumes_to_the_uninterrupted_records(
    name: str, tmp_path: Path, uninterrupted: dict
) -> None:
    """The controller stopped by a signal, or one of its workers killed (SIGKILL, with xdist's restarts off, as a
    lost machine would leave it), part way; then the same command with --apps-resume."""
    folder = slow_project(tmp_path)
    lost = name == "lost-worker"
    proc = subprocess.Popen(pytest_command(*(["--max-worker-restart=0"] if lost else [])), cwd=folder,
                            env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while stored(folder) < 6 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the signal"
    if lost:
        kill_tree(min(local_workers(proc.pid)))
    else:
        proc.send_signal(getattr(signal, name))
    proc.wait(timeout=120)
    before = stored(folder)
    assert 6 <= before < 27
    if lost:  # the controller carried on with the other worker, and its report says what was lost
        report = json.loads((folder / "reports" / "apps-report.json").read_text())
        assert not report["run"]["complete"] and report["run"]["interrupted"] is None
        assert "1 worker lost" in report["run"]["incomplete"]
        assert (folder / "r.md").read_text().startswith("> **Incomplete run**: 1 worker lost")
    elif name != "SIGKILL":  # (a killed controller writes nothing; the records it kept are what counts)
        report = json.loads((folder / "reports" / "apps-report.json").read_text())
        assert not report["run"]["complete"] and report["run"]["interrupted"] == name
        assert report["run"]["incomplete"].startswith(f"interrupted ({name})")
        assert (folder / "r.md").read_text().startswith(f"> **Incomplete run**: interrupted ({name})")
        assert 'class="incomplete"' in (folder / "r.html").read_text()
        assert junit_properties(folder / "j.xml")["apps_incomplete"] == report["run"]["incomplete"]
    resumed = subprocess.run(pytest_command("--apps-resume"), cwd=folder, env=environment(), capture_output=True,
                             text=True, timeout=600, check=False)
    assert resumed.returncode == 0, resumed.stdout[-2000:]
    report = json.loads((folder / "reports" / "apps-report.json").read_text())
    assert report["run"]["complete"]
    # every case ran once over both runs (a case cut off mid-run by the signal runs again)
    assert report["run"]["reused"] + report["run"]["executed"] == 27
    assert report["run"]["reused"] >= before - 2
    assert records_of(report) == records_of(uninterrupted)
    assert not (folder / "r.md").read_text().startswith(">")


# ---------------------------------------------------------------------------------- what a report says of a run


def section(**kw) -> dict:
    from pytest_apps.plugin.writers import run_section

    args = dict(cases=27, selected=27, executed=27, reused=0, carried=0, without_result=0, interrupted=None,
                workers_lost=0, rerun=[], store=Path("/p/.apps-records"), resume=False, dropped="",
                started_in=Path("/p"))
    return run_section(**{**args, **kw})


def test_the_run_section_says_why_a_run_is_incomplete() -> None:
    assert section()["complete"] and "incomplete" not in section() and "rerun" not in section()
    assert section()["records"] == {"store": ".apps-records", "resume": False}
    stopped = section(executed=8, without_result=19, interrupted="SIGTERM")
    assert not stopped["complete"] and stopped["incomplete"] == "interrupted (SIGTERM); 19 of 27 cases never ran"
    carried = section(executed=8, carried=19, interrupted="SIGINT")
    assert carried["incomplete"] == "interrupted (SIGINT); 19 of 27 cases never ran; their results are earlier records"
    lost = section(executed=20, without_result=7, workers_lost=1)
    assert lost["incomplete"] == "1 worker lost; 7 of 27 cases never ran"
    partial = section(selected=1, executed=1, without_result=26, rerun=["a.py::test_0"])
    assert partial["incomplete"].startswith("26 of 27 cases were not selected")
    assert partial["rerun"] == ["a.py::test_0"] and partial["rerun_count"] == 1
    merged = section(selected=1, executed=1, carried=26, rerun=["a.py::test_0"])
    assert merged["complete"] and merged["rerun"] == ["a.py::test_0"]


def test_no_gate_passes_an_incomplete_run() -> None:
    from pytest_apps.report.gates import fail_under_verdict, regression_verdict
    from pytest_apps.report.rollup import Summary

    summary = Summary([], [], {"strict_accuracy": 1.0})
    assert fail_under_verdict(50, summary).passed
    gate = fail_under_verdict(50, summary, "interrupted (SIGINT)")
    assert not gate.passed and "cannot pass an incomplete run (interrupted (SIGINT))" in gate.message

    class NoneFell:
        newly_failing: list = []

    assert regression_verdict(True, NoneFell()).passed
    assert not regression_verdict(True, NoneFell(), "1 worker lost").passed
