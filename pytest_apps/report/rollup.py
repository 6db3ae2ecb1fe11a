"""The roll-up: per-case records in, per-problem verdicts and run figures out. Pure data, no pytest.

The denominator is always the set of selected problems, not the cases that happened to run: a problem
with a case that did not run (deselected, -x, --lf) is "incomplete" and scores 0, never "pass". A problem whose
only failures are faults of the harness (a case whose executor failed twice) is "unscored": counted apart,
never as the program's failure: it leaves the denominator of every score (strict accuracy, per tier, tag and
skill, pass@k, the test-case average and their intervals), which count the scored problems, and its run is not
complete.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.outcome import ALL_KINDS, CHECKER_STEP, FAILURE_KINDS, NO_CODE, PASS
from ..core.record import NO_CASE, CaseRecord
from ..core.wording import counted
from ..dataset.table import tiers_shown
from ..dataset.problems import Problem, SkippedRow
from .confidence import Unit, figure_texts, group_intervals, interval_figures
from .passk import ks_for, mean_pass_at_k

REPORT_VERSION = 1

# Problem verdicts
P_PASS = "pass"
P_FAIL = "fail"
P_NO_CODE = "no_code"
P_BROKEN = "broken"
P_INCOMPLETE = "incomplete"
P_UNSCORED = "unscored"
HARNESS_ERROR = "harness_error"  # a case's kind when the harness failed on it (twice), not the program


@dataclass
class ProblemResult:
    id: str
    difficulty: str
    format: str
    candidate: str | None
    verdict: str
    reason: str = ""
    tests_passed: int = 0
    tests_run: int = 0
    tests_total: int = 0
    first_failure: str = ""  # node id of the first failing case, ready to paste where the run was started
    first_failure_nodeid: str = ""  # the same case as pytest names it (relative to the rootdir)
    first_failure_detail: dict[str, Any] = field(default_factory=dict)  # its input, expected, got
    program: str | None = None  # the candidate program, kept for failing problems
    tests: list[dict[str, Any]] = field(default_factory=list)
    raw: str | None = None  # the model text the program was extracted from, kept beside it
    samples: int = 1  # candidate programs of this problem (0: none)
    samples_passed: int = 0
    score: float = 0.0  # samples_passed / samples: 1 or 0 with one sample, the mean over several
    sample_results: list[dict[str, Any]] = field(default_factory=list)  # several samples: one summary each
    tags: list[str] = field(default_factory=list)  # TACO's tags and skill types of the problem
    skills: list[str] = field(default_factory=list)
    limits: dict[str, Any] = field(default_factory=dict)  # the limits it ran under (set by the front end)
    special_judge: str = ""  # its kind in TACO's special-judge list, when the run has the list

    @property
    def passed(self) -> bool:
        return self.verdict == P_PASS

    def to_dict(self) -> dict[str, Any]:
        # not dataclasses.asdict: its deep copies of every test's record cost half a second at a full run's end
        out = {name: getattr(self, name) for name in _RESULT_FIELDS}
        out["first_failure_detail"] = dict(self.first_failure_detail)
        out["tests"] = [dict(test) for test in self.tests]
        out["sample_results"] = [dict(sample) for sample in self.sample_results]
        return out


_RESULT_FIELDS = tuple(ProblemResult.__dataclass_fields__)


@dataclass
class Summary:
    problems: list[ProblemResult]
    skipped: list[SkippedRow]
    figures: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.figures,
            "skipped_rows": [s.to_dict() for s in self.skipped],
            "problems": [p.to_dict() for p in self.problems],
        }


def problem_result(
    problem: Problem, candidate: str | None, records: Iterable[CaseRecord]
) -> ProblemResult:
    by_case = {r.case: r for r in records}
    result = ProblemResult(
        id=problem.id,
        difficulty=problem.difficulty,
        format=problem.fmt,
        candidate=candidate,
        verdict=P_INCOMPLETE,
        tests_total=problem.n_cases,
        tags=list(problem.tags),
        skills=list(problem.skills),
    )
    if problem.broken:
        result.verdict, result.reason = P_BROKEN, problem.broken
        return result
    if candidate is None or (by_case and all(r.kind == NO_CODE for r in by_case.values())):
        # no program: the problem's (or the candidate's) no-code item, or, from the API, a program that is empty;
        # none of its tests ran (the figures count them as no code, none as run)
        result.verdict = P_NO_CODE
        result.reason = "no candidate program" if candidate is None else "no code in the candidate"
        if by_case:
            first = by_case[min(by_case)]
            result.first_failure, result.first_failure_nodeid = first.rerun_id or first.nodeid, first.nodeid
            if first.case == NO_CASE and first.reason:  # a no-code item's record names the file and what it lacks
                result.reason = first.reason
        return result
    ordered = [by_case[i] for i in sorted(by_case)]
    result.tests = [
        {"case": r.case, "kind": r.kind, "step": r.step, "time": round(r.time, 6), "memory": r.memory,
         "cpu_time": round(r.cpu_time, 6), "wall_time": round(r.wall_time, 6), "borderline": r.borderline,
         "speed_factor": round(r.speed.factor, 4),
         "speed_range": [round(r.speed.low, 4), round(r.speed.high, 4)] if r.speed.measured else None,
         "speed_mean": round(r.speed.mean, 4) if r.speed.measured else None,
         "confirmed": r.confirmed or None}
        for r in ordered
    ]
    result.tests_run = len(ordered)
    result.tests_passed = sum(r.kind == PASS for r in ordered)
    failures = [r for r in ordered if r.kind != PASS]
    if failures:
        first = failures[0]
        result.verdict = P_FAIL
        result.reason = f"test {first.case}: {first.kind}" + (f" ({first.reason})" if first.reason else "")
        result.first_failure = first.rerun_id or first.nodeid
        result.first_failure_nodeid = first.nodeid
        result.first_failure_detail = dict(first.detail)
        if all(r.kind == HARNESS_ERROR for r in failures):
            result.verdict, result.reason = P_UNSCORED, "harness error: " + first.reason
    elif result.tests_run < result.tests_total:
        missing = result.tests_total - result.tests_run
        result.reason = f"{missing} of {counted(result.tests_total, 'test')} did not run"
    else:
        result.verdict = P_PASS
    return result


def sampled_result(problem: Problem, candidates: Sequence[Any], records: Iterable[CaseRecord]) -> ProblemResult:
    """A problem with several samples (`Candidate`s): each is judged like a single program, then they
    roll up. score = pass@1 = the share of samples that passed. The verdict is "pass" only when every
    sample passed, "incomplete" when a sample's tests did not all run, "no code" when no sample had code.
    tests_passed / tests_total add up over samples, so the test-case average is the mean over samples."""
    by_sample: dict[int, list[CaseRecord]] = {}
    for record in records:
        by_sample.setdefault(record.sample, []).append(record)
    per = [problem_result(problem, c.file, by_sample.get(c.sample, [])) for c in candidates]
    result = ProblemResult(
        id=problem.id, difficulty=problem.difficulty, format=problem.fmt,
        candidate=candidates[0].file if candidates else None, verdict=P_INCOMPLETE,
        samples=len(candidates), tests_total=problem.n_cases * len(candidates),
        tags=list(problem.tags), skills=list(problem.skills),
    )
    if problem.broken:
        result.verdict, result.reason = P_BROKEN, problem.broken
        return result
    result.samples_passed = sum(r.passed for r in per)
    result.score = result.samples_passed / len(per) if per else 0.0
    result.tests_run = sum(r.tests_run for r in per)
    result.tests_passed = sum(r.tests_passed for r in per)
    for cand, r in zip(candidates, per):
        result.tests.extend({**t, "sample": cand.sample} for t in r.tests)
        result.sample_results.append({
            "sample": cand.sample, "label": cand.label, "file": cand.file, "verdict": r.verdict,
            "reason": r.reason, "tests_passed": r.tests_passed, "tests_run": r.tests_run,
            "first_failure": r.first_failure,
        })
    verdicts = {r.verdict for r in per}
    failing = [(c, r) for c, r in zip(candidates, per) if r.verdict != P_PASS]
    if P_INCOMPLETE in verdicts:
        result.verdict = P_INCOMPLETE
    elif P_UNSCORED in verdicts:
        result.verdict = P_UNSCORED
    elif verdicts == {P_NO_CODE}:
        result.verdict = P_NO_CODE
    elif verdicts == {P_PASS}:
        result.verdict = P_PASS
    else:
        result.verdict = P_FAIL
    if failing:
        cand, first = next(((c, r) for c, r in failing if r.verdict == result.verdict), failing[0])
        result.reason = (f"{len(failing)} of {counted(len(per), 'sample')} failed; sample {cand.sample}: "
                         f"{first.reason}")
        result.first_failure, result.first_failure_detail = first.first_failure, first.first_failure_detail
        result.first_failure_nodeid = first.first_failure_nodeid
        result.program, result.raw = cand.code, cand.raw
    return result


def summarize(
    problems: list[Problem],
    candidates: Mapping[str, str | None | Sequence[Any]],
    skipped: list[SkippedRow],
    records: Iterable[CaseRecord],
    extra: Mapping[str, Any] | None = None,
) -> Summary:
    """Roll per-case records up into per-problem verdicts and the run's figures.

    A problem's candidates are its file (one program), None (none), or a list of `Candidate`s: one
    without a label is the single-program case; several are samples (pass@k)."""
    grouped: dict[str, list[CaseRecord]] = {}
    for record in records:
        grouped.setdefault(record.problem, []).append(record)
    results = []
    for p in problems:
        cand = candidates.get(p.id)
        if isinstance(cand, (list, tuple)) and (len(cand) > 1 or (cand and cand[0].label)):
            results.append(sampled_result(p, cand, grouped.get(p.id, [])))
            continue
        if isinstance(cand, (list, tuple)):
            cand = cand[0] if cand else None
        results.append(single_result(p, cand, grouped.get(p.id, [])))
    return summary_of(results, skipped, extra)


def single_result(problem: Problem, candidate: Any, records: Iterable[CaseRecord]) -> ProblemResult:
    """One program's result. `candidate` is a `Candidate`, its file, or None (no program); a failing
    `Candidate` keeps its program (and model text) in the result. Shared by the plugin and the API."""
    file = candidate if candidate is None or isinstance(candidate, str) else candidate.file
    result = problem_result(problem, file, records)
    result.samples = 0 if file is None else 1
    result.samples_passed = int(result.passed)
    result.score = float(result.passed)
    if result.verdict in (P_FAIL, P_NO_CODE) and file is not None and not isinstance(candidate, str):
        result.program, result.raw = candidate.code, candidate.raw
    return result


def summary_of(
    results: list[ProblemResult], skipped: list[SkippedRow], extra: Mapping[str, Any] | None = None
) -> Summary:
    """The run's figures over per-problem results (one per selected problem, in dataset order)."""
    figures = figures_of(results)
    figures["skipped_rows"] = len(skipped)
    figures["skipped_reasons"] = dict(Counter(_reason_class(s.reason) for s in skipped))
    if extra:
        figures.update(extra)
    return Summary(results, skipped, figures)


