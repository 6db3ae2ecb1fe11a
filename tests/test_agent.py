"""The agent hook: prompt framing, python_exec in a sandboxed child, the generation cache, failures
recorded as no code, and a whole pytest run that generates once and reuses on a rerun by node id."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import make_problem, read_report, run

from pytest_apps.candidates.generation import PythonExec, frame_prompt, generate, is_generated
from pytest_apps.dataset.problems import Problem

F = "```"


def problem(pid: str, fn_name: str | None = None, starter: str = "") -> Problem:
    return make_problem(pid, index=0, fmt="call" if fn_name else "stdin", fn_name=fn_name,
                        question=f"Question {pid}?\n", starter_code=starter)


def test_prompt_framing_standard_input():
    assert frame_prompt("Add two numbers.\n") == (
        "QUESTION:\nAdd two numbers.\n\nUse Standard Input format.\n\n"
        "Enclose your final solution in a ```python``` code block.\n\nANSWER:"
    )


def test_prompt_framing_call_based_with_starter_code():
    text = frame_prompt("Reverse it.", "class Solution:\n    def rev(self, s):\n", call_based=True)
    assert text == (
        "QUESTION:\nReverse it.\n\n```python\nclass Solution:\n    def rev(self, s):\n```\n\n"
        "Use Call-Based format.\n\nEnclose your final solution in a ```python``` code block.\n\nANSWER:"
    )


def test_python_exec_runs_in_a_sandboxed_child():
    tool = PythonExec(timeout=2.0)
    try:
        out = tool("import os, sys\nprint(input()[::-1], os.getpid() != %d)\nsys.exit(3)" % os.getpid(), "abc\n")
        assert out["stdout"] == "cba True\n" and out["exit_code"] == 3
        err = tool("raise ValueError('boom')")
        assert "ValueError: boom" in err["stderr"] and err["exit_code"] != 0
        started = time.monotonic()
        slow = tool("while True: pass")
        # (the 2 s limit counts the program's own time; the wall clock only bounds a harness that hangs)
        assert slow["status"] == "timeout" and time.monotonic() - started < 60
    finally:
        tool.close()


def test_generation_writes_once_and_records_failures(tmp_path: Path):
    calls: list[str] = []

    def agent(p):
        calls.append(p.id)
        assert p.prompt.startswith(f"QUESTION:\nQuestion {p.id}?") and p.fields["problem_id"] == p.id
        if p.id == "boom":
            raise RuntimeError("model exploded")
        if p.id == "slow":
            time.sleep(5)
        if p.id == "many":
            return [f"{F}python\nprint({k})\n{F}" for k in range(3)]
        if p.id == "tool":
            return f"{F}python\n{p.python_exec('print(6*7)')['stdout'].strip()}\n{F}"
        if p.id == "weird":
            return 42
        return f"{F}python\nprint('{p.id}')\n{F}"

    ps = [problem(x) for x in ("ok", "boom", "slow", "many", "tool", "weird")]
    stats = generate(ps, agent, tmp_path, concurrency=3, timeout=1.0)
    assert (stats.generated, stats.failed, stats.reused) == (6, 3, 0)
    assert "print('ok')" in (tmp_path / "ok.md").read_text()
    assert "RuntimeError: model exploded" in (tmp_path / "boom.md").read_text()
    assert "timed out after 1 s" in (tmp_path / "slow.md").read_text()
    assert "a int, not text" in (tmp_path / "weird.md").read_text()
    assert sorted(p.name for p in (tmp_path / "many").iterdir()) == ["sample_0.md", "sample_1.md", "sample_2.md"]
    assert "42" in (tmp_path / "tool.md").read_text()
    # a failed generation is asked for again on the next run; the answers that succeeded are reused
    assert {p.id: is_generated(tmp_path, p.id) for p in ps} == {
        "ok": True, "boom": False, "slow": False, "many": True, "tool": True, "weird": False}

    calls.clear()
    again = generate(ps, agent, tmp_path, concurrency=3, timeout=1.0)
    assert sorted(calls) == ["boom", "slow", "weird"] and (again.reused, again.generated) == (3, 3)
    generate(ps[:1], lambda p: "no code now", tmp_path, regenerate=True)
    assert (tmp_path / "ok.md").read_text() == "no code now"


def test_a_generation_is_reused_only_under_the_key_that_made_it(tmp_path: Path):
    """The cache key is everything that made a generation: the run's part (dataset, model, sampling), the
    problem's content and prompt, the sample count; anything else asks the agent again."""
    calls: list[str] = []

    def agent(p):
        calls.append(p.id)
        n = int(p.options.get("samples") or 1)
        texts = [f"{F}python\nprint({k})\n{F}" for k in range(n)]
        return texts[0] if n == 1 else texts

    apps = {"agent": "m:f", "dataset": "codeparrot/apps", "split": "test", "model": "m1", "temperature": None}
    ps = [problem("7"), problem("8")]

    def ask(problems=ps, made_by=apps, samples=1):
        calls.clear()
        stats = generate(problems, agent, tmp_path, options={"samples": samples}, made_by=made_by)
        return sorted(calls), stats.reused

    assert ask() == (["7", "8"], 0)
    assert ask() == ([], 2)  # the same key: reused
    assert ask(made_by={**apps, "dataset": "BAAI/TACO"}) == (["7", "8"], 0)  # the TACO problem with the same id
    assert ask(made_by={**apps, "dataset": "BAAI/TACO"}) == ([], 2)
    assert ask(made_by={**apps, "dataset": "BAAI/TACO", "temperature": 0.8}) == (["7", "8"], 0)
    changed = [problem("7"), make_problem("8", index=1, question="Another question?\n")]
    assert ask(changed, {**apps, "dataset": "BAAI/TACO", "temperature": 0.8}) == (["8"], 1)  # content changed
    assert ask(changed, {**apps, "dataset": "BAAI/TACO", "temperature": 0.8}, samples=3) == (["7", "8"], 0)
    assert sorted(p.name for p in (tmp_path / "8").iterdir()) == ["sample_0.md", "sample_1.md", "sample_2.md"]
    # an answer without a key (written by hand, or by whatever made it before keys) is a new generation
    (tmp_path / "9.md").write_text(f"{F}python\nprint(9)\n{F}")
    assert ask([problem("9")]) == (["9"], 0)


