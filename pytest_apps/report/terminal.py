"""The run's figures as the lines of the terminal's `APPS summary` section."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.settings import paste_line
from ..core.outcome import BORDERLINE_BAND, GENERATION_FAILED, NO_CODE
from ..core.wording import counted
from ..dataset.problems import Problem, SkippedRow
from .confidence import ci_text, figure_texts, pct, sampled_counts, samples_per_problem
from .rollup import Summary, failing_nodeids
from .taco import lines as taco_lines

GENERATION_FAILED_TEXT = f": {GENERATION_FAILED}: "  # in a no-code reason: "<file>: generation failed: <why>"
MOST_ROW_LINES = 10  # bad rows named one per line; the rest are counted (all are in the JSON report)


def summary_lines(summary: Summary, *, reference: bool = False, report_path: object = None,
                  rerun: Sequence[str] = ()) -> list[str]:
    """The `APPS summary` section's lines. `reference`: the candidates are the dataset's own solutions (their
    failures point at a broken problem or a harness bug). `rerun`: the options a rerun of one case needs
    (`core.settings.rerun_args`); with some, each failing case is listed as the command that reruns it, else
    as its node id, which reruns it alone."""
    f = summary.figures
    lines = _score_lines(f) + _outcome_lines(f)
    lines.extend(generation_failure_lines(summary))
    lines.extend(_machine_lines(f))
    lines.extend(_problem_lines(f))
    if f["samples"]["max"] > 1:
        lines.append(_samples_line(f))
    if reference:
        bad = [r.id for r in summary.problems if r.verdict == "fail"]
        if bad:
            lines.append("reference solutions failing (a broken problem or a harness bug): " + ", ".join(bad[:20])
                         + (f" and {len(bad) - 20} more" if len(bad) > 20 else ""))
    failing = failing_nodeids(summary)
    if failing:
        lines.append("first failing case of failing problems (paste to rerun):")
        lines.extend("  " + paste_line(rerun, nodeid) for nodeid in failing)
    lines.append(f"wall time: {f['wall_time']:.1f} s" + (f"; report: {report_path}" if report_path else ""))
    return lines


def _score_lines(f: dict[str, Any]) -> list[str]:
    """The scores: strict accuracy (over all problems, over those with code), per tier, skill and tag, TACO's
    figures, the test-case average."""
    texts = figure_texts(f)
    lines = [
        "strict accuracy: " + texts["strict_accuracy"],
        "strict accuracy over problems with code: " + texts["strict_accuracy_with_code"],
    ]
    for key, label in (("per_tier", "per tier"), ("per_skill", "per skill"), ("per_tag", "per tag")):
        groups = ", ".join(f"{name} {text}" for name, text in texts[key].items())
        if groups:
            lines.append(f"{label}: {groups}")
    lines.extend(taco_lines(f))
    if f["test_case_average_partial"]:
        lines.append(
            f"test-case average: partial, at least {pct(f['test_case_average'])} "
            f"({f['tests_total'] - f['tests_run']} of {counted(f['tests_total'], 'selected test')} did not run)"
        )
    else:
        lines.append(f"test-case average: {pct(f['test_case_average'])}")
    return lines


def _outcome_lines(f: dict[str, Any]) -> list[str]:
    """How many tests ran and how they ended; how many verdicts were near the time limit."""
    kinds = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in f["outcomes"].items() if n and k != NO_CODE)
    no_code = f["outcomes"].get(NO_CODE, 0)
    lines = [f"tests: {f['tests_run']} run of {f['tests_total']}" + (f"; {kinds}" if kinds else "")
             + (f"; no code {no_code} (not run)" if no_code else "")]
    if f.get("borderline"):
        band = round(100 * BORDERLINE_BAND)
        lines.append(f"{counted(f['borderline'], 'verdict')} within {band}% of the time "
                     "limit (fragile: another machine may decide them otherwise)")
    return lines


def _machine_lines(f: dict[str, Any]) -> list[str]:
    """The machine's slowdown measured during the run and the tests charged at quiet speed; the confirmations."""
    lines = []
    if f.get("speed_range"):
        low, high = f["speed_range"]
        credited = f.get("speed_credited", 0)
        lines.append(f"machine slowdown measured during the run: x{low:.2f} to x{high:.2f} of its quiet speed; "
                     f"{counted(credited, 'test')} charged at quiet-machine speed")
    if f.get("confirmations"):
        lines.append(confirmations_text(f))
    return lines


def _problem_lines(f: dict[str, Any]) -> list[str]:
    """What kept problems out of the scores or left them short: skipped rows, ids not in the data, incomplete and
    unscored problems (the first ten of each named)."""
    lines = []
    if f["skipped_rows"]:
        reasons = ", ".join(f"{r} {n}" for r, n in f["skipped_reasons"].items())
        lines.append(f"skipped rows: {f['skipped_rows']} ({reasons})")
    if f["missing_ids"]:
        lines.append("not in the dataset: " + ", ".join(f["missing_ids"]))
    if f["incomplete"]:
        shown = ", ".join(f["incomplete_problems"][:10])
        more = f" and {f['incomplete'] - 10} more" if f["incomplete"] > 10 else ""
        lines.append(f"incomplete problems (not every test ran; scored 0): {shown}{more}")
    if f.get("unscored"):
        shown = ", ".join(f["unscored_problems"][:10])
        more = f" and {f['unscored'] - 10} more" if f["unscored"] > 10 else ""
        lines.append(f"unscored problems (a harness error on a case, not the program's failure; left out of the "
                     f"scores): {shown}{more}")
    return lines


