"""How a run ended, decided from plain values: the child's report read, and the end classified into a status and
an error line (`pytest_apps.executor.ending`), without a process."""

from __future__ import annotations

import dataclasses
import json
import signal

import pytest

from pytest_apps.core.outcome import Outcome
from pytest_apps.executor import Limits
from pytest_apps.executor.ending import (RUN_BACKSTOP, RUN_FILES, RunEnd, bus_error, outcome,
                                         read_report, stop_reason)
from pytest_apps.executor.protocol import (READY_LINE, RUN_COMPILE_ERROR, RUN_EXITED, RUN_HARNESS_ERROR, RUN_MEMORY,
                                           RUN_OUTPUT_LIMIT, RUN_SIGNALED, RUN_TIMEOUT, STDERR_TAIL)

LIMITS = dataclasses.asdict(Limits(timeout=2.0, output=100, file_size=4096, memory=0))


def exited(code: int) -> int:
    return (code & 0xFF) << 8  # a wait status, as os.waitpid gives it


def killed(sig: int) -> int:
    return int(sig)


def line(**msg) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def done(status: int = 0, cpu: float = 0.01, maxrss: int = 1 << 20) -> bytes:
    """A "done" line as a program could forge it on the report pipe (the child itself writes none)."""
    return b'{"kind": "done", "status": %d, "cpu": %r, "maxrss": %d}\n' % (status, cpu, maxrss)


def end(rep: bytes = READY_LINE, status: int = exited(0), **kw) -> RunEnd:
    fields = dict(limits=LIMITS, stopped=None, status=status, usage_cpu=0.01, maxrss=1 << 20, wall=0.05, own=0.05,
                  cpu=0.01, out=b"", err=b"", rep=rep)
    fields.update(kw)
    return RunEnd(**fields)


# -- the child's report ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("status", [killed(signal.SIGSEGV), killed(signal.SIGKILL), exited(3)],
                         ids=["segfault", "killed", "exit-3"])
def test_a_done_line_the_program_wrote_changes_nothing(status):
    """The report pipe is the program's to write as well: a "done, status 0" line written before a crash or a failing
    exit is a claim, and the wait status the kernel gave decides."""
    forged = READY_LINE + line(kind="value", json="[1, 2]") + done(status=0)
    res, _ = outcome(end(rep=forged, status=status, out=bytearray(b"42\n")))
    assert res["status"] != RUN_EXITED or res["exit_code"] == 3
    assert (res["signal"], res["exit_code"]) == ((status, None) if status < 256 else (None, 3))


def test_the_report_is_read_in_order_and_lines_out_of_place_are_passed_over():
    rep = (line(kind="value", json="0")  # before ready: not the program's
           + line(kind="exception", line="early") + b"not json\n" + b"[1, 2]\n" + READY_LINE
           + line(kind="harness", error="too late")  # after ready: the program is running, not the setup
           + line(kind="value", json=5)  # not a str
           + line(kind="value", json='"first"') + line(kind="value", json='"last"') + b"\n"
           + line(kind="exception", memory=False, line="ValueError: x") + line(kind="load_error", line="SyntaxError"))
    report = read_report(rep)
    assert report.ready is True
    assert report.harness is None
    assert report.value_json == '"last"'
    assert report.exception == {"kind": "exception", "memory": False, "line": "ValueError: x"}
    assert report.load_error == "SyntaxError"


def test_a_report_before_ready_says_only_why_the_setup_failed():
    report = read_report(line(kind="harness", error="child setup failed: OSError: x") + line(kind="value", json="1"))
    assert (report.ready, report.harness, report.value_json, report.exception) == (
        False, "child setup failed: OSError: x", None, None)
    assert read_report(line(kind="harness")).harness == "child setup failed"
    assert read_report(b"").ready is False


def test_a_truncated_report_line_is_passed_over():
    report = read_report(READY_LINE + line(kind="value", json="42")[:-6])
    assert report.ready is True
    assert report.value_json is None


# -- why the run is over -----------------------------------------------------------------------------------------

