"""The HTML report (`--apps-html`): one self-contained file a person would rather look at than read.

Input is the JSON report document (a plain dict, as `plugin.writers.report_document` builds it or as read back
from `reports/apps-report.json`), so a saved report can be rendered again later.

What it shows: the headline figures, a bar per tier, the outcome mix of all tests, a grid of problems by
test cases coloured by outcome kind, and for each failing problem (collapsed) the candidate program, the
first failing input, expected and got.

Design notes:
- Self-contained: inline CSS and JS only (kept in `assets/report.css` and `assets/report.js`, inlined into
  every page), no fonts, images or scripts from elsewhere. A Content Security
  Policy forbids every fetch (`default-src 'none'`) and allows only our own script, by its hash, so even
  markup that slipped through escaping could neither run nor phone home.
- Everything that comes from the run (programs, inputs, outputs, ids, reasons: untrusted model output)
  is escaped with `html.escape`; data for the script travels as JSON in a non-executed
  `<script type="application/json">` with `<`, `>` and `&` written as `\\u003c`-style escapes, and the
  script puts text into the page with `textContent` only.
- Fast at the full test split (5,000 problems x up to ~200 tests): the grid is one run-length-encoded
  string (one letter per outcome kind, a count after it for runs) drawn on a canvas by the inline script,
  problems laid out in columns; failing problems' details are static but collapsed in `<details>`.
  After drawing, the script reads the canvas back and records the colours it painted per kind in
  `#grid-stats[data-drawn]`, so a headless browser test can check what was actually shown.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.outcome import (ALL_KINDS, COMPILE_ERROR, MEMORY_LIMIT, NO_CODE, OUTPUT_LIMIT, PASS, RUN_HARNESS_ERROR,
                            RUNTIME_ERROR, TIMEOUT, WRONG_ANSWER)
from ..core.settings import Settings, rerun_args, rerun_command
from ..core.writing import replacing
from ..core.wording import counted
from ..dataset.table import tier_order
from ..dataset.loading import shown_split
from .comparison_text import side_counts
from .markdown import store_failure
from .terminal import confirmations_text, confirmed_tests
from .confidence import SAMPLES_OF, ci_text, counts_text, figure_texts, is_sampled, pct, points_range, range_text

# How the page draws each kind of test cell: its letter in the grid string and its colour. Which kinds there are
# is core.outcome's (every verdict kind, and the harness error); "not_run" and "broken" are the page's own cells
# (a test that did not run, the row of a problem with no usable tests).
NOT_RUN, BROKEN = "not_run", "broken"
OWN_CELLS = {NOT_RUN: "not run / skipped", BROKEN: "broken problem (no usable tests)"}
LOOK: dict[str, tuple[str, str]] = {
    PASS: ("p", "#2f9e5e"),
    WRONG_ANSWER: ("w", "#e0523f"),
    RUNTIME_ERROR: ("r", "#f28e2b"),
    TIMEOUT: ("t", "#8b5cd6"),
    MEMORY_LIMIT: ("m", "#c93f86"),
    OUTPUT_LIMIT: ("o", "#d6b21c"),
    COMPILE_ERROR: ("c", "#3b6fd8"),
    NO_CODE: ("n", "#59606b"),
    RUN_HARNESS_ERROR: ("h", "#19a3a3"),
    NOT_RUN: ("s", "#d8dce2"),
    BROKEN: ("b", "#9b7b5e"),
}
# Outcome kinds of a test cell, in the legend's order: code letter in the grid string, label, colour.
KINDS: dict[str, tuple[str, str, str]] = {
    kind: (LOOK[kind][0], OWN_CELLS.get(kind, kind.replace("_", " ")), LOOK[kind][1])
    for kind in (*ALL_KINDS, RUN_HARNESS_ERROR, *OWN_CELLS)
}
CODE_OF = {kind: code for kind, (code, _, _) in KINDS.items()}
OTHER_CODE = "x"  # a kind this module does not know (a newer report): drawn like a harness error
PROGRAM_MAX_CHARS = 20_000  # a program longer than this is cut in the page (the JSON report has it whole)


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no `</script>`, `<!--` or `&` can form."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


# ---------------------------------------------------------------------------------------------------------
# The grid: one row of cells per problem, run-length encoded


def problem_cells(problem: Mapping[str, Any]) -> list[str]:
    """The outcome kind of each of a problem's tests, in test order (not-run tests included)."""
    verdict = problem.get("verdict")
    total = int(problem.get("tests_total") or 0)
    if verdict == "broken":
        return ["broken"]
    if verdict == "no_code":
        return ["no_code"] * max(total, 1)
    tests = problem.get("tests") or []
    samples = problem.get("sample_results") or []
    if len(samples) > 1:  # several samples (pass@k): their rows of cells one after the other
        per = total // len(samples) if total else 0
        cells = []
        for sample in samples:
            mine = [t for t in tests if t.get("sample") == sample.get("sample")]
            fill = "no_code" if sample.get("verdict") == "no_code" else "not_run"
            row = [fill] * max([per] + [int(t.get("case", 0)) + 1 for t in mine])
            for t in mine:
                row[int(t.get("case", 0))] = str(t.get("kind", ""))
            cells.extend(row)
        return cells or ["not_run"]
    width = max([total] + [int(t.get("case", 0)) + 1 for t in tests])
    cells = ["not_run"] * max(width, 1)
    for t in tests:
        cells[int(t.get("case", 0))] = str(t.get("kind", ""))
    return cells