AGENT = '''
import os, json
ANSWERS = json.loads(os.environ["TEST_ANSWERS"])

def solve(problem):
    with open(os.environ["TEST_CALLS"], "a") as f:
        f.write(problem.id + "\\n")
    answer = ANSWERS[problem.id]
    return answer
'''


def sample_solutions() -> dict[str, str]:
    import pytest_apps

    rows = (Path(pytest_apps.__file__).parent / "data" / "sample.jsonl").read_text().splitlines()
    return {str(json.loads(r)["problem_id"]): json.loads(json.loads(r)["solutions"])[0] for r in rows}


def test_agent_run_generates_once_and_rerun_by_node_id_reuses(pytester: pytest.Pytester, monkeypatch):
    sols = sample_solutions()
    answers = {
        "900001": f"Let me think.\n{F}python\n{sols['900001']}{F}\n",
        "900003": [f"{F}python\n{sols['900003']}{F}", "I give up."],
    }
    pytester.makepyfile(myagent=AGENT)
    calls = pytester.path / "calls.txt"
    monkeypatch.setenv("TEST_ANSWERS", json.dumps(answers))
    monkeypatch.setenv("TEST_CALLS", str(calls))
    args = ("--apps-dataset", "sample", "--apps-only", "900001,900003", "--apps-agent", "myagent:solve",
            "-p", "no:cacheprovider")
    first = run(pytester, *args, "-n", "2", "-v")
    first.stdout.fnmatch_lines([
        "apps: generating [[]###*[]] 2/2",
        "*PASSED apps-generations/myagent_solve/900001.md::test_0*",
        "*FAILED apps-generations/myagent_solve/900003/sample_1.md::no_code*",
    ])
    assert sorted(calls.read_text().split()) == ["900001", "900003"]  # once each, on the controller
    report = read_report(pytester)
    p1, p3 = report["problems"]
    assert p1["verdict"] == "pass" and (p3["samples"], p3["samples_passed"]) == (2, 1)
    assert report["summary"]["strict_accuracy"] == 0.75

    rerun = run(pytester, "apps-generations/myagent_solve/900001.md::test_2", *args)
    rerun.assert_outcomes(passed=1)
    assert sorted(calls.read_text().split()) == ["900001", "900003"]  # reused, not asked again

    run(pytester, *args, "--apps-regenerate")
    assert sorted(calls.read_text().split()) == ["900001", "900001", "900003", "900003"]


def test_another_dataset_with_the_same_ids_asks_the_agent_again_and_the_header_counts_reuse(
    pytester: pytest.Pytester, monkeypatch
):
    """An answer for problem 900001 of one dataset is never scored for problem 900001 of another (here the same
    rows in a file of their own, whose identity differs), nor under another temperature."""
    import pytest_apps

    sols = sample_solutions()
    monkeypatch.setenv("TEST_ANSWERS", json.dumps({"900001": f"{F}python\n{sols['900001']}{F}"}))
    calls = pytester.path / "calls.txt"
    monkeypatch.setenv("TEST_CALLS", str(calls))
    pytester.makepyfile(myagent=AGENT)
    rows = pytester.path / "rows.jsonl"
    rows.write_text((Path(pytest_apps.__file__).parent / "data" / "sample.jsonl").read_text())
    args = ("--apps-only=900001", "--apps-agent=myagent:solve")
    first = run(pytester, "--apps-dataset=sample", *args)
    first.stdout.fnmatch_lines(["apps: generations: 0 reused, 1 generated"])
    again = run(pytester, "--apps-dataset=sample", *args)
    again.stdout.fnmatch_lines(["apps: generations: 1 reused, 0 generated"])
    assert calls.read_text().split() == ["900001"]
    other = run(pytester, f"--apps-dataset={rows}", *args)
    other.stdout.fnmatch_lines(["apps: generations: 0 reused, 1 generated"])
    warmer = run(pytester, f"--apps-dataset={rows}", "--apps-temperature=0.7", *args)
    warmer.stdout.fnmatch_lines(["apps: generations: 0 reused, 1 generated"])
    assert calls.read_text().split() == ["900001"] * 3