def test_own_time_just_under_the_limit_is_in_time_and_at_it_is_a_timeout():
    assert stop_reason(None, 1.999, LIMITS) is None
    assert stop_reason(None, 2.0, LIMITS) == RUN_TIMEOUT
    assert stop_reason(None, 2.5, LIMITS) == RUN_TIMEOUT


def test_why_the_watch_stopped_it_wins_over_its_own_time():
    for stopped in (RUN_TIMEOUT, RUN_BACKSTOP, RUN_OUTPUT_LIMIT):
        assert stop_reason(stopped, 0.1, LIMITS) == stopped
        assert stop_reason(stopped, 3.0, LIMITS) == stopped


def test_bus_error_is_a_death_by_sigbus_only():
    assert bus_error(killed(signal.SIGBUS)) is True
    assert bus_error(killed(signal.SIGKILL)) is False
    assert bus_error(exited(signal.SIGBUS)) is False  # an exit code of 7 is no signal
    assert bus_error(exited(0)) is False


# -- the end classified ------------------------------------------------------------------------------------------

def test_a_clean_exit_carries_its_figures_value_and_output():
    res, out = outcome(end(rep=READY_LINE + line(kind="value", json="[1, 2]"), out=bytearray(b"hi\n"),
                           err=b"warning\n", wall=0.5, own=0.4, cpu=0.3, maxrss=12345))
    assert res == {"wall_time": 0.5, "own_time": 0.4, "cpu_time": 0.3, "peak_memory": 12345, "error": "",
                   "exit_code": 0, "signal": None, "value_json": "[1, 2]", "stderr_tail": "warning\n",
                   "status": RUN_EXITED}
    assert out == b"hi\n"
    assert isinstance(out, bytes)
    assert Outcome(**res, stdout=out.decode()).status == RUN_EXITED  # the fields are an Outcome's


def test_own_time_just_under_the_limit_exits_and_at_the_limit_times_out():
    under, _ = outcome(end(own=1.999, wall=2.4))
    assert (under["status"], under["error"]) == (RUN_EXITED, "")
    at, _ = outcome(end(own=2.0, wall=2.4))
    assert (at["status"], at["error"]) == (RUN_TIMEOUT, "time limit of 2 s exceeded (own time 2.00 s)")
    assert at["exit_code"] == 0  # it had ended by itself


def test_stopped_over_its_own_time_is_a_timeout_even_when_killed():
    res, _ = outcome(end(stopped=RUN_TIMEOUT, status=killed(signal.SIGKILL), own=2.2, wall=2.3))
    assert (res["status"], res["error"]) == (RUN_TIMEOUT, "time limit of 2 s exceeded (own time 2.20 s)")
    assert (res["signal"], res["exit_code"]) == (signal.SIGKILL, None)


def test_the_wall_clock_backstop_is_a_timeout_naming_the_backstop():
    res, _ = outcome(end(stopped=RUN_BACKSTOP, status=killed(signal.SIGKILL), own=0.3, wall=20.0))
    assert res["status"] == RUN_TIMEOUT
    assert res["error"] == f"stopped by the wall-clock backstop of {2.0 * LIMITS['backstop']:g} s (own time 0.30 s)"


def test_a_signal_after_a_limit_was_reached_reports_the_limit_not_the_signal():
    for sig in (signal.SIGSEGV, signal.SIGXCPU, signal.SIGBUS):
        res, _ = outcome(end(stopped=RUN_TIMEOUT, status=killed(sig), own=2.3))
        assert (res["status"], res["signal"]) == (RUN_TIMEOUT, sig)
        assert res["error"].startswith("time limit of 2 s exceeded")
    res, out = outcome(end(stopped=RUN_OUTPUT_LIMIT, status=killed(signal.SIGKILL), out=b"x" * 150))
    assert (res["status"], res["error"]) == (RUN_OUTPUT_LIMIT, "output limit of 100 bytes exceeded")
    assert out == b"x" * 100


