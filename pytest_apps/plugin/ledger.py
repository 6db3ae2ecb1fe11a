"""The controller's side of the record store (engine/records.py): which cases the plan holds and under which
node ids, each case's key, which records are reused (`--apps-resume`), the records this run writes, and the
ones carried into the report for cases this run did not run.

Only the controller (or the only process) makes a Ledger; workers and remote gateways never see the store.
Reuse is a scheduling decision: a reused case is not sent to a worker (scheduling.py leaves it out of the
work; without xdist, it is taken out of the items), and the controller reports it from its record, as a
pytest test report of its recorded outcome, so the terminal, JUnit and --lf count it as a run case would.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..candidates.sources import Candidate
from ..core.outcome import PASS
from ..core.record import CaseRecord
from ..core.wording import counted
from ..dataset.problems import Problem, case_order
from ..engine.records import JudgeKey, RecordStore, case_digest, case_key
from . import nodeids
from .plan import PlanTestData
from .state import ControllerState, RunState
from .transport import LOCATION_PREFIX

HARNESS_ERROR = "harness_error"  # a fault of the harness is no function of the key: never kept


@dataclass(frozen=True)
class PlannedCase:
    """One case of the plan, named as the controller's pytest names its item."""

    nodeid: str
    location: tuple[str, int, str]
    rerun_id: str  # the node id spelled from where the run was started
    problem: Problem
    candidate: Candidate
    index: int


def case_names(entries: list[tuple[Problem, list[Candidate]]],
               fail_fast: bool) -> Iterator[tuple[tuple[str, ...], Problem, Candidate, int]]:
    """The names below a candidate file of each of its case items, as collect.CandidateFile collects them."""
    first = entries[0][1][0] if entries and entries[0][1] else None
    single = (first is not None and len(entries) == 1 and len(entries[0][1]) == 1 and not first.label
              and not first.shared)
    for problem, candidates in entries:
        for cand in candidates:
            if not cand.has_code:  # one no-code item, which runs nothing: no case of the plan
                continue
            if single:
                above: tuple[str, ...] = ()
            elif len(candidates) == 1 and not cand.label:
                above = (problem.id,)
            else:
                above = (problem.id, cand.label or f"sample_{cand.sample}")
            for index in case_order(problem, fail_fast):
                yield (*above, f"test_{index}"), problem, cand, index


def planned_cases(by_file: dict[str, list[tuple[Problem, list[Candidate]]]], rootdir: Path, invocation_dir: Path,
                  args: Iterable[str], fail_fast: bool) -> dict[str, PlannedCase]:
    """Every case of the plan by node id, whether or not the command line selects it (a file that pytest
    could not name from this command line, outside the rootdir and every argument, is left out)."""
    initial = [a.path for a in nodeids.arguments(args, invocation_dir)]
    out: dict[str, PlannedCase] = {}
    for file, entries in by_file.items():
        ids = nodeids.file_ids(file, rootdir, invocation_dir, initial)
        if ids is None:
            continue
        for names, problem, cand, index in case_names(entries, fail_fast):
            nodeid = "::".join([ids.nodeid, *names])
            out[nodeid] = PlannedCase(nodeid, (ids.location, 0, f"{LOCATION_PREFIX}{problem.id} test {index}"),
                                      "::".join([ids.shown, *names]), problem, cand, index)
    return out


def case_keys(state: RunState, cases: Iterable[PlannedCase]) -> dict[str, str]:
    """Each case's key (engine.records.case_key). Reads every problem's test data once, here on the controller."""
    checkers = state.judging.checkers
    test_data = PlanTestData(state.plan, keep=1)
    digests: dict[str, list[str]] = {}
    judges: dict[str, JudgeKey] = {}
    checker_digests: dict[str, str] = {}
    out: dict[str, str] = {}
    for case in cases:
        pid = case.problem.id
        tests = digests.get(pid)
        if tests is None:
            data = test_data.get(case.problem)
            tests = digests[pid] = [case_digest(i, o) for i, o in zip(data.inputs, data.outputs)]
            checker_digests[pid] = checkers.digest(pid) if checkers is not None else ""
            judges[pid] = state.spec.judge_key(case.problem)
        if case.index >= len(tests):
            continue
        code = case.candidate.code
        if case.candidate.refused:  # never the key of a program python reads that holds the same characters
            code = f"\0refused\0{case.candidate.refused}\0{code}"
        out[case.nodeid] = case_key(judges[pid], code, case.problem.fmt, case.problem.fn_name,
                                    tests[case.index], checker_digests[pid])
    return out


