"""The agent's progress line while pytest plans the run: written past output capture, in place on a tty."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def progress_printer(config: Any) -> Callable[[str], None]:
    """A progress line for generation inside pytest: written past output capture, in place on a tty."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    state = {"last": ""}

    def write(line: str) -> None:
        if reporter is None or config.option.verbose < 0 and not reporter.isatty:
            return
        tty = getattr(reporter, "isatty", False)
        done = line.split("]")[-1].strip().split(",")[0].split("/")
        final = len(done) == 2 and done[0] == done[1]
        if not tty and not final:
            return  # a log file gets the last line only
        with capman.global_and_fixture_disabled() if capman else _nothing():
            if tty:
                reporter.write("\r" + line + (" " * max(0, len(state["last"]) - len(line))))
                if final:
                    reporter.write("\n")
            else:
                reporter.write_line(line)
        state["last"] = line

    return write


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