def test_output_read_after_the_end_over_the_limit_is_cut_to_it():
    res, out = outcome(end(out=bytearray(b"y" * 101)))
    assert (res["status"], res["error"]) == (RUN_OUTPUT_LIMIT, "output limit of 100 bytes exceeded")
    assert out == b"y" * 100


def test_output_at_the_limit_is_kept_whole():
    res, out = outcome(end(out=b"z" * 100))
    assert res["status"] == RUN_EXITED
    assert out == b"z" * 100


def test_a_timeout_keeps_all_the_output_it_read():
    res, out = outcome(end(stopped=RUN_TIMEOUT, own=2.2, out=b"z" * 101))
    assert res["status"] == RUN_TIMEOUT
    assert out == b"z" * 101


def test_sigbus_with_its_folder_full_is_the_file_size_limit():
    res, _ = outcome(end(status=killed(signal.SIGBUS), folder_full=True))
    assert res["status"] == RUN_OUTPUT_LIMIT
    assert res["error"] == ("file-size limit of 4096 bytes exceeded (the program's files together, /tmp included): "
                            "killed by signal SIGBUS")
    # even over its time: the folder is why it died
    assert outcome(end(status=killed(signal.SIGBUS), folder_full=True, stopped=RUN_TIMEOUT, own=2.2))[0][
        "status"] == RUN_OUTPUT_LIMIT


def test_sigbus_with_room_left_is_a_signal():
    res, _ = outcome(end(status=killed(signal.SIGBUS), folder_full=False))
    assert (res["status"], res["error"]) == (RUN_SIGNALED, "killed by signal SIGBUS")
    res, _ = outcome(end(status=killed(signal.SIGSEGV), folder_full=True))  # full, but not what killed it
    assert (res["status"], res["error"]) == (RUN_SIGNALED, "killed by signal SIGSEGV")


def test_its_files_over_the_limit_reported_by_the_child():
    rep = READY_LINE + line(kind="exception", memory=False, files=True, line="OSError: [Errno 28] No space left")
    res, _ = outcome(end(rep=rep, status=exited(1)))
    assert res["status"] == RUN_OUTPUT_LIMIT
    assert res["error"].endswith("/tmp included): OSError: [Errno 28] No space left")


def test_sigxcpu_is_the_cpu_time_limit():
    res, _ = outcome(end(status=killed(signal.SIGXCPU), own=0.5))
    assert (res["status"], res["error"], res["signal"]) == (RUN_TIMEOUT, "CPU time limit exceeded", signal.SIGXCPU)


def test_sigkill_is_the_cpu_time_limit_only_with_the_cpu_time_at_it():
    by_clock, _ = outcome(end(status=killed(signal.SIGKILL), cpu=2.0, usage_cpu=0.1, own=1.5))
    by_usage, _ = outcome(end(status=killed(signal.SIGKILL), cpu=0.1, usage_cpu=2.0, own=1.5))
    under, _ = outcome(end(status=killed(signal.SIGKILL), cpu=1.99, usage_cpu=1.99, own=1.5))
    assert (by_clock["status"], by_clock["error"]) == (RUN_TIMEOUT, "CPU time limit exceeded")
    assert (by_usage["status"], by_usage["error"]) == (RUN_TIMEOUT, "CPU time limit exceeded")
    assert (under["status"], under["error"]) == (RUN_SIGNALED, "killed by signal SIGKILL")


def test_a_child_that_never_got_ready_is_a_harness_error():
    res, _ = outcome(end(rep=b"", status=exited(125)))
    assert (res["status"], res["error"]) == (RUN_HARNESS_ERROR, f"child died before the program ran (status {125 << 8})")
    res, _ = outcome(end(rep=line(kind="harness", error="child setup failed: PermissionError: x"), status=exited(125)))
    assert (res["status"], res["error"]) == (RUN_HARNESS_ERROR, "child setup failed: PermissionError: x")
    res, _ = outcome(end(rep=b"", status=killed(signal.SIGSEGV)))  # a crash before ready is the harness's
    assert res["status"] == RUN_HARNESS_ERROR


