"""The plugin's side of its table-shaped extension points: the judge profiles, datasets and report formats that
conftests and other plugins add through hooks (hookspecs.py), put in their tables for this run, and the plugin's
own implementation of `pytest_apps_write_report`. Each step is a plain function of the table (judge/profiles.py,
dataset/table.py, formats.py); only the hook calls are here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ..core.settings import Settings
from ..dataset import table as datasets
from ..judge import profiles
from .formats import FormatError, Finished, ReportFormat, requested, table


def add_entries(config: pytest.Config) -> None:
    """Put the judge profiles and datasets the `pytest_apps_judge_profiles` and `pytest_apps_datasets`
    implementations give in their tables, for this run (taken out again when its config ends); a usage error
    naming the entry for one that cannot be used."""
    _add(config, "pytest_apps_judge_profiles", profiles.TABLE, profiles.add, profiles.remove)
    _add(config, "pytest_apps_datasets", datasets.TABLE, datasets.add, datasets.remove)


def _add(config: pytest.Config, hook: str, known: dict[str, Any], add: Callable[[Any], None],
         remove: Callable[[str], None]) -> None:
    for answer in getattr(config.hook, hook)():
        for entry in [answer] if not isinstance(answer, (list, tuple)) else answer:
            name = getattr(entry, "name", None)
            fresh = isinstance(name, str) and name not in known
            try:
                add(entry)
            except ValueError as exc:
                raise pytest.UsageError(f"{hook}: {exc}") from None
            if fresh:
                config.add_cleanup(functools.partial(remove, name))


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
