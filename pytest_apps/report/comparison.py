"""A run against a baseline: two JSON report documents in, the comparison as plain data out.

Shared by the plugin (`--apps-baseline`, which compares the run's own document with an earlier report) and
`python -m pytest_apps diff OLD.json NEW.json` (two saved reports).

- **Which problems.** Those both runs selected (by problem id), in the newer run's order. Problems in only
  one of them are counted and named, never dropped silently. A problem unscored in either run (a harness
  error: no verdict) is left out of the pairs, and named apart.
- **Per problem.** "pass" or not (any other verdict: fail, no code, broken, incomplete), as strict accuracy
  counts it; with several samples also the score (the share of passing samples).
- **Figures.** Strict accuracy then and now over the common problems, the difference with its 95% interval
  paired over problems (Newcombe's hybrid score interval with one program per problem; with several
  samples in either run, Newcombe's square-and-add of the two runs' effective-count intervals, see
  `stats.square_and_add`), and McNemar's exact test on the problems whose verdict changed. The same per
  tier. Then and now have the interval of each run's own headline figure (Clopper-Pearson, on the effective
  count with samples); with samples, each side also counts its samples and how many passed.
- **Comparable runs.** Runs whose verdicts for the same program could differ are refused with one line
  naming the difference: the data (dataset and split; the hub commit actually loaded, or for local files
  their content), the judge, the tests per problem (`max_tests`) and the limits a program runs under
  (`timeout`, `memory`). What is being compared (the candidates, agent, model, samples) may differ, and so
  may the selection (limit, offset, only, difficulty): the comparison is then over the common problems.
  `allow_mismatch` (`--apps-baseline-any`) compares anyway and keeps the differences in the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.wording import counted
from ..dataset.table import tier_order
from .stats import LEVEL, NEWCOMBE, SQUARE_AND_ADD, clopper_pearson, mcnemar_exact, mean_interval, newcombe_paired
from .stats import square_and_add

DEFAULT_MEMORY = 4 * 2**30  # what a report's `memory: null` means: the executor's default address-space limit
UNNAMED_JUDGE = "seed"  # what a report naming no judge was judged by: the only profile there was then
PASS = "pass"
UNSCORED = "unscored"  # a problem's verdict when the harness failed on it: no verdict to compare
# the problem fields a comparison reads; a baseline is kept in memory with these only
PROBLEM_FIELDS = ("id", "difficulty", "verdict", "score", "samples", "samples_passed", "first_failure")


class BaselineError(Exception):
    """A baseline that cannot be used; the message is one line naming the file and what to do."""


@dataclass(frozen=True)
class Difference:
    setting: str
    then: str
    now: str

    def text(self) -> str:
        return f"{self.setting} {self.then} there, {self.now} here"


@dataclass(frozen=True)
class Change:
    """A problem whose verdict changed: its verdicts and scores then and now, and (newly failing) the node
    id of its first failing case now, ready to paste."""

    id: str
    difficulty: str
    then: str
    now: str
    then_score: float
    now_score: float
    first_failure: str = ""


@dataclass
class Comparison:
    baseline_report: str
    report: str
    differences: list[Difference]
    problems: int  # in both runs
    only_in_baseline: list[str]
    only_in_run: list[str]
    unscored: list[str]  # in both runs, but unscored in one of them: left out of the pairs
    method: str  # of the difference's interval
    figures: dict[str, Any]  # then, now, difference, newly_failing, newly_passing, mcnemar_p
    per_tier: dict[str, dict[str, Any]]
    newly_failing: list[Change]
    newly_passing: list[Change]
    scores_fell: list[Change] = field(default_factory=list)  # several samples: the share passing went down
    scores_rose: list[Change] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline_report": self.baseline_report,
            "report": self.report,
            "level": LEVEL,
            "differences": [asdict(d) for d in self.differences],
            "problems": self.problems,
            "only_in_baseline": list(self.only_in_baseline),
            "only_in_run": list(self.only_in_run),
            "unscored": list(self.unscored),
            "method": self.method,
            **self.figures,
            "per_tier": self.per_tier,
            "newly_failing_problems": [asdict(c) for c in self.newly_failing],
            "newly_passing_problems": [asdict(c) for c in self.newly_passing],
            "scores_fell": [asdict(c) for c in self.scores_fell],
            "scores_rose": [asdict(c) for c in self.scores_rose],
        }


# ----------------------------------------------------------------------------------------------- reading


def load_report(path: str | Path, shown: str | None = None) -> dict[str, Any]:
    """A JSON report read for comparison, kept small: its run section, settings, source and summary, and per
    problem only the fields a comparison reads. `shown` is how messages name the file (default: the path)."""
    path = Path(path)
    name = shown or str(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise BaselineError(f"{name}: no such file; give the JSON report of an earlier run "
                            "(--apps-report writes it)") from None
    except IsADirectoryError:
        raise BaselineError(f"{name}: is a folder; give the JSON report file of an earlier run") from None
    except OSError as exc:
        raise BaselineError(f"{name}: cannot be read ({exc.strerror}); give a readable JSON report") from None
    except (UnicodeDecodeError, ValueError) as exc:
        reason = str(exc).split("\n", 1)[0]
        raise BaselineError(f"{name}: not JSON ({reason}); give the JSON report of an earlier run") from None
    if not (isinstance(data, dict) and isinstance(data.get("problems"), list) and isinstance(data.get("summary"), dict)):
        raise BaselineError(f"{name}: not a pytest-apps JSON report (no summary and problems); give the file "
                            "that --apps-report wrote")
    problems = []
    for i, p in enumerate(data["problems"]):
        if not isinstance(p, dict) or "id" not in p or "verdict" not in p:
            raise BaselineError(f"{name}: problems[{i}] has no id or verdict; give the file that --apps-report wrote")
        problems.append({k: p.get(k) for k in PROBLEM_FIELDS})
    return {
        "version": data.get("version"),
        "run": data.get("run") or {},  # whether the run was complete (a gate never passes an incomplete one)
        "settings": data.get("settings") or {},
        "source": data.get("source") or {},
        "summary": data["summary"],
        "problems": problems,
    }


# ----------------------------------------------------------------------------------------- comparability


def _local_content(revision: str) -> str:
    """A local-file fingerprint without what a checkout or a copy changes (the mtime, and the multi-file hash
    that mixes mtimes in): the size and the hash of the file's ends, or the file count and total size."""
    parts = [part for part in revision.split(",") if part.split("=", 1)[0] not in ("mtime", "hash")]
    return ",".join(parts)


