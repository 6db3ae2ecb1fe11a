"""Checkers: per-problem code that decides a test when a problem accepts several right answers ("print any such
permutation"), where comparing with the one stored answer would fail valid programs.

A checker folder (`--apps-checkers PATH`) holds `<problem_id>.py` files, each defining

    def check(input, expected, got):   # standard input: the texts (input as fed, expected output, output)
    def check(args, expected, got):    # call-based: the decoded values (arguments, stored output, return value)

returning a bool, or `(bool, message)` (the message is shown when it rejects). `--apps-checkers builtin` is the
folder shipped in this package (`builtin_checkers/`). A checker may also come as text (the plugin's
`pytest_apps_checker` hook gives it, and the plan carries it to every worker); such a text is preferred to a file
for the same problem.

A checker is trusted code, like a conftest: it runs in the pytest process (the one that judges: each xdist
worker loads the files itself), on plain data only, never on objects a candidate built. It decides every test
of its problem whose program ran to its end (a crash, a timeout or a limit stays what it is), with the step
"checker". Its time is bounded (CHECKER_TIMEOUT); a checker that cannot be loaded, raises, overruns or returns
something else is a harness error naming its file, never a verdict on the candidate.
"""

from __future__ import annotations

import hashlib
import importlib.util
import signal
import threading
import time
import traceback
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import HarnessError

__all__ = ["BUILTIN", "BUILTIN_FOLDER", "CHECKER_TIMEOUT", "Checkers", "bounded_call"]

BUILTIN = "builtin"
BUILTIN_FOLDER = Path(__file__).resolve().parent / "builtin_checkers"
CHECKER_TIMEOUT = 10.0  # seconds one call of a checker may take


class Checkers:
    """The checkers of one folder (and any given as text), loaded when a problem's first test needs one."""

    def __init__(self, folder: str | Path | None, sources: Mapping[str, str] | None = None) -> None:
        self.folder = None if folder is None else Path(folder)
        self.files = {} if self.folder is None else {path.stem: path for path in sorted(self.folder.glob("*.py"))}
        self.sources = dict(sources or {})  # problem id -> a checker module's text
        self._loaded: dict[str, Callable[..., Any]] = {}

    @classmethod
    def from_setting(cls, value: str | None, rootdir: str | Path = ".",
                     sources: Mapping[str, str] | None = None) -> Checkers | None:
        """`--apps-checkers`: None, "builtin", or a folder (relative to `rootdir`); and checkers given as text."""
        if not value:
            return cls(None, sources) if sources else None
        if value == BUILTIN:
            return cls(BUILTIN_FOLDER, sources)
        folder = Path(value).expanduser()
        return cls(folder if folder.is_absolute() else Path(rootdir) / folder, sources)

    @property
    def problem_ids(self) -> list[str]:
        return list(self.files) + [pid for pid in self.sources if pid not in self.files]

    def __contains__(self, problem_id: object) -> bool:
        return problem_id in self.files or problem_id in self.sources

    def where(self, problem_id: str) -> str | None:
        """What names the problem's checker in messages: its file, or the hook that gave its text."""
        if problem_id in self.sources:
            return f"pytest_apps_checker(problem {problem_id})"
        path = self.files.get(problem_id)
        return None if path is None else str(path)

    def digest(self, problem_id: str) -> str:
        """A digest of the checker that decides `problem_id` (the text a hook gave, else its file's content),
        or "" without one: what a record's key holds of it."""
        if problem_id in self.sources:
            data = self.sources[problem_id].encode("utf-8", "surrogatepass")
        elif problem_id in self.files:
            data = self.files[problem_id].read_bytes()
        else:
            return ""
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    def bind(self, problem_id: str, given: Any, expected: Any) -> Callable[[Any], tuple[bool, str]] | None:
        """The checker of `problem_id` for one test (its input or arguments, and expected output), as the judge
        calls it: the program's output -> (accepted, message). None when the problem has no checker."""
        path = self.where(problem_id)
        if path is None:
            return None
        check = self._function(problem_id, path)

        def decide(got: Any) -> tuple[bool, str]:
            try:
                answer = bounded_call(check, (given, expected, got), CHECKER_TIMEOUT)
            except _Overrun:
                raise HarnessError(f"checker {path} took longer than {CHECKER_TIMEOUT:g} s") from None
            except HarnessError:
                raise
            except Exception as exc:  # noqa: BLE001 - the checker's own fault, named as such
                raise HarnessError(f"checker {path} raised {_line(exc)}") from exc
            return _answer(path, answer)

        return decide

    def _function(self, problem_id: str, path: str) -> Callable[..., Any]:
        check = self._loaded.get(problem_id)
        if check is not None:
            return check
        name = f"_apps_checker_{_safe(problem_id)}"
        try:
            if problem_id in self.sources:
                module = types.ModuleType(name)
                exec(compile(self.sources[problem_id], path, "exec"), module.__dict__)  # trusted, as a conftest
            else:
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    raise ImportError("not a Python file")
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001
            raise HarnessError(f"checker {path} cannot be loaded: {_line(exc)}") from exc
        check = getattr(module, "check", None)
        if not callable(check):
            raise HarnessError(f"checker {path} defines no check(input, expected, got) function")
        self._loaded[problem_id] = check
        return check


def _answer(path: str, answer: Any) -> tuple[bool, str]:
    if isinstance(answer, bool) or type(answer).__name__ == "bool_":
        return bool(answer), ""
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and (
        isinstance(answer[0], bool) or type(answer[0]).__name__ == "bool_"
    ):
        return bool(answer[0]), "" if answer[1] is None else str(answer[1])
    raise HarnessError(f"checker {path} returned {_short(answer)}; return True/False or (bool, message)")


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:80] + "..."


def _line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


# --------------------------------------------------------------------------------------------------
# a call with a time bound


class _Overrun(BaseException):
    """Raised into a checker that ran out of time (a BaseException: its own `except Exception` cannot eat it)."""


def bounded_call(fn: Callable[..., Any], args: tuple, seconds: float) -> Any:
    """`fn(*args)`, stopped after `seconds` (raising _Overrun). In the main thread (where pytest runs items) with
    a real-time interval timer whose earlier deadline, and handler, are kept (pytest-timeout's, for one);
    elsewhere in a thread of its own that is waited for at most `seconds` (and left behind if it overruns)."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        return _with_timer(fn, args, seconds)
    return _in_thread(fn, args, seconds)


def _with_timer(fn: Callable[..., Any], args: tuple, seconds: float) -> Any:
    previous_handler = signal.getsignal(signal.SIGALRM)
    previous_delay, previous_interval = signal.getitimer(signal.ITIMER_REAL)
    start = time.monotonic()
    ours = start + seconds
    theirs = [start + previous_delay if previous_delay > 0 else None]  # the deadline already set, until it fires

    def on_alarm(signum: int, frame: Any) -> None:
        now = time.monotonic()
        if theirs[0] is not None and now >= theirs[0] - 0.001:
            theirs[0] = None
            if callable(previous_handler):
                previous_handler(signum, frame)  # may raise: its deadline came first
            if now < ours:
                signal.setitimer(signal.ITIMER_REAL, max(ours - now, 1e-6))
                return
        raise _Overrun()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, previous_delay) if previous_delay > 0 else seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if theirs[0] is not None:
            signal.setitimer(signal.ITIMER_REAL, max(theirs[0] - time.monotonic(), 1e-6), previous_interval)


def _in_thread(fn: Callable[..., Any], args: tuple, seconds: float) -> Any:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, name="apps-checker", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise _Overrun()
    if "error" in box:
        raise box["error"]
    return box["value"]
