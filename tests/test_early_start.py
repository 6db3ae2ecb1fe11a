"""The executor's server starts early, so that its interpreter start, fence set-up and the zygote's preload
overlap the pytest process's own start and collection instead of following them: `Executor.start()` returns
at once, and a run that turns the plugin on starts its server when it configures, before its first item."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_apps.core.outcome import RUN_EXITED as EXITED
from pytest_apps.executor import Executor, Program


def children_serving(pid: int) -> list[int]:
    """The executor servers that are children of process `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # (gone meanwhile)
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"pytest_apps/executor/serve.py" in cmdline:
            found.append(int(entry.name))
    return found


def test_start_returns_before_the_server_answers_and_the_first_run_uses_it() -> None:
    with Executor() as ex:
        ex.start()
        assert len(children_serving(os.getpid())) >= 1  # spawned...
        started = ex._server.proc  # noqa: SLF001 - the same process runs the first program
        out = ex.run_stdin(Program("print(input())"), "hi\n")
        assert (out.status, out.stdout) == (EXITED, "hi\n")
        assert ex._server.proc is started  # noqa: SLF001
        assert ex.isolation()  # the greeting was read once, its layers kept


def test_a_server_that_dies_after_start_is_started_again() -> None:
    with Executor() as ex:
        ex.start()
        pid = ex._server.proc.pid  # noqa: SLF001
        os.kill(pid, 9)
        deadline = time.monotonic() + 30
        while ex._server.proc.poll() is None and time.monotonic() < deadline:  # noqa: SLF001
            time.sleep(0.01)
        out = ex.run_stdin(Program("print(6 * 7)"), "")
        assert (out.status, out.stdout) == (EXITED, "42\n")


def test_start_after_close_starts_nothing() -> None:
    ex = Executor()
    ex.close()
    ex.start()
    assert children_serving(os.getpid()) == [] or ex._server.proc is None  # noqa: SLF001


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_run_has_its_server_before_its_first_item(sample_project: pytest.Pytester, workers: list[str]) -> None:
    """Each process that runs cases (the only one, or each xdist worker) has a server running when its first
    item is set up: a conftest hook that runs before the plugin's own item set-up looks for it."""
    sample_project.makeconftest("""
        import os, pytest
        from pathlib import Path
        SEEN = []

        def servers():
            out = []
            for e in Path("/proc").iterdir():
                try:
                    if (e.name.isdigit() and int((e / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid()
                            and b"pytest_apps/executor/serve.py" in (e / "cmdline").read_bytes()):
                        out.append(e.name)
                except OSError:
                    pass
            return out

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_setup(item):
            if not SEEN:
                SEEN.append(1)
                assert servers(), "no executor server before the first item"
        """)
    result = sample_project.runpytest_subprocess("--apps-dataset", "sample", "-p", "no:cacheprovider", "-q",
                                                 *workers)
    assert result.ret == 0, result.stdout.str()


def test_a_stop_without_waiting_returns_at_once_and_the_next_close_leaves_no_server() -> None:
    """`close(wait=False)` tells the server to stop and returns while it cleans up (the caller writes its reports
    meanwhile); the next `close()` waits for it: no server is left behind."""
    ex = Executor()
    out = ex.run_stdin(Program("print(input())"), "hi\n")
    assert (out.status, out.stdout) == (EXITED, "hi\n")
    server = ex._server_pid()  # noqa: SLF001
    ex.close(wait=False)
    assert ex._server.stopping is not None and ex._server.stopping.pid == server  # noqa: SLF001 - told, not waited for
    ex.close()
    assert ex._server.stopping is None and children_serving(os.getpid()) == []  # noqa: SLF001
    assert not Path(f"/proc/{server}").exists()  # exited and reaped


def test_a_speed_asked_ahead_is_read_by_machine_speed_and_never_taken_for_a_runs_answer() -> None:
    with Executor() as ex:
        ex.start()
        ex.ask_speed()
        assert ex.machine_speed() > 0
        ex.ask_speed()
        out = ex.run_stdin(Program("print(6 * 7)"), "")  # the speed's answer is not this run's
        assert (out.status, out.stdout) == (EXITED, "42\n")
        assert ex.machine_speed() > 0
