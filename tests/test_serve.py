"""`python -m pytest_apps serve` as a real process on 127.0.0.1, called over real HTTP: SandboxFusion's schema, the
judged endpoints, the limits, the queue's deadline, SIGTERM, the body and test limits, the token, and the executor's
escape programs sent over HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from pytest_apps.executor import Executor, Limits, Program
from pytest_apps.executor.clock import SAMPLE_INTERVAL
from pytest_apps.serve.pool import Pool
from servehttp import Server, descendants

STDIN_TESTS = {"inputs": ["1\n", "2\n", "3\n"], "outputs": ["2\n", "4\n", "6\n"]}


@pytest.fixture(scope="module")
def server():
    srv = Server("--workers", "2", "--max-timeout", "20")
    yield srv
    srv.stop()


# -- /run_code: SandboxFusion's schema ------------------------------------------------------------------------


def test_run_code_success_has_sandboxfusions_fields(server):
    answer = server.run_code("print(input()[::-1])", "abc")
    assert set(answer) >= {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
    assert answer["status"] == "Success" and answer["compile_result"] is None
    run = answer["run_result"]
    assert (run["status"], run["return_code"], run["stdout"], run["stderr"]) == ("Finished", 0, "cba\n", "")
    assert 0 < run["execution_time"] < 1 and answer["pytest_apps"]["ending"] == "exited"


def test_run_code_failure_and_signal(server):
    failed = server.run_code("import sys\nprint('x')\nsys.exit(3)")
    assert failed["status"] == "Failed" and failed["run_result"]["return_code"] == 3
    raised = server.run_code("raise ValueError('boom')")
    assert raised["status"] == "Failed" and raised["run_result"]["return_code"] == 1
    assert "ValueError: boom" in raised["run_result"]["stderr"]
    killed = server.run_code("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert killed["status"] == "Failed" and killed["run_result"]["return_code"] == -11
    syntax = server.run_code("x = (")
    assert syntax["status"] == "Failed" and "SyntaxError" in syntax["run_result"]["stderr"]


def test_run_timeout_is_the_programs_own_time(server):
    answer = server.run_code("while True: pass", run_timeout=1)
    run = answer["run_result"]
    assert answer["status"] == "Failed" and run["status"] == "TimeLimitExceeded" and run["return_code"] is None
    assert run["execution_time"] >= 1.0 and answer["pytest_apps"]["ending"] == "timeout"
    quick = server.run_code("import time\ntime.sleep(0.3)\nprint('up')", run_timeout=1)
    # blocked time counts (less, at worst, one sample interval of a sleep the kernel counted as a wait: clock.py)
    assert quick["status"] == "Success" and quick["run_result"]["execution_time"] >= 0.3 - SAMPLE_INTERVAL


def test_memory_limit_gives_a_memory_verdict(server):
    answer = server.run_code("x = bytearray(700 << 20)\nprint('allocated')", memory_limit_MB=256)
    assert answer["status"] == "Failed" and answer["pytest_apps"]["ending"] == "memory"
    assert "MemoryError" in answer["run_result"]["stderr"] and answer["run_result"]["stdout"] == ""
    roomy = server.run_code("x = bytearray(100 << 20)\nprint('allocated')", memory_limit_MB=1024)
    assert roomy["status"] == "Success" and roomy["run_result"]["stdout"] == "allocated\n"


def test_output_is_capped(server):
    answer = server.run_code("import sys\nwhile True: sys.stdout.write('x' * 65536)", run_timeout=5)
    assert answer["status"] == "Failed" and answer["pytest_apps"]["ending"] == "output_limit"
    assert len(answer["run_result"]["stdout"]) <= 8 << 20


def test_files_are_placed_before_the_run_and_fetched_after_it(server):
    src = ("import os\ndata = open('in/data.txt').read()\nopen('out.txt', 'w').write(data.upper())\n"
           "os.symlink('/etc/shadow', 'shadow')\nprint(sorted(os.listdir('.')))")
    answer = server.run_code(src, files={"in/data.txt": base64.b64encode(b"abc").decode(), "skipped.txt": None},
                             fetch_files=["out.txt", "shadow", "missing.txt"])
    assert answer["status"] == "Success", answer
    assert answer["run_result"]["stdout"] == "['in', 'out.txt', 'shadow']\n"
    assert answer["files"] == {"out.txt": base64.b64encode(b"ABC").decode()}  # (no link followed, none missing)
    assert server.run_code("import os\nprint(os.listdir('.'))")["run_result"]["stdout"] == "[]\n"
    for files, fetch, says in (({"../x": "eA=="}, [], "files: file path '../x'"),
                               ({}, ["/etc/passwd"], "fetch_files: file path '/etc/passwd'"),
                               ({"a.txt": "not base64!"}, [], "files: 'a.txt': its content is not base64")):
        status, answer = server.post("/run_code", {"code": "print(1)", "language": "python", "files": files,
                                                   "fetch_files": fetch})
        assert status == 422 and answer["detail"].startswith(says), answer
    status, answer = server.post("/run_code", {"code": "print(1)", "language": "python",
                                               "files": {f"f{i}": "" for i in range(300)}})
    assert status == 200 and answer["status"] == "SandboxError" and "at most 256 files" in answer["message"]


def test_other_languages_and_limits_over_the_servers_are_a_sandbox_error(server):
    for body in ({"code": "int main(){}", "language": "cpp"},
                 {"code": "print(1)", "language": "python", "run_timeout": 500}):
        status, answer = server.post("/run_code", body)
        assert status == 200 and answer["status"] == "SandboxError" and answer["run_result"] is None, answer
        assert answer["message"]
    status, answer = server.post("/run_code", {"code": "print(1)", "language": "cpp"})
    assert "Python programs only" in answer["message"]


def test_a_body_off_the_schema_is_422(server):
    for body in ({"language": "python"}, {"code": 3, "language": "python"}, [1, 2],
                 {"code": "print(1)", "language": "python", "run_timeout": -1}):
        status, answer = server.post("/run_code", body)
        assert status == 422 and answer["detail"], (body, answer)
    status, answer = server.post("/run_code", raw=b"{not json")
    assert status == 422 and "not JSON" in answer["detail"]


# -- /submit and /judge ---------------------------------------------------------------------------------------


def test_judge_gives_each_tests_verdict_and_time(server):
    status, answer = server.post("/judge", {"code": "n = int(input())\nprint(n * 2 if n < 3 else 0)",
                                            "tests": STDIN_TESTS})
    assert status == 200 and answer["status"] == "Success", answer
    assert (answer["accepted"], answer["verdict"], answer["tests_passed"], answer["tests_run"]) == (False, "fail", 2, 3)
    assert [t["verdict"] for t in answer["tests"]] == ["pass", "pass", "wrong_answer"]
    assert all(t["time"] > 0 and t["cpu_time"] > 0 for t in answer["tests"])
    assert answer["tests"][2]["detail"]["got"] == "0\n"
    status, fast = server.post("/judge", {"code": "print(0)", "tests": STDIN_TESTS, "fail_fast": True})
    assert fast["tests_run"] == 1 and fast["verdict"] == "fail" and fast["tests_total"] == 3


def test_judge_call_based_and_profiles(server):
    tests = {"fn_name": "add", "inputs": [[1, 2], [3, 4]], "outputs": [[3], [7]]}
    for judge in ("seed", "apps"):
        status, answer = server.post("/judge", {"code": "def add(a, b):\n    return a + b", "tests": tests,
                                                "judge": judge})
        assert status == 200 and answer["accepted"] and answer["judge"] == judge, answer
    status, answer = server.post("/judge", {"code": "print(1)", "tests": tests, "judge": "nosuch"})
    assert status == 400 and "nosuch" in answer["detail"]
    status, answer = server.post("/judge", {"code": "print(1)", "tests": {"inputs": ["1"], "outputs": []}})
    assert status == 400 and answer["detail"]


def test_submit_takes_provided_data_in_every_form(server):
    completion = "Here:\n```python\nprint(int(input()) * 2)\n```\n"
    forms = [{"input_output": STDIN_TESTS}, {"input_output": json.dumps(STDIN_TESTS)}, STDIN_TESTS,
             {"test": [{"input": {"stdin": i}, "output": {"stdout": o}} for i, o in
                       zip(STDIN_TESTS["inputs"], STDIN_TESTS["outputs"])]}]
    for data in forms:
        status, answer = server.post("/submit", {"dataset": "apps", "id": 7, "completion": completion,
                                                 "config": {"language": "python", "provided_data": data}})
        assert status == 200 and answer["accepted"] is True, answer
        assert answer["id"] == 7 and answer["extracted_code"] == "print(int(input()) * 2)"
        assert answer["extracted_type"] == "fenced" and len(answer["tests"]) == 3
        assert all(t["passed"] and t["exec_info"]["status"] == "Success" for t in answer["tests"])


def test_submit_stops_at_the_first_failure_unless_run_all_cases(server):
    body = {"dataset": "apps", "id": 1, "completion": "```python\nprint(2)\n```",
            "config": {"provided_data": STDIN_TESTS}}
    status, answer = server.post("/submit", body)
    assert status == 200 and answer["accepted"] is False and not answer["tests"][-1]["passed"]
    assert len(answer["tests"]) < 3
    body["config"]["extra"] = {"run_all_cases": True}
    status, every = server.post("/submit", body)
    assert [t["passed"] for t in every["tests"]] == [True, False, False]
    assert every["tests"][1]["test_info"]["verdict"] == "wrong_answer"


# -- health and metrics ---------------------------------------------------------------------------------------


def test_health_and_prometheus_metrics(server):
    server.run_code("print(1)")
    server.post("/judge", {"code": "print(0)", "tests": STDIN_TESTS})
    assert server.get("/health") == (200, {"status": "ok", "workers": 2, "running": 0, "aside": 0, "held": 0,
                                           "parked": 0, "queue": 0,
                                           "executors": server.get("/health")[1]["executors"]})
    assert server.get("/v1/ping") == (200, "pong")
    status, text = server.get("/metrics")
    assert status == 200
    lines = text.splitlines()
    assert 'pytest_apps_serve_requests_total{endpoint="/run_code",code="200"}' in text
    assert any(l.startswith('pytest_apps_serve_request_seconds{endpoint="/judge",quantile="0.99"}') for l in lines)
    assert {"pytest_apps_serve_queue_length 0", "pytest_apps_serve_aside 0", "pytest_apps_serve_held 0",
            "pytest_apps_serve_parked 0", "pytest_apps_serve_parked_total 0", "pytest_apps_serve_beyond 0",
            "pytest_apps_serve_went_beyond_total 0"} <= set(lines)
    starts = {l.split(" ")[0]: float(l.split(" ")[1]) for l in lines if l.startswith("pytest_apps_serve_executor_st")}
    assert starts['pytest_apps_serve_executor_starts_total{when="request"}'] >= 1  # (the first request's)
    assert 'pytest_apps_serve_executor_starts_total{when="standby"}' in starts
    assert any(l.startswith('pytest_apps_serve_test_verdicts_total{verdict="wrong_answer"}') for l in lines)
    assert any(l.startswith('pytest_apps_serve_run_code_endings_total{ending="exited"}') for l in lines)
    for line in lines:  # every sample line is "name{labels} number"
        if not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])


# -- isolation over HTTP: the executor's escape programs ------------------------------------------------------


def test_no_network_over_http(server):
    src = ("import socket\nfor addr in (('1.1.1.1', 80), ('127.0.0.1', %d)):\n    try:\n"
           "        socket.create_connection(addr, timeout=0.5)\n        print('connected', addr)\n"
           "    except OSError:\n        pass\n") % int(server.url.rsplit(":", 1)[1])
    assert server.run_code(src)["run_result"]["stdout"] == ""


def test_no_parent_secrets_over_http(server):
    src = ("import os\ngot = []\nfor p in ['/proc/%d/environ' % os.getppid(), '/proc/1/environ']:\n    try:\n"
           "        got.append(open(p).read(50))\n    except OSError:\n        pass\nprint(got)\n"
           "print(sorted(k for k in os.environ if 'TOKEN' in k or 'APPS' in k))\n"
           "for target in (os.getppid(), 1):\n    try:\n        os.kill(target, 9)\n        print('killed', target)\n"
           "    except OSError:\n        pass\n")
    answer = server.run_code(src)
    assert answer["run_result"]["stdout"] == "[]\n[]\n", answer
    assert server.get("/health")[0] == 200


def test_no_file_of_another_request_is_seen(server):
    planted = server.run_code("import os\nopen('secret.txt', 'w').write('mine')\nprint(os.getcwd())")
    folder = planted["run_result"]["stdout"].strip()
    probe = ("import os\nprint(os.listdir('.'))\nfor p in ['secret.txt', %r]:\n    try:\n"
             "        print(open(p).read())\n    except OSError:\n        print('denied')\n") % (folder + "/secret.txt")
    answer = server.run_code(probe)
    assert answer["run_result"]["stdout"] == "[]\ndenied\ndenied\n", answer


def test_nothing_outlives_its_request(server):
    src = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
           "        print(os.getpid(), flush=True)\n        os.close(0); os.close(1); os.close(2)\n"
           "        time.sleep(60)\n    os._exit(0)\ntime.sleep(0.2)\n")
    pid = int(server.run_code(src)["run_result"]["stdout"].split()[0])  # as its own pid namespace numbers it
    # the executor kills what a run left behind before its next run starts (executor/server.py's settle): the
    # next request runs on the warmest executor, the same one
    assert server.run_code("print('next')")["run_result"]["stdout"] == "next\n"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive_as(server.proc.pid, pid):
        time.sleep(0.05)
    assert not _alive_as(server.proc.pid, pid)
    bomb = server.run_code("import os\nwhile True:\n    os.fork()", run_timeout=1)
    assert bomb["status"] == "Failed"
    assert server.run_code("print('still here')")["run_result"]["stdout"] == "still here\n"


def _alive_as(root: int, inner: int) -> bool:
    """Whether a living process below `root` has pid `inner` in its innermost pid namespace."""
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/status") as f:
                nspid = next(line for line in f if line.startswith("NSpid:")).split()[1:]
        except (OSError, StopIteration):
            continue
        if int(nspid[-1]) == inner and _state(pid) != "Z":
            return True
    return False


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_one_request_never_changes_anothers_verdict(server):
    """A memory hog, a busy loop and a fork bomb beside plain programs: each plain program's answer is its own."""
    hostile = ["x = bytearray(3 << 30)", "while True: pass", "import os\nwhile True:\n    os.fork()"]
    answers: dict[int, dict] = {}

    def call(i: int) -> None:
        if i % 2:
            answers[i] = server.run_code(hostile[i % 3], run_timeout=1, memory_limit_MB=512)
        else:
            answers[i] = server.run_code(f"print({i} * int(input()))", "3", run_timeout=2)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(0, 12, 2):
        assert answers[i]["status"] == "Success" and answers[i]["run_result"]["stdout"] == f"{3 * i}\n"
    assert all(answers[i]["status"] == "Failed" for i in range(1, 12, 2))