def encode_row(cells: Iterable[str]) -> str:
    out: list[str] = []
    last, count = "", 0
    for kind in cells:
        code = CODE_OF.get(kind, OTHER_CODE)
        if code == last:
            count += 1
            continue
        if last:
            out.append(last + (str(count) if count > 1 else ""))
        last, count = code, 1
    if last:
        out.append(last + (str(count) if count > 1 else ""))
    return "".join(out)


def grid_data(problems: list[Mapping[str, Any]]) -> tuple[dict[str, Any], Counter[str]]:
    tiers: list[str] = []
    tier_index: dict[str, int] = {}
    rows, tier_of, ids, verdicts = [], [], [], []
    counts: Counter[str] = Counter()
    max_tests = 1
    for p in problems:
        cells = problem_cells(p)
        counts.update(cells)
        max_tests = max(max_tests, len(cells))
        rows.append(encode_row(cells))
        tier = str(p.get("difficulty") or "")
        if tier not in tier_index:
            tier_index[tier] = len(tiers)
            tiers.append(tier)
        tier_of.append(tier_index[tier])
        ids.append(str(p.get("id", "")))
        verdicts.append(str(p.get("verdict", "")))
    data = {
        "ids": ids,
        "tiers": tiers,
        "tier_of": tier_of,
        "verdicts": verdicts,
        "rows": ",".join(rows),
        "max_tests": max_tests,
        "kinds": {code: [kind, label, colour] for kind, (code, label, colour) in KINDS.items()}
        | {OTHER_CODE: ["other", "other", KINDS["harness_error"][2]]},
    }
    return data, counts


# ---------------------------------------------------------------------------------------------------------
# Page sections


