"""SandboxFusion's `/run_code` request and response, as its server defines them (bytedance/SandboxFusion,
`sandbox/server/sandbox_api.py` and `sandbox/runners/types.py`), read from and made into plain dicts.

Request: ``code`` (required), ``language`` (required), ``stdin`` (text or null), ``run_timeout`` (seconds, default
10), ``compile_timeout`` (default 10; Python compiles nothing ahead), ``memory_limit_MB`` (default -1: none given),
``files`` (path -> base64 text or null: placed in the program's folder before it starts), ``fetch_files`` (paths
of files sent back after it). Response: ``status`` (``Success``: the run
finished with status 0; ``Failed``: it did not (non-zero status, time limit); ``SandboxError``: the sandbox failed,
not the program), ``message``, ``compile_result`` (null for Python), ``run_result`` (``status``: ``Finished``,
``Error`` or ``TimeLimitExceeded``; ``execution_time``, ``return_code`` (null after a time limit; minus the signal
for a program a signal ended), ``stdout``, ``stderr``), ``executor_pod_name`` and ``files`` (path -> base64 content of each file fetched that the
run left as a regular file; paths are relative to the program's folder, its working directory).

Here ``run_timeout`` and ``execution_time`` are the program's own time (its CPU time plus the time it is blocked,
not time spent waiting for a CPU that other work holds: docs/isolation.md), so a busy server gives the same
verdicts as a quiet one. ``run_result`` also holds ``cpu_time`` (the field the `sandbox-fusion` client package
reads), and the response a ``pytest_apps`` object with how the run ended as the executor saw it (``ending``: exited,
signaled, timeout, memory, output_limit, compile_error), its wall-clock and own time, peak memory and why it was
stopped. Clients read fields by name and ignore the others, so these additions change nothing for them.
"""

from __future__ import annotations

import base64
import binascii
import math
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.outcome import (
    RUN_COMPILE_ERROR,
    RUN_EXITED,
    RUN_HARNESS_ERROR,
    RUN_MEMORY,
    RUN_OUTPUT_LIMIT,
    RUN_TIMEOUT,
    Outcome,
)
from ..executor import check_path

PYTHON = "python"
SUCCESS, FAILED, SANDBOX_ERROR = "Success", "Failed", "SandboxError"
FINISHED, TIME_LIMIT = "Finished", "TimeLimitExceeded"
DEFAULT_RUN_TIMEOUT = 10.0  # SandboxFusion's defaults
DEFAULT_COMPILE_TIMEOUT = 10.0


