"""The plugin's side of its table-shaped extension points: the judge profiles and report formats that conftests
and other plugins add through hooks (hookspecs.py), put in their tables for this run, and the plugin's own
implementation of `pytest_apps_write_report`. Each step is a plain function of the table (judge/profiles.py,
formats.py); only the hook calls are here.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ..core.settings import Settings
from ..judge import profiles
from .formats import FormatError, Finished, ReportFormat, requested, table


def add_judge_profiles(config: pytest.Config) -> None:
    """Put the profiles the `pytest_apps_judge_profiles` implementations give in the judge table, for this run
    (taken out again when its config ends); a usage error naming the profile for one that cannot be used."""
    added: list[str] = []
    for answer in config.hook.pytest_apps_judge_profiles():
        for entry in [answer] if not isinstance(answer, (list, tuple)) else answer:
            fresh = entry.name not in profiles.TABLE if isinstance(entry, profiles.Profile) else False
            try:
                profiles.add(entry)
            except ValueError as exc:
                raise pytest.UsageError(f"pytest_apps_judge_profiles: {exc}") from None
            if fresh:
                added.append(entry.name)
    if added:
        config.add_cleanup(lambda: [profiles.remove(name) for name in added])


def report_formats(config: pytest.Config) -> tuple[ReportFormat, ...]:
    """The table of report formats: the plugin's and those the `pytest_apps_report_formats` implementations
    give, each written through `pytest_apps_write_report`."""
    try:
        entries = table(config.hook.pytest_apps_report_formats())
    except FormatError as exc:
        raise pytest.UsageError(str(exc)) from None
    return tuple(replace(entry, write=_through_hook(config, entry)) for entry in entries)


def requested_reports(config: pytest.Config, settings: Settings) -> list[tuple[ReportFormat, Path]]:
    """(format, path) for each report this run writes besides the JSON report (formats.requested)."""
    try:
        return requested(settings, report_formats(config), config.getoption)
    except FormatError as exc:
        raise pytest.UsageError(str(exc)) from None


def _through_hook(config: pytest.Config, entry: ReportFormat) -> Any:
    def write(finished: Finished, path: Path) -> None:
        config.hook.pytest_apps_write_report(report_format=entry, finished=finished, path=path)

    return write


@pytest.hookimpl(trylast=True)
def pytest_apps_write_report(report_format: ReportFormat, finished: Finished, path: Path) -> bool:
    """The plugin's own way of writing a report: its table entry's writer."""
    report_format.write(finished, path)
    return True
