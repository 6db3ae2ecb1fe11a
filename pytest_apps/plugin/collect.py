"""pytest collectors and items: candidate file -> (problem -> sample ->) test case items.

A program that is not there is one failing item of kind no code, which runs nothing: for a selected problem
without any program, `<home>::<id>::no_code`, where `<home>` is the candidates' generations file or folder
(`CandidateDir`); for a candidate without code (model text without a code block, an empty program, a failed
generation), `<its file>[::<id>][::<sample>]::no_code`, in place of its test items. So every selected problem
has an item, in the terminal, JUnit and every report, and no-code tests are never counted as run.

Items carry ids only. A case's data is loaded (per problem, lazily) when it runs; the program is run
in `setup` (a fault of the harness there is a pytest *error*) and judged in `call` (a candidate's
failure is a pytest *failure*).
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ..candidates.sources import Candidate
from ..core.errors import HarnessError
from ..core.outcome import GENERATION_FAILED, NO_CODE, PASS
from ..core.record import NO_CASE, CaseRecord
from ..core.settings import rerun_args, rerun_command
from ..dataset.problems import Problem, case_order
from ..engine.confirm import confirm_case
from ..engine.failtext import case_failure_text, case_title
from ..engine.result import CaseResult
from ..engine.run import case_record, run_case
from .nodeids import wanted
from .remote import RemoteFile
from .state import RunState
from .transport import LOCATION_PREFIX

RECORD_KEY = "apps"
CASE_FILES_KEY = "apps_case_files"  # a user property: why this process could write no failing case's files


class PlanRoot(pytest.Directory):
    """On a worker that cannot see the controller's files (remote.py): the collection's top, which yields the
    plan's candidate files named as the controller's pytest names them, instead of what is on this disk."""

    def __init__(self, *, files: list[RemoteFile], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.files = files

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        entries = RunState.of(self.config).plan.by_file()
        for remote in self.files:
            ids = remote.ids
            node = CandidateFile.from_parent(
                self, path=self.path / (ids.nodeid or ids.name), name=ids.name, nodeid=ids.nodeid,
                entries=entries[remote.file], remote=remote,
            )
            node.extra_keyword_matches.update(ids.folders)  # -k matches the folders above it, as at home
            yield node


class CandidateFile(pytest.File):
    """A file that holds candidate programs: `<id>.py` (one program) or a generations file."""

    def __init__(self, *, entries: list[tuple[Problem, list[Candidate]]], remote: RemoteFile | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries = entries
        self.remote = remote  # on a remote worker: the file as the controller names it, and what is selected

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        first = self.entries[0][1][0] if self.entries and self.entries[0][1] else None
        # A file of many problems names the problem even when the selection keeps only one of them.
        single = len(self.entries) == 1 and len(self.entries[0][1]) == 1 and not first.label and not first.shared
        for problem, candidates in self.entries:
            if single:
                yield from case_items(self, problem, candidates[0])
            else:
                yield ProblemNode.from_parent(self, name=problem.id, problem=problem, candidates=candidates)


class CandidateDir(pytest.Dir):
    """The candidates' folder: its files as pytest's `Dir` finds them, after the problems without any program
    (first, as a worker collecting from the plan orders the folder before its files)."""

    entries: list[tuple[Problem, list[Candidate]]] = []
    remote = None

    @classmethod
    def from_parent(cls, parent: pytest.Collector, *, path: Path,  # type: ignore[override]
                    entries: list[tuple[Problem, list[Candidate]]], nodeid: str | None = None) -> CandidateDir:
        """`nodeid`: the folder's, when it lies outside the rootdir (nodeids.outside_nodeid); pytest's `Dir` takes
        no keyword beside `path`, so the node is made as its base class, a file-system collector, makes one."""
        named = {} if nodeid is None else {"nodeid": nodeid}
        node = super(pytest.Dir, cls).from_parent(parent, path=path, **named)
        node.entries = entries
        return node

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        for problem, candidates in self.entries:
            yield ProblemNode.from_parent(self, name=problem.id, problem=problem, candidates=candidates)
        yield from super().collect()


class ProblemNode(pytest.Collector):
    def __init__(self, *, problem: Problem, candidates: list[Candidate], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.candidates = candidates

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        if not self.candidates:
            yield NoCodeItem.from_parent(self, name=NO_CODE_NAME, problem=self.problem)
            return
        if len(self.candidates) == 1 and not self.candidates[0].label:
            yield from case_items(self, self.problem, self.candidates[0])
            return
        for cand in self.candidates:
            yield SampleNode.from_parent(
                self, name=cand.label or f"sample_{cand.sample}", problem=self.problem, candidate=cand
            )


class SampleNode(pytest.Collector):
    def __init__(self, *, problem: Problem, candidate: Candidate, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.candidate = candidate

    def collect(self) -> Iterator[pytest.Item]:
        yield from case_items(self, self.problem, self.candidate)


def case_items(parent: pytest.Collector, problem: Problem, candidate: Candidate) -> Iterator[pytest.Item]:
    if not candidate.has_code:
        yield NoCodeItem.from_parent(parent, name=NO_CODE_NAME, problem=problem, candidate=candidate)
        return
    for index in case_order(problem, RunState.of(parent.config).settings.fail_fast):
        yield CaseItem.from_parent(
            parent, name=f"test_{index}", problem=problem, candidate=candidate, index=index
        )


def home_of(item: pytest.Item) -> tuple[Any, list[str]]:
    """The candidate file (or candidates' folder) an item was collected from, and the names below it; None
    and the item's own names when it is not one of ours."""
    names: list[str] = []
    node: Any = item
    while node is not None and not isinstance(node, (CandidateFile, CandidateDir)):
        names.append(node.name)
        node = node.parent
    return node, names[::-1]


def remote_selected(item: pytest.Item) -> bool:
    """Whether the controller's command line asks for this item (always, for an item of a local file)."""
    node, names = home_of(item)
    if node is None or node.remote is None:
        return True
    return wanted(names, node.remote.selectors)


def rerun_id_of(item: pytest.Item) -> str:
    """The node id to paste, spelled from where pytest was started. (pytest's own node id lacks the file's
    name when the candidates live outside the rootdir.)"""
    node, names = home_of(item)
    if node is None:
        return item.nodeid
    if node.remote is not None:
        path = node.remote.ids.shown
    else:
        path = os.path.relpath(node.path, item.config.invocation_params.dir)
    return "::".join([path, *names])


class CaseFailed(Exception):
    """A candidate's failure on one case (not a fault of the harness)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class CaseItem(pytest.Item):
    def __init__(self, *, problem: Problem, candidate: Candidate, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.candidate = candidate
        self.index = index
        self.result: CaseResult | None = None
        self.confirmed = ""  # the first run's verdict kind, when a confirmation's verdict is the case's
        self.add_marker(RunState.of(self.config).backstop)
        self.keywords[f"apps_{problem.difficulty}"] = True

    def setup(self) -> None:
        state = RunState.of(self.config)
        failed_at = state.first_failure(self.key)
        if failed_at and state.settings.fail_fast and self.nodeid not in state.explicit:
            # reported at the item, not at this line, so `-rs` names the skipped case
            raise pytest.skip.Exception(f"problem already failed at {failed_at}", _use_item_location=True)
        try:
            cases = state.test_data.get(self.problem)
            candidate = state.test_data.program(self.problem, self.candidate)
            first = run_case(state.executor, self.problem, candidate, cases, self.index, state.judging)
            # a timeout or near-limit verdict met on a machine measured slower than quiet runs again, with every
            # slot of this machine's pool held: no other program of the run runs meanwhile (engine/confirm.py)
            alone = state.slot.whole if state.slot is not None else nullcontext
            self.result, self.confirmed = confirm_case(state.executor, self.problem, candidate, cases, self.index,
                                                       state.judging, first, alone)
        except HarnessError as exc:
            self._record(case_record(self.problem, self.candidate, self.index, exc, self.nodeid, self.rerun_id()))
            raise

    def runtest(self) -> None:
        assert self.result is not None
        failed = self.result.verdict.kind != PASS
        self._record(replace(case_record(self.problem, self.candidate, self.index, self.result, self.nodeid,
                                         self.rerun_id() if failed else ""), confirmed=self.confirmed))
        if failed:
            state = RunState.of(self.config)
            state.note_failure(self.key, self.nodeid)
            case_file = self.write_case_files(state)
            title = case_title(self.problem.id, self.index, self.candidate.sample_name)
            rerun = rerun_command(rerun_args(state.settings), self.rerun_id())
            raise CaseFailed(case_failure_text(self.result, title, rerun, case_file))

    def write_case_files(self, state: RunState) -> Path | None:
        """The failing case's input and expected output, written for debugging by hand; None when not written.
        A folder that refuses them (a full disk, read-only) costs the failure nothing: it is said once (the
        controller's warning, CASE_FILES_KEY) and this process writes no more."""
        assert self.result is not None
        if self.result.outcome is None or state.cases_folder is None or state.case_files_failed:
            return None
        try:
            written = state.test_data.write_case_files(state.cases_folder, self.problem, self.index, self.result)
        except OSError as exc:
            state.case_files_failed = (f"failing cases' inputs could not be written to "
                                       f"{os.path.relpath(state.cases_folder, state.started_in)} "
                                       f"({exc.strerror or exc}); the failures are reported in full")
            self.user_properties.append((CASE_FILES_KEY, state.case_files_failed))
            return None
        return Path(os.path.relpath(written, state.started_in))

    def teardown(self) -> None:
        self.result, self.confirmed = None, ""
        # the setup or call report has carried the record to the controller; the teardown report need not
        self.user_properties[:] = [p for p in self.user_properties if p[0] not in (RECORD_KEY, CASE_FILES_KEY)]

    def rerun_id(self) -> str:
        return rerun_id_of(self)

    @functools.cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's (file relative to the rootdir, line, name); on a remote worker, as the controller names the
        file (it is not on this machine)."""
        file = self.getparent(CandidateFile)
        if file is None or file.remote is None:
            return super().location
        return file.remote.ids.location, 0, self.reportinfo()[2]

    @property
    def key(self) -> tuple[str, int]:
        return (self.problem.id, self.candidate.sample)

    def _record(self, record: CaseRecord) -> None:
        self.user_properties.append((RECORD_KEY, record.to_json()))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.text
        if isinstance(excinfo.value, HarnessError):
            return f"harness error (not the candidate's fault): {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        file = self.getparent(CandidateFile)
        # on a remote worker, the file where it is: on the controller (a skip's location names it)
        path = Path(file.remote.file) if file is not None and file.remote is not None else self.path
        return path, 0, f"{LOCATION_PREFIX}{self.problem.id} test {self.index}"


NO_CODE_NAME = "no_code"


class NoCodeItem(pytest.Item):
    """A program that is not there: a selected problem without any (`candidate` None), or a candidate without
    code. One failing item of kind no code; it runs nothing (no executor, no test data); its record stands for
    the program's tests, which did not run (the roll-up scores it: no code, 0)."""

    def __init__(self, *, problem: Problem, candidate: Candidate | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.candidate = candidate
        self.keywords[f"apps_{problem.difficulty}"] = True

    def runtest(self) -> None:
        state = RunState.of(self.config)
        rerun = self.rerun_id()
        home = rerun.split("::", 1)[0]
        tests = "its test did not run" if self.problem.n_cases == 1 else f"its {self.problem.n_cases} tests did not run"
        if self.candidate is not None:
            self._no_code_in_candidate(state, rerun, home, tests)  # (raises)
        self.user_properties.append((RECORD_KEY, CaseRecord(
            self.problem.id, NO_CASE, NO_CODE, reason=f"{home} holds no program for it", nodeid=self.nodeid,
            rerun_id=rerun,
        ).to_json()))
        if Path(state.plan.home).suffix.lower() in (".jsonl", ".json"):  # a generations file
            todo = f"add its program to {home}, then run: " + rerun_command(
                rerun_args(state.settings), f"{home}::{self.problem.id}")
        else:
            program = os.path.join(home, f"{self.problem.id}.py")
            todo = f"write {program}, then run: " + rerun_command(rerun_args(state.settings), program)
        raise CaseFailed(f"APPS problem {self.problem.id}: no code ({home} holds no program for it; {tests})\n{todo}")

    def _no_code_in_candidate(self, state: RunState, rerun: str, home: str, tests: str) -> None:
        """The candidate's file (or its record in a generations file) holds no code: say which, and what was
        looked for."""
        cand = self.candidate
        assert cand is not None
        where = home if not cand.shared else f"{home}, problem {self.problem.id}"
        if cand.label:
            where += f", {cand.label}"
        why = f"{where}: {cand.no_code or 'no program'}"
        self.user_properties.append((RECORD_KEY, CaseRecord(
            self.problem.id, NO_CASE, NO_CODE, sample=cand.sample, reason=why, nodeid=self.nodeid, rerun_id=rerun,
        ).to_json()))
        if cand.no_code.startswith(GENERATION_FAILED):
            todo = "the next run asks the agent again: " + shlex.join(["pytest", *rerun_args(state.settings)])
        else:  # once the program is there, its tests have the node ids above this item's
            todo = f"put a program in {home}, then run: " + rerun_command(
                rerun_args(state.settings), rerun.rsplit("::", 1)[0])
        raise CaseFailed(f"APPS problem {self.problem.id}: no code ({why}; {tests})\n{todo}")

    def teardown(self) -> None:
        self.user_properties[:] = [p for p in self.user_properties if p[0] != RECORD_KEY]

    def rerun_id(self) -> str:
        return rerun_id_of(self)

    @functools.cached_property
    def location(self) -> tuple[str, int | None, str]:
        node, _ = home_of(self)
        if node is None or node.remote is None:
            return super().location
        return node.remote.ids.location, 0, self.reportinfo()[2]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        node, _ = home_of(self)
        path = Path(node.remote.file) if node is not None and node.remote is not None else self.path
        return path, 0, f"{LOCATION_PREFIX}{self.problem.id} no code"
