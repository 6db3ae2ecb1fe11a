"""The case a lost xdist worker was running: counted once.

When a worker dies, xdist files a failed report for the case it was running (phase "???") and its loadscope
scheduler hands that case to another worker too, which would count it twice: a failure that is no verdict of the
program, and the verdict of its second run (two JUnit test cases, `executed` above the cases). Here the scheduler
(scheduling.py) runs it again once, unless its verdict had already reached the controller or it was running on a
lost worker before; the placeholder report then counts for nothing (`outcome` "rerun": neither passed nor failed)
and leaves the JUnit file. A case lost twice keeps xdist's failed report, and the run's `run` section says it has
no verdict ("worker lost").
"""

from __future__ import annotations

from typing import Any

RERUN = "rerun"  # the outcome of a placeholder report that counts for nothing (as pytest-rerunfailures names it)


def settle_crash_report(report: Any, run_again: bool, has_verdict: bool) -> bool:
    """Make xdist's placeholder report for a lost worker's case count for nothing when the case runs again or
    already has its verdict. Returns whether it was changed."""
    if not (run_again or has_verdict):
        return False
    report.outcome = RERUN
    report.longrepr = None
    return True


def teststatus(report: Any, run_again: bool) -> tuple[str, str, str]:
    """How the terminal shows a settled placeholder: "R" when the case runs again; nothing (filed with the quiet
    reports) when its verdict had arrived before its worker was lost."""
    return (RERUN, "R", "RERUN") if run_again else ("", "", "")


def forget_junit_case(plugins: Any, report: Any) -> int:
    """Take the test case that --junitxml opened for a placeholder report (a case that runs again) out of the
    file. Returns how many were taken out (none where pytest keeps them otherwise)."""
    node = getattr(report, "node", None)
    taken = 0
    for plugin in plugins:
        if type(plugin).__name__ != "LogXML":
            continue
        reporters = getattr(plugin, "node_reporters", None)
        ordered = getattr(plugin, "node_reporters_ordered", None)
        if not isinstance(reporters, dict) or not isinstance(ordered, list):
            continue
        for key, reporter in list(reporters.items()):
            if (isinstance(key, tuple) and len(key) == 2 and key[1] is node
                    and report.nodeid in (str(key[0]), getattr(reporter, "id", None))):
                del reporters[key]
                if reporter in ordered:
                    ordered.remove(reporter)
                taken += 1
    return taken