class RequestError(ValueError):
    """A request that cannot be read: the HTTP status to answer with and a one-line message naming the field."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RunCode:
    """A `/run_code` request, read and checked."""

    code: str
    language: str
    stdin: str | None = None
    run_timeout: float = DEFAULT_RUN_TIMEOUT
    compile_timeout: float = DEFAULT_COMPILE_TIMEOUT
    memory_limit_mb: int = -1
    files: tuple[tuple[str, bytes], ...] = ()  # (path, content) of the files placed in the program's folder
    fetch_files: tuple[str, ...] = ()  # paths of the files sent back after the run


def field(body: Mapping[str, Any], name: str, kinds: type | tuple[type, ...], default: Any = None,
          required: bool = False) -> Any:
    """`body[name]`, checked to be of `kinds` (None stands for the default); a RequestError names the field."""
    value = body.get(name)
    if value is None:
        if required:
            raise RequestError(f"{name}: required")
        return default
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise RequestError(f"{name}: expected {_kind_names(kinds)}, got a boolean")
    if not isinstance(value, kinds):
        raise RequestError(f"{name}: expected {_kind_names(kinds)}, got {type(value).__name__}")
    return value


def _kind_names(kinds: type | tuple[type, ...]) -> str:
    names = {"str": "a string", "int": "an integer", "float": "a number", "dict": "an object", "list": "a list",
             "bool": "a boolean"}
    return " or ".join(names.get(k.__name__, k.__name__) for k in (kinds if isinstance(kinds, tuple) else (kinds,)))


def seconds(body: Mapping[str, Any], name: str, default: float) -> float:
    """A time field: a finite number of seconds above 0."""
    value = float(field(body, name, (int, float), default))
    if not math.isfinite(value) or value <= 0:
        raise RequestError(f"{name}: {value} must be a number of seconds above 0")
    return value


def read_run_code(body: Any) -> RunCode:
    """The `/run_code` request in `body` (decoded JSON); RequestError (422, as SandboxFusion's validation answers)
    for one that does not follow the schema."""
    if not isinstance(body, Mapping):
        raise RequestError(f"the body must be a JSON object, not {type(body).__name__}")
    files = field(body, "files", dict, {})
    fetch = field(body, "fetch_files", list, [])
    if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in files.items()):
        raise RequestError("files: expected an object of path -> base64 text (or null)")
    if not all(isinstance(p, str) for p in fetch):
        raise RequestError("fetch_files: expected a list of paths")
    return RunCode(
        code=field(body, "code", str, required=True),
        language=field(body, "language", str, required=True),
        stdin=field(body, "stdin", str),
        run_timeout=seconds(body, "run_timeout", DEFAULT_RUN_TIMEOUT),
        compile_timeout=seconds(body, "compile_timeout", DEFAULT_COMPILE_TIMEOUT),
        memory_limit_mb=int(field(body, "memory_limit_MB", int, -1)),
        files=tuple((_path("files", k), _content(k, v)) for k, v in files.items() if v is not None),
        fetch_files=tuple(_path("fetch_files", p) for p in fetch),
    )


def _path(name: str, path: str) -> str:
    """A file's path from field `name`, checked as the executor does (RequestError naming the field otherwise)."""
    try:
        return check_path(path)
    except ValueError as exc:
        raise RequestError(f"{name}: {exc}") from None


def _content(path: str, text: str) -> bytes:
    """The content of file `path`, from its base64 text (RequestError naming the file otherwise)."""
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise RequestError(f"files: {path!r}: its content is not base64 ({exc})") from None


def unsupported(request: RunCode) -> str:
    """Why this server cannot run `request` ("" when it can): a language other than Python."""
    if request.language != PYTHON:
        return (f"language {request.language!r} is not served here: this sandbox runs Python programs only "
                f"(language \"{PYTHON}\")")
    return ""


def sandbox_error(message: str) -> dict[str, Any]:
    """A response saying the sandbox (never the program) failed: callers count it as no result, not a failure."""
    return {"status": SANDBOX_ERROR, "message": message, "compile_result": None, "run_result": None,
            "executor_pod_name": None, "files": {}}


def return_code(outcome: Outcome) -> int | None:
    """The run's status as a shell would see it: the exit status, minus the signal that ended it, None after a
    time limit; a run stopped from outside for its memory or output reads as the kill it was, 1 for a program
    Python would not compile (what ``python prog.py`` exits with on a SyntaxError)."""
    if outcome.status == RUN_TIMEOUT:
        return None
    if outcome.status == RUN_EXITED and outcome.exit_code is not None:
        return outcome.exit_code
    if outcome.signal:
        return -outcome.signal
    if outcome.exit_code:
        return outcome.exit_code
    return -signal.SIGKILL if outcome.status == RUN_OUTPUT_LIMIT else 1


def run_code_response(outcome: Outcome) -> dict[str, Any]:
    """The `/run_code` response of one run (a harness error is `sandbox_error`, never the program's failure)."""
    if outcome.status == RUN_HARNESS_ERROR:
        return sandbox_error(f"the executor failed twice on this request: {outcome.error}")
    timed_out = outcome.status == RUN_TIMEOUT
    code = return_code(outcome)
    stderr = outcome.stderr_tail
    if outcome.error and outcome.status in (RUN_COMPILE_ERROR, RUN_MEMORY, RUN_OUTPUT_LIMIT, RUN_TIMEOUT) \
            and outcome.error not in stderr:
        stderr = f"{stderr}{'' if not stderr or stderr.endswith(chr(10)) else chr(10)}{outcome.error}\n"
    run_result = {
        "status": TIME_LIMIT if timed_out else FINISHED,
        "execution_time": round(outcome.own_time, 6),
        "return_code": code,
        "stdout": outcome.stdout,
        "stderr": stderr,
        "cpu_time": round(outcome.cpu_time, 6),
    }
    status = SUCCESS if code == 0 and outcome.status == RUN_EXITED else FAILED
    return {"status": status, "message": "", "compile_result": None, "run_result": run_result,
            "executor_pod_name": None, "files": dict(outcome.files), "pytest_apps": ending_of(outcome)}


def ending_of(outcome: Outcome) -> dict[str, Any]:
    """How the run ended as the executor saw it, and its figures (the response's ``pytest_apps`` object)."""
    return {"ending": outcome.status, "reason": outcome.error, "own_time": round(outcome.own_time, 6),
            "cpu_time": round(outcome.cpu_time, 6), "wall_time": round(outcome.wall_time, 6),
            "peak_memory": outcome.peak_memory}