def no_code_tests(r: ProblemResult) -> int:
    """The selected tests of a problem's programs without code: none of them ran; they count as `no_code` in the
    outcomes (a problem without any program as one at least, so that it shows)."""
    if r.verdict == P_NO_CODE and not r.tests:
        return max(r.tests_total, 1)
    per_sample = r.tests_total // r.samples if r.samples else 0
    return per_sample * sum(s["verdict"] == P_NO_CODE for s in r.sample_results)


def figures_of(every: list[ProblemResult]) -> dict[str, Any]:
    """The run's figures: the scores over the scored problems (an unscored one has no verdict to count, so it
    is left out of every denominator and named apart), the counts of tests and verdicts over all of them."""
    results = [r for r in every if r.verdict != P_UNSCORED]
    kinds = _outcome_counts(every)
    per_tier, tier_samples = _tier_figures(results)
    tags, skills = grouped_by(results, "tags"), grouped_by(results, "skills")
    per_tag = {name: group_figures(members) for name, members in tags.items()}
    per_skill = {name: group_figures(members) for name, members in skills.items()}
    incomplete = [r.id for r in results if r.verdict == P_INCOMPLETE]
    unscored = [r.id for r in every if r.verdict == P_UNSCORED]
    figures = {
        **_score_figures(results),
        "per_tier": per_tier,
        "per_tag": per_tag,
        "per_skill": per_skill,
        "problem_verdicts": dict(Counter(r.verdict for r in every)),
        "outcomes": dict(kinds),
        "harness_errors": kinds.get("harness_error", 0),
        "incomplete": len(incomplete),
        "incomplete_problems": incomplete,
        # problems whose only failures were the harness's (an executor that failed twice on a case): no verdict,
        # so out of every score's denominator
        "unscored": len(unscored),
        "unscored_problems": unscored,
        "tests_run": sum(r.tests_run for r in every),
        "tests_total": sum(r.tests_total for r in every),
        # verdicts whose own time was within the borderline band of the time limit, either side: fragile
        "borderline": sum(bool(t.get("borderline")) for r in every for t in r.tests),
        **speed_figures(every),
        **sample_figures(results),
        "samples_per_tier": tier_samples,
        "samples_per_tag": {name: _sample_counts(members) for name, members in tags.items()},
        "samples_per_skill": {name: _sample_counts(members) for name, members in skills.items()},
        "intervals": intervals(results, list(per_tier), per_tag, per_skill),
        **step_figures(every),
    }
    # the figures as the reports write them, so that a JSON consumer reads the same text as the terminal
    figures["figure_texts"] = figure_texts(figures)
    return figures


