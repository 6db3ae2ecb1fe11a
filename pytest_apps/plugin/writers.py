"""The plugin's side of the reports: the summary built from the run's plan and records, the report header,
the terminal summary, JUnit properties, and the JSON, HTML, predictions and Markdown files written at the end."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..core import jsontext
from ..core.record import CaseRecord
from ..core.settings import Settings, rerun_args
from ..core.wording import counted
from ..core.writing import replacing, written_in_place
from ..dataset.loading import ONE_FILE_TEXT, ignored_split
from ..engine.special import taco_facts
from ..executor.machine import timing_figures
from ..judge.profiles import TABLE, other_profile
from ..report.audit import reference_audit
from ..report.comparison import CLI_ANYWAY, Comparison, compare
from ..report.markdown import store_failure
from ..report.rollup import HARNESS_ERROR as HARNESS_ERROR_KIND
from ..report.rollup import Summary, document, summarize
from ..report.taco import annotate
from ..report.terminal import judging_lines, row_lines, summary_lines
from .formats import Finished, ReportFormat, requested
from .state import ControllerState, RunState


def build_summary(state: RunState, records: Iterable[CaseRecord], wall_time: float) -> Summary:
    plan = state.plan
    candidates = {p.id: plan.candidates.get(p.id) or None for p in plan.problems}  # several: samples
    extra: dict[str, Any] = {"wall_time": round(wall_time, 3), "missing_ids": plan.missing}
    if state.judging.audit:
        checkers = state.judging.checkers
        extra["reference_audit"] = reference_audit(records, [p.id for p in plan.problems], state.judging.profile,
                                                   other_profile(state.judging.profile),
                                                   checked=checkers.problem_ids if checkers is not None else ())
    # summarize keeps a failing candidate's program (and model text) beside its result
    summary = summarize(plan.problems, candidates, plan.skipped, records, extra=extra)
    return annotate(summary, taco_facts(plan.problems, state.spec, skipped=plan.skipped))


def selection_text(settings: dict[str, Any]) -> str:
    parts = []
    if settings.get("difficulty"):
        parts.append("difficulty " + ",".join(settings["difficulty"]))
    if settings.get("tag"):
        parts.append("tag " + ",".join(settings["tag"]))
    if settings.get("since") or settings.get("until"):
        parts.append(f"contest dates {settings.get('since') or '...'} to {settings.get('until') or '...'}")
    if settings.get("only"):
        parts.append("only " + ",".join(settings["only"]))
    if settings.get("offset"):
        parts.append(f"offset {settings['offset']}")
    if settings.get("limit") is not None:
        parts.append(f"limit {settings['limit']}")
    return ", ".join(parts) or "all problems"


def _data_options(src: dict[str, Any]) -> str:
    """' release release_v6', ' test sets private,generated': which rows and tests a dataset's options chose."""
    return "".join(f" {label} {src[key]}" for key, label in (("release", "release"), ("test_sets", "test sets"))
                   if src.get(key))


def _source_version(src: dict[str, Any]) -> str:
    """' revision <sha>' for the hub; ' (fingerprint ...)' for local files, whose version is their content."""
    resolved = src.get("resolved_revision") or src.get("revision")
    if not resolved:
        return ""
    if "=" in str(resolved):
        return f" ({resolved})"
    return f" revision {resolved}"


def _index_text(src: dict[str, Any]) -> str:
    """Where the problem index came from: the cache, a scan that just cached it, or the rows (not cached)."""
    return {"cached": ", problem index cached", "built": ", problem index built and cached"}.get(
        str(src.get("index")), ""
    )


