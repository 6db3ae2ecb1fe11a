"""The hooks pytest-apps calls, for a `conftest.py` or another plugin to implement (registered with
`pytest_addhooks`; documented in docs/extending.md).

Every one of them is called in the controller (the only process, or the xdist controller), never in a
worker, and receives plain data. Nothing a hook returns reaches a candidate: a program it provides runs
fenced, as every candidate does; a checker's text stays in the pytest processes; lines and summaries are the
reports' own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..core.record import CaseRecord
    from ..core.settings import Settings
    from ..dataset.problems import Problem


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
