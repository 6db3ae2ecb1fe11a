"""How a run ended: from what the server saw of a child to the run's status and fields.

Plain functions of plain values (no processes): the server's watch loop waits, drains the child's pipes and keeps
the clocks, then hands what it saw here as a `RunEnd`, with the wait status and resource usage the kernel gave the
child's parent. `read_report` reads the child's report pipe (one JSON object a line, written by `child.py`): the
program can write there too, so nothing on it decides how the run ended, only what a call returned and what an
exception said; `stop_reason` and `outcome` decide the status and the error line.

Standard library only: the server imports this as part of its private package.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass

from .protocol import (RUN_COMPILE_ERROR, RUN_EXITED, RUN_HARNESS_ERROR, RUN_MEMORY, RUN_OUTPUT_LIMIT, RUN_SIGNALED,
                       RUN_TIMEOUT, STDERR_TAIL)

RUN_BACKSTOP = "backstop"  # why a run was stopped (reported as a timeout)
RUN_FILES = "files"  # why a run ended: its files met the file-size limit (reported as output_limit)


@dataclass(slots=True, eq=False)
class RunEnd:
    """What the server saw of one run once its child was gone. `limits` are the run's (timeout, band, backstop,
    output, file_size); `stopped` is why the watch stopped it (RUN_TIMEOUT, RUN_BACKSTOP, RUN_OUTPUT_LIMIT), None
    when it ended by itself; `status` its wait status and `usage_cpu`, `maxrss` its CPU seconds and peak resident
    bytes, as its parent's wait4 told; `wall`, `own`, `cpu` the clock's seconds (clock.py); `out`,
    `err`, `rep` what was read from its pipes; `leftovers` the processes it left behind; `folder_full` whether its
    folder had no room left (looked at only when it died of SIGBUS)."""

    limits: dict
    stopped: str | None
    status: int
    usage_cpu: float
    maxrss: int
    wall: float
    own: float
    cpu: float
    out: bytes | bytearray
    err: bytes | bytearray
    rep: bytes | bytearray
    leftovers: int = 0
    folder_full: bool = False


@dataclass(slots=True, eq=False)
class ChildReport:
    """What the child's report pipe said: `ready` once the program was about to run; before that, `harness`, why
    the child's setup failed; after it, the call's `value_json`, the program's `exception` (its report line: "line",
    and "memory" or "files" when it was a MemoryError or a full folder) and `load_error` (it did not load)."""

    ready: bool = False
    harness: str | None = None
    value_json: str | None = None
    exception: dict | None = None
    load_error: str | None = None


def read_report(rep: bytes | bytearray) -> ChildReport:
    """Every line of the report pipe in order; lines that are not JSON objects, and those out of their place
    (a value before "ready", a setup failure after it), are passed over."""
    report = ChildReport()
    for line in bytes(rep).split(b"\n"):
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        kind = msg.get("kind")
        if kind == "ready":
            report.ready = True
        elif kind == "harness" and not report.ready:
            report.harness = str(msg.get("error", "child setup failed"))
        elif kind == "value" and report.ready and isinstance(msg.get("json"), str):
            report.value_json = msg["json"]
        elif kind == "exception" and report.ready:
            report.exception = msg
        elif kind == "load_error" and report.ready:
            report.load_error = str(msg.get("line", ""))
    return report


def stop_reason(stopped: str | None, own: float, limits: dict) -> str | None:
    """Why the run is over: why the watch stopped it, else RUN_TIMEOUT when it ended by itself but with its own
    time at or past the limit, else None (it ended by itself, in time)."""
    if stopped is None and own >= limits["timeout"]:
        return RUN_TIMEOUT
    return stopped


def bus_error(status: int) -> bool:
    """Whether the wait status is a death by SIGBUS (a page of a mapped file it could not have)."""
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGBUS


def outcome(end: RunEnd) -> tuple[dict, bytes]:
    """The run's result fields (an Outcome's, but its stdout) and its standard output, cut at the output limit
    when that is why it failed."""
    lim, own, status = end.limits, end.own, end.status
    reason = stop_reason(end.stopped, own, lim)
    if reason is None and len(end.out) > lim["output"]:
        reason = RUN_OUTPUT_LIMIT  # read after it had ended
    if bus_error(status) and end.folder_full:
        reason = RUN_FILES  # a page of a mapped file it could not have: its folder was full
    res = {"wall_time": end.wall, "own_time": own, "cpu_time": end.cpu, "peak_memory": end.maxrss, "error": "",
           "exit_code": None, "signal": None, "value_json": None}
    if os.WIFSIGNALED(status):
        res["signal"] = os.WTERMSIG(status)
    elif os.WIFEXITED(status):
        res["exit_code"] = os.WEXITSTATUS(status)
    report = read_report(end.rep)
    ready, exc = report.ready, report.exception
    res["value_json"] = report.value_json
    tail = bytes(end.err[-STDERR_TAIL:]).decode("utf-8", "replace")
    res["stderr_tail"] = tail
    sig = res["signal"]
    if reason == RUN_TIMEOUT:
        res.update(status=RUN_TIMEOUT, error=f"time limit of {lim['timeout']:g} s exceeded (own time {own:.2f} s)")
    elif reason == RUN_BACKSTOP:
        res.update(status=RUN_TIMEOUT, error=f"stopped by the wall-clock backstop of "
                                             f"{lim['timeout'] * lim['backstop']:g} s (own time {own:.2f} s)")
    elif reason == RUN_OUTPUT_LIMIT:
        res.update(status=RUN_OUTPUT_LIMIT, error=f"output limit of {lim['output']} bytes exceeded")
    elif reason == RUN_FILES or (ready and exc is not None and exc.get("files")):
        why = str(exc.get("line", "")) if exc is not None else "killed by signal SIGBUS"
        res.update(status=RUN_OUTPUT_LIMIT, error=f"file-size limit of {lim['file_size']} bytes exceeded (the "
                                                  f"program's files together, /tmp included): {why}")
    elif sig in (signal.SIGXCPU,) or (sig == signal.SIGKILL and max(end.cpu, end.usage_cpu) >= lim["timeout"]):
        res.update(status=RUN_TIMEOUT, error="CPU time limit exceeded")
    elif not ready:
        res.update(status=RUN_HARNESS_ERROR, error=report.harness or f"child died before the program ran "
                                                                     f"(status {status})")
    elif report.load_error is not None and exc is None:
        res.update(status=RUN_COMPILE_ERROR, error=report.load_error)
    elif exc is not None and exc.get("memory"):
        res.update(status=RUN_MEMORY, error=str(exc.get("line", "MemoryError")))
    elif sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        res.update(status=RUN_SIGNALED, error=f"killed by signal {name}")
    else:
        res["status"] = RUN_EXITED
        if exc is not None:
            res["error"] = str(exc.get("line", ""))
        elif res["exit_code"]:
            lines = [ln for ln in tail.strip().splitlines() if ln.strip()]
            res["error"] = f"exit status {res['exit_code']}" + (f": {lines[-1].strip()}" if lines else "")
    if end.leftovers:
        res["leftovers"] = end.leftovers
    if res["status"] == RUN_OUTPUT_LIMIT:
        return res, bytes(memoryview(end.out)[: lim["output"]])
    return res, bytes(end.out)
