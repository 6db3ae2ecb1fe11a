"""Writers of the roll-up: the report header, the terminal summary and the JSON report."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.record import CaseRecord
from ..report.rollup import Summary, document, failing_nodeids, summarize
from .state import RunState


def build_summary(state: RunState, records: Iterable[CaseRecord], wall_time: float) -> Summary:
    plan = state.plan
    candidates = {p.id: plan.candidates.get(p.id) or None for p in plan.problems}  # several: samples
    # summarize keeps a failing candidate's program (and model text) beside its result
    return summarize(
        plan.problems,
        candidates,
        plan.skipped,
        records,
        extra={"wall_time": round(wall_time, 3), "missing_ids": plan.missing},
    )


def selection_text(settings: dict[str, Any]) -> str:
    parts = []
    if settings.get("difficulty"):
        parts.append("difficulty " + ",".join(settings["difficulty"]))
    if settings.get("only"):
        parts.append("only " + ",".join(settings["only"]))
    if settings.get("offset"):
        parts.append(f"offset {settings['offset']}")
    if settings.get("limit") is not None:
        parts.append(f"limit {settings['limit']}")
    return ", ".join(parts) or "all problems"


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
    cap = "all tests" if s.max_tests <= 0 else f"first {s.max_tests} tests"
    memory = "none" if s.memory == 0 else f"{(s.memory or state.limits().memory) / 2**30:g} GiB"
    lines = [
        f"apps: dataset {src['dataset']} split {src['split']}" + _source_version(src) + _index_text(src),
        f"apps: {len(plan.problems)} problems ({selection_text(plan.settings)}), {cap} per problem, "
        f"{len(plan.skipped)} rows skipped",
        f"apps: candidates {s.candidates_path} ({sum(1 for p in plan.problems if plan.candidates.get(p.id))} "
        f"with code); limits {s.timeout:g} s wall, memory {memory}"
        + (", fail-fast" if s.fail_fast else ""),
        "apps: isolation " + (", ".join(state.isolation()) or "none (the executor could not start)"),
    ]
    return lines


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


def terminal_lines(state: RunState, summary: Summary) -> list[str]:
    f = summary.figures
    lines = [
        f"strict accuracy: {_pct(f['strict_accuracy'])} ({f['passed']}/{f['problems']} problems)",
        f"strict accuracy over problems with code: {_pct(f['strict_accuracy_with_code'])} "
        f"({f['passed']}/{f['problems_with_code']})",
    ]
    tiers = ", ".join(
        f"{tier} {_pct(t['strict_accuracy'])} ({t['passed']}/{t['problems']})"
        for tier, t in f["per_tier"].items()
        if t["problems"]
    )
    if tiers:
        lines.append("per tier: " + tiers)
    if f["test_case_average_partial"]:
        lines.append(
            f"test-case average: partial, at least {_pct(f['test_case_average'])} "
            f"({f['tests_total'] - f['tests_run']} of {f['tests_total']} selected tests did not run)"
        )
    else:
        lines.append(f"test-case average: {_pct(f['test_case_average'])}")
    kinds = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in f["outcomes"].items() if n)
    lines.append(f"tests: {f['tests_run']} run of {f['tests_total']}" + (f"; {kinds}" if kinds else ""))
    if f["skipped_rows"]:
        reasons = ", ".join(f"{r} {n}" for r, n in f["skipped_reasons"].items())
        lines.append(f"skipped rows: {f['skipped_rows']} ({reasons})")
    if f["missing_ids"]:
        lines.append("not in the dataset: " + ", ".join(f["missing_ids"]))
    if f["incomplete"]:
        shown = ", ".join(f["incomplete_problems"][:10])
        more = f" and {f['incomplete'] - 10} more" if f["incomplete"] > 10 else ""
        lines.append(f"incomplete problems (not every test ran; scored 0): {shown}{more}")
    if f["samples"]["max"] > 1:
        ks = ", ".join(f"{k} {_pct(v)}" for k, v in f["pass_at_k"].items())
        lines.append(f"samples per problem: {f['samples']['min']} to {f['samples']['max']}; " + (ks or "pass@k n/a"))
    if state.settings.candidates == "reference" and not state.settings.agent:
        bad = [r.id for r in summary.problems if r.verdict == "fail"]
        if bad:
            lines.append("reference solutions failing (a broken problem or a harness bug): " + ", ".join(bad[:20])
                         + (f" and {len(bad) - 20} more" if len(bad) > 20 else ""))
    failing = failing_nodeids(summary)
    if failing:
        lines.append("first failing case of failing problems (paste to rerun):")
        lines.extend(f"  {nodeid}" for nodeid in failing)
    lines.append(f"wall time: {f['wall_time']:.1f} s; report: {state.settings.report_path}")
    return lines


def report_document(state: RunState, summary: Summary) -> dict[str, Any]:
    doc = document(state.plan.settings, state.plan.source, summary)
    doc["isolation"] = state.isolation()
    return doc


@dataclass(frozen=True)
class Gate:
    passed: bool
    message: str


def fail_under_verdict(threshold: float | None, summary: Summary) -> Gate | None:
    """`--apps-fail-under`: the run passes when strict accuracy is at or above the threshold (percent)."""
    if threshold is None:
        return None
    value = 100 * (summary.figures["strict_accuracy"] or 0.0)
    # compare at the precision the report prints, so 50.00% meets --apps-fail-under 50
    if round(value, 6) >= threshold:
        return Gate(True, f"strict accuracy {value:.2f}% meets --apps-fail-under {threshold:g}%")
    return Gate(False, f"FAIL: strict accuracy {value:.2f}% is below --apps-fail-under {threshold:g}%")


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


def write_reports(state: RunState, summary: Summary) -> None:
    """The JSON report always; HTML and predictions when asked. Only the controller calls this."""
    document = report_document(state, summary)
    write_json(state, summary, document)
    if state.settings.html:
        from ..report.html import write_html

        write_html(document, state.settings.path(state.settings.html))
    if state.settings.predictions:
        from ..report.predictions import prediction_records, write_predictions

        records = prediction_records(document, state.plan.problems, state.plan.candidates)
        write_predictions(records, state.settings.path(state.settings.predictions))


def write_json(state: RunState, summary: Summary, document: dict[str, Any] | None = None) -> Path:
    """Write the JSON report atomically (a reader never sees half a file)."""
    path = state.settings.report_path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    document = document if document is not None else report_document(state, summary)
    with open(tmp, "w", encoding="utf-8") as fh:  # streamed: the full split's report is tens of MB as text
        json.dump(document, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)
    return path