def _samples_line(f: dict[str, Any]) -> str:
    """With several samples per problem: how many, pass@k (with its interval) and what it is estimated from."""
    ci = f.get("intervals") or {}

    def bracketed(interval: object) -> str:
        text = ci_text(interval, ci.get("level"))
        return f" ({text})" if text else ""

    ks = ", ".join(f"{k} {pct(v)}" + bracketed((ci.get("pass_at_k") or {}).get(k))
                   for k, v in f["pass_at_k"].items())
    return (f"samples per problem: {samples_per_problem(f)}; " + (ks or "pass@k n/a")
            + f"; estimated from {sampled_counts(f)}")


def generation_failure_lines(summary: Summary, most: int = MOST_ROW_LINES) -> list[str]:
    """A count of the problems whose generation failed (an agent's error, a timeout), then one line each: why."""
    failed = [(r.id, r.reason.split(GENERATION_FAILED_TEXT, 1)[1]) for r in summary.problems
              if GENERATION_FAILED_TEXT in r.reason]
    if not failed:
        return []
    lines = [f"generation failed for {counted(len(failed), 'problem')} (scored no code; "
             "the next run asks the agent again):"]
    lines += [f"  {pid}: {why}" for pid, why in failed[:most]]
    if len(failed) > most:
        lines.append(f"  and {len(failed) - most} more (their reasons are in the JSON report)")
    return lines


def judging_lines(summary: Summary, judge: str) -> list[str]:
    """How the run was judged: passes by the step that accepted them (how much of the score rests on lenient
    steps), tests decided by checkers, and a reference run's audit."""
    f = summary.figures
    lines = []
    steps = f.get("pass_steps") or {}
    if steps:
        passes = sum(steps.values())
        shown = ", ".join(f"{step or 'unnamed'} {n} ({100 * n / passes:.1f}%)" for step, n in steps.items())
        lines.append(f"passes by step ({judge} judge): {shown}")
    checked = f.get("checker_tests") or {}
    if checked.get("tests"):
        lines.append(f"decided by checkers: {counted(checked['tests'], 'test')} ({checked['passed']} passed) of "
                     "problems "
                     + ", ".join(checked["problems"][:20]) + (" and more" if len(checked["problems"]) > 20 else ""))
    audit = f.get("reference_audit")
    if audit:
        split = audit["disagree"]
        if split:
            shown = ", ".join(f"{d['problem']} ({counted(len(d['tests']), 'test')}"
                              + ("; has a checker)" if d.get("checker") else ")") for d in split[:20])
            lines.append(f"references disagree (several right answers? candidates for a checker): {shown}"
                         + (f" and {len(split) - 20} more" if len(split) > 20 else ""))
        other = audit["other_judge"]
        only = audit.get(f"pass_only_under_{other}") or []
        if only:
            shown = ", ".join(f"{o['problem']} (sample {o['sample']})" for o in only[:20])
            lines.append(f"references failing under {audit['judge']} that pass under --apps-judge {other}: {shown}"
                         + (f" and {len(only) - 20} more" if len(only) > 20 else ""))
    return lines


def row_lines(problems: Sequence[Problem], skipped: Sequence[SkippedRow], dataset: str,
              most: int = MOST_ROW_LINES) -> list[str]:
    """One line for each row the run could not use as it is: where it is (file and line, or row and problem)
    and what to do. A skipped row is left out and counted; a broken problem scores 0 and runs nothing."""
    lines = [_skipped_line(row, dataset) for row in skipped[:most]]
    if len(skipped) > most:
        lines.append(f"and {counted(len(skipped) - most, 'more skipped row')} (all of them under skipped_rows in the "
                     "JSON report)")
    broken = [p for p in problems if p.broken]
    lines += [
        f"problem {p.id} (row {p.index} of {dataset}) scores 0 and runs nothing: {p.broken}; give its input_output "
        "as many outputs as inputs" for p in broken[:most]
    ]
    if len(broken) > most:
        lines.append(f"and {counted(len(broken) - most, 'more problem')} whose inputs and outputs differ in length "
                     "(verdict broken in the JSON report)")
    return lines


def _skipped_line(row: SkippedRow, dataset: str) -> str:
    if re.search(r"\bline \d+: ", row.reason):  # a line that is no row: its reason names the file and the line
        return f"skipped {row.reason}; fix or remove that line (the rest of the file was read)"
    todo = "give each row its own problem_id" if row.reason.startswith("duplicate") else "fix that row"
    return f"skipped row {row.index} (problem {row.problem_id}) of {dataset}: {row.reason}; {todo} (it is left out " \
           "and counted)"


def confirmations_text(f: Mapping[str, Any]) -> str:
    """The run's confirmations (engine/confirm.py) in one sentence, as every report writes it."""
    n, changed = f.get("confirmations", 0), f.get("confirmations_changed", 0)
    return (f"{counted(n, 'timeout or near-limit verdict')} confirmed by a second run with no other test "
            f"of the run running ({changed} changed)")


def confirmed_tests(problems: Iterable[Mapping[str, Any]]) -> list[str]:
    """Each confirmed test as `<problem> test <case>: <first kind> -> <final kind>`, in report order."""
    return [f"{p.get('id')} test {t.get('case')}: {t['confirmed'].replace('_', ' ')} -> "
            f"{str(t.get('kind')).replace('_', ' ')}"
            for p in problems for t in p.get("tests") or () if t.get("confirmed")]
