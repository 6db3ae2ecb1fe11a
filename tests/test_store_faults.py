"""Faults around what a run writes: a record store that fails mid-run (full, read-only, removed), output paths
that cannot be written, a report the disk refuses at the end, an empty selection, and what each leaves behind.

Each is caused for real: a small tmpfs mounted for the test (a full disk, a read-only file system), a folder
removed under a running pytest, real xdist workers. Mounting needs root; without it those tests are skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import SOLUTIONS, read_report, run
from test_record_store import environment, pytest_command, slow_project, stored

SAMPLE = ("--apps-dataset=sample", "-n", "2", "-p", "no:cacheprovider")


def mount_tmpfs(where: Path, *options: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs (a real full or read-only file system) needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=64k", *options)), "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def mounts():
    """Mount small tmpfs file systems; each is unmounted after the test."""
    made: list[Path] = []

    def mount(where: Path, *options: str) -> Path:
        mount_tmpfs(where, *options)
        made.append(where)
        return where

    yield mount
    for where in reversed(made):
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    folder = pytester.path / "solutions"
    folder.mkdir()
    for path in sorted(SOLUTIONS.glob("*.py")):
        (folder / path.name).write_text(path.read_text())
    return pytester


def fill(folder: Path, leave: int) -> None:
    """Fill the file system of `folder` but for about `leave` bytes."""
    with open(folder / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"x" * 4096)
        except OSError:
            pass
    with open(folder / "filler", "r+b") as fh:
        fh.truncate(max(0, os.path.getsize(folder / "filler") - leave))


def store_warning(result: pytest.RunResult) -> str:
    lines = [line for line in result.stdout.lines if "WARNING: the record store" in line]
    assert len(lines) == 1, result.stdout.str()[-3000:]
    return lines[0]


# ------------------------------------------------------------------------------------ a store that fails mid-run


def test_a_full_disk_under_the_store_costs_the_run_nothing(project: pytest.Pytester, mounts) -> None:
    small = mounts(project.path / "small")
    fill(small, 4096)  # room for a few records, then ENOSPC
    result = run(project, *SAMPLE, "--apps-records=small/rec", "--apps-markdown=reports/summary.md",
                 "--apps-html=reports/report.html", "--junitxml=reports/junit.xml")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=27)
    line = store_warning(result)
    assert "No space left on device" in line
    report = read_report(project)
    records = report["run"]["records"]
    assert "No space left on device" in records["failed"]
    assert 1 <= records["not_kept"] <= 27 and f"{records['not_kept']} record" in line
    assert report["run"]["complete"] and report["run"]["executed"] == 27
    assert report["summary"]["strict_accuracy"] == 1.0
    # every report says it, not the terminal and the JSON only
    said = f"{records['not_kept']} record"
    assert said in (project.path / "reports" / "summary.md").read_text()
    assert said in (project.path / "reports" / "report.html").read_text()
    junit = (project.path / "reports" / "junit.xml").read_text()
    assert 'name="apps_records_failed"' in junit and said in junit


def test_a_read_only_store_is_read_and_keeps_nothing(project: pytest.Pytester, mounts) -> None:
    ro = mounts(project.path / "ro", "ro")
    result = run(project, *SAMPLE, "--apps-records=ro")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=27)
    assert "Read-only file system" in store_warning(result)
    records = read_report(project)["run"]["records"]
    assert records["not_kept"] == 27 and "Read-only" in records["failed"]


def test_a_store_folder_removed_mid_run_is_said(tmp_path: Path) -> None:
    folder = slow_project(tmp_path)
    proc = subprocess.Popen(pytest_command(), cwd=folder, env=environment(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while stored(folder) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the store was removed"
    shutil.rmtree(folder / ".apps-records")
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-3000:]
    [line] = [line for line in out.splitlines() if "WARNING: the record store" in line]
    assert "removed during the run" in line
    report = json.loads((folder / "reports" / "apps-report.json").read_text())
    assert report["run"]["records"]["not_kept"] >= 3
    assert report["run"]["executed"] == 27


# ------------------------------------------------------------------------------ output paths, before and after


@pytest.mark.parametrize("option, named", [
    ("--apps-report=afile/r.json", "--apps-report"),
    ("--apps-html=/proc/nowhere/r.html", "--apps-html"),
    ("--apps-markdown=/proc/nowhere/r.md", "--apps-markdown"),
    ("--apps-predictions=solutions", "--apps-predictions"),
    ("--junitxml=/proc/nowhere/j.xml", "--junitxml"),
    ("--apps-records=afile", "--apps-records"),
    ("--apps-records=/proc/nowhere", "--apps-records"),
])
def test_an_output_path_that_cannot_be_written_stops_the_run_before_any_case(
        project: pytest.Pytester, option: str, named: str) -> None:
    (project.path / "afile").write_text("a file, not a folder\n")
    result = run(project, "--apps-dataset=sample", "-p", "no:cacheprovider", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert line.startswith(f"ERROR: {named}:")
    assert "Traceback" not in result.stderr.str() and "passed" not in result.stdout.str()
    assert not (project.path / "reports").exists()  # nothing made


def test_a_report_the_disk_refuses_at_the_end_is_said_and_leaves_no_temporary_file(
        project: pytest.Pytester, mounts) -> None:
    small = mounts(project.path / "small")
    fill(small, 0)
    result = run(project, *SAMPLE, "--apps-report=small/r.json", "--apps-markdown=small/r.md")
    assert result.ret == 6, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*APPS summary*", "*strict accuracy*",
                                 "ERROR: the JSON report small/r.json could not be written (No space left on device)"
                                 ": exit status 6"])
    assert [p.name for p in small.iterdir()] == ["filler"]  # no report, no temporary file


# ------------------------------------------------------------------------------------------- selecting nothing


@pytest.mark.parametrize("selection, named", [
    (("--apps-only=abc",), "--apps-only=abc"),
    (("--apps-only=4",), "--apps-only=4"),
    (("--apps-limit=0",), "--apps-limit=0"),
    (("--apps-difficulty=competition", "--apps-offset=9"), "--apps-difficulty=competition --apps-offset=9"),
])
def test_a_run_that_selects_no_problem_writes_no_report(project: pytest.Pytester, selection: tuple,
                                                        named: str) -> None:
    reports = project.path / "reports"
    reports.mkdir()
    (reports / "apps-report.json").write_text('{"a complete report": true}\n')
    result = run(project, "--apps-dataset=sample", "-p", "no:cacheprovider", *selection)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert f"no problem selected: {named} selects none" in line
    assert "holds 6 problems (ids 900001-900006; tiers competition, interview, introductory)" in line
    assert "not found" not in result.stderr.str() + result.stdout.str()
    assert (reports / "apps-report.json").read_text() == '{"a complete report": true}\n'


# ------------------------------------------------------------------------------------------------------- data


def apps_row(pid: int, inputs: list, outputs: list) -> str:
    return json.dumps({"problem_id": pid, "question": "double it", "solutions": "[]", "difficulty": "interview",
                       "url": "", "starter_code": "",
                       "input_output": json.dumps({"inputs": inputs, "outputs": outputs})})


def test_a_row_with_a_null_test_is_skipped_and_counted_not_charged_to_the_program(pytester: pytest.Pytester) -> None:
    (pytester.path / "rows.jsonl").write_text(apps_row(1, ["2\n"], ["4\n"]) + "\n"
                                              + apps_row(2, ["2\n", None], ["4\n", "6\n"]) + "\n")
    (pytester.path / "solutions").mkdir()
    for pid in (1, 2):
        (pytester.path / "solutions" / f"{pid}.py").write_text("print(2 * int(input()))\n")
    result = run(pytester, "--apps-dataset=rows.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["apps: 1 problem (*), first 20 tests per problem, 1 row skipped",
                                 "*test 1's input is null in a standard-input problem*"])
    report = read_report(pytester)
    assert [row["problem_id"] for row in report["skipped_rows"]] == ["2"]
    assert [p["id"] for p in report["problems"]] == ["1"]


def test_an_empty_dataset_file_is_a_one_line_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "rows.jsonl").write_text("")
    (pytester.path / "solutions").mkdir()
    result = run(pytester, "--apps-dataset=rows.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert "no problem to run: the dataset" in line and "holds no problem" in line
    assert not (pytester.path / "reports").exists()


# ------------------------------------------------------------------------ where an incomplete run's reports go


def test_incomplete_reports_go_beside_complete_ones_only_and_a_complete_run_removes_them(
        project: pytest.Pytester) -> None:
    outputs = ("--apps-markdown=r.md", "--apps-html=r.html", "--junitxml=j.xml")
    first = run(project, *SAMPLE, "--apps-markdown=r.md", "--junitxml=j.xml")  # complete JSON, Markdown, JUnit
    assert first.ret == 0
    complete_junit = (project.path / "j.xml").read_text()
    partial = run(project, *SAMPLE, *outputs, "-k", "900001", "--apps-records=off")  # 22 cases without a record
    assert partial.ret == 0
    reports = project.path / "reports"
    # beside the complete JSON report, Markdown and JUnit file; the HTML at its own path, where nothing was
    assert (reports / "apps-report.incomplete.json").is_file() and (project.path / "r.incomplete.md").is_file()
    assert (project.path / "r.html").is_file() and not (project.path / "r.incomplete.html").exists()
    assert (project.path / "j.xml").read_text() == complete_junit
    assert (project.path / "j.incomplete.xml").read_text().count("<testcase ") == 5
    assert read_report(project)["run"]["complete"]
    assert not (project.path / "r.md").read_text().startswith(">")
    # the terminal names the files this run wrote, and only those
    partial.stdout.fnmatch_lines(["the complete report reports/apps-report.json is kept: this run's reports are "
                                  "written beside the complete ones, as reports/apps-report.incomplete.json, "
                                  "r.incomplete.md, j.incomplete.xml"])
    partial.stdout.fnmatch_lines(["*generated xml file: *j.incomplete.xml*"])
    again = run(project, *SAMPLE, *outputs)
    assert again.ret == 0
    assert not (reports / "apps-report.incomplete.json").exists() and not (project.path / "r.incomplete.md").exists()
    assert not (project.path / "j.incomplete.xml").exists()
    assert sorted(p.name for p in reports.iterdir() if p.is_file()) == ["apps-report.json"]


# ---------------------------------------------------------------------------------- what the run section says


def section(**kw) -> dict:
    from pytest_apps.plugin.writers import run_section

    args = dict(cases=171, selected=171, executed=120, reused=0, carried=0, without_result=51, interrupted=None,
                workers_lost=0, rerun=[], store=Path("/p/.apps-records"), resume=False, dropped="",
                started_in=Path("/p"))
    return run_section(**{**args, **kw})


def test_the_run_section_derives_each_reason_from_the_cases_never_by_elimination() -> None:
    # every case selected, 51 without a record: they never ran (not "were not selected")
    crashed = section(not_selected=0, crashed="INTERNALERROR")
    assert crashed["incomplete"] == "internal error (INTERNALERROR); 51 of 171 cases never ran"
    assert [r["kind"] for r in crashed["reasons"]] == ["internal_error", "never_ran"]
    assert crashed["reasons"][1]["cases"] == 51
    # selected, carried from earlier records after a crash: never complete
    carried = section(executed=1, carried=170, without_result=0, not_selected=0, crashed="INTERNALERROR")
    assert not carried["complete"]
    assert carried["reasons"][-1] == {"kind": "earlier_records", "cases": 170,
                                      "text": "170 of 171 cases never ran; their results are earlier records"}
    both = section(selected=100, executed=60, without_result=51, not_selected=11, interrupted="SIGINT")
    assert [(r["kind"], r.get("cases")) for r in both["reasons"]] == [("interrupted", None), ("never_ran", 40),
                                                                       ("not_selected", 11)]
    # a failed store is said, and costs no verdict
    kept = section(executed=171, without_result=0, not_selected=0, store_failed="No space left on device",
                   not_kept=51)
    assert kept["complete"] and kept["reasons"] == []
    assert kept["records"]["failed"] == "No space left on device" and kept["records"]["not_kept"] == 51


def test_one_case_one_row_and_a_run_without_records_are_said_as_they_are() -> None:
    from pytest_apps.plugin.writers import run_lines

    one = section(cases=1, selected=1, executed=0, without_result=1, not_selected=0, interrupted="SIGINT", store=None)
    assert one["incomplete"] == "interrupted (SIGINT); 1 of 1 case never ran"
    lines = run_lines(one)
    assert lines[0] == "records: none kept (--apps-records off); 0 cases executed"  # no "0 reused" from no store
    stale = section(cases=3, selected=3, executed=2, without_result=0, not_selected=0, crashed="INTERNALERROR")
    assert stale["incomplete"].endswith("1 of 3 cases never ran; its result is an earlier record")
    partial = section(cases=2, selected=1, executed=1, without_result=1, rerun=["a.py::test_0"])
    assert partial["incomplete"] == "1 of 2 cases was not selected (node ids, -k, -m, --lf, --deselect) and has no " \
        "earlier record"
    assert run_lines(partial)[-1] == ("this run selected 1 of 2 cases: the report merges its rerun case into the "
                                      "records of the others")


def test_a_second_run_on_the_report_a_live_run_writes_is_refused_and_the_first_keeps_its_report(
        tmp_path: Path) -> None:
    """Two runs on one report path: the second would replace the first's report (or the first the second's)
    unsaid. The second is refused in one line before any case; the first ends as if alone."""
    folder = slow_project(tmp_path)
    first = subprocess.Popen(pytest_command(), cwd=folder, env=environment(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    lock = folder / "reports" / ".apps-report.json.lock"
    deadline = time.monotonic() + 300
    while not (lock.is_file() and lock.read_text()) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.poll() is None, "the first run ended before the second started"
    second = subprocess.run(pytest_command("-k", "900001", "--apps-records=off"), cwd=folder, env=environment(),
                            capture_output=True, text=True, timeout=600, check=False)
    out, _ = first.communicate(timeout=600)
    assert second.returncode == pytest.ExitCode.USAGE_ERROR, second.stdout[-3000:] + second.stderr[-3000:]
    [line] = [line for line in second.stderr.splitlines() if line.startswith("ERROR:")]
    assert line == (f"ERROR: another run (pid {first.pid}) is writing {folder}/reports/apps-report.json: wait for its "
                    "end, or give this run a report of its own (--apps-report=PATH)")
    assert "passed" not in second.stdout and not (folder / "reports" / "apps-report.incomplete.json").exists()
    assert "another run" not in out and first.returncode == 0
    report = json.loads((folder / "reports" / "apps-report.json").read_text())
    assert report["run"]["complete"] and report["run"]["executed"] == 27
    assert not lock.exists()


def test_a_lone_surrogate_in_a_row_or_a_program_is_one_line_and_leaves_no_plan(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON's `\\ud800` alone decodes to a lone surrogate, which no UTF-8 file holds: the row is skipped and
    counted, the program refused (a compile error), the run goes on, and no plan folder stays behind."""
    tmp = pytester.path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    rows = [apps_row(1, ["2\n"], ["4\n"]), apps_row(2, ["2\ud800\n"], ["4\n"]), apps_row(3, ["2\n"], ["4\n"])]
    (pytester.path / "rows.jsonl").write_text("\n".join(rows) + "\n")
    (pytester.path / "gen.jsonl").write_text(
        json.dumps({"problem_id": 1, "code": "print(2 * int(input()))  # \ud800"}) + "\n"
        + json.dumps({"problem_id": 3, "code": "print(2 * int(input()))"}) + "\n")
    result = run(pytester, "--apps-dataset=rows.jsonl", "--apps-candidates=gen.jsonl", "-p", "no:cacheprovider")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*: compile error (SyntaxError: a lone surrogate (\\ud800) on line 1 of the program is not Unicode text*",
        "skipped row 1 (problem 2) of *rows.jsonl: input_output: a test holds a lone surrogate (\\ud800)*"])
    report = read_report(pytester)
    assert [row["problem_id"] for row in report["skipped_rows"]] == ["2"]
    assert not list(tmp.glob("pytest-apps-plan-*"))