def _score_figures(results: list[ProblemResult]) -> dict[str, Any]:
    """The scores over the scored problems: how many, how many with code, passed, strict accuracy (with and
    without the problems that have no code) and the test case average."""
    n = len(results)
    with_code = [r for r in results if r.verdict not in (P_NO_CODE, P_BROKEN)]
    return {
        "problems": n,  # the problems scored: the selected ones but the unscored
        "problems_with_code": len(with_code),
        "passed": sum(r.passed for r in results),
        # with several samples: the mean over problems of the share of samples that passed (= pass@1)
        "strict_accuracy": _ratio(sum(_score(r) for r in results), n),  # (= passed with one sample per problem)
        "strict_accuracy_with_code": _ratio(sum(_score(r) for r in with_code), len(with_code)),
        "test_case_average": _ratio(
            sum(_ratio(r.tests_passed, r.tests_total) or 0.0 for r in results), n
        ),
        # partial whenever a selected test of a problem with code did not run (-k, -x, fail-fast...)
        "test_case_average_partial": any(r.tests_run + no_code_tests(r) < r.tests_total for r in with_code),
    }


def _outcome_counts(every: list[ProblemResult]) -> Counter[str]:
    """How many tests ended each way (every verdict kind named, 0 included; a no-code problem's tests count as
    no_code)."""
    kinds: Counter[str] = Counter({k: 0 for k in ALL_KINDS})
    for r in every:
        kinds[NO_CODE] += no_code_tests(r)
        for t in r.tests:
            kinds[t["kind"]] += 1
    return kinds


