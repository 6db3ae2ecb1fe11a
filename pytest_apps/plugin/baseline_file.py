"""The `--apps-baseline` file on the plugin's side: the earlier report is read, and checked against this run's
data and limits, before anything runs, so that a missing file or an incomparable baseline costs no benchmark time."""

from __future__ import annotations

from typing import Any

import pytest

from ..core.settings import Settings
from .plan import Plan

BASELINE_KEY = pytest.StashKey["dict[str, Any] | None"]()


def read_baseline(settings: Settings) -> dict[str, Any] | None:
    """The baseline report, kept small (see `load_report`); None without --apps-baseline."""
    if not settings.baseline:
        return None
    from ..report.comparison import BaselineError, load_report  # (a run without a baseline goes without them)

    try:
        return load_report(settings.path(settings.baseline), shown=settings.baseline)
    except BaselineError as exc:
        raise pytest.UsageError(f"apps: --apps-baseline {exc}") from None


def check_baseline(baseline: dict[str, Any] | None, settings: Settings, plan: Plan) -> None:
    """Refuses (one line, naming the file and the differences) a baseline of other data, judge, tests per
    problem or limits, unless --apps-baseline-any."""
    if baseline is None:
        return
    from ..report.comparison import CLI_ANYWAY, BaselineError, check_comparable

    try:
        check_comparable(baseline, {"settings": plan.settings, "source": plan.source},
                         allow_mismatch=settings.baseline_any, name=str(settings.baseline), anyway=CLI_ANYWAY)
    except BaselineError as exc:
        raise pytest.UsageError(f"apps: --apps-baseline {exc}") from None