def facts(document: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """What must match for two runs to be comparable: setting -> (value compared, value shown)."""
    settings = document.get("settings") or {}
    source = document.get("source") or {}
    dataset = source.get("dataset") or settings.get("dataset")
    revision = source.get("resolved_revision") or source.get("revision") or settings.get("revision")
    out: dict[str, tuple[Any, str]] = {}
    if revision and "=" in str(revision):  # local files: the same content wherever they lie
        content = _local_content(str(revision))
        out["dataset"] = (("local", content), f"{dataset} ({content})")
        out["revision"] = (None, "none (local files)")
    else:
        out["dataset"] = (("hub", dataset), str(dataset))
        out["revision"] = (revision, str(revision or "unknown"))
    split = source.get("split") or settings.get("split")
    out["split"] = (split, str(split))
    judge = settings.get("judge") or UNNAMED_JUDGE
    out["judge"] = (judge, str(judge))
    cap = settings.get("max_tests")
    cap = "all" if cap is None or int(cap) <= 0 else int(cap)
    out["max_tests"] = (cap, counted(cap, "test") if cap != "all" else "all tests")
    timeout = settings.get("timeout")
    if timeout is not None:  # the limit a test had: --apps-timeout scaled by --apps-timeout-scale
        timeout = float(timeout) * float(settings.get("timeout_scale") or 1.0)
    out["timeout"] = (timeout, "unknown" if timeout is None else f"{timeout:g} s")
    memory = settings.get("memory")
    memory = DEFAULT_MEMORY if memory is None else int(memory)
    out["memory"] = (memory, "none" if memory == 0 else f"{memory / 2**30:g} GiB")
    return out


def differences(then: Mapping[str, Any], now: Mapping[str, Any]) -> list[Difference]:
    """The settings in which two runs differ that make their verdicts incomparable."""
    a, b = facts(then), facts(now)
    return [Difference(name, a[name][1], b[name][1]) for name in b if a[name][0] != b[name][0]]


CLI_ANYWAY = "give --apps-baseline-any to compare anyway"  # how the plugin and `diff` users say allow_mismatch
API_ANYWAY = "pass allow_mismatch=True to compare anyway"


def check_comparable(then: Mapping[str, Any], now: Mapping[str, Any], *, allow_mismatch: bool,
                     name: str, anyway: str = API_ANYWAY) -> list[Difference]:
    """The differences (empty when the runs are comparable); raises BaselineError naming them unless
    `allow_mismatch`. `anyway` is how the caller's user asks to compare anyway (the keyword, or the option)."""
    found = differences(then, now)
    if found and not allow_mismatch:
        raise BaselineError(f"{name}: not comparable with this run: " + "; ".join(d.text() for d in found)
                            + f"; {anyway}")
    return found


# ------------------------------------------------------------------------------------------- comparison


def _score(p: Mapping[str, Any]) -> float:
    score = p.get("score")
    return float(score) if isinstance(score, (int, float)) else float(p.get("verdict") == PASS)


def _samples(p: Mapping[str, Any]) -> tuple[int, int]:
    """(samples, samples passing) of a problem as a report holds it; older reports without the passing count
    give it from the score."""
    samples = p.get("samples")
    m = int(samples) if isinstance(samples, (int, float)) else (0 if p.get("verdict") == "no_code" else 1)
    passing = p.get("samples_passed")
    c = int(passing) if isinstance(passing, (int, float)) else round(_score(p) * m)
    return m, min(max(c, 0), m)


def _paired(pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]], sampled: bool) -> dict[str, Any]:
    """Then, now, the difference and its interval, and the changed verdicts, over paired problems."""
    n = len(pairs)
    then_pass = [a.get("verdict") == PASS for a, _ in pairs]
    now_pass = [b.get("verdict") == PASS for _, b in pairs]
    fell = sum(1 for t, w in zip(then_pass, now_pass) if t and not w)
    rose = sum(1 for t, w in zip(then_pass, now_pass) if w and not t)
    both = sum(1 for t, w in zip(then_pass, now_pass) if t and w)
    then_scores = [_score(a) for a, _ in pairs]
    now_scores = [_score(b) for _, b in pairs]
    then_samples, now_samples = [_samples(a) for a, _ in pairs], [_samples(b) for _, b in pairs]
    if sampled:
        then_cap, now_cap = sum(max(m, 1) for m, _ in then_samples), sum(max(m, 1) for m, _ in now_samples)
        then_ci, now_ci = mean_interval(then_scores, then_cap), mean_interval(now_scores, now_cap)
        diff_ci = square_and_add(then_scores, now_scores, then_cap, now_cap)
    else:
        then_ci, now_ci = clopper_pearson(sum(then_pass), n), clopper_pearson(sum(now_pass), n)
        diff_ci = newcombe_paired(both, rose, fell, n - both - rose - fell)
    then_value = sum(then_scores) / n if n else None
    now_value = sum(now_scores) / n if n else None

    def side(passed: list[bool], value: float | None, ci: Any, samples: list[tuple[int, int]]) -> dict[str, Any]:
        return {"passed": sum(passed), "strict_accuracy": None if value is None else round(value, 6),
                "interval": None if ci is None else ci.to_dict(),
                "samples": sum(m for m, _ in samples), "samples_passing": sum(c for _, c in samples)}

    return {
        "then": side(then_pass, then_value, then_ci, then_samples),
        "now": side(now_pass, now_value, now_ci, now_samples),
        "difference": {
            "value": None if n == 0 else round(now_value - then_value, 6),  # type: ignore[operator]
            "interval": None if diff_ci is None else diff_ci.to_dict(),
        },
        "newly_failing": fell,
        "newly_passing": rose,
        "mcnemar_p": round(mcnemar_exact(fell, rose), 6),
    }


