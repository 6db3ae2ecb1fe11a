"""The reports a run writes besides its JSON report: a table of formats, one entry each (its name, the option
giving its path, its writer). The plugin's own are `FORMATS`; a conftest or another plugin adds one with the
`pytest_apps_report_formats` hook, and `pytest_apps_write_report` decides how any of them is written (the
plugin's own implementation, the last one asked, calls the entry's writer). No pytest here: `requested` takes
the values of the command line as a function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.settings import OPTIONS, Settings

_SETTINGS_FIELDS = {opt.flag: opt.dest[len("apps_"):] for opt in OPTIONS}  # --apps-html -> html


@dataclass(frozen=True)
class Finished:
    """What a report writer receives: the JSON report's document (`summary`, `problems`, `settings`, `run`, ...,
    as written to `--apps-report`), the run's problems (without test data) and each problem's candidates."""

    document: dict[str, Any]
    problems: Sequence[Any] = ()
    candidates: Mapping[str, Sequence[Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportFormat:
    """One report format: its `name`, the command-line `option` whose value is its path (an `--apps-*` option,
    also read from the ini file, or an option a conftest or plugin declares), `write(finished, path)` writing the
    file (atomically, as `core.writing.replacing` does: a reader never sees half a file; its folder is made before
    it is called), and `what` it is called in a message ("HTML report"; default "<name> report")."""

    name: str
    option: str
    write: Callable[[Finished, Path], Any]
    what: str = ""

    @property
    def title(self) -> str:
        return self.what or f"{self.name} report"

    def write_to(self, finished: Finished, path: Path) -> None:
        """Write the report at `path`, its folder made first (an OSError when either fails)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.write(finished, path)


def _write_html(finished: Finished, path: Path) -> None:
    from ..report.html import write_html

    write_html(finished.document, path)


def _write_predictions(finished: Finished, path: Path) -> None:
    from ..report.predictions import prediction_records, write_predictions

    write_predictions(prediction_records(finished.document, finished.problems, finished.candidates), path)


def _write_markdown(finished: Finished, path: Path) -> None:
    from ..report.markdown import markdown_text, write_markdown

    write_markdown(markdown_text(finished.document), path)


# The plugin's own formats, in the order they are written (the JSON report, always written, comes first).
FORMATS: tuple[ReportFormat, ...] = (
    ReportFormat("html", "--apps-html", _write_html, "HTML report"),
    ReportFormat("markdown", "--apps-markdown", _write_markdown, "Markdown report"),
    ReportFormat("predictions", "--apps-predictions", _write_predictions, "predictions"),
)


class FormatError(Exception):
    """A report format a hook gave that cannot be used; the message is one line naming it and what to do."""


def table(added: Iterable[ReportFormat | Sequence[ReportFormat] | None]) -> tuple[ReportFormat, ...]:
    """The plugin's formats and those the `pytest_apps_report_formats` implementations gave (each an entry, a list
    of them or None); FormatError for one that is no entry or whose name is taken."""
    out = list(FORMATS)
    for answer in added:
        entries = [] if answer is None else [answer] if isinstance(answer, ReportFormat) else list(answer)
        for entry in entries:
            if not isinstance(entry, ReportFormat):
                raise FormatError(f"pytest_apps_report_formats gave {type(entry).__name__}: give "
                                  "pytest_apps.plugin.formats.ReportFormat entries")
            if any(known.name == entry.name for known in out):
                raise FormatError(f"pytest_apps_report_formats: report format {entry.name!r} is taken; give the "
                                  "format a name of its own")
            out.append(entry)
    return tuple(out)


def requested(settings: Settings, formats: Sequence[ReportFormat] = FORMATS,
              getoption: Callable[[str], Any] | None = None) -> list[tuple[ReportFormat, Path]]:
    """(format, path) for each format this run writes: those whose option has a value. An `--apps-*` option's
    value is the settings' (the command line's or the ini file's); another option's is `getoption(flag)`'s (the
    conftest's or plugin's own, on the command line). A relative path is taken from where the run started."""
    out = []
    for entry in formats:
        field = _SETTINGS_FIELDS.get(entry.option)
        if field is not None:
            value = getattr(settings, field)
        else:
            try:
                value = getoption(entry.option) if getoption is not None else None
            except ValueError:  # (pytest's "no option named ...")
                raise FormatError(f"report format {entry.name!r}: no option {entry.option} is declared; declare it "
                                  "in pytest_addoption, or give the format an option that is") from None
        if value:
            out.append((entry, settings.path(str(value))))
    return out