def test_a_program_that_did_not_load_is_a_compile_error():
    res, _ = outcome(end(rep=READY_LINE + line(kind="load_error", line="SyntaxError: bad"),
                         status=exited(255)))
    assert (res["status"], res["error"], res["exit_code"]) == (RUN_COMPILE_ERROR, "SyntaxError: bad", 255)
    # an exception beside it is the program's own
    rep = READY_LINE + line(kind="load_error", line="x") + line(kind="exception", line="NameError: y")
    assert outcome(end(rep=rep, status=exited(1)))[0]["error"] == "NameError: y"


def test_a_memory_error_is_the_memory_status():
    res, _ = outcome(end(rep=READY_LINE + line(kind="exception", memory=True, line="MemoryError"), status=exited(1)))
    assert (res["status"], res["error"]) == (RUN_MEMORY, "MemoryError")
    res, _ = outcome(end(rep=READY_LINE + line(kind="exception", memory=True), status=exited(1)))
    assert res["error"] == "MemoryError"


def test_a_signal_names_itself_or_its_number():
    res, _ = outcome(end(status=killed(signal.SIGSEGV)))
    assert (res["status"], res["error"], res["signal"], res["exit_code"]) == (
        RUN_SIGNALED, "killed by signal SIGSEGV", signal.SIGSEGV, None)
    res, _ = outcome(end(status=killed(signal.SIGRTMIN + 3)))
    assert (res["status"], res["error"]) == (RUN_SIGNALED, f"killed by signal {int(signal.SIGRTMIN) + 3}")


def test_an_exception_is_an_exit_with_its_line():
    rep = READY_LINE + line(kind="exception", memory=False, line="ZeroDivisionError: division by zero")
    res, _ = outcome(end(rep=rep, status=exited(1), err=b"Traceback ...\nZeroDivisionError: division by zero\n"))
    assert (res["status"], res["error"], res["exit_code"]) == (RUN_EXITED, "ZeroDivisionError: division by zero", 1)


def test_a_nonzero_exit_says_its_status_and_the_last_line_of_stderr():
    res, _ = outcome(end(status=exited(3), err=b"first\n  last words  \n\n  \n"))
    assert (res["status"], res["error"]) == (RUN_EXITED, "exit status 3: last words")
    res, _ = outcome(end(status=exited(3), err=b" \n"))
    assert res["error"] == "exit status 3"


def test_stderr_is_kept_by_its_tail_and_decoded_with_replacements():
    err = b"a" * STDERR_TAIL + b"\xff" + b"b" * 9
    res, _ = outcome(end(err=bytearray(err)))
    assert res["stderr_tail"] == "a" * (STDERR_TAIL - 10) + "\ufffd" + "b" * 9


def test_leftover_processes_are_counted_only_when_there_were_some():
    assert outcome(end(leftovers=2))[0]["leftovers"] == 2
    assert "leftovers" not in outcome(end(leftovers=0))[0]


def test_every_status_the_end_can_have_is_one_an_outcome_knows():
    from pytest_apps.executor import protocol

    cases = [end(), end(own=2.0), end(stopped=RUN_BACKSTOP), end(out=b"x" * 101), end(rep=b""),
             end(status=killed(signal.SIGSEGV)), end(rep=READY_LINE + line(kind="load_error", line="e")),
             end(rep=READY_LINE + line(kind="exception", memory=True, line="MemoryError")),
             end(status=killed(signal.SIGBUS), folder_full=True)]
    statuses = {outcome(c)[0]["status"] for c in cases}
    assert statuses == {protocol.RUN_EXITED, protocol.RUN_TIMEOUT, protocol.RUN_OUTPUT_LIMIT,
                        protocol.RUN_HARNESS_ERROR, protocol.RUN_SIGNALED, protocol.RUN_COMPILE_ERROR,
                        protocol.RUN_MEMORY}
    assert RUN_FILES not in statuses and RUN_BACKSTOP not in statuses  # reasons, reported as statuses
