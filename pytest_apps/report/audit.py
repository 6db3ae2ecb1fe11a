"""The reference audit of a `--apps-candidates reference` run, from its case records. Pure data, no pytest.

  * "References disagree": a test on which two reference solutions both ended normally but printed (or
    returned) different answers, after the seed cascade's normalisation (`judge.profiles.output_digest`), marks its
    problem: it probably accepts several right answers, and a fixed expected output fails valid programs there.
    Those problems, with their tests, are candidates for a checker (`--apps-checkers`).
  * "Pass only under the other judge": a reference that failed some test under the run's judge profile, where
    every failing test passed when run again under the other profile (the engine does that for failing tests
    of reference runs only). Under `seed` these are references that need the original harness's leniency (a
    top-level `return`, say); under `apps`, references that the original harness fails (a `__main__` guard).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from ..core.outcome import PASS
from ..core.record import CaseRecord

__all__ = ["reference_audit"]


def reference_audit(
    records: Iterable[CaseRecord], problem_ids: Sequence[str], judge: str, other: str, checked: Collection[str] = ()
) -> dict[str, Any]:
    """The audit figures: problems whose references disagree (with the tests; `checker` says whether the problem
    has one, from `checked`), and references that pass only under the `other` judge profile. `problem_ids` gives
    the report's order (dataset order)."""
    digests: dict[tuple[str, int], set[str]] = {}
    by_sample: dict[tuple[str, int], list[CaseRecord]] = {}
    for record in records:
        by_sample.setdefault((record.problem, record.sample), []).append(record)
        digest = record.audit.get("digest") if record.audit else None
        if digest:
            digests.setdefault((record.problem, record.case), set()).add(digest)
    order = {pid: i for i, pid in enumerate(problem_ids)}
    references: dict[str, int] = {}
    for problem, _sample in by_sample:
        references[problem] = references.get(problem, 0) + 1
    split: dict[str, list[int]] = {}
    for (problem, case), seen in digests.items():
        if len(seen) > 1:
            split.setdefault(problem, []).append(case)
    disagree = [
        {"problem": pid, "tests": sorted(cases), "references": references.get(pid, 0), "checker": pid in checked}
        for pid, cases in sorted(split.items(), key=lambda kv: order.get(kv[0], len(order)))
    ]
    only_other = []
    for (problem, sample), recs in sorted(by_sample.items(), key=lambda kv: (order.get(kv[0][0], len(order)),
                                                                               kv[0][1])):
        failing = [r for r in recs if r.kind != PASS]
        if failing and all(r.audit.get("other") == PASS for r in failing):
            only_other.append({"problem": problem, "sample": sample, "tests_failing": len(failing)})
    return {
        "judge": judge,
        "other_judge": other,
        "disagree": disagree,
        f"pass_only_under_{other}": only_other,
    }