def _tier_figures(results: list[ProblemResult]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each tier's figures and sample counts: the run's dataset's tiers in its order (each, even when empty), then
    any other tier the problems have."""
    per_tier = {}
    tier_samples = {}
    present = {r.difficulty for r in results}
    shown = tiers_shown(present)  # the run's dataset's tiers, in its order
    for tier in (*shown, *sorted(present - set(shown))):
        members = [r for r in results if r.difficulty == tier]
        if not members and tier not in shown:
            continue
        per_tier[tier] = group_figures(members)
        tier_samples[tier] = _sample_counts(members)
    return per_tier, tier_samples


def group_figures(members: list[ProblemResult]) -> dict[str, Any]:
    """A tier's, tag's or skill's figures: problems, passed, strict accuracy."""
    return {"problems": len(members), "passed": sum(r.passed for r in members),
            "strict_accuracy": _ratio(sum(_score(r) for r in members), len(members))}


def grouped_by(results: list[ProblemResult], attribute: str) -> dict[str, list[ProblemResult]]:
    """Problems by each of their tags (or skills), the most common first (ties by name). A problem with several
    tags counts in each."""
    groups: dict[str, list[ProblemResult]] = {}
    for r in results:
        for name in getattr(r, attribute):
            groups.setdefault(name, []).append(r)
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))


def step_figures(results: list[ProblemResult]) -> dict[str, Any]:
    """Passes by the step that accepted them (so a reader sees how much of a score rests on lenient steps), and
    the tests that checkers decided."""
    steps: Counter[str] = Counter()
    checked = {"tests": 0, "passed": 0, "problems": []}
    for r in results:
        decided = [t for t in r.tests if t.get("step") == CHECKER_STEP]
        if decided:
            checked["tests"] += len(decided)
            checked["passed"] += sum(t["kind"] == PASS for t in decided)
            checked["problems"].append(r.id)
        steps.update(t.get("step") or "" for t in r.tests if t["kind"] == PASS)
    return {"pass_steps": dict(steps.most_common()), "checker_tests": checked}