def header_lines(state: RunState) -> list[str]:
    s, plan = state.settings, state.plan
    src = plan.source
    cap = "all tests" if s.max_tests <= 0 else f"first {counted(s.max_tests, 'test')}"
    memory = "none" if s.memory == 0 else f"{(s.memory or state.limits().memory) / 2**30:g} GiB"
    split = f"split {src['split']}" if src["split"] else f"({ONE_FILE_TEXT})"
    # a problem whose programs are all without code (a failed generation, text without a code block) has none
    with_code = sum(1 for p in plan.problems if any(c.has_code for c in plan.candidates.get(p.id, [])))
    lines = [
        f"apps: dataset {src['dataset']} {split}" + _data_options(src) + _source_version(src) + _index_text(src),
        f"apps: {counted(len(plan.problems), 'problem')} ({selection_text(plan.settings)}), {cap} per problem, "
        f"{counted(len(plan.skipped), 'row')} skipped",
        f"apps: candidates {s.candidates_path} ({with_code} with code); memory limit {memory}"
        + (", fail-fast" if s.fail_fast else ""),
        "apps: " + timing_text(state),
        "apps: isolation " + (", ".join(state.isolation()) or "none (the executor could not start)"),
        f"apps: judge {s.judge}: {TABLE[s.judge].description}" + _checkers_text(state),
    ]
    return lines + [f"apps: {note}" for note in plan.notes]


def added_header_lines(answers: Iterable[str | list[str] | None]) -> list[str]:
    """The lines the `pytest_apps_report_header` implementations gave (each a line, a list of them or None)."""
    lines: list[str] = []
    for answer in answers:
        if answer is not None:
            lines += [answer] if isinstance(answer, str) else [str(line) for line in answer]
    return lines


def bad_input_lines(state: RunState) -> list[str]:
    """One line for each bad input the run went on without: an option that did not apply, a skipped row, a
    problem whose tests cannot be used."""
    plan = state.plan
    return plan.warnings + row_lines(plan.problems, plan.skipped, plan.source["dataset"])


def timing_text(state: RunState) -> str:
    """The time limit, what it counts, and the machine it is measured on."""
    limits, machine, s = state.limits(), machine_figures(state), state.settings
    scale = f" ({s.timeout:g} s x {s.timeout_scale:g})" if s.timeout_scale != 1 else ""
    speed = "n/a" if machine["speed"] is None else f"{1000 * machine['speed']:.1f} ms"
    return (
        f"time limit {limits.timeout:g} s{scale} of each program's own time (CPU plus blocked, not waiting for a "
        f"CPU), wall-clock backstop {limits.wall_backstop:g} s; {counted(machine['cpus'], 'CPU')}, "
        f"{counted(machine['children_at_once'], 'program')} at once; machine speed {speed}"
    )


def _were(n: int) -> str:
    return "was" if n == 1 else "were"


def machine_figures(state: RunState) -> dict[str, Any]:
    """What the run's timing rests on, for the header and the JSON report's `machine` section."""
    limits = state.limits()
    return timing_figures(limits.timeout, limits.band, limits.backstop, state.cpus, state.workers,
                          state.machine_speed())


def _checkers_text(state: RunState) -> str:
    checkers = state.judging.checkers
    if checkers is None:
        return ""
    ids = checkers.problem_ids
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    names = [state.settings.checkers] if state.settings.checkers else []
    names += ["pytest_apps_checker"] if checkers.sources else []
    return f"; checkers {' and '.join(names)} ({len(ids)}: {shown or 'none'})"


def suite_properties(state: RunState) -> list[tuple[str, str]]:
    """Testsuite properties of --junitxml: how the run was judged."""
    props = [("apps_judge", state.settings.judge)]
    if state.settings.checkers:
        props.append(("apps_checkers", state.settings.checkers))
    return props