def test_bad_agent_is_a_usage_error(pytester: pytest.Pytester):
    result = run(pytester, "--apps-dataset", "sample", "--apps-agent", "no_such_module:solve",
                 "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--apps-agent: cannot import 'no_such_module'*"])


FAILING_AGENT = '''
import os

def solve(problem):
    with open(os.environ["TEST_CALLS"], "a") as f:
        f.write(problem.id + "\\n")
    if os.environ.get("TEST_AGENT_UP") != "1":
        raise ConnectionRefusedError(111, "Connection refused")
    return "```python\\nprint(0)\\n```\\n"
'''


def test_a_failed_generation_reads_in_the_terminal_is_no_code_and_is_asked_again(
    pytester: pytest.Pytester, monkeypatch
):
    """An agent that fails: its reason in one line per problem and a count in the summary, the problems never
    counted "with code", and the next run asks the agent again for them (only for them)."""
    pytester.makepyfile(myagent=FAILING_AGENT)
    calls = pytester.path / "calls.txt"
    monkeypatch.setenv("TEST_CALLS", str(calls))
    args = ("--apps-dataset=sample", "--apps-only=900001,900003", "--apps-agent=myagent:solve", "-n", "2")
    first = run(pytester, *args)
    assert first.ret == 1
    first.assert_outcomes(failed=2)
    first.stdout.fnmatch_lines([
        "apps: candidates */apps-generations/myagent_solve (0 with code);*",
        "APPS problem 900001: no code (apps-generations/myagent_solve/900001.md: generation failed: "
        "ConnectionRefusedError: [[]Errno 111[]] Connection refused; its 5 tests did not run)",
        "the next run asks the agent again: pytest *",
        "tests: 0 run of 10; no code 10 (not run)",
        "generation failed for 2 problems (scored no code; the next run asks the agent again):",
        "  900001: ConnectionRefusedError: [[]Errno 111[]] Connection refused",
        "  900003: ConnectionRefusedError: [[]Errno 111[]] Connection refused",
    ])
    report = read_report(pytester)
    assert [p["verdict"] for p in report["problems"]] == ["no_code", "no_code"]
    assert report["summary"]["problems_with_code"] == 0 and report["summary"]["tests_run"] == 0
    assert sorted(calls.read_text().split()) == ["900001", "900003"]

    monkeypatch.setenv("TEST_AGENT_UP", "1")
    second = run(pytester, *args)
    second.stdout.fnmatch_lines(["apps: candidates */apps-generations/myagent_solve (2 with code);*"])
    assert sorted(calls.read_text().split()) == ["900001", "900001", "900003", "900003"]  # asked again
    assert "generation failed" not in second.stdout.str()
    third = run(pytester, *args)
    assert sorted(calls.read_text().split()) == ["900001", "900001", "900003", "900003"]  # answers reused
    assert third.parseoutcomes()["failed"] == second.parseoutcomes()["failed"]


def test_the_generate_step_reads_the_projects_ini_file(pytester: pytest.Pytester, monkeypatch):
    """`python -m pytest_apps generate` in a project reads the `apps_*` options of its ini file, as pytest does,
    and writes where the pytest run then reads: the run asks the agent for nothing."""
    import subprocess
    import sys

    sols = sample_solutions()
    monkeypatch.setenv("TEST_ANSWERS", json.dumps({"900001": f"{F}python\n{sols['900001']}{F}"}))
    calls = pytester.path / "calls.txt"
    monkeypatch.setenv("TEST_CALLS", str(calls))
    pytester.makepyfile(myagent=AGENT)
    pytester.makefile(".toml", pyproject="[tool.pytest.ini_options]\napps = true\napps_dataset = 'sample'\n"
                                          "apps_only = ['900001']\napps_agent = 'myagent:solve'\n")
    sub = pytester.path / "sub"
    sub.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest_apps", "generate"], cwd=sub, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 generated (0 failed), 0 reused" in done.stdout
    assert (pytester.path / "apps-generations" / "myagent_solve" / "900001.md").is_file()
    result = run(pytester)
    result.stdout.fnmatch_lines(["apps: generations: 1 reused, 0 generated"])
    result.assert_outcomes(passed=5)
    assert calls.read_text().split() == ["900001"]