def restamped(record: CaseRecord, case: PlannedCase) -> CaseRecord:
    """A stored record as this run's case: its problem, sample, test index, node id and rerun id. A key names what
    decides a record, not where the case sits: a problem's tests that repeat one another (APPS rows hold such
    duplicates), another sample or problem with the same program and test, or a program moved elsewhere, share
    one stored record."""
    return replace(record, problem=case.problem.id, sample=case.candidate.sample, case=case.index,
                   nodeid=case.nodeid, rerun_id=case.rerun_id if record.kind != PASS else "")


class Ledger:
    """The run's record store on the controller."""

    def __init__(self, state: ControllerState, rootdir: Path, invocation_dir: Path, args: Iterable[str]) -> None:
        s = state.settings
        self.folder = s.records_path
        self.resume = s.resume
        self.fail_fast = s.fail_fast
        self.cases = planned_cases(state.plan.by_file(), rootdir, invocation_dir, args, s.fail_fast)
        self.keys = case_keys(state, self.cases.values()) if self.folder is not None else {}
        self.store = RecordStore(self.folder).load() if self.folder is not None else None
        self.reused: dict[str, CaseRecord] = {}  # node id -> its record, reported without running
        self.executed: list[str] = []  # node ids whose record this run produced
        self._noted: set[str] = set()
        self.carried = 0  # records taken from the store for cases this run did not run
        self.failed = ""  # why the store stopped keeping this run's records ("" while it keeps them)
        self.not_kept = 0  # records of this run the store did not keep (once it failed)
        if self.store is not None and self.resume:
            for nodeid, key in self.keys.items():
                record = self.store.get(key)
                if record is not None and not record.borderline and nodeid not in state.explicit:
                    self.reused[nodeid] = restamped(record, self.cases[nodeid])
        # with fail-fast: a candidate whose failure is reused has failed; its cases without a record are skipped,
        # as the run that recorded the failure would have skipped them (node ids named on the command line run)
        self.stopped: dict[str, str] = stopped_by_reused_failures(self.cases, self.reused, state.explicit) \
            if self.fail_fast else {}

    def held(self) -> set[str]:
        """The cases the controller reports without running them: reused, or skipped after a reused failure."""
        return {*self.reused, *self.stopped}

    def note(self, record: CaseRecord) -> None:
        """A record this run produced (not a reused one): kept in the store under its case's key."""
        if record.nodeid in self.reused:
            return
        if record.nodeid not in self._noted:  # (a case run again after its worker was lost counts once)
            self._noted.add(record.nodeid)
            self.executed.append(record.nodeid)
        key = self.keys.get(record.nodeid)
        if self.store is None or key is None or record.kind == HARNESS_ERROR:
            return
        if self.failed:
            self.not_kept += 1
            return
        try:
            self.store.append(key, record)
        except OSError as exc:  # a cache that fails costs the run nothing: the verdict is kept in memory
            self.store.records[key] = record
            self.drop_store(os_error_text(exc), 1)  # (those written before it stay in its segment)

    def drop_store(self, why: str, lost: int) -> None:
        """The store failed (`why`): it keeps nothing more of this run, `lost` of whose records it does not hold."""
        assert self.store is not None
        self.failed = why
        self.not_kept += lost
        self.store.abandon()

    def check_store(self) -> None:
        """At the end of the run, before the reports: whether what the store was given is on the disk (its
        folder may have been removed, a full disk may refuse the last sync)."""
        if self.store is None or self.failed:
            return
        if self.store.removed():
            self.drop_store("its folder or this run's segment was removed during the run", self.store.written)
            return
        try:
            self.store.sync()
        except OSError as exc:
            self.drop_store(os_error_text(exc), self.store.written)

    def carry(self, have: Any) -> int:
        """Records from the store for the plan's cases that have none in `have` (this run's records: the cases
        it did not select, or did not reach); `have` gains them. Returns how many."""
        if self.store is None:
            return 0
        for nodeid, key in self.keys.items():
            if nodeid in have:
                continue
            record = self.store.get(key)
            if record is not None:
                have.add(restamped(record, self.cases[nodeid]))
                self.carried += 1
        return self.carried

    def without_result(self, have: Any) -> int:
        """Cases of the plan with no record in `have`, less those that fail-fast skips by design (a later case
        of a candidate that has failed)."""
        skipped = self.skipped_by_design(have)
        return sum(1 for nodeid in self.cases if nodeid not in have and nodeid not in skipped)

    def skipped_by_design(self, have: Any) -> set[str]:
        """Cases without a record in `have` that fail-fast skips by design (a later case of a candidate that has
        failed): no verdict is owed for them."""
        if not self.fail_fast:
            return set()
        failed = {(r.problem, r.sample) for r in have if r.kind not in (PASS, HARNESS_ERROR)}
        return {nodeid for nodeid, case in self.cases.items()
                if nodeid not in have and (case.problem.id, case.candidate.sample) in failed}

    def not_selected(self, have: Any, selected: Iterable[str] | None) -> int | None:
        """Of the cases without a record in `have`, those the command line did not select (None when which were
        selected is not known)."""
        if selected is None:
            return None
        chosen = set(selected)
        failed = {(r.problem, r.sample) for r in have if r.kind != PASS} if self.fail_fast else set()
        return sum(1 for nodeid, case in self.cases.items()
                   if nodeid not in have and nodeid not in chosen
                   and (case.problem.id, case.candidate.sample) not in failed)

    def dropped_text(self) -> str:
        if self.store is None or not self.store.dropped:
            return ""
        lines = sum(n for _, n in self.store.dropped)
        files = ", ".join(os.path.basename(f) for f, _ in self.store.dropped)
        return f"{counted(lines, 'damaged or torn record line')} dropped ({files})"

    def close(self, compact: bool) -> None:
        if self.store is None:
            return
        if self.failed:
            return  # (abandoned when it failed)
        try:
            self.store.close()
        except OSError:
            return  # the records are in the reports; the store is a cache
        if compact:
            try:
                self.store.compact()
            except OSError:
                pass  # compaction is an economy, never a condition of the run