def run_section(*, cases: int, selected: int | None, executed: int, reused: int, carried: int, without_result: int,
                interrupted: str | None, workers_lost: int, rerun: list[str], store: Path | None, resume: bool,
                dropped: str, started_in: Path, not_selected: int | None = None, crashed: str | None = None,
                store_failed: str = "", not_kept: int = 0, lacking: dict[str, str] | None = None) -> dict[str, Any]:
    """The report's `run` section: whether the run is complete, why not, and where its records came from.

    Each reason is derived from the state of the run's cases and of its processes, never chosen by elimination:
    `reasons` lists them (a `kind`, the cases it concerns where it concerns some, and its `text`); the run is
    complete when there is none. `without_result` is the cases of the plan without a record; `not_selected`
    those of them the command line did not select (by default as many as it left out), the others never ran.
    `lacking` (node id -> why, see `lacking_verdicts`) names the cases without a verdict from a healthy harness,
    a harness error among them."""
    lacking = lacking or {}
    selected_n = cases if selected is None else selected
    if not_selected is None:
        not_selected = min(without_result, cases - selected_n)
    never_ran = without_result - not_selected
    # (a lost worker whose cases all ran again elsewhere took nothing from the run)
    if workers_lost and not (without_result or selected_n - executed - reused > 0
                             or any(r != HARNESS_FAULT for r in lacking.values())):
        workers_lost = 0
    stopped = bool(interrupted or workers_lost or crashed)
    # selected cases that did not run here though their results are in the report (earlier records)
    stale = max(0, selected_n - executed - reused) if stopped and not never_ran else 0
    reasons = run_reasons(cases, interrupted=interrupted, crashed=crashed, workers_lost=workers_lost,
                          never_ran=never_ran, not_selected=not_selected, stale=stale,
                          harness=sum(1 for reason in lacking.values() if reason == HARNESS_FAULT))
    section: dict[str, Any] = {
        "complete": not reasons,
        "cases": cases,
        "selected": selected,
        "executed": executed,
        "reused": reused,
        "carried": carried,
        "without_result": without_result,
        "interrupted": interrupted,
    }
    if reasons:
        section["incomplete"] = "; ".join(r["text"] for r in reasons)
    section["reasons"] = reasons
    if lacking:  # which cases have no verdict, and why (the first of them)
        section["without_verdict"] = {"count": len(lacking), "cases": [
            {"case": nodeid, "why": reason} for nodeid, reason in itertools.islice(lacking.items(), MOST_RERUN_LISTED)]}
    if selected is not None and selected < cases:  # a rerun merged into the earlier records: which cases ran again
        section["rerun_count"] = len(rerun)
        section["rerun"] = rerun[:MOST_RERUN_LISTED]
    section["records"] = records_section(store, resume, dropped, started_in, store_failed, not_kept)
    return section


def run_reasons(cases: int, *, interrupted: str | None, crashed: str | None, workers_lost: int, never_ran: int,
                not_selected: int, stale: int, harness: int) -> list[dict[str, Any]]:
    """The reasons a run is incomplete (`run_section`'s `reasons`), each a `kind`, the cases or workers it
    concerns and its `text`, in the order the terminal says them; none for a complete run."""
    reasons: list[dict[str, Any]] = []
    if interrupted:
        reasons.append({"kind": "interrupted", "text": f"interrupted ({interrupted})"})
    if crashed:
        reasons.append({"kind": "internal_error", "text": f"internal error ({crashed})"})
    if workers_lost:
        reasons.append({"kind": "workers_lost", "workers": workers_lost,
                        "text": f"{counted(workers_lost, 'worker')} lost"})
    if never_ran:
        reasons.append({"kind": "never_ran", "cases": never_ran,
                        "text": f"{never_ran} of {counted(cases, 'case')} never ran"})
    if not_selected:
        reasons.append({"kind": "not_selected", "cases": not_selected,
                        "text": f"{not_selected} of {counted(cases, 'case')} {_were(not_selected)} not selected (node "
                                f"ids, -k, -m, --lf, --deselect) and {'has' if not_selected == 1 else 'have'} no "
                                "earlier record"})
    if stale:
        reasons.append({"kind": "earlier_records", "cases": stale,
                        "text": f"{stale} of {counted(cases, 'case')} never ran; "
                                + ("its result is an earlier record" if stale == 1 else
                                   "their results are earlier records")})
    if harness:
        reasons.append({"kind": "harness_error", "cases": harness,
                        "text": f"{counted(harness, 'case')} without a verdict: a harness error (an "
                                "executor lost twice, or a checker's fault; the problem is unscored)"})
    return reasons