def compare(then: Mapping[str, Any], now: Mapping[str, Any], *, allow_mismatch: bool = False,
            baseline_report: str = "", report: str = "", anyway: str = API_ANYWAY) -> Comparison:
    """Compare the report `now` with the baseline report `then` (documents as `load_report` or the report
    writer give them). Raises BaselineError when the runs are not comparable, unless `allow_mismatch`; its
    message ends with `anyway` (the keyword by default; the command-line front ends name their option)."""
    found = check_comparable(then, now, allow_mismatch=allow_mismatch, name=baseline_report or "baseline",
                             anyway=anyway)
    old = {str(p["id"]): p for p in then.get("problems") or []}
    new = {str(p["id"]): p for p in now.get("problems") or []}
    both = [pid for pid in new if pid in old]
    unscored = [pid for pid in both if UNSCORED in (old[pid].get("verdict"), new[pid].get("verdict"))]
    common = [pid for pid in both if pid not in set(unscored)]
    pairs = [(old[pid], new[pid]) for pid in common]
    sampled = any(int(p.get("samples") or 0) > 1 for pair in pairs for p in pair)
    tiers: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
    for a, b in pairs:
        tiers.setdefault(str(b.get("difficulty") or a.get("difficulty") or ""), []).append((a, b))
    order = tier_order(tiers)
    per_tier = {t: {"problems": len(tiers[t]), **_paired(tiers[t], sampled)} for t in order}

    def change(a: Mapping[str, Any], b: Mapping[str, Any], failing: bool) -> Change:
        return Change(
            id=str(b["id"]), difficulty=str(b.get("difficulty") or ""), then=str(a.get("verdict")),
            now=str(b.get("verdict")), then_score=round(_score(a), 6), now_score=round(_score(b), 6),
            first_failure=str(b.get("first_failure") or "") if failing else "",
        )

    fell = [change(a, b, True) for a, b in pairs if a.get("verdict") == PASS and b.get("verdict") != PASS]
    rose = [change(a, b, False) for a, b in pairs if a.get("verdict") != PASS and b.get("verdict") == PASS]
    scores_fell = scores_rose = []
    if sampled:
        scores_fell = sorted((change(a, b, True) for a, b in pairs if _score(b) < _score(a)),
                             key=lambda c: c.now_score - c.then_score)
        scores_rose = sorted((change(a, b, False) for a, b in pairs if _score(b) > _score(a)),
                             key=lambda c: c.then_score - c.now_score)
    return Comparison(
        baseline_report=baseline_report,
        report=report,
        differences=found,
        problems=len(common),
        only_in_baseline=[pid for pid in old if pid not in new],
        only_in_run=[pid for pid in new if pid not in old],
        unscored=unscored,
        method=SQUARE_AND_ADD if sampled else NEWCOMBE,
        figures=_paired(pairs, sampled),
        per_tier=per_tier,
        newly_failing=fell,
        newly_passing=rose,
        scores_fell=scores_fell,
        scores_rose=scores_rose,
    )


__all__ = ["BaselineError", "Change", "Comparison", "Difference", "compare", "check_comparable",
           "differences", "facts", "load_report"]