def _header(document: Mapping[str, Any]) -> str:
    settings = document.get("settings") or {}
    source = document.get("source") or {}
    revision = source.get("resolved_revision") or source.get("revision") or settings.get("revision")
    selection = []
    if settings.get("difficulty"):
        selection.append("difficulty " + ", ".join(map(str, settings["difficulty"])))
    if settings.get("only"):
        selection.append(counted(len(settings['only']), 'chosen id'))
    if settings.get("offset"):
        selection.append(f"offset {settings['offset']}")
    if settings.get("limit") is not None:
        selection.append(f"limit {settings['limit']}")
    max_tests = settings.get("max_tests")
    memory = settings.get("memory")
    facts = [
        ("dataset", source.get("dataset") or settings.get("dataset")),
        ("split", shown_split(source, settings)),
        ("revision", revision),
        ("selection", ", ".join(selection) or "all problems"),
        ("tests", None if max_tests is None else ("all" if max_tests <= 0 else f"first {max_tests}")),
        ("candidates", settings.get("candidates")),
        ("time limit", None if settings.get("timeout") is None else f"{settings['timeout']:g} s"),
        ("memory", None if memory is None else ("none" if memory == 0 else f"{memory / 2**30:g} GiB")),
        ("judge", settings.get("judge")),
        ("checkers", settings.get("checkers")),
    ]
    items = "".join(
        f'<span class="fact"><span class="fk">{esc(k)}</span> <span class="fv">{esc(v)}</span></span>'
        for k, v in facts
        if v not in (None, "")
    )
    return f'<header><h1>APPS benchmark report</h1><div class="facts">{items}</div></header>'


def _card(key: str, title: str, value: str, sub: str, badge: str = "", big: bool = False) -> str:
    badge_html = f' <span class="badge">{esc(badge)}</span>' if badge else ""
    return (
        f'<div class="card{" big" if big else ""}" data-figure="{esc(key)}">'
        f'<div class="ct">{esc(title)}{badge_html}</div>'
        f'<div class="cv{" long" if len(value) > 8 else ""}">{esc(value)}</div>'
        f'<div class="cs">{esc(sub)}</div></div>'
    )


def _cards(f: Mapping[str, Any]) -> str:
    verdicts = f.get("problem_verdicts") or {}
    mix = " · ".join(f"{n} {v.replace('_', ' ')}" for v, n in sorted(verdicts.items(), key=lambda x: -x[1]))
    wall = f.get("wall_time")
    texts, sampled = figure_texts(f), is_sampled(f)
    cards = [
        _card("strict_accuracy", "Strict accuracy", pct(f.get("strict_accuracy")),
              _sampled_sub(texts["strict_accuracy"]) if sampled else
              f"{f.get('passed', 0)} of {counted(f.get('problems', 0), 'problem')} pass every test"
              + _with_ci((f.get("intervals") or {}).get("strict_accuracy"), f), big=True,
              badge="pass@1 estimate" if sampled else ""),
        _card("strict_accuracy_with_code", "Over problems with code", pct(f.get("strict_accuracy_with_code")),
              _sampled_sub(texts["strict_accuracy_with_code"]) if sampled else
              f"{f.get('passed', 0)} of {f.get('problems_with_code', 0)} with a program"),
        _card("test_case_average", "Test-case average", pct(f.get("test_case_average")),
              "mean share of tests passed per problem",
              badge="partial" if f.get("test_case_average_partial") else ""),
        _card("problems", "Problems", str(f.get("problems", 0)), (mix or "none selected") + (
            f"; {f['unscored']} unscored, left out" if f.get("unscored") else "")),
        _card("passed", "Passed", str(f.get("passed", 0)),
              f"{f.get('tests_run', 0)} of {counted(f.get('tests_total', 0), 'test')} run"),
        _card("wall_time", "Wall time", "n/a" if wall is None else _duration(wall), "whole run"),
    ]
    return '<section class="cards">' + "".join(cards) + "</section>"


def _sampled_sub(text: str) -> str:
    """A figure's text without its value, for a card's line under it: `pass@1 estimate: 1 of 8 samples
    passing, 4 problems · 95% CI 0.0-71.6%` (the same words as the terminal's)."""
    rest = text.split(" ", 1)[1] if " " in text else ""
    counts, _, interval = rest.partition("), ")
    return counts.strip("()") + (" · " + interval if interval else "")


def _with_ci(interval: Any, f: Mapping[str, Any]) -> str:
    """` · 95% CI 29.4-55.8%` for a figure with an interval in the report (`summary.intervals`)."""
    return " · " + ci_text(interval, (f.get("intervals") or {}).get("level")) if interval else ""


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _tiers(f: Mapping[str, Any]) -> str:
    per_tier = f.get("per_tier") or {}
    names = tier_order(per_tier)
    return "".join(_groups(f, key, title, order) for key, title, order in (
        ("per_tier", "Strict accuracy per tier", names),
        ("per_skill", "Strict accuracy per skill type", list(f.get("per_skill") or {})),
        ("per_tag", "Strict accuracy per tag", list(f.get("per_tag") or {}))))


