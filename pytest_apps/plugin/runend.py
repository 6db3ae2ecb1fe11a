"""How the run ended, decided on the controller from plain values: its `run` section (what every selected case
became, and why a case has no verdict) and the exit status the gates, lost workers and unwritten reports give.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..report.gates import Gate, passed
from ..report.received import CaseRecords
from .ledger import Ledger
from .state import ControllerState
from .writers import REPORT_NOT_WRITTEN, lacking_verdicts, run_section


def interruption(session: pytest.Session, signal_name: str | None) -> str | None:
    """What stopped the run early, if anything: the signal, an interrupt, `-x` or `--maxfail`."""
    if session.exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop:
        return signal_name or ("interrupted" if session.exitstatus == pytest.ExitCode.INTERRUPTED
                               else str(session.shouldstop))
    if session.shouldfail:
        return str(session.shouldfail)
    return None


def run_of(controller: ControllerState, ledger: Ledger, records: CaseRecords, *, selected: int | None,
           selected_ids: set[str] | None, interrupted: str | None, crashed: str | None) -> dict[str, Any]:
    """The report's `run` section, with the records of cases this run did not run taken from the store."""
    ledger.check_store()
    executed = len(ledger.executed)
    reused = sum(1 for nodeid in ledger.reused if nodeid in records)
    ledger.carry(records)
    for down in controller.workers_down:  # given to another worker, but xdist stopped before it ran
        if down.get("run_again") and down["crashed"] not in records:
            down["run_again"] = False
    lacking = lacking_verdicts(
        ledger.cases, records, interrupted=interrupted, workers_lost=bool(controller.workers_down),
        lost=[down["crashed"] for down in controller.workers_down if down["crashed"]],
        skipped_by_design=ledger.skipped_by_design(records), selected=selected_ids)
    return run_section(
        cases=len(ledger.cases), selected=selected, executed=executed, reused=reused,
        carried=ledger.carried, without_result=ledger.without_result(records),
        interrupted=interrupted, workers_lost=len(controller.workers_down), rerun=ledger.executed,
        store=ledger.folder, resume=ledger.resume, dropped=ledger.dropped_text(),
        started_in=controller.started_in, not_selected=ledger.not_selected(records, selected_ids),
        crashed=crashed, store_failed=ledger.failed, not_kept=ledger.not_kept, lacking=lacking,
    )


def exit_status(status: int, gates: list[Gate | None], cases_not_run: int, unwritten: list[str]) -> int:
    """The session's exit status once the reports are written: the gates decide a run whose cases ran ("no
    tests ran" included: the README promises 0 or 1), a run that lost cases with a worker is not a pass, and a
    report not written is its own status."""
    gates_passed = passed(gates)  # either failing fails the run
    ran = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
    if gates_passed is not None and status in ran:
        status = pytest.ExitCode.OK if gates_passed else pytest.ExitCode.TESTS_FAILED
    if cases_not_run and status in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        # (nor "no tests": xdist stopped before any ran)
        status = pytest.ExitCode.TESTS_FAILED
    if unwritten and status != pytest.ExitCode.INTERRUPTED:
        status = REPORT_NOT_WRITTEN  # not "tests failed": the run's output is missing
    return status
