"""The summary as a short Markdown document for CI pages (`--apps-markdown`): a pull request comment or a
GitHub Actions job summary. Rendered from the JSON report document, so a saved report renders the same.

It holds the headline figures with their 95% intervals, a row per tier, pass@k with several samples and,
with a baseline, the comparison (then, now, the difference and its interval per tier, the exact McNemar
p-value) and the newly failing and newly passing problems, ids ready to paste. Text that comes from the
run (ids, node ids, tier names, paths) goes into code spans or table cells with the characters that could
end them replaced, so a crafted file name cannot change the document's structure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.settings import Settings, paste_line, rerun_args
from ..core.wording import counted
from ..core.writing import replacing
from ..dataset.loading import shown_split
from .comparison_text import side_counts
from .confidence import (SAMPLES_OF, ci_text, figure_texts, is_sampled, pct, points_range, range_text, sampled_counts,
                         samples_per_problem)
from .stats import SQUARE_AND_ADD
from .terminal import confirmations_text, confirmed_tests

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
MOST_IDS = 200  # ids listed per list; a PR comment holds at most 65,536 characters
MOST_NODEIDS = 50


def code(text: Any) -> str:
    """Inline code that cannot be closed early or span lines."""
    return "`" + str(text).replace("`", "'").replace("\r", " ").replace("\n", " ").replace("|", "\\|") + "`"


def cell(text: Any) -> str:
    return str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|").replace("`", "'")


def _ids(ids: Sequence[str]) -> str:
    shown = code(",".join(ids[:MOST_IDS]))
    return shown + (f" and {len(ids) - MOST_IDS} more" if len(ids) > MOST_IDS else "")


def shown_dataset(source: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """The dataset as a PR comment may show it: a hub id, or a local file relative to where the run started
    (its name alone when it lies elsewhere): never a machine's absolute path."""
    dataset = str(settings.get("dataset") or source.get("dataset") or "")
    if not os.path.isabs(dataset):
        return dataset
    rootdir = str(settings.get("rootdir") or "")
    inside = bool(rootdir) and os.path.commonpath([dataset, os.path.abspath(rootdir)]) == os.path.abspath(rootdir)
    return os.path.relpath(dataset, rootdir) if inside else os.path.basename(dataset.rstrip("/"))


def _headline(doc: Mapping[str, Any]) -> list[str]:
    f = doc.get("summary") or {}
    ci = f.get("intervals") or {}
    level = ci.get("level")
    source, settings = doc.get("source") or {}, doc.get("settings") or {}
    sampled = is_sampled(f)
    texts = figure_texts(f)
    value, _, rest = texts["strict_accuracy"].partition(" ")
    headline = f"**Strict accuracy {value}** {rest}"
    about = [f"dataset {code(shown_dataset(source, settings))}",
             f"split {code(shown_split(source, settings))}"]
    revision = source.get("resolved_revision")
    if revision and "=" not in str(revision):
        about.append(f"revision {code(str(revision)[:12])}")
    if settings.get("candidates"):
        about.append(f"candidates {code(settings['candidates'])}")
    lines = ["## APPS benchmark", "", headline, "", ", ".join(about), "",
             "| | problems | passed | strict accuracy | 95% CI |", "| --- | ---: | ---: | ---: | --- |",
             f"| all | {f.get('problems', 0)} | {_passed(f.get('passed', 0), f.get('samples_passing'), (f.get('samples') or {}).get('total'), sampled)} | "
             f"{pct(f.get('strict_accuracy'))} | {range_text(ci.get('strict_accuracy'))} |"]
    for key, label in (("per_tier", ""), ("per_skill", "skill: "), ("per_tag", "tag: ")):
        counted_by_name = f.get(SAMPLES_OF[key]) or {}
        for name, t in (f.get(key) or {}).items():
            if t.get("problems"):
                tally = counted_by_name.get(name) or {}
                passed = _passed(t["passed"], tally.get("samples_passing"), tally.get("samples"), sampled)
                lines.append(f"| {label}{cell(name)} | {t['problems']} | {passed} | {pct(t.get('strict_accuracy'))} | "
                             f"{range_text((ci.get(key) or {}).get(name))} |")
    if f.get("unscored"):
        lines += ["", f"Unscored ({f['unscored']}): a harness error on a case of each (not the program's failure), "
                      f"left out of the problems counted above: {_ids(f.get('unscored_problems') or [])}."]
    if (f.get("samples") or {}).get("max", 0) > 1 and f.get("pass_at_k"):
        ks = ", ".join(f"{k} {pct(v)}" + (f" ({ci_text(ci['pass_at_k'][k], level)})" if (ci.get("pass_at_k") or {}).get(k)
                                          else "") for k, v in f["pass_at_k"].items())
        lines += ["", f"Samples per problem: {samples_per_problem(f)}; {ks}; estimated from "
                      f"{sampled_counts(f)}. With several samples strict accuracy is an estimate of pass@1; the "
                      "passed column counts passing samples."]
    return lines


def _passed(problems: Any, samples_passing: Any, samples: Any, sampled: bool) -> str:
    """The passed column: problems passed, or with several samples `1 of 8 samples`."""
    if sampled and samples is not None:
        return f"{samples_passing or 0} of {counted(samples, 'sample')}"
    return str(problems)


def _difference(f: Mapping[str, Any]) -> str:
    diff = f["difference"]
    if diff["value"] is None:
        return "n/a"
    return f"{100 * diff['value']:+.2f} points" + (f" ({points_range(diff['interval'])})" if diff["interval"] else "")


