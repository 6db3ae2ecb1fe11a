"""Faults of the harness, with real processes: an executor killed during a case (run again once on a fresh one,
then unscored, never the program's 0), a lost xdist worker (its case counted once), and interrupts (SIGINT,
SIGTERM, a second SIGINT: reports written, nothing left behind)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, UNUSED_PLUGINS, cmdline, descendants_of, junit_outcomes, parent_of

from pytest_apps import Evaluator
from pytest_apps.api import problem_from_row
from pytest_apps.core.errors import HarnessError
from pytest_apps.core.record import CaseRecord
from pytest_apps.report.rollup import P_FAIL, P_PASS, P_UNSCORED, summarize

# a program busy on a CPU for `SECONDS` of its own time, then right: while it runs, it is the one process below an
# executor's zygote that uses a CPU (the spares wait), which is how a test finds "a program running"
SECONDS = 1.5
BUSY = f"import time\nend = time.process_time() + {SECONDS}\nwhile time.process_time() < end:\n    pass\nprint(int(input()) * 2)\n"
ROW = {"problem_id": 920001, "difficulty": "interview", "question": "Double it.", "solutions": "", "url": "",
       "starter_code": "", "input_output": json.dumps({"inputs": ["2\n"], "outputs": ["4\n"]})}


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def servers_below(pid: int) -> list[int]:
    """The executor servers of a run: processes below `pid` (the run's own) running the executor's server."""
    serving = lambda p: b"executor/serve.py" in cmdline(p)  # noqa: E731 (its zygote and programs are its forks)
    return [p for p in descendants_of(pid) if serving(p) and not serving(parent_of(p) or 0)]


def running_program(server: int) -> int | None:
    """The program a server is running now: a process below its zygote that has used a CPU for a while."""
    for pid in descendants_of(server):
        if parent_of(pid) != server and cpu_seconds(pid) >= 0.2:
            return pid
    return None


def kill_mid_case(root: int, times: int, target: str = "server", deadline: float = 120.0) -> threading.Thread:
    """In the background: `times` times, once a program runs below one of `root`'s executor servers, SIGKILL
    that server (or its zygote), each time a server other than those already killed."""
    killed: list[int] = []

    def work() -> None:
        end = time.monotonic() + deadline
        while len(killed) < times and time.monotonic() < end:
            for server in servers_below(root):
                if server in killed or running_program(server) is None:
                    continue
                victim = server if target == "server" else next(
                    p for p in descendants_of(server) if parent_of(p) == server)
                os.kill(victim, signal.SIGKILL)
                killed.append(server)
                break
            time.sleep(0.02)

    thread = threading.Thread(target=work, daemon=True)
    thread.killed = killed  # type: ignore[attr-defined]
    thread.start()
    return thread


# ------------------------------------------------------------------------------- an executor lost during a case


@pytest.mark.parametrize("target", ["server", "zygote"])
def test_a_case_whose_executor_died_runs_again_on_a_fresh_one(target: str) -> None:
    """kill -9 of the executor's server (or zygote) while the program runs: the case runs again, and the program
    gets its own verdict (here: right), not a 0."""
    problem = problem_from_row(ROW)
    with Evaluator(timeout=10.0, workers=1) as ev:
        killer = kill_mid_case(os.getpid(), 1, target)
        result = ev.score(problem, BUSY)
        killer.join(5)
    assert killer.killed, "the program was never seen running"
    assert result.verdict == P_PASS and [t["kind"] for t in result.tests] == ["pass"], result


def test_a_case_whose_executor_dies_twice_is_unscored_never_the_programs_zero() -> None:
    problem = problem_from_row(ROW)
    with Evaluator(timeout=10.0, workers=1) as ev:
        killer = kill_mid_case(os.getpid(), 2)
        result = ev.score(problem, BUSY)
        killer.join(5)
    assert len(killer.killed) == 2
    assert result.verdict == P_UNSCORED and [t["kind"] for t in result.tests] == ["harness_error"], result
    assert "second time" in result.reason and result.score == 0.0
    summary = ev.summary([result], [problem])
    assert summary.figures["unscored"] == 1 and summary.figures["unscored_problems"] == [problem.id]
    assert summary.figures["problem_verdicts"] == {P_UNSCORED: 1}


def test_a_checkers_fault_is_not_run_again() -> None:
    """A harness error that is no fault of the executor (a checker's) is not retried: a second run would not
    change it."""
    from pytest_apps.engine.run import run_case
    from pytest_apps.dataset.problems import Cases
    from pytest_apps.executor import Executor, Limits
    from pytest_apps.judge.profiles import Judging
    from pytest_apps.candidates.sources import Candidate

    class Failing:
        problem_ids = ["920001"]

        def bind(self, *args):
            def check(*a):
                raise HarnessError("checker x raised ValueError")
            return check

        def digest(self, pid):
            return ""

    problem = problem_from_row(ROW)
    with Executor(Limits(timeout=5.0)) as ex:
        ex.start()
        server = ex._server_pid()
        with pytest.raises(HarnessError, match="checker x"):
            run_case(ex, problem, Candidate(problem.id, "c.py", "print(4)"), Cases(["2\n"], ["4\n"]), 0,
                     Judging(checkers=Failing()))  # type: ignore[arg-type]
        assert ex.faults == 0 and ex._server_pid() == server  # never restarted: the checker's fault, not its


def test_the_roll_up_keeps_a_harness_error_apart_from_the_programs_failures() -> None:
    from conftest import make_problem

    p1, p2, p3 = make_problem("1", n=2), make_problem("2", n=2), make_problem("3", n=2)
    records = [CaseRecord("1", 0, "pass"), CaseRecord("1", 1, "harness_error", reason="executor server died"),
               CaseRecord("2", 0, "wrong_answer"), CaseRecord("2", 1, "harness_error"),
               CaseRecord("3", 0, "pass"), CaseRecord("3", 1, "pass")]
    summary = summarize([p1, p2, p3], {"1": "1.py", "2": "2.py", "3": "3.py"}, [], records)
    verdicts = {r.id: r.verdict for r in summary.problems}
    # a failure of the program's own decides; a harness error alone leaves the problem unscored
    assert verdicts == {"1": P_UNSCORED, "2": P_FAIL, "3": P_PASS}
    assert summary.problems[0].reason.startswith("harness error")
    assert summary.figures["unscored"] == 1 and summary.figures["incomplete"] == 0


def test_an_unscored_problem_leaves_every_denominator_and_is_said_apart() -> None:
    """Problem 1 has no verdict (a harness error): strict accuracy is 1 of the 2 scored problems, not 1 of 3, in
    the JSON figures, the terminal, the Markdown and the HTML, and the baseline comparison leaves it out of the
    pairs (never a newly failing problem)."""
    from conftest import make_problem

    from pytest_apps.report.comparison import compare
    from pytest_apps.report.comparison_text import baseline_lines
    from pytest_apps.report.html import render_html
    from pytest_apps.report.markdown import markdown_text
    from pytest_apps.report.rollup import document
    from pytest_apps.report.terminal import summary_lines

    problems = [make_problem("1", "interview", n=2), make_problem("2", "interview", n=2),
                make_problem("3", "interview", n=2)]
    files = {"1": "1.py", "2": "2.py", "3": "3.py"}

    def doc(first: list[str]) -> dict:
        records = [CaseRecord("1", 0, first[0]), CaseRecord("1", 1, first[1]), CaseRecord("2", 0, "wrong_answer"),
                   CaseRecord("2", 1, "pass"), CaseRecord("3", 0, "pass"), CaseRecord("3", 1, "pass")]
        summary = summarize(problems, files, [], records, {"missing_ids": [], "wall_time": 1.0})
        return summary, document({"dataset": "d", "max_tests": 20, "timeout": 4}, {"dataset": "d", "split": "test"},
                                 summary)

    summary, now = doc(["pass", "harness_error"])
    f = summary.figures
    assert f["unscored_problems"] == ["1"] and f["problems"] == 2 and f["passed"] == 1
    assert f["strict_accuracy"] == 0.5 and f["per_tier"]["interview"]["strict_accuracy"] == 0.5
    assert f["strict_accuracy_with_code"] == 0.5 and f["pass_at_k"]["pass@1"] == 0.5
    assert f["test_case_average"] == 0.75 and f["tests_run"] == 6  # the harness's case still counted as run
    text = f["figure_texts"]["strict_accuracy"]
    assert text.startswith("50.00% (1/2 problems; 1 unscored problem left out)"), text
    lines = summary_lines(summary)
    assert lines[0] == "strict accuracy: " + text
    assert any(line.startswith("unscored problems (") and "left out of the scores): 1" in line for line in lines)
    markdown = markdown_text(now)
    assert "1 unscored problem left out" in markdown and "left out of the problems counted above: `1`" in markdown
    assert "1 unscored, left out" in render_html(now)
    _, then = doc(["pass", "pass"])
    comparison = compare(then, now).to_dict()
    assert comparison["problems"] == 2 and comparison["unscored"] == ["1"]
    assert comparison["newly_failing"] == 0 and comparison["then"]["strict_accuracy"] == 0.5
    assert "1 unscored in one of them (a harness error; left out): 1" in baseline_lines(comparison)[0]


# ------------------------------------------------------------------------- the same, in a real pytest run at -n 2


def busy_project(folder: Path, n: int = 1) -> list[str]:
    """`n` problems whose one program is busy on a CPU for a while, then right; the arguments that run them."""
    rows = [{**ROW, "problem_id": 920001 + i} for i in range(n)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "cands").mkdir()
    for row in rows:
        (folder / "cands" / f"{row['problem_id']}.py").write_text(BUSY)
    return [sys.executable, "-m", "pytest", *UNUSED_PLUGINS, "-p", "no:cacheprovider", "-q", "-n", "2",
            "--apps-dataset=rows.jsonl", "--apps-candidates=cands", "--apps-timeout=10", "--junitxml=j.xml",
            "--apps-markdown=r.md", "--apps-html=r.html", "--rootdir", str(folder)]


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.parametrize("kills", [1, 2])
def test_a_run_whose_executor_is_killed_mid_case(kills: int, tmp_path: Path) -> None:
    """kill -9 of a worker's executor server while its program runs: once, the case runs again on a fresh
    executor and the run is complete; twice, the case is a harness error, its problem unscored (never the
    program's 0) and the run incomplete, said in the JSON, terminal, Markdown, HTML and JUnit."""
    command = busy_project(tmp_path)
    proc = subprocess.Popen(command, cwd=tmp_path, env=environment(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    killer = kill_mid_case(proc.pid, kills)
    out, _ = proc.communicate(timeout=300)
    killer.join(5)
    assert len(killer.killed) == kills, out
    report = json.loads((tmp_path / "reports" / "apps-report.json").read_text())
    [problem] = report["problems"]
    junit = junit_outcomes(tmp_path / "j.xml")
    if kills == 1:
        assert proc.returncode == 0, out
        assert problem["verdict"] == "pass" and report["run"]["complete"], out
        assert report["run"]["reasons"] == [] and "without_verdict" not in report["run"]
        assert list(junit.values()) == ["passed"]
        return
    assert proc.returncode == 1, out
    assert problem["verdict"] == "unscored" and problem["tests"][0]["kind"] == "harness_error"
    assert report["summary"]["unscored_problems"] == ["920001"] and report["summary"]["passed"] == 0
    run = report["run"]
    assert not run["complete"] and run["without_verdict"]["count"] == 1
    assert run["without_verdict"]["cases"][0]["why"] == "harness error"
    assert "1 case without a verdict: a harness error" in run["incomplete"]
    assert f"INCOMPLETE RUN: {run['incomplete']}" in out and "unscored problems" in out
    assert "without a verdict: cands/920001.py::test_0 (harness error)" in out
    assert list(junit.values()) == ["error"]  # a harness error, not a failure of the program
    assert (tmp_path / "r.md").read_text().startswith("> **Incomplete run**")
    assert "Unscored problems" in (tmp_path / "r.html").read_text()


# ------------------------------------------------------------------------------------------------- interrupts

SLEEPY = "import time\ntime.sleep(4)\nprint(int(input()) * 2)\n"


def start_time(pid: int) -> str | None:
    """A live process's start time (None once it has ended: gone, or a zombie waiting to be reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def left_behind(snapshot: dict[int, str | None]) -> list[str]:
    """The processes of a snapshot still alive (the same process: its pid and start time), by command line."""
    return [cmdline(pid).replace(b"\0", b" ").decode(errors="replace") for pid, started in snapshot.items()
            if started is not None and start_time(pid) == started]


def running_run(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, dict[int, str | None]]:
    """A run at -n 2 of programs that each sleep a while, in a session of its own, once both workers run a case;
    with every process of it at that moment (workers, executor servers, zygotes, programs)."""
    command = busy_project(tmp_path, n=6)
    for file in (tmp_path / "cands").iterdir():
        file.write_text(SLEEPY)
    proc = subprocess.Popen([*command, *args], cwd=tmp_path, env=environment(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        workers = [s for s in servers_below(proc.pid) if parent_of(s) != proc.pid]
        if len(workers) >= 2 and all(len(descendants_of(s)) >= 2 for s in workers):
            break
        time.sleep(0.05)
    time.sleep(0.5)  # the programs are running
    assert proc.poll() is None, proc.communicate()[0]
    return proc, {pid: start_time(pid) for pid in descendants_of(proc.pid)}


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_one_signal_stops_a_run_at_once_and_its_reports_say_so(name: str, tmp_path: Path) -> None:
    """One SIGINT or SIGTERM to the controller alone (as a CI runner sends it): the run stops within seconds (it
    took 12-17 s: the workers went on with their queues until execnet killed them), writes its reports marked
    interrupted by that signal, and leaves no process behind."""
    proc, snapshot = running_run(tmp_path)
    sent = time.monotonic()
    proc.send_signal(getattr(signal, name))
    out, _ = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    print(f"{name}: stopped in {took:.2f} s")
    # about 1.5 s on a quiet machine (12-17 s before); a bound that holds on a shared one, under CI runners' 10 s
    assert took < 9.0, f"{took:.1f} s to stop\n{out}"
    assert proc.returncode == 2 and "Traceback" not in out, out
    run = json.loads((tmp_path / "reports" / "apps-report.json").read_text())["run"]
    assert not run["complete"] and run["interrupted"] == name and run["incomplete"].startswith(f"interrupted ({name})")
    assert {case["why"] for case in run["without_verdict"]["cases"]} == {f"interrupted ({name})"}
    assert (tmp_path / "r.md").read_text().startswith(f"> **Incomplete run**: interrupted ({name})")
    assert junit_outcomes(tmp_path / "j.xml") == {}  # written: no case had a verdict yet
    assert left_behind(snapshot) == []


def test_a_second_sigint_still_writes_the_reports_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """Ctrl-C twice, as a terminal sends it (to the whole process group: the workers get it too), the second
    while the first's shutdown is under way and again 2 s later: no traceback, the reports written, marked
    interrupted by SIGINT, and no process of the run left."""
    proc, snapshot = running_run(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    for _ in range(2):
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            break
        time.sleep(2)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "Traceback" not in out, out
    assert "APPS summary" in out and "INCOMPLETE RUN: interrupted (SIGINT)" in out
    run = json.loads((tmp_path / "reports" / "apps-report.json").read_text())["run"]
    assert run["interrupted"] == "SIGINT" and not run["complete"]
    assert left_behind(snapshot) == []


LAST_MOMENTS = '''
import atexit, pathlib, time

def _last():
    pathlib.Path("exiting").write_text("")
    time.sleep(3)

def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # (the controller's way out only)
        atexit.register(_last)
'''


def test_a_signal_on_an_interrupted_runs_way_out_does_not_end_it_by_that_signal(tmp_path: Path) -> None:
    """An interrupted run keeps its own handler to the end, so that a later signal breaks nothing; but Python sets a
    signal handled in Python back to its default as it finalizes, and SIGINT's default ends the process: a Ctrl-C in
    that last moment turned the run's exit status 2 into a death by SIGINT (-2; CI failed once so). Once its work is
    done, the interrupted run ignores them: watched from the kernel while it runs its exit handlers."""
    (tmp_path / "conftest.py").write_text(LAST_MOMENTS)
    proc, _ = running_run(tmp_path)
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 60
    while not (tmp_path / "exiting").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert (tmp_path / "exiting").exists(), proc.communicate()[0]
    ignored = {name: int(value, 16) for name, value in (line.split(":\t") for line in Path(
        f"/proc/{proc.pid}/status").read_text().splitlines() if line.startswith(("SigIgn", "SigCgt")))}
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    for sig in (signal.SIGINT, signal.SIGTERM):
        assert ignored["SigIgn"] & (1 << (sig - 1)), (sig, ignored)
    assert proc.returncode == 2 and "INCOMPLETE RUN: interrupted (SIGINT)" in out, out


# ------------------------------------------------------------------------------------------------ a lost worker


def test_a_lost_workers_case_runs_again_once_and_counts_once(tmp_path: Path) -> None:
    """kill -9 of an xdist worker while its program runs: the case it was running runs again on another
    worker, and every case counts once: in pytest's outcomes, the JUnit file and the run's `executed`."""
    proc, _ = running_run(tmp_path)
    worker = next(parent_of(s) for s in servers_below(proc.pid) if parent_of(s) != proc.pid)
    os.kill(worker, signal.SIGKILL)
    out, _ = proc.communicate(timeout=300)
    report = json.loads((tmp_path / "reports" / "apps-report.json").read_text())
    outcomes = [line for line in out.splitlines() if " passed" in line or " failed" in line][-1]
    # six cases, six items: the lost run of the one it was running is an "R" (run again), neither passed nor failed
    assert outcomes.startswith("6 passed, 1 rerun in") and "failed" not in outcomes, out
    assert "(run again on another worker)" in out and "INCOMPLETE" not in out
    junit = junit_outcomes(tmp_path / "j.xml")
    assert len(junit) == 6 and set(junit.values()) == {"passed"}, junit
    import xml.etree.ElementTree as ET
    assert len(list(ET.parse(tmp_path / "j.xml").getroot().iter("testcase"))) == 6
    run = report["run"]
    assert run["executed"] == run["cases"] == 6 and report["summary"]["passed"] == 6, run
    [down] = report["workers_down"]
    assert down["crashed"] and down["run_again"], down
    # every case has its verdict: the run is complete (the lost worker is on record) and passes
    assert run["complete"] and run["reasons"] == [], run
    assert proc.returncode == 0, out


def test_only_the_first_signal_interrupts_and_only_our_own_children_are_signalled(tmp_path: Path) -> None:
    from pytest_apps.plugin.interrupts import Interrupts, interrupt_workers, note_worker, worker_pids

    calls: list[str] = []
    interrupts = Interrupts(on_first=lambda: calls.append("first"), on_later=lambda: calls.append("later"))
    assert interrupts.receive(signal.SIGTERM) and interrupts.first == "SIGTERM"
    assert not interrupts.receive(signal.SIGINT) and not interrupts.receive(signal.SIGINT)
    assert calls == ["first", "later", "later"] and interrupts.first == "SIGTERM"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        note_worker(tmp_path, "gw0", child.pid)
        note_worker(tmp_path, "gw1", os.getppid())  # not ours: a pid is never signalled on its number alone
        assert sorted(worker_pids(tmp_path)) == sorted([child.pid, os.getppid()])
        assert interrupt_workers(worker_pids(tmp_path), signal.SIGTERM) == [child.pid]
        assert child.wait(10) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()