def records_section(store: Path | None, resume: bool, dropped: str, started_in: Path, store_failed: str,
                    not_kept: int) -> dict[str, Any]:
    """The `run` section's `records`: the store (as a path from where the run started) and whether the run resumed
    from it; why it was dropped, or failed (the run went on without it: its verdicts are all in the report, not
    all of them kept)."""
    records: dict[str, Any] = {"store": None if store is None else _shown(store, started_in), "resume": resume}
    if dropped:
        records["dropped"] = dropped
    if store_failed:
        records["failed"] = store_failed
        records["not_kept"] = not_kept
    return records


def run_properties(run: dict[str, Any]) -> list[tuple[str, str]]:
    """--junitxml's testsuite properties on how the run went: why it is incomplete, and a record store's failure."""
    props = [] if run["complete"] else [("apps_incomplete", run["incomplete"])]
    failed = store_failure(run)
    if failed:
        props.append(("apps_records_failed", failed))
    return props


MOST_RERUN_LISTED = 200  # node ids a merged partial run's report names (and cases without a verdict it lists)
HARNESS_FAULT = "harness error"  # why a case has no verdict: the harness failed on it twice


def lacking_verdicts(cases: Iterable[str], records: Any, *, interrupted: str | None = None, lost: Iterable[str] = (),
                     workers_lost: bool = False, skipped_by_design: Any = frozenset(),
                     selected: Any = None) -> dict[str, str]:
    """The cases of the plan (node ids, in order) without a verdict from a healthy harness, and why, derived from
    each case's state: its record a harness error; no record, as the case a lost worker was running or took with
    it, or because the run was interrupted (by which signal), or it never ran (not selected, or not reached).
    `records` answers `get(nodeid)`; `skipped_by_design`: cases fail-fast skips (no verdict is owed); `selected`:
    the node ids the command line selected, when known (the others, without a record, were "not selected")."""
    lost = set(lost)
    out: dict[str, str] = {}
    for nodeid in cases:
        record = records.get(nodeid)
        if record is not None:
            if record.kind == HARNESS_ERROR_KIND:
                out[nodeid] = HARNESS_FAULT
            continue
        if nodeid in skipped_by_design:
            continue
        if selected is not None and nodeid not in selected:
            out[nodeid] = "not selected"
        elif nodeid in lost:
            out[nodeid] = "worker lost"
        elif interrupted:
            out[nodeid] = f"interrupted ({interrupted})"
        elif workers_lost:
            out[nodeid] = "worker lost"
        else:
            out[nodeid] = "never ran"
    return out


def _shown(path: Path, started_in: Path) -> str:
    try:
        return os.path.relpath(path, started_in)
    except ValueError:
        return str(path)


def run_lines(run: dict[str, Any] | None) -> list[str]:
    """The terminal's lines on the run's records, and on what it lacks."""
    if run is None:
        return []
    store = run["records"]["store"]
    if store:
        lines = [f"records: {counted(run['executed'], 'case')} executed, {run['reused']} reused from their records"
                 + (f", {run['carried']} carried from earlier runs (not selected or not reached here)"
                    if run["carried"] else "") + f" (store {store})"]
    else:  # (nothing is reused or carried without a store)
        lines = [f"records: none kept (--apps-records off); {counted(run['executed'], 'case')} executed"]
    if run["records"].get("dropped"):
        lines.append("records: " + run["records"]["dropped"])
    failed = store_failure(run)
    if failed:
        lines.append("records: WARNING: " + failed)
    shown = [case for case in (run.get("without_verdict") or {}).get("cases", []) if case["why"] != "not selected"]
    if shown:  # (the cases a narrowed selection left out are said above, by their count)
        more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
        lines.append("without a verdict: " + ", ".join(f"{c['case']} ({c['why']})" for c in shown[:5]) + more)
    if "rerun_count" in run:
        merged = "its rerun case" if run["rerun_count"] == 1 else f"its {run['rerun_count']} rerun cases"
        lines.append(f"this run selected {run['selected']} of {counted(run['cases'], 'case')}: the report merges "
                     f"{merged} into the records of the others")
    if run.get("kept"):
        lines.append(f"the complete report {run['kept']} is kept: this run's reports are written beside the "
                     f"complete ones, as {', '.join(run.get('beside') or [beside(Path(run['kept'])).name])}")
    return lines


