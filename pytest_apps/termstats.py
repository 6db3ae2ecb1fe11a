"""pytest's terminal statistics, kept linear at the size of the APPS split.

The terminal reporter files every passed setup and teardown report under `stats[""]`, and for each failure
(and each pass, with -rP) it prints at the end it scans that whole list for the test's teardown sections:
quadratic in the number of tests. On the full split, where a weak model fails most of 100k cases, that is
hours of session end, and two reports per test held until then; each xdist worker runs that summary too, for
its own share, unseen, before it exits. Our cases' passed setup and teardown reports with no captured
sections have nothing for it to print: they leave that list as they arrive.
"""

from __future__ import annotations

from typing import Any

from .transport import is_case_report


def forget_quiet_phase(stats: dict[str, list[Any]], report: Any) -> bool:
    """Take `report` back out of `stats[""]` if it is one of our cases' quiet setup or teardown reports,
    just filed there (the last entry). True if it was taken out."""
    if getattr(report, "when", None) not in ("setup", "teardown") or not report.passed or report.sections:
        return False
    quiet = stats.get("")
    if not quiet or quiet[-1] is not report or not is_case_report(report):
        return False
    quiet.pop()
    return True