def _groups(f: Mapping[str, Any], key: str, title: str, names: list[str]) -> str:
    per_tier = f.get(key) or {}
    ci = (f.get("intervals") or {}).get(key) or {}
    sampled = is_sampled(f)
    tier_samples = f.get(SAMPLES_OF[key]) or {}
    rows = []
    for name in names:
        t = per_tier[name] or {}
        n, passed, acc = t.get("problems", 0), t.get("passed", 0), t.get("strict_accuracy")
        width = 0.0 if acc is None else max(0.0, min(100.0, 100 * acc))
        tally = tier_samples.get(name) or {}
        count = f"{passed} / {n}"
        if sampled and tally.get("samples") is not None:
            count = counts_text(passed, n, tally["samples"], tally.get("samples_passing"), True)
        rows.append(
            f'<div class="tier{" empty" if not n else ""}" data-tier="{esc(name)}" data-accuracy="{esc(acc)}">'
            f'<span class="tn">{esc(name)}</span>'
            f'<span class="track"><span class="fill" style="width:{width:.3f}%"></span></span>'
            f'<span class="tv">{esc(pct(acc) if n else "no problems")}'
            f'<span class="tc">{esc(count if n else "")}</span>'
            f'<span class="tci">{esc(range_text(ci.get(name)) if n else "")}</span></span></div>'
        )
    if not rows:
        return ""
    return f'<section><h2>{esc(title)}</h2><div class="tiers">' + "".join(rows) + "</div></section>"


def _outcomes(counts: Counter[str]) -> str:
    """The stacked bar of all test cells by kind, and the legend shared with the grid."""
    total = sum(counts.values()) or 1
    segments, legend = [], []
    for kind, (code, label, colour) in KINDS.items():
        n = counts.get(kind, 0)
        if n:
            segments.append(
                f'<span class="seg" style="width:{100 * n / total:.4f}%;background:{colour}" '
                f'title="{esc(label)}: {n}"></span>'
            )
        legend.append(
            f'<span class="li{"" if n else " zero"}" data-kind="{esc(kind)}" data-count="{n}">'
            f'<span class="sw" style="background:{colour}"></span>{esc(label)} <b>{n}</b></span>'
        )
    others = sum(n for k, n in counts.items() if k not in KINDS)
    if others:
        legend.append(
            f'<span class="li" data-kind="other" data-count="{others}">'
            f'<span class="sw" style="background:{KINDS["harness_error"][2]}"></span>other <b>{others}</b></span>'
        )
    return (
        '<section><h2>Outcomes of all tests</h2>'
        f'<div class="stack">{"".join(segments)}</div>'
        f'<div class="legend" id="legend">{"".join(legend)}</div></section>'
    )


def _grid(data: Mapping[str, Any], counts: Counter[str]) -> str:
    n_problems = len(data["ids"])
    n_cells = sum(counts.values())
    return (
        '<section><h2>Problems × tests</h2>'
        f'<p class="note" id="grid-stats" data-problems="{n_problems}" data-cells="{n_cells}" '
        f'data-max-tests="{data["max_tests"]}">{counted(n_problems, "problem")}, {counted(n_cells, "test cell")}, '
        "one row per problem in dataset order (columns read top to bottom). "
        "Hover a cell for its problem and test; click a failing problem to open its details.</p>"
        '<div id="grid-wrap"><canvas id="grid" role="img" aria-label="grid of problems by test cases"></canvas>'
        '<div id="tip" hidden></div></div>'
        "<noscript><p class=\"note\">The grid is drawn by the page's script; enable JavaScript to see it."
        "</p></noscript>"
        f'<script type="application/json" id="grid-data">{script_json(data)}</script></section>'
    )