def terminal_lines(state: ControllerState, summary: Summary, run: dict[str, Any] | None = None) -> list[str]:
    reference = state.settings.candidates == "reference" and not state.settings.agent
    report_path = beside(state.settings.report_path) if run and run.get("kept") else state.settings.report_path
    # an incomplete run says so first; where its records came from after the figures
    lines = [f"INCOMPLETE RUN: {run['incomplete']}"] if run and not run["complete"] else []
    lines += summary_lines(summary, reference=reference, report_path=report_path, rerun=rerun_args(state.settings))
    lost = [down_line(down) for down in state.workers_down]
    if state.cases_not_run:
        lost.append(f"{counted(state.cases_not_run, 'selected case')} never ran because a worker was lost: the run is "
                    "incomplete (exit status 1)")
    return lines + judging_lines(summary, state.settings.judge) + run_lines(run) + lost + bad_input_lines(state)


def down_line(down: dict[str, Any]) -> str:
    """A worker lost mid-run, for the terminal: its problems' cases that did not run count as not run."""
    where = f" on {down['machine']}" if down["machine"] != "localhost" else ""
    count = "an unknown number of cases" if down["unfinished"] is None else counted(down["unfinished"], "case")
    crashed = f", running {down['crashed']}" if down["crashed"] else ""
    if down["crashed"] and "run_again" in down:
        crashed += " (run again on another worker)" if down["run_again"] else " (not run again)"
    return (f"worker {down['worker']}{where} went down ({down['error'] or 'no reason given'}){crashed}: "
            f"{count} it had been given had not finished there")