def os_error_text(exc: OSError) -> str:
    """An OSError in a few words: its message, and the file when it names one."""
    text = exc.strerror or type(exc).__name__
    return f"{text}: {exc.filename}" if exc.filename else text


def stopped_by_reused_failures(cases: dict[str, PlannedCase], reused: dict[str, CaseRecord],
                               explicit: Iterable[str] = ()) -> dict[str, str]:
    """Node id -> the failing case's rerun id, for each case not reused whose candidate has a reused failure (the
    first failing case in fail-fast's order), less the node ids named on the command line."""
    failed: dict[tuple[str, int], str] = {}
    for nodeid, record in reused.items():
        if record.kind != PASS:
            case = cases[nodeid]
            failed.setdefault((case.problem.id, case.candidate.sample), record.rerun_id or nodeid)
    named = set(explicit)
    return {nodeid: failed[(case.problem.id, case.candidate.sample)] for nodeid, case in cases.items()
            if nodeid not in reused and nodeid not in named and (case.problem.id, case.candidate.sample) in failed}


def report_skipped(config: Any, case: PlannedCase, failed_at: str) -> None:
    """Report a case fail-fast skips after a reused failure, as a worker reports a skip at setup."""
    import pytest

    hook = config.hook
    hook.pytest_runtest_logstart(nodeid=case.nodeid, location=case.location)
    keywords = {case.nodeid.rsplit("::", 1)[-1]: 1, f"apps_{case.problem.difficulty}": 1}
    why = (case.location[0], case.location[1], f"Skipped: problem already failed at {failed_at} (its record)")
    for when, outcome, text in (("setup", "skipped", why), ("teardown", "passed", None)):
        hook.pytest_runtest_logreport(report=pytest.TestReport(case.nodeid, case.location, keywords, outcome, text,
                                                               when))
    hook.pytest_runtest_logfinish(nodeid=case.nodeid, location=case.location)


def report_recorded(config: Any, case: PlannedCase, record: CaseRecord, record_key: str) -> None:
    """Report a reused case from its record, as its run would have been reported (setup, call, teardown),
    the record riding on the call report as a worker's does."""
    import pytest

    hook = config.hook
    hook.pytest_runtest_logstart(nodeid=case.nodeid, location=case.location)
    keywords = {case.nodeid.rsplit("::", 1)[-1]: 1, f"apps_{case.problem.difficulty}": 1, "apps_reused": 1}
    passed = record.kind == PASS
    longrepr = None
    if not passed:
        why = f" ({record.reason})" if record.reason else ""
        longrepr = (f"problem {record.problem} test {record.case}: {record.kind}{why}\n"
                    f"reported from its record (--apps-resume): it did not run again; name its node id "
                    f"to run it: {record.rerun_id or record.nodeid}")
    for when, outcome, text in (("setup", "passed", None), ("call", "passed" if passed else "failed", longrepr),
                                ("teardown", "passed", None)):
        props = [(record_key, record.to_json())] if when == "call" else []
        report = pytest.TestReport(case.nodeid, case.location, keywords, outcome, text, when,
                                   user_properties=props)
        hook.pytest_runtest_logreport(report=report)
    hook.pytest_runtest_logfinish(nodeid=case.nodeid, location=case.location)
