"""pytest collectors and items: candidate file -> (problem -> sample ->) test case items.

Items carry ids only. A case's data is loaded (per problem, lazily) when it runs; the program is run
in `setup` (a fault of the harness there is a pytest *error*) and judged in `call` (a candidate's
failure is a pytest *failure*).
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..candidates.sources import Candidate
from ..core.outcome import PASS
from ..core.record import CaseRecord
from ..core.settings import rerun_args
from ..dataset.problems import Problem, case_order
from ..engine.failtext import case_title, failure_text
from ..engine.result import CaseResult
from ..engine.run import case_record, run_case
from ..judge.cascade import HarnessError
from .nodeids import wanted
from .remote import RemoteFile
from .state import RunState
from .transport import LOCATION_PREFIX

RECORD_KEY = "apps"


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


class ProblemNode(pytest.Collector):
    def __init__(self, *, problem: Problem, candidates: list[Candidate], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.candidates = candidates

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
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


def case_items(parent: pytest.Collector, problem: Problem, candidate: Candidate) -> Iterator[CaseItem]:
    for index in case_order(problem, RunState.of(parent.config).settings.fail_fast):
        yield CaseItem.from_parent(
            parent, name=f"test_{index}", problem=problem, candidate=candidate, index=index
        )


def remote_selected(item: pytest.Item) -> bool:
    """Whether the controller's command line asks for this item (always, for an item of a local file)."""
    names: list[str] = []
    node: Any = item
    while node is not None and not isinstance(node, CandidateFile):
        names.append(node.name)
        node = node.parent
    if node is None or node.remote is None:
        return True
    return wanted(names[::-1], node.remote.selectors)


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
        self.add_marker(RunState.of(self.config).backstop)
        self.keywords[f"apps_{problem.difficulty}"] = True

    def setup(self) -> None:
        state = RunState.of(self.config)
        failed_at = state.failed_at.get(self.key)
        if failed_at and state.settings.fail_fast and self.nodeid not in state.explicit:
            # reported at the item, not at this line, so `-rs` names the skipped case
            raise pytest.skip.Exception(f"problem already failed at {failed_at}", _use_item_location=True)
        try:
            cases = state.store.get(self.problem)
            candidate = state.store.program(self.problem, self.candidate)
            self.result = run_case(state.executor, self.problem, candidate, cases, self.index, state.judging)
        except HarnessError as exc:
            self._record(case_record(self.problem, self.candidate, self.index, exc, self.nodeid, self.rerun_id()))
            raise

    def runtest(self) -> None:
        assert self.result is not None
        failed = self.result.verdict.kind != PASS
        self._record(case_record(self.problem, self.candidate, self.index, self.result, self.nodeid,
                                 self.rerun_id() if failed else ""))
        if failed:
            state = RunState.of(self.config)
            state.failed_at.setdefault(self.key, self.nodeid)
            case_file = None
            if self.result.outcome is not None:
                case_file = state.store.write_case_files(state.cases_folder, self.problem, self.index, self.result)
                case_file = Path(os.path.relpath(case_file, state.started_in))
            title = case_title(self.problem.id, self.index, self.candidate.label)
            rerun = shlex.join(["pytest", *rerun_args(state.settings), self.rerun_id()])
            raise CaseFailed(failure_text(self.result, title, rerun, case_file))

    def teardown(self) -> None:
        self.result = None
        # the setup or call report has carried the record to the controller; the teardown report need not
        self.user_properties[:] = [p for p in self.user_properties if p[0] != RECORD_KEY]

    def rerun_id(self) -> str:
        """The node id to paste, spelled from where pytest was started. (pytest's own node id lacks the
        file's name when the candidates live outside the rootdir.)"""
        names = []
        node: Any = self
        while node is not None and not isinstance(node, CandidateFile):
            names.append(node.name)
            node = node.parent
        if node is None:
            return self.nodeid
        if node.remote is not None:
            path = node.remote.ids.shown
        else:
            path = os.path.relpath(node.path, self.config.invocation_params.dir)
        return "::".join([path, *reversed(names)])

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