def _is_failing(p: Mapping[str, Any]) -> bool:
    return p.get("verdict") == "fail" or (p.get("verdict") == "incomplete" and bool(p.get("first_failure_detail")))


def _first_kind(p: Mapping[str, Any]) -> str:
    for t in p.get("tests") or []:
        if t.get("kind") != "pass":
            return str(t.get("kind"))
    return "not_run"


def _pane(title: str, text: Any, cls: str = "", note: str = "") -> str:
    body = esc(text) if text not in (None, "") else '<span class="none">(nothing)</span>'
    extra = f' <span class="pn">{esc(note)}</span>' if note else ""
    return f'<div class="pane {cls}"><div class="pt">{esc(title)}{extra}</div><pre>{body}</pre></div>'


def _sides(detail: Mapping[str, Any]) -> list[str]:
    """The expected and got panes: for output of several lines, the numbered lines around the first
    difference (`expected_near`, `got_near`: a header line, then the lines), else the excerpts."""
    if detail.get("expected_near") and detail.get("got_near"):
        panes = []
        for name, cls in (("expected", "exp"), ("got", "got")):
            head, _, body = str(detail[f"{name}_near"]).partition("\n")
            panes.append(_pane(name, body, cls, note=head.partition(" ")[2].strip("():")))
        return panes
    return [_pane("expected", detail.get("expected"), "exp"), _pane("got", detail.get("got"), "got")]


def _failure(p: Mapping[str, Any], newly_failing: bool = False, rerun: tuple[str, ...] = ()) -> str:
    kind = _first_kind(p)
    code, label, colour = KINDS.get(kind, (OTHER_CODE, kind.replace("_", " "), KINDS["harness_error"][2]))
    detail = p.get("first_failure_detail") or {}
    program = p.get("program")
    if isinstance(program, str) and len(program) > PROGRAM_MAX_CHARS:
        program = program[:PROGRAM_MAX_CHARS] + f"\n... [{counted(len(program) - PROGRAM_MAX_CHARS, 'more char')}]"
    parts = [
        '<div class="io">',
        _pane("input", detail.get("input")),
        *_sides(detail),
        "</div>",
    ]
    if detail.get("diff"):
        parts.append(_pane("diff (- expected, + got)", detail["diff"], "diff"))
    if detail.get("first_diff") and detail.get("first_diff") != detail.get("reason"):
        parts.append(f'<p class="diff"><b>first difference</b> {esc(detail["first_diff"])}</p>')
    if detail.get("stderr_tail"):
        parts.append(_pane("stderr (end)", detail["stderr_tail"], "err"))
    if p.get("first_failure"):
        command = rerun_command(rerun, p["first_failure"])
        parts.append(f'<p class="rerun"><b>rerun</b> <code>{esc(command)}</code></p>')
    parts.append(_pane("candidate program", program, "prog", note=str(p.get("candidate") or "")))
    passed, total = p.get("tests_passed", 0), p.get("tests_total", 0)
    return (
        f'<details class="fail" id="p-{esc(p.get("id"))}" data-kind="{esc(kind)}" data-id="{esc(p.get("id"))}"'
        + (' data-change="newly_failing"' if newly_failing else "") + ">"
        f'<summary><span class="dot" style="background:{colour}"></span>'
        f'<span class="pid">{esc(p.get("id"))}</span><span class="ptier">{esc(p.get("difficulty"))}</span>'
        + ('<span class="badge new">newly failing</span>' if newly_failing else "")
        + f'<span class="pkind">{esc(label)}</span><span class="pscore">{passed}/{total}</span>'
        f'<span class="preason">{esc(p.get("reason"))}</span></summary>'
        f'<div class="body">{"".join(parts)}</div></details>'
    )