def _baseline(c: Mapping[str, Any], rerun: Sequence[str] = ()) -> list[str]:
    n = c["problems"]
    lines = ["", "### Against the baseline", "",
             f"Compared on the {counted(n, 'problem')} both runs selected "
             f"(baseline {code(c['baseline_report'])})."]
    for key, label in (("only_in_baseline", "Only in the baseline"), ("only_in_run", "Only in this run"),
                       ("unscored", "Unscored in one of them (a harness error; left out)")):
        if c.get(key):
            lines.append(f"{label} ({len(c[key])}): {_ids(c[key])}.")
    if c["differences"]:
        lines.append("Compared anyway (`--apps-baseline-any`): " + "; ".join(
            f"{cell(d['setting'])} {code(d['then'])} there, {code(d['now'])} here" for d in c["differences"]) + ".")
    if n == 0:
        return lines
    method = {"newcombe": "Newcombe's hybrid score interval", "paired bootstrap": "a paired bootstrap over problems",
              "square-and-add": "Newcombe's square-and-add over effective counts"}.get(c["method"], c["method"])
    lines += ["", "| | problems | then | now | difference (95% CI) | newly failing | newly passing |",
              "| --- | ---: | ---: | ---: | --- | ---: | ---: |"]
    rows = [("all", c)] + [(t, f) for t, f in c["per_tier"].items() if f["problems"]]
    sampled = c["method"] == SQUARE_AND_ADD
    for name, f in rows:
        m = f["problems"]
        lines.append(f"| {cell(name)} | {m} | {pct(f['then']['strict_accuracy'])} ({side_counts(f['then'], m, sampled)}) | "
                     f"{pct(f['now']['strict_accuracy'])} ({side_counts(f['now'], m, sampled)}) | {_difference(f)} | "
                     f"{f['newly_failing']} | {f['newly_passing']} |")
    lines += ["", f"Exact McNemar p = {c['mcnemar_p']:.3g} on the problems whose verdict changed; the difference's "
                  f"interval is {method}."]
    fell, rose = c["newly_failing_problems"], c["newly_passing_problems"]
    lines += ["", f"**Newly failing ({len(fell)})**: " + (_ids([x["id"] for x in fell]) if fell else "none")]
    nodeids = [x["first_failure"] for x in fell if x.get("first_failure")]
    if nodeids:
        shown = [paste_line(rerun, str(x)).replace("`", "'").replace("\r", " ").replace("\n", " ")
                 for x in nodeids[:MOST_NODEIDS]]
        more = [f"... and {len(nodeids) - MOST_NODEIDS} more"] if len(nodeids) > MOST_NODEIDS else []
        lines += ["", "<details><summary>First failing case of each, to rerun</summary>", "", "```", *shown, *more,
                  "```", "", "</details>"]
    lines += ["", f"**Newly passing ({len(rose)})**: " + (_ids([x["id"] for x in rose]) if rose else "none")]
    return lines


def _incomplete(document: Mapping[str, Any]) -> list[str]:
    """The first line of an incomplete run's summary: that it is incomplete, and why."""
    run = document.get("run") or {}
    if run.get("complete", True):
        return []
    return [f"> **Incomplete run**: {run.get('incomplete', 'some cases have no result')}. These figures are "
            "not a full evaluation.", ""]


def store_failure(run: Mapping[str, Any] | None) -> str | None:
    """What a record store that failed during the run cost, in one sentence (None when it did not fail): the
    run went on, every verdict is in the reports, some records were not kept."""
    records = (run or {}).get("records") or {}
    if not records.get("failed"):
        return None
    n = records.get("not_kept", 0)
    return (f"the record store {records.get('store')} failed ({records['failed']}): {counted(n, 'record')} "
            f"of this run {'was' if n == 1 else 'were'} not kept (every verdict is in the reports)")


def _store_failed(document: Mapping[str, Any]) -> list[str]:
    text = store_failure(document.get("run"))
    return [] if text is None else [f"> **Warning**: {text}.", ""]


def markdown_text(document: Mapping[str, Any]) -> str:
    """The Markdown summary of a report document (with its `baseline` section when it has one)."""
    lines = _incomplete(document) + _store_failed(document) + _headline(document)
    lines += _confirmations(document)
    if document.get("baseline"):
        lines += _baseline(document["baseline"], rerun_args(Settings.from_dict(document.get("settings") or {})))
    return "\n".join(lines) + "\n"


CONFIRMED_SHOWN = 20  # confirmed tests listed by name in the Markdown summary


def _confirmations(document: Mapping[str, Any]) -> list[str]:
    f = document.get("summary") or {}
    if not f.get("confirmations"):
        return []
    tests = confirmed_tests(document.get("problems") or [])
    more = f" and {len(tests) - CONFIRMED_SHOWN} more" if len(tests) > CONFIRMED_SHOWN else ""
    return ["", f"{confirmations_text(f)}: " + "; ".join(tests[:CONFIRMED_SHOWN]) + more + "."]


def write_markdown(text: str, path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> list[Path]:
    """Write `text` to `path` (atomically) and append it to $GITHUB_STEP_SUMMARY when that is set, as CI
    tools do (the job summary collects every step's text). Returns the files written."""
    path = Path(path)
    with replacing(path) as out:
        out.write(text)
    written = [path]
    step_summary = (os.environ if environ is None else environ).get(STEP_SUMMARY_ENV)
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
        written.append(Path(step_summary))
    return written


__all__ = ["markdown_text", "write_markdown", "STEP_SUMMARY_ENV"]