def test_a_plan_that_cannot_be_made_leaves_no_folder(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = pytester.path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    (pytester.path / "gen.jsonl").write_text('{"problem_id": 900001, "code": \n')  # not JSON
    result = run(pytester, "--apps-dataset=sample", "--apps-candidates=gen.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert not list(tmp.glob("pytest-apps-plan-*"))


def test_what_a_killed_run_left_is_removed_by_the_next_run_and_a_live_runs_is_kept(tmp_path: Path) -> None:
    """A controller killed by SIGKILL runs no clean-up: its plan folder (the selection's tests) and its report
    lock stay. The next run removes them, the folder only when the run that made it is dead."""
    folder = slow_project(tmp_path / "project")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**environment(), "TMPDIR": str(tmp)}
    live = subprocess.Popen(["sleep", "600"])
    try:
        (tmp / f"pytest-apps-plan-{live.pid}-abc").mkdir()  # a live run's: kept
        first = subprocess.Popen(pytest_command("-n", "0"), cwd=folder, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        lock = folder / "reports" / ".apps-report.json.lock"
        deadline = time.monotonic() + 300
        plans = f"pytest-apps-plan-{first.pid}-*"
        # (killed once both are made: the lock is taken before the plan is written, and on a busy machine a kill
        # right after the lock came before the plan folder)
        while not (lock.is_file() and lock.read_text() and list(tmp.glob(plans))) and first.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None, "the run ended before it was killed"
        first.kill()
        first.wait(timeout=60)
        left = [p.name for p in tmp.glob(plans)]
        assert left and lock.exists()  # what the killed run left
        second = subprocess.run(pytest_command("-n", "0", "--apps-only=900001"), cwd=folder, env=env,
                                capture_output=True, text=True, timeout=600, check=False)
        assert second.returncode == 0, second.stdout[-3000:]
        assert sorted(p.name for p in tmp.glob("pytest-apps-plan-*")) == [f"pytest-apps-plan-{live.pid}-abc"]
        assert not lock.exists()
    finally:
        live.kill()
        live.wait()


# ------------------------------------------------------------------ a report path that is no regular file


BROKEN_REVERSE = "def reverse_words(s):\n    raise ValueError('nope')\n"  # 900002: a runtime error
WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"  # problem 900001's program: a wrong answer


def wrong_project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "solutions").mkdir(exist_ok=True)
    (pytester.path / "solutions" / "900001.py").write_text(WRONG)
    return pytester


REPORT_OPTIONS = ("--apps-report", "--apps-html", "--apps-markdown", "--apps-predictions")


def test_a_device_as_every_report_path_is_written_in_place_and_nothing_is_made_beside_it(
        pytester: pytest.Pytester) -> None:
    """As root a rename over `/dev/null` would replace the device with a regular file (and make `/dev/cases/`).
    A null device of the test's own stands in for it: never the machine's."""
    devices = pytester.path / "dev"
    devices.mkdir()
    null = devices / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        null.write_text("probe")
    except OSError as exc:
        pytest.skip(f"cannot make a null device here ({exc.strerror})")
    wrong_project(pytester)
    result = run(pytester, "--apps-dataset=sample", "--apps-only=900001", "-p", "no:cacheprovider",
                 *(f"{option}={null}" for option in REPORT_OPTIONS), f"--junitxml={null}")
    assert result.ret == 1, result.stdout.str()[-3000:]
    result.assert_outcomes(failed=4, passed=1)
    assert stat.S_ISCHR(null.stat().st_mode)  # still the device
    assert [p.name for p in devices.iterdir()] == ["null"]  # no cases/, no lock, no temporary file
    assert "cases/" not in result.stdout.str() and "could not be written" not in result.stdout.str()


def test_a_fifo_as_the_report_path_gets_the_report_and_one_without_a_reader_is_one_line(
        pytester: pytest.Pytester) -> None:
    wrong_project(pytester)
    fifo = pytester.path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:  # a reader waiting for the report, as `tee` or a collector would
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result = run(pytester, "--apps-dataset=sample", "--apps-only=900001", "-p", "no:cacheprovider",
                 f"--apps-report={fifo}")
    reader.join(timeout=60)
    assert result.ret == 1, result.stdout.str()[-3000:]
    assert json.loads(got[0])["summary"]["problems"] == 1
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    made = {p.name for p in pytester.path.iterdir()} - {".apps-records", "report.fifo", "solutions"}
    assert not {name for name in made if not name.startswith(("runpytest-", "stdout", "stderr"))}, made
    alone = run(pytester, "--apps-dataset=sample", "--apps-only=900001", "-p", "no:cacheprovider",
                f"--apps-report={fifo}")  # nobody reads: refused at once, never waited on
    assert alone.ret == 6
    alone.stdout.fnmatch_lines(["ERROR: the JSON report report.fifo could not be written (No such device or "
                                "address): exit status 6"])


def test_a_dash_as_a_report_path_is_one_line(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--apps-dataset=sample", "-p", "no:cacheprovider", "--apps-markdown=-")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert line.startswith("ERROR: --apps-markdown: '-' is not taken for standard output")
    assert not (pytester.path / "-").exists()


# ------------------------------------------------------------------------- the failing cases' files


def test_a_full_disk_under_the_case_files_is_one_warning_and_costs_no_failure_its_text(
        pytester: pytest.Pytester, mounts) -> None:
    wrong_project(pytester)
    (pytester.path / "solutions" / "900002.py").write_text(BROKEN_REVERSE)
    cases = mounts(pytester.path / "reports" / "cases")
    fill(cases, 0)
    result = run(pytester, *SAMPLE, "--apps-only=900001,900002", "--junitxml=junit.xml")
    assert result.ret == 1, result.stdout.str()[-3000:]
    result.assert_outcomes(failed=8, passed=1)
    out = result.stdout.str()
    # the program's own tracebacks (its runtime errors), none of the harness's; counted in the failures' section (on
    # CI, where CI is set, pytest's short summary repeats each failure's whole message)
    failures = out.split("short test summary info")[0]
    assert failures.count("Traceback") == 4 and "OSError" not in out and "failtext.py" not in out, out[-3000:]
    assert out.count("No space left") == 1
    warned = [line for line in result.stdout.lines if "could not be written to reports/cases" in line]
    assert warned == ["WARNING: failing cases' inputs could not be written to reports/cases (No space left on "
                      "device); the failures are reported in full"]
    assert len(re.findall(r"test \d: wrong answer", out)) >= 4 and len(re.findall(r"test \d: runtime error", out)) >= 4
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count("wrong answer") >= 4 and "No space left" not in junit and "apps_case_files" not in junit
    assert [p.name for p in cases.rglob("*") if p.is_file()] == ["filler"]  # no half-written file either


def test_a_dataset_whose_rows_are_all_unusable_is_one_line_and_keeps_the_report(pytester: pytest.Pytester) -> None:
    reports = pytester.path / "reports"
    reports.mkdir()
    (reports / "apps-report.json").write_text('{"a complete report": true}\n')
    (pytester.path / "rows.jsonl").write_text(apps_row(1, ["2\n", None], ["4\n", "6\n"]) + "\n"
                                              + apps_row(2, [], []) + "\n")
    (pytester.path / "solutions").mkdir()
    result = run(pytester, "--apps-dataset=rows.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-3000:]
    [line] = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert "holds no problem (2 rows, none usable)" in line
    assert line.endswith("the first unusable row: row 0 (problem 1), input_output: test 1's input is null in a "
                         "standard-input problem")
    assert (reports / "apps-report.json").read_text() == '{"a complete report": true}\n'


@pytest.mark.parametrize(("workers", "pasted", "status"), [
    ("0", ("solutions/900001.py::900001::test_99",), pytest.ExitCode.USAGE_ERROR),  # a wrong case index
    ("2", ("--apps-only=900001", "solutions/900002.py::900002::test_0"),  # a problem outside the selection
     pytest.ExitCode.NO_TESTS_COLLECTED),
])
def test_a_pasted_node_id_that_names_no_test_leaves_every_report_and_the_junit_file(
        project: pytest.Pytester, workers: str, pasted: tuple[str, ...], status: int) -> None:
    """pytest's --junitxml writer would replace the last run's file with an empty suite, and (under xdist, where
    the workers find nothing) our reports would be written again from the records."""
    outputs = ("--junitxml=j.xml", "--apps-markdown=r.md", "--apps-html=r.html")
    full = run(project, *SAMPLE, *outputs)
    assert full.ret == 0, full.stdout.str()[-3000:]
    files = [project.path / name for name in ("j.xml", "r.md", "r.html", "reports/apps-report.json")]
    before = {path: path.read_bytes() for path in files}
    assert b'tests="27"' in before[files[0]]
    result = run(project, *SAMPLE, "-n", workers, *outputs, *pasted)
    assert result.ret == status, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["apps: no report written: the command line selects no case of this run (an "
                                 "earlier report stays as it was, and so does --junitxml's j.xml: pytest's empty "
                                 f"one goes to {os.devnull})"])
    assert {path: path.read_bytes() for path in files} == before
    assert not list(project.path.rglob("*.incomplete.*"))


def test_a_node_id_that_selects_no_case_writes_no_report(pytester: pytest.Pytester) -> None:
    """Candidates outside the rootdir: a node id pasted that pytest cannot take selects nothing; a report of
    nothing, "complete", would replace the last one."""
    project, candidates = pytester.path / "project", pytester.path / "candidates"
    candidates.mkdir()
    for path in sorted(SOLUTIONS.glob("*.py")):
        (candidates / path.name).write_text(path.read_text())
    project.mkdir()
    reports = project / "reports"
    reports.mkdir()
    (reports / "apps-report.json").write_text('{"a complete report": true}\n')
    done = subprocess.run(pytest_command("-n", "0", "--apps-candidates=../candidates", "::900001::test_0"),
                          cwd=project, env=environment(), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-3000:]
    assert "apps: no report written: the command line selects no case of this run" in done.stdout
    assert (reports / "apps-report.json").read_text() == '{"a complete report": true}\n'
    assert not (project / "r.md").exists() and not (project / "r.html").exists()
