"""A baseline comparison as terminal lines: under the `APPS summary` of a run with `--apps-baseline`, and the
output of `python -m pytest_apps diff`. Reads the comparison as the JSON report holds it (`baseline`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.settings import paste_line
from ..core.wording import counted
from .confidence import pct, points_text
from .stats import SQUARE_AND_ADD

SHOWN_IDS = 20  # problems only in one run: named up to this many in the terminal (all in the JSON report)
SHOWN_NODEIDS = 10  # first failing cases of newly failing problems listed for pasting


def _ids(ids: Sequence[str], most: int = SHOWN_IDS) -> str:
    shown = ", ".join(ids[:most])
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _method(name: str) -> str:
    return {"newcombe": "Newcombe hybrid score", "paired bootstrap": "paired bootstrap over problems",
            "square-and-add": "Newcombe square-and-add over effective counts"}.get(name, name)


def side_counts(side: Mapping[str, Any], n: int, sampled: bool) -> str:
    """`3/5`, or with several samples `1 of 8 samples passing` (the side's figure is then an estimate of pass@1)."""
    if sampled and side.get("samples") is not None:
        return f"{side.get('samples_passing', 0)} of {counted(side['samples'], 'sample')} passing"
    return f"{side['passed']}/{n}"


def _then_now(f: Mapping[str, Any], n: int, level: Any, sampled: bool = False) -> str:
    then, now, diff = f["then"], f["now"], f["difference"]
    text = (f"then {pct(then['strict_accuracy'])} ({side_counts(then, n, sampled)}), "
            f"now {pct(now['strict_accuracy'])} ({side_counts(now, n, sampled)})")
    if diff["value"] is not None:
        text += f": {100 * diff['value']:+.2f} points"
        if diff["interval"]:
            text += ", " + points_text(diff["interval"], level)
    return text


def baseline_lines(c: Mapping[str, Any]) -> list[str]:
    """What changed against the baseline: the problems compared, strict accuracy then and now with the
    difference and its interval, the exact McNemar test, per tier, and the newly passing problems. The newly
    failing ones come from `newly_failing_lines`, printed last."""
    level = c.get("level")
    n = c["problems"]
    where = [f"baseline {c['baseline_report']}: {counted(n, 'problem')} in both runs"]
    for key, label in (("only_in_baseline", "only in the baseline"), ("only_in_run", "only in this run"),
                       ("unscored", "unscored in one of them (a harness error; left out)")):
        if c.get(key):
            where.append(f"{len(c[key])} {label}: {_ids(c[key])}")
    lines = ["; ".join(where)]
    if c["differences"]:
        lines.append("compared anyway (--apps-baseline-any): "
                     + "; ".join(f"{d['setting']} {d['then']} there, {d['now']} here" for d in c["differences"]))
    if n == 0:
        lines.append("no problem in common: nothing to compare")
        return lines
    sampled = c.get("method") == SQUARE_AND_ADD
    name = "strict accuracy (pass@1 estimates)" if sampled else "strict accuracy"
    lines.append(f"{name} {_then_now(c, n, level, sampled)} ({_method(c['method'])})")
    lines.append(f"verdicts changed: {c['newly_failing']} newly failing, {c['newly_passing']} newly passing; "
                 f"exact McNemar p = {c['mcnemar_p']:.3g}")
    tiers = {t: f for t, f in c["per_tier"].items() if f["problems"]}
    if len(tiers) > 1:
        for tier, f in tiers.items():
            lines.append(f"  {tier}: {_then_now(f, f['problems'], level, sampled)}; {f['newly_failing']} newly failing, "
                         f"{f['newly_passing']} newly passing")
    for key, label in (("scores_fell", "share of passing samples fell"), ("scores_rose", "share of passing samples rose")):
        changed = c.get(key) or []
        if changed:
            lines.append(f"{label} ({len(changed)}): " + _ids(
                [f"{x['id']} ({pct(x['then_score'])} -> {pct(x['now_score'])})" for x in changed], SHOWN_NODEIDS))
    rose = [x["id"] for x in c["newly_passing_problems"]]
    lines.append(f"newly passing ({len(rose)}): " + (",".join(rose) if rose else "none"))
    return lines


def newly_failing_lines(c: Mapping[str, Any], rerun: Sequence[str] = (), most: int = SHOWN_NODEIDS) -> list[str]:
    """The newly failing problems: their ids ready to paste (`--apps-only` takes the list as it is) and the
    first failing case of each now, to paste as the summary's rerun lines are (`rerun`: the newer run's
    `rerun_args`)."""
    fell = c["newly_failing_problems"]
    lines = [f"newly failing ({len(fell)}): " + (",".join(x["id"] for x in fell) if fell else "none")]
    nodeids = [x["first_failure"] for x in fell if x.get("first_failure")]
    lines.extend(f"  {paste_line(rerun, nodeid)}" for nodeid in nodeids[:most])
    if len(nodeids) > most:
        lines.append(f"  and {len(nodeids) - most} more (all in the JSON report's baseline section)")
    return lines


__all__ = ["baseline_lines", "newly_failing_lines", "side_counts"]