def _failures(problems: list[Mapping[str, Any]], newly_failing: frozenset[str] = frozenset(),
              rerun: tuple[str, ...] = ()) -> str:
    failing = [p for p in problems if _is_failing(p)]
    if not failing:
        return '<section><h2>Failing problems</h2><p class="note">No failing problem.</p></section>'
    kinds = Counter(_first_kind(p) for p in failing)
    options = "".join(
        f'<option value="{esc(k)}">{esc(KINDS.get(k, ("", k.replace("_", " "), ""))[1])} ({n})</option>'
        for k, n in kinds.most_common()
    )
    return (
        f'<section><h2>Failing problems <span class="count" id="fail-count">{len(failing)}</span></h2>'
        '<div class="filters"><input id="f-id" type="search" placeholder="filter by problem id" '
        'aria-label="filter by problem id">'
        f'<select id="f-kind" aria-label="filter by first failure kind"><option value="">all kinds</option>'
        f"{options}</select>"
        '<button type="button" id="f-open">expand shown</button>'
        '<button type="button" id="f-close">collapse all</button></div>'
        f'<div id="failures">{"".join(_failure(p, str(p.get("id")) in newly_failing, rerun) for p in failing)}</div>'
        "</section>"
    )


def _change_list(title: str, key: str, changes: list[Mapping[str, Any]], linked: set[str]) -> str:
    """One list of changed problems: ids ready to paste, then each (linked to its failure details when the page
    has them) with its verdicts then and now."""
    ids = ",".join(str(x.get("id")) for x in changes)
    items = "".join(
        f'<li data-change="{esc(key)}" data-id="{esc(x.get("id"))}">'
        + (f'<a href="#p-{esc(x.get("id"))}">{esc(x.get("id"))}</a>' if str(x.get("id")) in linked
           else f'<b>{esc(x.get("id"))}</b>')
        + f' <span class="ptier">{esc(x.get("difficulty"))}</span> {esc(str(x.get("then")).replace("_", " "))} &rarr; '
        f'{esc(str(x.get("now")).replace("_", " "))}'
        + (f' <code>{esc(x["first_failure"])}</code>' if x.get("first_failure") else "") + "</li>"
        for x in changes
    )
    body = f'<p class="ids"><code>{esc(ids)}</code></p><ul class="changes">{items}</ul>' if changes else (
        '<p class="note">none</p>')
    return f'<div class="change-list" id="{esc(key)}"><h3>{esc(title)} ({len(changes)})</h3>{body}</div>'


def _baseline(document: Mapping[str, Any], linked: set[str]) -> str:
    """The comparison with the baseline report: then, now and the difference with its interval (all problems
    both runs selected and per tier), the exact McNemar p-value, and the problems whose verdict changed."""
    c = document.get("baseline")
    if not c:
        return ""
    n = c.get("problems", 0)
    sampled = c.get("method") == "square-and-add"
    rows = []
    for name, f in [("all", c)] + [(t, f) for t, f in (c.get("per_tier") or {}).items() if f.get("problems")]:
        if not f.get("problems"):
            continue
        diff = f["difference"]
        value = "n/a" if diff.get("value") is None else f"{100 * diff['value']:+.2f} points"
        rows.append(
            f'<tr data-row="{esc(name)}"><th>{esc(name)}</th><td>{f["problems"]}</td>'
            f'<td>{esc(pct(f["then"]["strict_accuracy"]))} ({esc(side_counts(f["then"], f["problems"], sampled))})</td>'
            f'<td>{esc(pct(f["now"]["strict_accuracy"]))} ({esc(side_counts(f["now"], f["problems"], sampled))})</td>'
            f'<td>{esc(value)} <span class="muted">{esc(points_range(diff.get("interval")))}</span></td>'
            f'<td>{f["newly_failing"]}</td><td>{f["newly_passing"]}</td></tr>'
        )
    only = "".join(
        f'<p class="note">{esc(label)} ({len(c[key])}): <code>{esc(",".join(map(str, c[key])))}</code></p>'
        for key, label in (("only_in_baseline", "only in the baseline"), ("only_in_run", "only in this run"),
                           ("unscored", "unscored in one of them (a harness error; left out)"))
        if c.get(key)
    )
    anyway = ""
    if c.get("differences"):
        anyway = '<p class="note">compared anyway (--apps-baseline-any): ' + esc("; ".join(
            f"{d['setting']} {d['then']} there, {d['now']} here" for d in c["differences"])) + "</p>"
    method = {"newcombe": "Newcombe's hybrid score interval", "paired bootstrap": "a paired bootstrap over problems",
              "square-and-add": "Newcombe's square-and-add over effective counts"}
    table = (
        '<table class="cmp"><thead><tr><th></th><th>problems</th><th>then</th><th>now</th>'
        "<th>difference (95% CI)</th><th>newly failing</th><th>newly passing</th></tr></thead>"
        f'<tbody>{"".join(rows)}</tbody></table>'
        f'<p class="note">Exact McNemar p = {c.get("mcnemar_p", 1):.3g} on the problems whose verdict changed; '
        f'the interval is {esc(method.get(c.get("method"), c.get("method")))}.</p>'
    ) if n else '<p class="note">No problem in common: nothing to compare.</p>'
    return (
        f'<section id="baseline" data-problems="{n}"><h2>Against the baseline</h2>'
        f'<p class="note">{counted(n, "problem")} in both runs; baseline '
        f'<code>{esc(c.get("baseline_report"))}</code></p>'
        f"{anyway}{only}{table}"
        + _change_list("Newly failing", "newly_failing", list(c.get("newly_failing_problems") or []), linked)
        + _change_list("Newly passing", "newly_passing", list(c.get("newly_passing_problems") or []), set())
        + "</section>"
    )


