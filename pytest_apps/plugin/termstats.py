"""pytest's terminal statistics, kept linear in time and bounded in memory at the size of the APPS split.

The terminal reporter keeps every report it is given, by category. Two costs follow at 100k cases:

- On the controller, every passed setup and teardown report is filed under `stats[""]`, and for each failure
  (and each pass, with -rP) it prints at the end, the reporter scans that whole list for the test's teardown
  sections: quadratic in the number of tests (hours of session end when a weak model fails most of the
  split). Our cases' passed setup and teardown reports with no captured sections have nothing for it to
  print: they leave that list as they arrive. Everything it shows stays.
- Each xdist worker has a terminal reporter too, whose output nobody sees: it would keep all of its share of
  the reports (about 3 KB per case) and run the same quadratic summary before exiting. Our cases' reports
  leave a worker's statistics as they arrive.
"""

from __future__ import annotations

from typing import Any

from .transport import is_case_report


def forget_quiet_phase(stats: dict[str, list[Any]], report: Any) -> bool:
    """Controller: take `report` back out of `stats[""]` if it is one of our cases' quiet setup or teardown
    reports, just filed there (the last entry). True if it was taken out."""
    if getattr(report, "when", None) not in ("setup", "teardown") or not report.passed or report.sections:
        return False
    quiet = stats.get("")
    if not quiet or quiet[-1] is not report or not is_case_report(report):
        return False
    quiet.pop()
    return True


def forget_on_worker(stats: dict[str, list[Any]], report: Any) -> bool:
    """xdist worker: take one of our cases' reports, just filed (the last entry of its category), out of the
    unseen terminal's statistics. True if it was taken out."""
    if not is_case_report(report):
        return False
    for filed in stats.values():
        if filed and filed[-1] is report:
            filed.pop()
            return True
    return False