def report_document(state: ControllerState, summary: Summary, run: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = document(state.plan.settings, state.plan.source, summary)
    if run is not None:  # at the top, after the format version: whether the run is complete
        doc = {"version": doc.pop("version"), "run": run, **doc}
    doc.update(isolation_fields(state.isolation(), state.remote_isolation))
    doc["machine"] = machine_figures(state)
    if state.workers_down:  # (absent otherwise: the report of a run that lost none is the usual one)
        doc["workers_down"] = list(state.workers_down)
        doc["cases_not_run"] = state.cases_not_run
    return doc


def isolation_fields(here: list[str], machines: dict[str, list[str]]) -> dict[str, Any]:
    """The report's `isolation`: this machine's layers, less any that a machine running workers lacked;
    where the machines differ, `isolation_by_machine` too."""
    common = [layer for layer in here if all(layer in other for other in machines.values())]
    fields: dict[str, Any] = {"isolation": common}
    if any(other != here for other in machines.values()):
        fields["isolation_by_machine"] = {"localhost": here, **machines}
    return fields


def junit_properties(record: CaseRecord) -> list[tuple[str, object]]:
    """Per-case JUnit properties, for --apps-junit-properties."""
    return [
        ("apps_problem", record.problem),
        ("apps_test", record.case),
        ("apps_kind", record.kind),
        ("apps_step", record.step),
        ("apps_time", round(record.time, 6)),
        ("apps_memory", record.memory),
    ]


def with_baseline(document: dict[str, Any], comparison: Comparison) -> dict[str, Any]:
    """The report with its `baseline` section, placed after the summary (before the long per-problem lists)."""
    out = {k: v for k, v in document.items() if k not in ("skipped_rows", "problems")}
    out["baseline"] = comparison.to_dict()
    return out | {k: v for k, v in document.items() if k not in out}


REPORT_NOT_WRITTEN = 6  # the exit status of a run one of whose reports could not be written


def write_reports(state: ControllerState, summary: Summary, baseline: dict[str, Any] | None = None,
                  run: dict[str, Any] | None = None, reports: Sequence[tuple[ReportFormat, Path]] | None = None,
                  ) -> tuple[Comparison | None, dict[str, Any], list[str]]:
    """The JSON report always; each of `reports` (format, path: default, the plugin's formats the settings ask
    for; formats.requested) after it; with a baseline report, the comparison (in each report). Returns the
    comparison, the JSON report's document, and a line for each report that could not be written (a full disk:
    the others are still written, none leaves a temporary file). Only the controller calls this.

    Where: a complete run writes at each path and removes the `.incomplete` reports an earlier run left beside
    it; an incomplete run writes beside (`<name>.incomplete<suffix>`) each path that holds a complete run's
    report (`run["kept"]`: the JSON report's is; the others' are when a file is there), else at the path."""
    document = report_document(state, summary, run)
    s = state.settings
    kept = run is not None and bool(run.get("kept"))
    complete = run is None or bool(run.get("complete"))

    def place(path: Path, json_report: bool = False) -> Path:
        return beside(path) if kept and (json_report or path.is_file()) else path

    comparison = None
    if baseline is not None:
        comparison = compare(baseline, document, allow_mismatch=s.baseline_any, baseline_report=str(s.baseline),
                             report=s.report, anyway=CLI_ANYWAY)
        document = with_baseline(document, comparison)
    failed: list[str] = []

    def attempt(what: str, path: Path, write: Any) -> None:
        try:
            write(path)
        except OSError as exc:
            failed.append(f"the {what} {_shown(path, state.started_in)} could not be written "
                          f"({exc.strerror or exc})")
            return
        if complete and not written_in_place(path):
            beside(path).unlink(missing_ok=True)  # an earlier incomplete run's, now stale

    attempt("JSON report", place(s.report_path, json_report=True),
            lambda path: write_json(state, summary, document, path))
    finished = Finished(document, state.plan.problems, state.plan.candidates)
    for entry, path in requested(s) if reports is None else reports:
        attempt(entry.title, place(path), lambda path, entry=entry: entry.write_to(finished, path))
    return comparison, document, failed


def written_beside(settings: Settings, junitxml: Path | None = None,
                   reports: Sequence[tuple[ReportFormat, Path]] | None = None) -> list[Path]:
    """Where an incomplete run writes its reports while the complete JSON report is kept: beside that one, and
    beside each other report path (`reports`, as `write_reports` takes them, and `--junitxml`) that holds a file;
    the others at their paths."""
    others = [path for _, path in (requested(settings) if reports is None else reports)]
    others += [junitxml] if junitxml is not None else []
    return [beside(settings.report_path)] + [beside(path) for path in others if path.is_file()]


def beside(path: Path) -> Path:
    """Where an incomplete run's report goes when a complete one is at `path`: `<name>.incomplete<suffix>`."""
    return path.with_name(f"{path.stem}.incomplete{path.suffix}")


def is_complete_report(path: Path) -> bool:
    """Whether the JSON report at `path` is that of a complete run (one without a `run` section, from before
    runs said so: when no problem is incomplete)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(document, dict) or "problems" not in document:
        return False
    run = document.get("run")
    if isinstance(run, dict):
        return bool(run.get("complete"))
    return not any(p.get("verdict") == "incomplete" for p in document["problems"])


def write_json(state: ControllerState, summary: Summary, document: dict[str, Any] | None = None,
               path: Path | None = None) -> Path:
    """Write the JSON report atomically (a reader never sees half a file)."""
    path = path or state.settings.report_path
    document = document if document is not None else report_document(state, summary)
    with replacing(path) as fh:  # streamed: the full split's report is tens of MB as text
        jsontext.write_laid_out(document, fh)
        fh.write("\n")
    return path
