"""pytest collectors and items: candidate file -> (problem -> sample ->) test case items.

Items carry ids only. A case's data is loaded (per problem, lazily) when it runs; the program is run
in `setup` (a fault of the harness there is a pytest *error*) and judged in `call` (a candidate's
failure is a pytest *failure*).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .candidates import Candidate
from .dataset import Problem
from .evaluate import CaseResult, run_case
from .failtext import failure_detail, failure_text
from .judge import HarnessError
from .outcome import PASS
from .report import CaseRecord
from .state import RunState

RECORD_KEY = "apps"
BACKSTOP_MARGIN = 30.0  # seconds above the case limit before pytest-timeout steps in


class CandidateFile(pytest.File):
    """A file that holds candidate programs: `<id>.py` (one program) or a generations file."""

    def __init__(self, *, entries: list[tuple[Problem, list[Candidate]]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries = entries

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        single = len(self.entries) == 1 and len(self.entries[0][1]) == 1 and not self.entries[0][1][0].label
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
    for index in range(problem.n_cases):
        yield CaseItem.from_parent(
            parent, name=f"test_{index}", problem=problem, candidate=candidate, index=index
        )


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
        state = RunState.of(self.config)
        self.add_marker(pytest.mark.timeout(state.settings.timeout + BACKSTOP_MARGIN, method="signal"))
        self.keywords[f"apps_{problem.difficulty}"] = True

    def setup(self) -> None:
        state = RunState.of(self.config)
        cases = state.store.get(self.problem)
        try:
            self.result = run_case(state.executor, self.problem, self.candidate, cases, self.index)
        except HarnessError as exc:
            self._record("harness_error", reason=str(exc))
            raise

    def runtest(self) -> None:
        assert self.result is not None
        verdict, outcome = self.result.verdict, self.result.outcome
        self._record(
            verdict.kind,
            step=verdict.step,
            reason=verdict.reason,
            time=outcome.wall_time if outcome else 0.0,
            memory=outcome.peak_memory if outcome else 0,
        )
        if verdict.kind != PASS:
            self.user_properties[-1][1]["detail"] = failure_detail(self.result)
            title = f"problem {self.problem.id} test {self.index}"
            raise CaseFailed(failure_text(self.result, title, self.nodeid))

    def teardown(self) -> None:
        self.result = None

    def _record(self, kind: str, **fields: Any) -> None:
        record = CaseRecord(
            problem=self.problem.id,
            case=self.index,
            kind=kind,
            sample=self.candidate.sample,
            nodeid=self.nodeid,
            **fields,
        )
        self.user_properties.append((RECORD_KEY, record.to_dict()))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.text
        if isinstance(excinfo.value, HarnessError):
            return f"harness error (not the candidate's fault): {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"APPS problem {self.problem.id} test {self.index}"
