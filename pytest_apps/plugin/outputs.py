"""Every path a run writes, checked before its first case runs: a path that cannot be written is a one-line
usage error naming its option, not a traceback after every test has run.

A file is created and removed where each path (or its first missing folder) would be made, and nothing
else is left behind. A read-only record store passes: it is read
(`--apps-resume`), and a store that refuses a record is dropped with a warning (ledger.py). No pytest here.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core.settings import Settings
from ..core.writing import written_in_place
from .formats import ReportFormat, requested


def output_paths(settings: Settings, junitxml: str | None = None,
                 reports: Sequence[tuple[ReportFormat, Path]] | None = None) -> list[tuple[str, Path, bool]]:
    """(option, path, is a folder) for each path this run writes; `reports` as `writers.write_reports` takes them
    (default: the plugin's formats the settings ask for)."""
    s = settings
    out: list[tuple[str, Path, bool]] = [("--apps-report", s.report_path, False)]
    out += [(entry.option, path, False) for entry, path in (requested(s) if reports is None else reports)]
    if junitxml:
        out.append(("--junitxml", Path(os.path.abspath(os.path.expanduser(junitxml))), False))
    if not written_in_place(s.report_path):  # (a device or a FIFO: no folder is made beside it)
        out.append(("--apps-report (its folder's cases/, where failing cases' inputs go)",
                    s.report_path.parent / "cases", True))
    if s.records_path is not None:
        out.append(("--apps-records", s.records_path, True))
    return out


def unwritable(option: str, path: Path, folder: bool) -> str:
    """Why `path` cannot be written, in one line naming `option` ("" when it can). Nothing is left behind: a
    folder that does not exist yet is probed where it would be made."""
    if folder and path.exists() and not path.is_dir():
        return f"{option}: {path} is not a folder; give a folder (it is made when missing)"
    if not folder and path.is_dir():
        return f"{option}: {path} is a folder; give a file path"
    if folder and path.is_dir():
        return ""  # (a read-only record store is read; see the module's docstring)
    if written_in_place(path):  # a device or a FIFO: written where it is, nothing made beside it
        return "" if os.access(path, os.W_OK) else f"{option}: cannot write {path}; give a path this run can write"
    above = path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return f"{option}: cannot write {path}: {above} is not a folder; give a path this run can write"
    try:  # a file made and removed where the path (or its first missing folder) would be made
        fd, probe = tempfile.mkstemp(prefix=".apps-probe-", dir=above)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return (f"{option}: cannot write {path} ({exc.strerror} in {above}); give a path this run can write "
                "(no case has run)")
    return ""


def check_outputs(settings: Settings, junitxml: str | None = None,
                  reports: Sequence[tuple[ReportFormat, Path]] | None = None) -> str:
    """The first output path that cannot be written, as a one-line error ("" when all can)."""
    for option, path, folder in output_paths(settings, junitxml, reports):
        why = unwritable(option, path, folder)
        if why:
            return why
    return ""


class ReportLock:
    """A lock beside the JSON report, held from the start of the run to its end: a second run given the same
    report while the first runs finds it held and is refused before any case, so that neither run's report
    replaces the other's unsaid. The kernel lets go of a killed run's lock: its file is taken over."""

    def __init__(self, report: Path) -> None:
        self.path = report.with_name(f".{report.name}.lock")
        self._fd: int | None = None
        self._made: Path | None = None  # the first folder the lock made (removed with it when left empty)

    def acquire(self) -> str:
        """Take the lock; "" when taken, else a line saying another run holds it (the lock is then not held)."""
        import fcntl

        if written_in_place(self.path.parent / self.path.name[1:-5]):
            return ""  # (a report to a device or a FIFO: nothing is made beside it, no lock either)
        try:
            missing = [folder for folder in (self.path.parent, *self.path.parent.parents) if not folder.exists()]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._made = missing[-1] if missing else None
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return ""  # (the path was checked writable: a lock is a courtesy, never a condition of the run)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            finally:
                os.close(fd)
            return (f"another run (pid {holder}) is writing {self.path.parent / self.path.name[1:-5]}: wait for its "
                    "end, or give this run a report of its own (--apps-report=PATH)")
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())  # who holds it, for the other run's warning
        except OSError:
            pass  # (a full disk: held all the same, its holder unnamed)
        self._fd = fd
        return ""

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                self.path.unlink(missing_ok=True)
            finally:
                os.close(fd)
        folder = self.path.parent  # a run that wrote nothing leaves no folder it made for its lock
        while self._made is not None and folder != self._made.parent:
            try:
                folder.rmdir()
            except OSError:
                break  # (not empty: the run wrote there)
            folder = folder.parent
        self._made = None