def _extras(document: Mapping[str, Any], f: Mapping[str, Any]) -> str:
    blocks = []
    skipped = document.get("skipped_rows") or []
    if skipped:
        items = "".join(
            f"<li><b>{esc(s.get('problem_id'))}</b> (row {esc(s.get('index'))}): {esc(s.get('reason'))}</li>"
            for s in skipped[:500]
        )
        more = f"<li>… and {len(skipped) - 500} more</li>" if len(skipped) > 500 else ""
        blocks.append(
            f"<details><summary>Skipped dataset rows ({len(skipped)})</summary><ul>{items}{more}</ul></details>"
        )
    incomplete = f.get("incomplete_problems") or []
    if incomplete:
        blocks.append(
            f"<details><summary>Incomplete problems, scored 0 ({len(incomplete)})</summary>"
            f"<p class=\"ids\">{esc(', '.join(map(str, incomplete)))}</p></details>"
        )
    unscored = f.get("unscored_problems") or []
    if unscored:
        blocks.append(
            f"<details><summary>Unscored problems: a harness error on a case, not the program; left out of "
            f"the scores ({len(unscored)})</summary><p class=\"ids\">{esc(', '.join(map(str, unscored)))}</p></details>"
        )
    missing = f.get("missing_ids") or []
    if missing:
        blocks.append(
            f"<details><summary>Asked-for ids not in the dataset ({len(missing)})</summary>"
            f"<p class=\"ids\">{esc(', '.join(map(str, missing)))}</p></details>"
        )
    confirmed = confirmed_tests(document.get("problems") or [])
    if confirmed:
        items = "".join(f"<li>{esc(t)}</li>" for t in confirmed)
        blocks.append(f"<details><summary>{esc(confirmations_text(f))}</summary><ul>{items}</ul></details>")
    blocks.extend(_judging(f))
    return f'<section class="extras">{"".join(blocks)}</section>' if blocks else ""