def _counts(r: ProblemResult) -> tuple[int, int]:
    """(samples, samples passed) of a problem; a problem without any candidate has no sample."""
    if r.sample_results or r.samples > 1:
        return r.samples, min(r.samples_passed, r.samples)
    return (0 if r.candidate is None else 1), int(r.passed)


def _score(r: ProblemResult) -> float:
    n, c = _counts(r)
    return c / n if n else 0.0


def _sample_counts(results: list[ProblemResult]) -> dict[str, int]:
    """The samples behind a group's figure and how many of them passed (strict accuracy with several samples
    per problem is an estimate of pass@1 from these)."""
    counts = [_counts(r) for r in results]
    return {"samples": sum(n for n, _ in counts), "samples_passing": sum(c for _, c in counts)}


def sample_figures(results: list[ProblemResult]) -> dict[str, Any]:
    """Samples per problem and the unbiased pass@k (Chen et al. 2021) for k in 1, 5, 10, 100 up to the
    smallest sample count; every selected problem counts (one without a candidate scores 0). Beside them, how
    many samples passed, and the samples of the problems with code and how many of those passed."""
    counts = [_counts(r) for r in results]
    sampled = [n for n, _ in counts if n]
    smallest = min(sampled) if sampled else 0
    with_code = _sample_counts([r for r in results if r.verdict not in (P_NO_CODE, P_BROKEN)])
    return {
        "samples": {"min": smallest, "max": max(sampled, default=0), "total": sum(sampled)},
        "samples_passing": sum(c for _, c in counts),
        "samples_with_code": with_code,
        "pass_at_k": {f"pass@{k}": _round(mean_pass_at_k(counts, k)) for k in ks_for(smallest)},
    }


def intervals(results: list[ProblemResult], tiers: list[str], tags: Mapping[str, Any] = {},
              skills: Mapping[str, Any] = {}) -> dict[str, Any]:
    """95% confidence intervals over problems for strict accuracy (overall, with code, per tier, per tag and per
    skill, each by the same method) and pass@k."""
    units = [Unit(r.difficulty, *_counts(r), with_code=r.verdict not in (P_NO_CODE, P_BROKEN)) for r in results]
    smallest = min((u.samples for u in units if u.samples), default=0)
    figures = interval_figures(units, tiers, ks_for(smallest))
    sampled = any(u.samples > 1 for u in units)
    for key, attribute, names in (("per_tag", "tags", tags), ("per_skill", "skills", skills)):
        figures[key] = group_intervals(
            {name: [u for u, r in zip(units, results) if name in getattr(r, attribute)] for name in names}, sampled)
    return figures


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def document(settings: Mapping[str, Any], source: Mapping[str, Any], summary: Summary) -> dict[str, Any]:
    """The JSON report's shape, whichever front end (plugin or API) produced the summary."""
    return {"version": REPORT_VERSION, "settings": dict(settings), "source": dict(source), **summary.to_dict()}


def failing_nodeids(summary: Summary, most: int = 10) -> list[str]:
    return [r.first_failure for r in summary.problems if r.first_failure][:most]


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 6) if whole else None


def _reason_class(reason: str) -> str:
    """Group skip reasons for the header: without the file and line, and without details in parentheses
    ("rows.jsonl line 7: not JSON (Expecting value...)" -> "line not JSON")."""
    reason = re.sub(r"^.*\bline \d+: ", "line ", reason)
    return reason.split(" (", 1)[0].split(";", 1)[0]


__all__ = [
    "CaseRecord",
    "ProblemResult",
    "Summary",
    "summarize",
    "summary_of",
    "single_result",
    "document",
    "failing_nodeids",
    "FAILURE_KINDS",
]


def speed_figures(results: list) -> dict[str, Any]:
    """The machine's slowdown measured around the run's tests (executor/speed.py): its range (None when no test ran
    long enough to be measured), how many tests were charged their time at quiet-machine speed, and how many
    verdicts were confirmed by a second run (engine/confirm.py) and how many of those it changed."""
    tests = [t for r in results for t in r.tests]
    ranges = [t["speed_range"] for t in tests if t.get("speed_range")]
    return {"speed_range": [min(lo for lo, _ in ranges), max(hi for _, hi in ranges)] if ranges else None,
            "speed_credited": sum(t.get("speed_factor", 1.0) > 1.0 for t in tests),
            "confirmations": sum(bool(t.get("confirmed")) for t in tests),
            "confirmations_changed": sum(bool(t.get("confirmed")) and t["confirmed"] != t["kind"] for t in tests)}
