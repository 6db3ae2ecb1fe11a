"""The hooks pytest-apps calls, for a `conftest.py` or another plugin to implement (registered with
`pytest_addhooks`; documented in docs/extending.md).

Every one of them but `pytest_apps_judge_profiles` and `pytest_apps_datasets` is called in the controller (the
only process, or the xdist controller), never in a worker, and receives plain data. Nothing a hook returns
reaches a candidate: a program it provides runs fenced, as every candidate does; a checker's text and a judge
profile's cascade stay in the pytest processes; lines, summaries and report formats are the reports' own.

The table-shaped extension points (report formats, judge profiles, datasets) follow one pattern: a hook adds
entries to the table, and the plugin's own behaviour is the table's entries (for writing a report, the last
implementation of the `firstresult` hook `pytest_apps_write_report`, as pytest-timeout's own timer is of its
hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.record import CaseRecord
    from ..core.settings import Settings
    from ..dataset.problems import Problem
    from ..dataset.table import Dataset
    from ..judge.profiles import Profile
    from .formats import Finished, ReportFormat


@pytest.hookspec(firstresult=True)
def pytest_apps_candidates(problem: Problem) -> str | list[str] | None:
    """Provide the program(s) of one selected problem, instead of `--apps-candidates`.

    Called once per selected problem when the run is planned, before any xdist worker starts. Return the
    program's text (model text is accepted too: its code is extracted as from a `.md` file), a list of them
    for several samples, or None to leave the problem to the next implementation and then to
    `--apps-candidates`. The texts are written to `<--apps-generations>/hook/` (`<id>.md`, or
    `<id>/sample_<k>.md` for samples), where the problem's node ids start, and run fenced like any candidate.

    :param problem: the problem (`id`, `index`, `difficulty`, `fmt`, `fn_name`, `question`, `starter_code`,
        `n_cases`), without its test data.
    """


@pytest.hookspec(firstresult=True)
def pytest_apps_checker(problem: Problem) -> str | None:
    """Provide the checker of one selected problem: the text of a Python module defining
    `check(input, expected, got)` (standard input) or `check(args, expected, got)` (call-based), as a
    `--apps-checkers` file would hold it.

    Called once per selected problem when the run is planned. The text travels in the plan to every worker,
    each of which loads it itself, and decides the problem's tests as a checker file does; it is preferred to
    a file for the same problem in `--apps-checkers`. Return None to give the problem no checker here.

    :param problem: the problem, without its test data.
    """


def pytest_apps_summary(summary: dict[str, Any], records: list[CaseRecord]) -> None:
    """Receive the finished run: for an experiment tracker, a dashboard, a notification.

    Called once at the end of the session, after the reports are written.

    :param summary: the JSON report's document, as written to `--apps-report` (`summary`, `problems`,
        `settings`, `source`, `machine`, and `baseline` with `--apps-baseline`).
    :param records: the case records (`nodeid`, `problem`, `case`, `sample`, `kind`, `step`, `time`, ...), one
        per test that ran.
    """


def pytest_apps_report_header(settings: Settings) -> str | list[str] | None:
    """Add lines to the report header, after pytest-apps' own.

    :param settings: the run's resolved settings (`pytest_apps.core.settings.Settings`).
    """


def pytest_apps_report_formats() -> ReportFormat | list[ReportFormat] | None:
    """Add report formats: each a `pytest_apps.plugin.formats.ReportFormat` (its name, the option whose value is its
    path, its writer). The option is the implementer's own, declared in its `pytest_addoption`; a format is
    written when its option has a value, after the JSON report, as the plugin's own formats are (checked
    writable before the first case; written beside a kept complete report; a failure to write it is exit status
    6). The writer receives a `pytest_apps.plugin.formats.Finished` (the JSON report's document, the problems,
    their candidates) and the path.

    Called in the controller when the run starts and again when it writes its reports. Return an entry, a list
    of them, or None.
    """


@pytest.hookspec(firstresult=True)
def pytest_apps_write_report(report_format: ReportFormat, finished: Finished, path: Path) -> bool | None:
    """Write one report: any format of the table, the plugin's own among them (an implementation may write the
    HTML report its own way, say). Return True when written, None to leave it to the next implementation; the
    plugin's own implementation, the last one asked, calls `report_format.write(finished, path)`. An OSError
    raised here is the report's failure to be written (a line at the end, exit status 6).
    """


def pytest_apps_judge_profiles() -> Profile | list[Profile] | None:
    """Add judge profiles: each a `pytest_apps.judge.profiles.Profile` (its name, as `--apps-judge` takes it, a
    description, its cascade `decide(fmt, expected, outcome, checker, step_prefix)` giving a
    `pytest_apps.core.outcome.Verdict` from plain data, how its programs run, what the executor preloads, the least
    memory its programs start in). The cascade runs in the pytest process on what the fenced program printed or
    returned, never in the program's child.

    Called in every process of the run (the controller and each xdist worker) before its options are checked, so
    that `--apps-judge` takes the names added; a worker on another machine needs the implementation there too.
    Return an entry, a list of them, or None.
    """


def pytest_apps_datasets() -> Dataset | list[Dataset] | None:
    """Add datasets: each a `pytest_apps.dataset.table.Dataset` (its name, how its rows are recognised from their
    keys, how a row becomes a plain row and then a problem with its tests, its tiers easiest first, its reference
    solutions, the judge profile of its own evaluator). A row its `marks` claims is its row, asked before the
    package's own entries.

    Called in every process of the run (the controller and each xdist worker on this machine, which read the
    tests) before the run is planned. Return an entry, a list of them, or None.
    """