def test_a_lost_executor_is_renewed_and_the_run_made_again():
    """The executor's server killed while a program runs: the run is made again on a renewed executor, and the
    answer is the program's, never a failure it did not cause."""
    srv = Server("--workers", "1")
    answers: list[dict] = []
    try:
        assert srv.run_code("print(1)")["status"] == "Success"
        caller = threading.Thread(target=lambda: answers.append(
            srv.run_code("import time\ntime.sleep(1)\nprint(2)", run_timeout=5)))
        caller.start()
        time.sleep(0.5)
        executors = [p for p in descendants(srv.proc.pid) if _is_executor(p)]
        assert executors
        for pid in executors:
            os.kill(pid, 9)
        caller.join()
        assert answers[0]["status"] == "Success" and answers[0]["run_result"]["stdout"] == "2\n", answers
        assert "pytest_apps_serve_executor_faults_total 1" in srv.get("/metrics")[1]
    finally:
        srv.stop()


def _is_executor(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[-2].endswith(b"executor/serve.py")
    except (OSError, IndexError):
        return False


# -- serving that cannot hang a trainer -----------------------------------------------------------------------


def test_a_request_that_cannot_start_in_time_is_504():
    srv = Server("--workers", "1", "--queue-timeout", "0.5")
    try:
        # a judged request keeps its place while it runs (a single run would step aside after a second)
        slow = threading.Thread(target=srv.post, args=("/judge", {"code": "import time\ntime.sleep(3)",
                                                                  "tests": {"inputs": [""], "outputs": [""]},
                                                                  "run_timeout": 5}))
        slow.start()
        time.sleep(0.8)
        started = time.monotonic()
        status, answer = srv.post("/run_code", {"code": "print(1)", "language": "python"})
        assert status == 504 and "busy" in answer["detail"] and time.monotonic() - started < 2.5
        slow.join()
        assert srv.run_code("print(1)")["status"] == "Success"
        assert 'endpoint="/run_code",code="504"} 1' in srv.get("/metrics")[1]
    finally:
        srv.stop()


def test_a_long_run_steps_aside_for_the_requests_queued_behind_it():
    """One worker: a program sleeping 4 s holds it for a second, then runs on beside it, and a short request sent
    behind it is answered while it still runs (with the same verdicts: the limit counts each program's own time)."""
    srv = Server("--workers", "1")
    try:
        done: dict[str, float] = {}

        def call(name: str, code: str) -> None:
            answer = srv.run_code(code, run_timeout=10)
            assert answer["status"] == "Success", answer
            done[name] = time.monotonic()

        long = threading.Thread(target=call, args=("long", "import time\ntime.sleep(4)\nprint('slept')"))
        long.start()
        time.sleep(0.3)
        call("short", "print('quick')")
        assert "long" not in done  # answered while the long run still ran
        long.join()
        assert done["long"] > done["short"]
        assert srv.get("/health")[1]["aside"] == 0  # (its place is given back when it ends)
        assert "pytest_apps_serve_stepped_aside_total 1" in srv.get("/metrics")[1].splitlines()
    finally:
        srv.stop()


def test_a_new_executors_start_is_not_a_long_run():
    """A run steps aside once its program has run `aside_after` seconds; the start of a new executor (an interpreter,
    the fence, the zygote: about half a second, far more on a busy machine) is not its program's run. Counted as one,
    every request that met a new executor stepped aside and made the next request start another, the places beside
    the workers filled with short runs, and programs at their time limit then held the workers for all of it: ordinary
    requests waited 9-17 s behind them (bench_serve)."""
    pool = Pool(workers=1, queue=4, wait=60, limits=Limits(timeout=4), aside_after=0.2)

    async def requests() -> list:
        return [await pool.run(lambda ex: ex.run_stdin(Program(code), ""), step_aside=True)
                for code in ("print(1)", "import time\ntime.sleep(0.6)\nprint(2)")]

    try:
        quick, slow = asyncio.run(requests())
    finally:
        pool.close()
    assert (quick.stdout, slow.stdout) == ("1\n", "2\n")
    assert pool.stepped == 1  # the sleeping program; not the first, which met a new executor


def test_a_run_that_found_no_place_aside_steps_aside_when_one_frees():
    """A run past `aside_after` with every place beside the workers taken keeps its worker; once a place frees, it
    steps aside then, not at its end: programs at their time limit arrive in bursts (a completion's tests at once),
    and a run that held its worker for its whole limit stopped every short request behind it (bench_serve: no
    request ended for 16 s while places beside the workers had been free for most of them)."""
    pool = Pool(workers=1, queue=4, wait=60, limits=Limits(timeout=10), aside_after=0.2, aside_per_worker=1)
    ends: dict[str, float] = {}

    async def one(name: str, code: str, after: float) -> str:
        await asyncio.sleep(after)
        out = await pool.run(lambda ex: ex.run_stdin(Program(code), ""), step_aside=True)
        ends[name] = time.monotonic()
        return out.stdout

    async def requests() -> list:
        return await asyncio.gather(one("aside", "import time\ntime.sleep(1.0)\nprint('a')", 0.0),
                                    one("held", "import time\ntime.sleep(3.0)\nprint('h')", 0.05),
                                    one("short", "print('s')", 0.9))

    try:
        outs = asyncio.run(requests())
    finally:
        pool.close()
    assert outs == ["a\n", "h\n", "s\n"]
    assert pool.stepped == 2  # the first at once, the second once the first had ended
    assert ends["short"] < ends["held"] - 1.0, ends  # it did not wait for the held run's end


def test_a_run_that_steps_aside_leaves_an_executor_started_for_the_request_behind_it():
    """The run aside keeps its executor; one kept started in standby lets the next request in to the worker at once,
    rather than that request starting one while it waits (under load most of a second each: a burst of long runs,
    each waiting for a start in turn, stopped every request behind them for seconds)."""
    pool = Pool(workers=1, queue=4, wait=60, limits=Limits(timeout=10), aside_after=0.2)

    async def requests() -> tuple:
        long = asyncio.ensure_future(pool.run(
            lambda ex: ex.run_stdin(Program("import time\ntime.sleep(6)\nprint('l')"), ""), step_aside=True))
        deadline = time.monotonic() + 30
        while (pool.stepped == 0 or pool.standby_starts == 0) and time.monotonic() < deadline and not long.done():
            await asyncio.sleep(0.02)
        assert pool.stepped == 1 and not long.done()
        short = await pool.run(lambda ex: ex.run_stdin(Program("print('s')"), ""), step_aside=True)
        return await long, short

    try:
        long, short = asyncio.run(requests())
        deadline = time.monotonic() + 30
        while pool.executors() != 2 and time.monotonic() < deadline:  # (a standby may still be starting)
            time.sleep(0.05)
        kept = pool.executors()
    finally:
        pool.close()
    assert (long.stdout, short.stdout) == ("l\n", "s\n")
    assert pool.cold_starts == 1 and pool.standby_starts >= 1  # the first request's; the short one found one started
    assert kept == 2  # one for the worker, one in standby (no run aside any more)


def test_closing_while_an_executor_starts_in_standby_leaves_no_process():
    """A standby executor still starting when the pool closes is closed once up, never kept: no process of it
    outlives the pool."""
    def executors_here() -> set[int]:
        found = set()
        for pid in descendants(os.getpid()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"pytest_apps/executor/serve.py" in f.read():
                        found.add(pid)
            except OSError:
                pass
        return found

    before = executors_here()  # (a module's server may have its own)
    pool = Pool(workers=1, queue=4, wait=60, limits=Limits(timeout=10), aside_after=0.1)

    async def requests() -> None:
        long = asyncio.ensure_future(pool.run(
            lambda ex: ex.run_stdin(Program("import time\ntime.sleep(20)"), ""), step_aside=True))
        deadline = time.monotonic() + 30
        while pool.stepped == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(pool.close, 0.2)  # (the standby is starting now)
        try:
            await long
        except Exception:  # noqa: BLE001 - its executor was stopped under it; what it says is not the point
            pass

    asyncio.run(requests())
    assert pool.stepped == 1
    deadline = time.monotonic() + 10
    while executors_here() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not executors_here() - before


BURN_CPU = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\nprint('done')\n"


def test_a_long_run_that_finds_the_places_taken_has_the_oldest_parked_and_passes_it():
    """One worker, one place aside: a program at its time limit is aside when a second long one comes; once the
    first has had three quarters of its limit, it is parked, and the second takes its place and ends first; the
    first then runs again and times out as it would have; a short request behind them does not wait for the
    first. Meanwhile the second, with no place free and the one worker held, gave the worker back and ran on
    beyond the places until it took the first's."""
    pool = Pool(workers=1, queue=4, wait=60, limits=Limits(timeout=2), aside_after=0.2, aside_per_worker=1,
                park_after=0.3)
    probe = Executor(Limits(timeout=1))
    try:
        if "cgroup-per-test" not in probe.isolation():
            pytest.skip("parking freezes the test's cgroup: none here (not root, no delegated cgroup)")
    finally:
        probe.close()
    ends: dict[str, float] = {}

    async def one(name: str, code: str, after: float, step_aside: bool = True):
        await asyncio.sleep(after)
        out = await pool.run(lambda ex: ex.run_stdin(Program(code), ""), step_aside=step_aside)
        ends[name] = time.monotonic()
        return out

    async def requests() -> list:
        return await asyncio.gather(one("old", "while True: pass", 0.0), one("new", BURN_CPU.format(s=1.5), 1.0),
                                    one("short", "print('s')", 2.0, False))

    try:
        old, new, short = asyncio.run(requests())
    finally:
        pool.close()
    assert pool.parks == 1 and pool.went_beyond == 1 and pool.stepped == 2
    assert (old.status, new.status, short.stdout) == ("timeout", "exited", "s\n")
    assert 2.0 <= old.own_time < 2.6 and new.own_time < 1.9  # no verdict moved: own time as the programs spent it
    assert ends["new"] < ends["old"]  # it passed the old one
    assert ends["short"] < ends["old"]  # the worker was not held by either


def test_a_long_run_that_would_hold_the_last_worker_goes_on_beyond_the_places_and_a_short_request_takes_it():
    """Two workers, two places aside, both taken by programs at their time limit; two more long programs come
    and find no place, each holding its worker; with every worker held (every request behind them then waited
    until a place freed or a held program ended: seconds, under a burst of long runs), the newest of them gives
    its worker back and runs on beyond the places: a short request is answered before either held program ends.
    Each long program keeps the verdict its own time gives it."""
    pool = Pool(workers=2, queue=8, wait=60, limits=Limits(timeout=2), aside_after=0.2, aside_per_worker=1)
    ends: dict[str, float] = {}
    seen = {"beyond": 0}

    async def one(name: str, after: float, code: str, step_aside: bool = True):
        await asyncio.sleep(after)
        out = await pool.run(lambda ex: ex.run_stdin(Program(code), ""), step_aside=step_aside)
        ends[name] = time.monotonic()
        return out

    async def short() -> object:
        await asyncio.sleep(0.8)
        while pool.went_beyond == 0 and pool.held() + pool.aside < 4:  # (once both long ones found no place)
            await asyncio.sleep(0.02)
        seen["beyond"] = pool.beyond()
        return await one("short", 0.0, "print('s')", False)

    async def requests() -> list:
        return await asyncio.gather(one("limit", 0.0, "while True: pass"), one("limit2", 0.0, "while True: pass"),
                                    one("long", 0.6, BURN_CPU.format(s=1.0)), one("long2", 0.6, BURN_CPU.format(s=1.0)),
                                    short())

    try:
        *runs, quick = asyncio.run(requests())
    finally:
        pool.close()
    assert quick.stdout == "s\n" and ends["short"] < min(ends["long"], ends["long2"]), ends
    assert seen["beyond"] == 1 and pool.went_beyond == 1  # one only: the other worker stays held
    assert [run.status for run in runs] == ["timeout", "timeout", "exited", "exited"]
    assert runs[2].own_time < 1.2 and runs[3].own_time < 1.2 and min(runs[0].own_time, runs[1].own_time) >= 2.0
    assert pool.beyond() == 0 and pool.held() == 0 and pool.aside == 0


def test_a_run_beyond_the_places_that_ends_lets_a_run_holding_the_worker_go_there():
    """One worker, one place: a long program in the place, a second beyond it (the worker was held), a third holding
    the worker (at most as many beyond as workers). When the one beyond ends, the held one goes beyond in its turn
    and a short request takes the worker at once, long before the place frees."""
    pool = Pool(workers=1, queue=8, wait=60, limits=Limits(timeout=10), aside_after=0.2, aside_per_worker=1)
    ends: dict[str, float] = {}

    async def one(name: str, after: float, code: str, step_aside: bool = True):
        await asyncio.sleep(after)
        out = await pool.run(lambda ex: ex.run_stdin(Program(code), ""), step_aside=step_aside)
        ends[name] = time.monotonic()
        return out

    async def short() -> object:
        while pool.held() == 0:  # (once the third holds the worker)
            await asyncio.sleep(0.02)
        return await one("short", 0.0, "print('s')", False)

    async def requests() -> list:
        return await asyncio.gather(one("place", 0.0, BURN_CPU.format(s=3.0)),
                                    one("beyond", 0.4, BURN_CPU.format(s=0.6)),
                                    one("held", 0.8, BURN_CPU.format(s=3.0)), short())

    try:
        *runs, quick = asyncio.run(requests())
    finally:
        pool.close()
    assert quick.stdout == "s\n" and [run.status for run in runs] == ["exited"] * 3
    assert pool.went_beyond == 2  # the second, then the third once the second had ended
    assert ends["beyond"] < ends["short"] < min(ends["place"], ends["held"]), ends


def test_sigterm_drains_requests_in_flight_and_stops_within_seconds():
    srv = Server("--workers", "1", "--drain", "10")
    answers: list[dict] = []
    try:
        srv.run_code("print(1)")
        executors = descendants(srv.proc.pid)
        caller = threading.Thread(target=lambda: answers.append(
            srv.run_code("import time\ntime.sleep(1.5)\nprint('done')", run_timeout=5)))
        caller.start()
        time.sleep(0.5)
        took = srv.stop()
        caller.join()
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
    assert answers and answers[0]["status"] == "Success" and answers[0]["run_result"]["stdout"] == "done\n"
    assert took < 6 and srv.proc.returncode in (0, -signal.SIGTERM)  # uvicorn ends by its signal, once drained
    time.sleep(0.5)
    assert [p for p in executors if os.path.exists(f"/proc/{p}") and _state(p) != "Z"] == []


# -- security -------------------------------------------------------------------------------------------------


def test_body_and_test_count_limits_are_413():
    srv = Server("--max-body", "4K", "--max-tests", "3")
    try:
        status, answer = srv.post("/run_code", {"code": "#" * 5000, "language": "python"})
        assert status == 413 and "--max-body" in answer["detail"]
        many = {"inputs": ["1\n"] * 4, "outputs": ["2\n"] * 4}
        status, answer = srv.post("/judge", {"code": "print(2)", "tests": many})
        assert status == 413 and "--max-tests" in answer["detail"]
        status, answer = srv.post("/judge", {"code": "print(2)", "tests": {"inputs": ["1\n"] * 3,
                                                                             "outputs": ["2\n"] * 3}})
        assert status == 200 and answer["accepted"]
    finally:
        srv.stop()


def test_a_public_bind_without_a_token_is_refused():
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_APPS_SERVE_TOKEN"}
    done = subprocess.run([sys.executable, "-m", "pytest_apps", "serve", "--host", "0.0.0.0", "--port", "0"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and "--host 0.0.0.0" in done.stderr and "token" in done.stderr
    short = subprocess.run([sys.executable, "-m", "pytest_apps", "serve", "--token", "short", "--port", "0"],
                           capture_output=True, text=True, timeout=60, env=env)
    assert short.returncode == 2 and "--token" in short.stderr


def test_the_token_is_required_in_a_header_or_the_path():
    token = "s3cret-token-of-some-length"
    srv = Server("--host", "0.0.0.0", env={**os.environ, "PYTEST_APPS_SERVE_TOKEN": token})
    srv.url = srv.url.replace("0.0.0.0", "127.0.0.1")
    body = {"code": "print(1)", "language": "python"}
    try:
        assert srv.post("/run_code", body)[0] == 401
        assert srv.post("/run_code", body, headers={"Authorization": "Bearer wrong-token-of-some-length"})[0] == 401
        assert srv.post("/run_code", body, headers={"Authorization": token})[0] == 401
        assert srv.post("/token/wrong/run_code", body)[0] == 401
        assert srv.get("/metrics")[0] == 401
        status, answer = srv.post("/run_code", body, headers={"Authorization": f"Bearer {token}"})
        assert status == 200 and answer["status"] == "Success"
        status, answer = srv.post(f"/token/{token}/run_code", body)
        assert status == 200 and answer["run_result"]["stdout"] == "1\n"
        assert srv.get("/health")[0] == 200  # the health check needs no token
        src = "import os\nprint([k for k, v in os.environ.items() if 'TOKEN' in k or %r in v])" % token
        status, answer = srv.post("/run_code", {"code": src, "language": "python"},
                                  headers={"Authorization": f"Bearer {token}"})
        assert answer["run_result"]["stdout"] == "[]\n"  # the program never sees the token
    finally:
        srv.stop()


def test_which_addresses_are_loopback():
    from pytest_apps.serve.cli import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "no-such-host.invalid"))