def _judging(f: Mapping[str, Any]) -> list[str]:
    """Passes by the step that accepted them, tests decided by checkers, and a reference run's audit."""
    blocks = []
    steps = f.get("pass_steps") or {}
    if steps:
        items = "".join(f"<li><b>{esc(step or 'unnamed')}</b> {esc(n)}</li>" for step, n in steps.items())
        blocks.append(f"<details><summary>Passes by step ({sum(steps.values())})</summary><ul>{items}</ul></details>")
    checked = f.get("checker_tests") or {}
    if checked.get("tests"):
        blocks.append(
            f"<details><summary>Decided by checkers ({esc(counted(checked['tests'], 'test'))}, "
            f"{esc(checked['passed'])} passed)"
            f"</summary><p class=\"ids\">{esc(', '.join(map(str, checked.get('problems') or [])))}</p></details>"
        )
    audit = f.get("reference_audit") or {}
    split = audit.get("disagree") or []
    if split:
        items = "".join(f"<li><b>{esc(d.get('problem'))}</b>: tests {esc(', '.join(map(str, d.get('tests') or [])))}"
                        "</li>" for d in split[:500])
        blocks.append(f"<details><summary>References disagree ({counted(len(split), 'problem')})</summary>"
                      f"<ul>{items}</ul></details>")
    other = audit.get("other_judge")
    only = audit.get(f"pass_only_under_{other}") or []
    if only:
        items = "".join(f"<li><b>{esc(o.get('problem'))}</b> sample {esc(o.get('sample'))}</li>" for o in only[:500])
        blocks.append(f"<details><summary>References that pass only under the {esc(other)} judge ({len(only)})"
                      f"</summary><ul>{items}</ul></details>")
    return blocks


# ---------------------------------------------------------------------------------------------------------
# Page


def asset(name: str) -> str:
    """A file of the page's own (assets/report.css, assets/report.js), inlined into every page."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


CSS = asset("report.css")
JS = asset("report.js")


def _incomplete_banner(document: Mapping[str, Any]) -> str:
    """An incomplete run's banner, above everything else (and a failed record store's warning)."""
    run = document.get("run") or {}
    failed = store_failure(run)
    warning = "" if failed is None else (
        f'<div class="store-failed" role="alert" style="background:#fef0c7;border:2px solid #b54708;'
        f'padding:.6em 1em;margin-bottom:1em"><strong>Warning:</strong> {esc(failed)}.</div>')
    if run.get("complete", True):
        return warning
    return (f'<div class="incomplete" role="alert" style="background:#fde2e1;border:2px solid #b42318;'
            f'padding:.6em 1em;margin-bottom:1em"><strong>Incomplete run:</strong> '
            f'{esc(run.get("incomplete", "some cases have no result"))}. These figures are not a full '
            "evaluation.</div>" + warning)


def render_html(document: Mapping[str, Any]) -> str:
    """The whole page as one string."""
    f = document.get("summary") or {}
    problems = list(document.get("problems") or [])
    data, counts = grid_data(problems)
    script_hash = hashlib.sha256(JS.encode("utf-8")).digest()
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{base64.b64encode(script_hash).decode()}'; base-uri 'none'; form-action 'none'"
    )
    title = f"APPS report · {pct(f.get('strict_accuracy'))} strict accuracy"
    source = document.get("source") or {}
    if source.get("dataset"):
        title += f" · {source['dataset']}"
    body = "".join(
        [
            _incomplete_banner(document),
            _header(document),
            _cards(f),
            _tiers(f),
            _baseline(document, {str(p.get("id")) for p in problems if _is_failing(p)}),
            _outcomes(counts),
            _grid(data, counts),
            _failures(problems, frozenset(
                str(x.get("id")) for x in (document.get("baseline") or {}).get("newly_failing_problems") or []),
                tuple(rerun_args(Settings.from_dict(document.get("settings") or {})))),
            _extras(document, f),
            f'<footer>pytest-apps report, format version {esc(document.get("version"))}. '
            "Self-contained: this file loads nothing from the network.</footer>",
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'  # our constant text: no quotes in it
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main><script>{JS}</script></body></html>\n"
    )


def write_html(document: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the page atomically (a reader never sees half a file)."""
    path = Path(path)
    with replacing(path) as out:
        out.write(render_html(document))
    return path


__all__ = ["render_html", "write_html", "KINDS", "problem_cells", "encode_row"]
