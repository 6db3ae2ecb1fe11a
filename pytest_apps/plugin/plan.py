"""The run plan: what this session evaluates, decided once and shared with every xdist worker.

The controller (or the only process, without xdist) reads the dataset, selects problems, reads the
candidates, and writes the plan to a private folder: a small index (`plan.json`) plus one file of test data
per problem. Workers read the index to collect (ids only) and a problem's test file when its first case
runs. Collection is therefore identical on every worker and never touches the dataset or the network.

When the dataset's problem index is cached (`dataset/index.py`), nothing is parsed and no test file is written:
`cases_dir` in the plan points at the cache's files, which hold every test, and a problem's first
`n_cases` are read from there. Those folders are never modified once in place, so pointing at them is as
safe as a copy and costs nothing (a copy of the full split would be a gigabyte; a hard link can fail
across file systems). The plan folder is removed at the end; the cache is not.

A worker on another machine reads neither: it receives the plan as data and each problem's test file from
the controller (`remote.py`).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol

from ..candidates.origins import PROVIDED, Provider, candidates_for, option_warnings, provided_folder
from ..candidates.sources import REFERENCE, Candidate
from ..core import jsontext
from ..core.settings import Settings
from ..core.wording import counted
from ..dataset import index, table
from ..dataset.index import cases_path, read_cases
from ..dataset.problems import Cases, Problem, SkippedRow, absent_tiers_line
from ..dataset.rows import DatasetError
from ..engine.failtext import write_case_files
from ..engine.result import CaseResult
from ..judge.checkers import Checkers
from ..judge.special import SpecialJudges
from ..engine.special import exclude_needing_checker
from ..engine.spec import selection_of

PLAN_FILE = "plan.json"


@dataclass
class Plan:
    folder: Path
    settings: dict[str, Any]
    source: dict[str, Any]  # dataset, split, revision actually loaded
    problems: list[Problem]
    skipped: list[SkippedRow]
    missing: list[str]  # --apps-only ids not found
    candidates: dict[str, list[Candidate]]
    cases_dir: Path | None = None  # the cached index's case files; None: the plan folder's own
    checker_code: dict[str, str] = field(default_factory=dict)  # problem id -> checker text (pytest_apps_checker)
    home: str = ""  # the candidates' folder or file (absolute): where a problem without a program is collected
    notes: list[str] = field(default_factory=list)  # header lines: what the candidates' step did (generations)
    warnings: list[str] = field(default_factory=list)  # one line per option or input the run went on without
    _by_id: dict[str, Problem] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {p.id: p for p in self.problems}

    def problem(self, pid: str) -> Problem:
        return self._by_id[pid]

    def by_file(self) -> dict[str, list[tuple[Problem, list[Candidate]]]]:
        """Candidate file -> the problems (in dataset order) whose programs it holds; and the candidates' home
        (their folder or generations file) -> the problems without any program, each with no candidate (one
        failing item of kind no code: every selected problem has an item)."""
        out: dict[str, list[tuple[Problem, list[Candidate]]]] = {}
        for problem in self.problems:
            groups: dict[str, list[Candidate]] = {}
            for cand in self.candidates.get(problem.id, []):
                groups.setdefault(cand.file, []).append(cand)
            for file, cands in groups.items():
                out.setdefault(file, []).append((problem, cands))
            if not groups and self.home and not problem.broken:
                out.setdefault(self.home, []).append((problem, []))
        return out

    def cases_path(self, problem: Problem) -> Path:
        return cases_path(self.cases_dir or self.folder / "cases", problem)


class HookError(Exception):
    """A hook implementation returned something the plan cannot use; the message is one line saying what."""


def build_plan(
    settings: Settings, folder: Path | None = None, progress: Callable[[str], None] | None = None,
    provide: Provider | None = None, checker: Callable[[Problem], Any] | None = None,
) -> Plan:
    """Read and select the dataset, read the candidates, and write the plan. `provide` and `checker` (the
    `pytest_apps_candidates` and `pytest_apps_checker` hooks) are asked per problem. Raises the loaders'
    one-line errors (DatasetError, CandidateError, HookError, SpecialJudgeError) for bad input. A plan folder
    made here is removed when the plan cannot be made (a bad input, an interrupt): it may hold tests."""
    if folder is not None:
        return _build_plan(settings, Path(folder), progress, provide, checker)
    remove_dead_plans()
    made = Path(tempfile.mkdtemp(prefix=f"{PLAN_PREFIX}{os.getpid()}-"))
    try:
        return _build_plan(settings, made, progress, provide, checker)
    except BaseException:
        remove_plan(made)
        raise


PLAN_PREFIX = "pytest-apps-plan-"  # + the pid of the run that made it: a folder whose run is dead is removed


def remove_dead_plans(where: str | None = None) -> list[str]:
    """Remove the plan folders (they hold a selection's tests) that runs killed before their end left, those
    whose run's process no longer exists: never a live run's. Returns the folders removed."""
    removed = []
    for path in glob.glob(os.path.join(where or tempfile.gettempdir(), f"{PLAN_PREFIX}*-*")):
        pid = os.path.basename(path)[len(PLAN_PREFIX):].split("-")[0]
        if not pid.isdigit() or int(pid) == os.getpid() or os.path.exists(f"/proc/{pid}"):
            continue  # (a folder of an older form, this run's, or a live run's)
        remove_plan(Path(path))
        removed.append(path)
    return removed


def _build_plan(settings: Settings, folder: Path, progress: Callable[[str], None] | None,
                provide: Provider | None, checker: Callable[[Problem], Any] | None) -> Plan:
    (folder / "cases").mkdir(parents=True, exist_ok=True)
    selection = selection_of(settings)
    cases_folder = folder / "cases"

    def write_cases(problem: Problem, cases: Cases) -> None:
        _write_json(cases_path(cases_folder, problem), {"inputs": cases.inputs, "outputs": cases.outputs})

    loaded = index.load(
        settings.dataset_ref(), settings.split, settings.revision, selection, settings.max_tests,
        keep_solutions=settings.candidates == REFERENCE, sink=write_cases,
    )
    parsed = loaded.parsed
    absent = absent_tiers_line(settings.difficulty, parsed, settings.dataset)
    if absent:
        raise DatasetError(absent)
    if not parsed.problems:  # nothing to run (rows all unusable among them): a usage error, never a report of nothing
        held = parsed if selection == selection.unfiltered() else index.load(
            settings.dataset_ref(), settings.split, settings.revision, selection.unfiltered(), 1,
            sink=lambda problem, cases: None).parsed
        raise DatasetError(empty_selection_text(settings, loaded.source_dict(), held.problems, len(held.skipped),
                                             parsed.missing) + unusable_text(parsed.skipped))
    special = SpecialJudges.from_file(settings.path(settings.special_judge)) if settings.special_judge else None
    if special is not None:
        special.check_split(loaded.source_dict()["split"])
        special.check_rows(table.takes_special_judge(parsed.problems))
    if special is not None and settings.needs_checker == "exclude":
        checkers = Checkers.from_setting(settings.checkers, settings.rootdir)
        parsed.problems, left_out = exclude_needing_checker(
            parsed.problems, special, checkers.problem_ids if checkers is not None else ())
        parsed.skipped.extend(left_out)
    # An agent generates here: on the controller, before any xdist worker starts (invariant 7).
    notes: list[str] = []
    warnings = option_warnings(settings, loaded.source_dict())
    candidates = candidates_for(settings, parsed.problems, parsed.solutions, progress=progress, provide=provide,
                                notes=notes, warnings=warnings)
    candidates = {pid: [refuse_non_unicode(c) for c in cs] for pid, cs in candidates.items()}
    plan = Plan(
        folder=folder,
        settings=settings.to_dict(),
        source=loaded.source_dict(),
        problems=parsed.problems,
        skipped=parsed.skipped,
        missing=parsed.missing,
        candidates=candidates,
        cases_dir=loaded.cases_dir,
        checker_code=provided_checkers(checker, parsed.problems) if checker is not None else {},
        home=str(settings.candidates_path.resolve()),
        notes=notes,
        warnings=warnings,
    )
    _write_json(folder / PLAN_FILE, plan_data(plan))
    return plan


def refuse_non_unicode(candidate: Candidate) -> Candidate:
    """A program holding a lone surrogate (a generation's JSON `\\ud800` alone) is no Unicode text: python cannot
    read it, so it is refused (a compile error naming the character and its line), shown with the character
    escaped; its model text likewise."""
    code, raw = candidate.code, candidate.raw
    if not (_non_unicode(code) or _non_unicode(raw)):
        return candidate
    refused = candidate.refused
    if _non_unicode(code):
        assert code is not None
        at = next(i for i, c in enumerate(code) if "\ud800" <= c <= "\udfff")
        refused = refused or (f"SyntaxError: a lone surrogate (\\u{ord(code[at]):04x}) on line "
                              f"{code.count(chr(10), 0, at) + 1} of the program is not Unicode text "
                              f"(in file {candidate.file})")
    return replace(candidate, code=_escaped(code), raw=_escaped(raw), refused=refused)


def _non_unicode(text: str | None) -> bool:
    return text is not None and any("\ud800" <= c <= "\udfff" for c in text)


def _escaped(text: str | None) -> str | None:
    return None if text is None else text.encode("utf-8", "backslashreplace").decode("utf-8")


SELECTION_OPTIONS = (("difficulty", "--apps-difficulty"), ("tag", "--apps-tag"), ("since", "--apps-since"),
                     ("until", "--apps-until"), ("only", "--apps-only"), ("offset", "--apps-offset"),
                     ("limit", "--apps-limit"))


def data_text(source: dict[str, Any], problems: list[Problem], skipped: int = 0) -> str:
    """What a dataset holds, in a few words: its problems' id range and tiers."""
    where = f"{source.get('dataset')}" + (f" split {source['split']}" if source.get("split") else "")
    if not problems:
        broken = f" ({counted(skipped, 'row')}, none usable)" if skipped else ""
        return f"the dataset {where} holds no problem{broken}"
    ids = [p.id for p in problems]
    numeric = all(i.isdigit() for i in ids)
    span = f"{min(ids, key=int)}-{max(ids, key=int)}" if numeric else f"{ids[0]}-{ids[-1]}"
    tiers = sorted({p.difficulty for p in problems if p.difficulty})
    dates = sorted(p.date for p in problems if p.date)
    when = f"; contest dates {dates[0][:10]} to {dates[-1][:10]}" if dates else ""
    return (f"the dataset {where} holds {counted(len(problems), 'problem')} "
            f"(ids {span}; tiers {', '.join(tiers) or 'none'}{when})")


def empty_selection_text(settings: Settings, source: dict[str, Any], held: list[Problem], skipped: int = 0,
                         missing: list[str] | None = None) -> str:
    """One line for a run that selects no problem: the selection options that emptied it, and what the data
    holds (a plain function, for any selection error to reuse)."""
    given = []
    for name, option in SELECTION_OPTIONS:
        value = getattr(settings, name)
        if value in ((), None) or (name == "offset" and not value):
            continue
        shown = ",".join(value) if isinstance(value, tuple) else str(value)
        given.append(f"{option}={shown}")
    data = data_text(source, held, skipped)
    if not given:
        return f"apps: no problem to run: {data}; give a dataset with problems (--apps-dataset)"
    unknown = f" (no problem {', '.join(missing)})" if missing else ""
    return (f"apps: no problem selected: {' '.join(given)} selects none{unknown}; {data}; change "
            f"{'it' if len(given) == 1 else 'them'} (no report was written)")


def unusable_text(skipped: list[SkippedRow]) -> str:
    """What made the selected rows unusable, when there were some: how many, and the first one's reason."""
    if not skipped:
        return ""
    first = skipped[0]
    return f"; the first unusable row: row {first.index} (problem {first.problem_id}), {first.reason}"


def provided_checkers(checker: Callable[[Problem], Any], problems: list[Problem]) -> dict[str, str]:
    """The checker texts `checker` gives (a module's text, or the path of a `.py` file), by problem id."""
    out: dict[str, str] = {}
    for problem in problems:
        answer = checker(problem)
        if answer is None:
            continue
        if isinstance(answer, os.PathLike):
            try:
                answer = Path(answer).read_text(encoding="utf-8")
            except OSError as exc:
                raise HookError(f"pytest_apps_checker: for problem {problem.id}: cannot read {answer}: "
                                f"{exc.strerror}") from None
        if not isinstance(answer, str):
            raise HookError(f"pytest_apps_checker: for problem {problem.id} an implementation returned "
                            f"{type(answer).__name__}; return a checker module's text, a path, or None")
        out[problem.id] = answer
    return out


def collection_roots(settings: Settings, plan: Plan) -> list[str]:
    """Where collection starts when no paths are given: the candidates' folder or file, and the folder of
    the programs `pytest_apps_candidates` gave, when it gave any."""
    roots = {str(provided_folder(settings) if c.origin == PROVIDED else settings.candidates_path)
             for cands in plan.candidates.values() for c in cands}
    if any(not plan.candidates.get(p.id) for p in plan.problems):  # a problem without code: its item lies there
        roots.add(str(settings.candidates_path))
    return sorted(roots) or [str(settings.candidates_path)]


def plan_data(plan: Plan, full: bool = True) -> dict[str, Any]:
    """The plan as plain data. Not `full`: without what only the controller uses (program and model text,
    question and starter code), for a worker on another machine, which asks for a problem's programs with
    its test data (see remote.py)."""

    def candidate(c: Candidate) -> dict[str, Any]:
        data = c.to_dict()
        if not full:
            data["code"] = data["raw"] = None
        return data

    def problem(p: Problem) -> dict[str, Any]:
        data = p.to_dict()
        if not full:
            data["question"] = data["starter_code"] = ""
        return data

    return {
        "settings": plan.settings,
        "source": plan.source,
        "problems": [problem(p) for p in plan.problems],
        "skipped": [s.to_dict() for s in plan.skipped],
        "missing": plan.missing,
        "candidates": {pid: [candidate(c) for c in cs] for pid, cs in plan.candidates.items()},
        "cases_dir": None if plan.cases_dir is None else str(plan.cases_dir),
        "checker_code": plan.checker_code,
        "home": plan.home,
        "notes": plan.notes,
        "warnings": plan.warnings,
    }


def load_plan(folder: Path) -> Plan:
    return plan_from_data(folder, json.loads((Path(folder) / PLAN_FILE).read_text(encoding="utf-8")))


def plan_from_data(folder: Path, data: dict[str, Any]) -> Plan:
    return Plan(
        folder=Path(folder),
        settings=data["settings"],
        source=data["source"],
        problems=[Problem.from_dict(p) for p in data["problems"]],
        skipped=[SkippedRow(**s) for s in data["skipped"]],
        missing=list(data["missing"]),
        candidates={
            pid: [Candidate.from_dict(c) for c in cs] for pid, cs in data["candidates"].items()
        },
        cases_dir=Path(data["cases_dir"]) if data.get("cases_dir") else None,
        checker_code=dict(data.get("checker_code") or {}),
        home=data.get("home", ""),
        notes=list(data.get("notes") or []),
        warnings=list(data.get("warnings") or []),
    )


def remove_plan(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


class ProblemTestData(Protocol):
    """Where a running case gets its problem's test data and program, and where a failing case's files go:
    the plan's files on this machine (`PlanTestData`), or the controller for a worker on another machine
    (`remote.ControllerTestData`)."""

    def get(self, problem: Problem) -> Cases: ...

    def program(self, problem: Problem, candidate: Candidate) -> Candidate: ...

    def write_case_files(self, folder: Path, problem: Problem, index: int, result: CaseResult) -> Path: ...


class PlanTestData:
    """A problem's test data read from the plan's files when its first case runs; only the last few problems
    are kept.

    Cases of one problem run together (one worker, consecutively), so a tiny LRU means each problem's
    data is read once and released soon after its last case.
    """

    def __init__(self, plan: Plan, keep: int = 2) -> None:
        self._plan = plan
        self._keep = keep
        self._cache: OrderedDict[str, Cases] = OrderedDict()

    def get(self, problem: Problem) -> Cases:
        cases = self._cache.get(problem.id)
        if cases is None:
            cases = read_cases(self._plan.cases_path(problem), problem.n_cases)
            self._cache[problem.id] = cases
            while len(self._cache) > self._keep:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(problem.id)
        return cases

    def program(self, problem: Problem, candidate: Candidate) -> Candidate:
        """The candidate with its program: here the plan's own (a remote worker fetches it from the controller)."""
        return candidate

    def write_case_files(self, folder: Path, problem: Problem, index: int, result: CaseResult) -> Path:
        """Write a failing case's input and expected output into `folder`; returns the input's path."""
        return write_case_files(folder, problem, index, result)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(jsontext.dumps(data), encoding="utf-8")
    os.replace(tmp, path)
