"""The executor's client, in the pytest process: `Executor` starts the server (`python -P -s serve.py`) on first
use, sends it programs and tests over its pipes and turns its answers into `Outcome`s; its `ServerProcess` is that
process's life (started, greeted, stopped, or killed and cleaned after). `Limits` are what a test may use, `Program`
is what runs.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import pickle
import select
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field

from ..core.outcome import BACKSTOP, BORDERLINE_BAND, RUN_HARNESS_ERROR, Outcome, SpeedCredit
from ..core.settings import DEFAULT_MEMORY, DEFAULT_TIMEOUT, memory_from_env
from . import protocol as _proto
from . import speed as _speed
from .slots import Slot

__all__ = ["APPS_STYLE_PRELOAD", "MAX_FILES", "Executor", "Limits", "Program", "Slot", "check_path", "default_memory"]

GiB = 1024**3
SERVER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve.py")
# what runs the original APPS harness's way needs loaded (appsstyle.py): its prefix imports numpy (a quarter of a
# second to import), its input goes through unittest.mock
APPS_STYLE_PRELOAD = ("numpy", "unittest.mock")
# how long the parent waits for the server beyond the test's own limit before declaring it hung
SERVER_MARGIN = 10.0
MAX_FILES = 256  # files a run may have placed in its folder, and fetched from it


@functools.lru_cache(maxsize=8)
def _wire(limits: Limits) -> dict:
    """`limits` as the server reads them, made once per Limits (dataclasses.asdict per test showed in profiles):
    one dict shared by every request, which nothing may change."""
    return asdict(limits)


def check_path(path: str) -> str:
    """`path` if it names a file inside a program's folder (relative, no "..", no empty or "." part, no NUL, at most
    255 bytes a part); ValueError saying what is wrong otherwise."""
    parts = path.split("/") if isinstance(path, str) else None
    if not path or parts is None or "\0" in path or path.startswith("/"):
        raise ValueError(f"file path {path!r}: give a path relative to the program's folder (its working directory)")
    if any(p in ("", ".", "..") or len(p.encode("utf-8", "surrogateescape")) > 255 for p in parts):
        raise ValueError(f"file path {path!r}: each part of it must be a plain name (not empty, '.' or '..', at most "
                         "255 bytes)")
    return path


def files_request(files: Mapping[str, bytes], fetch: Sequence[str], limits: Limits) -> dict:
    """What a run request says of the files placed before the program and fetched after it: their checked paths;
    ValueError for a bad path, more than MAX_FILES of either, or contents over the file-size limit together."""
    if len(files) > MAX_FILES or len(fetch) > MAX_FILES:
        raise ValueError(f"at most {MAX_FILES} files may be placed, and {MAX_FILES} fetched, in one run")
    size = sum(len(c) for c in files.values())
    if limits.file_size and size > limits.file_size:
        raise ValueError(f"the files placed hold {size} bytes together, over the file-size limit of "
                         f"{limits.file_size} bytes")
    out: dict = {}
    if files:
        out["files"] = [check_path(p) for p in files]
        folders = {path.rsplit("/", 1)[0] for path in files if "/" in path}
        folders |= {f.rsplit("/", i)[0] for f in folders for i in range(1, f.count("/") + 1)}
        for path in files:
            if path in folders:
                raise ValueError(f"file path {path!r} is also a folder of another file placed")
    if fetch:
        out["fetch"] = [check_path(p) for p in fetch]
    return out


def default_memory() -> int:
    """Address-space limit: `APPS_CALL_BASED_MEMORY_BYTES` if set (bytes, or a size such as 4G), else 4 GiB (0 = no
    limit). A value that is not a size is core.settings.OptionError, naming the variable."""
    memory = memory_from_env()
    return DEFAULT_MEMORY if memory is None else memory


@dataclass(frozen=True)
class Limits:
    timeout: float = DEFAULT_TIMEOUT  # own time per test: CPU plus blocked, not waiting for a CPU
    memory: int = field(default_factory=default_memory)  # RLIMIT_AS bytes; 0 = no limit
    output: int = 8 * 1024 * 1024  # bytes of stdout; more is status output_limit (stderr is only tailed)
    file_size: int = 16 * 1024 * 1024  # RLIMIT_FSIZE for files the program writes
    open_files: int = 256  # RLIMIT_NOFILE
    processes: int = 64  # pids.max of the children's cgroup (when available) and RLIMIT_NPROC (non-root)
    band: float = BORDERLINE_BAND  # a program over the limit runs on to (1 + band) x timeout: a near miss is known
    backstop: float = BACKSTOP  # wall-clock seconds, as a multiple of timeout, after which any run is stopped

    @property
    def stop(self) -> float:
        """The own time at which a run over its limit is stopped."""
        return self.timeout * (1 + self.band)

    @property
    def wall_backstop(self) -> float:
        return self.timeout * self.backstop


@dataclass(frozen=True)
class Program:
    source: str  # the program text
    filename: str = "<candidate>"  # shown in tracebacks and as sys.argv[0]


_live: weakref.WeakSet[Executor] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for ex in list(_live):
        ex.close()


class Executor:
    """A fork server for one pytest worker. Use from one thread at a time; `close()` when done.
    `cpu`: keep the server, its zygote and every child on this CPU (see pytest_apps.plugin.cpus).
    `slot`: the run's execution slot to hold while a test runs (see slots.py); None runs at once.
    The server process itself (starting, greeting, stopping, cleaning after it) is its `ServerProcess`."""

    def __init__(self, limits: Limits | None = None, cpu: int | None = None, slot: Slot | None = None,
                 preload: tuple[str, ...] = ()) -> None:
        self.limits = limits if limits is not None else Limits()
        self.cpu = cpu
        self.slot = slot
        self.preload = tuple(preload)  # modules the zygote loads besides its own list (e.g. APPS_STYLE_PRELOAD)
        self._server = ServerProcess(cpu, self.preload)
        self._lock = threading.Lock()  # guards against accidental concurrent use, not a promise of it
        self._control = RunControl()  # the run's frame, and park/resume from another thread while it runs
        self._closed = False
        self.faults = 0  # runs that ended in a harness error of the executor (not the program's doing)
        _live.add(self)

    # -- public -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def limited(self, limits: Limits) -> Iterator[Executor]:
        """Runs made inside use `limits` (a problem's own limits), then the executor's again."""
        previous = self.limits
        self.limits = limits
        try:
            yield self
        finally:
            self.limits = previous

    def run_stdin(self, program: Program, stdin: str | bytes, style: str = _proto.STYLE_REAL,
                  files: Mapping[str, bytes] | None = None, fetch: Sequence[str] = ()) -> Outcome:
        """Run `program` as `python prog.py < stdin` (`style` "real"); with `style` "apps-harness", the original
        APPS harness's way (`appsstyle.py`: the program wrapped in a function, the input fed through mocks,
        `sys.stdout` captured; the real stdin is empty). `files` (path -> content) are placed in the program's
        folder before it starts, and the files at `fetch` come back in `Outcome.files` after it ended: paths
        relative to that folder (`check_path`), every file within the file-size limit together."""
        data = stdin.encode("utf-8", "surrogateescape") if isinstance(stdin, str) else bytes(stdin)
        req = {"mode": "stdin", "filename": program.filename}
        files = dict(files or {})
        if files or fetch:
            req.update(files_request(files, fetch, self.limits))
        if style == _proto.STYLE_APPS_HARNESS:
            return self._run(dict(req, style=style), program.source, b"", data, list(files.values()))
        return self._run(req, program.source, data, b"", list(files.values()))

    def run_call(self, program: Program, fn_name: str, args: list, style: str = _proto.STYLE_REAL) -> Outcome:
        """Exec `program` as a module (empty stdin), then call `fn_name(*args)` (top level, or
        `Solution().fn_name`); the return value comes back JSON-serialised in `Outcome.value_json`. With `style`
        "apps-harness", the original APPS harness's way (`appsstyle.py`; the value as its tagged JSON)."""
        try:
            blob = pickle.dumps(list(args), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001
            return Outcome(status=RUN_HARNESS_ERROR, error=f"arguments cannot be sent to the child: {e}")
        req = {"mode": "call", "filename": program.filename, "fn_name": fn_name}
        if style == _proto.STYLE_APPS_HARNESS:
            req["style"] = style
        return self._run(req, program.source, b"", blob)

    def machine_speed(self) -> float | None:
        """The CPU time of a fixed pure-Python workload in the server (machine.py): how fast this machine is."""
        try:
            with self._lock:
                proc = self._server.ready(self.limits)
                if not self._server.speed_asked:
                    _proto.send_frame(proc.stdin.fileno(), {"op": "speed"})
                self._server.speed_asked = False
                return float(self._server.recv(30.0)["speed"])
        except Exception:  # noqa: BLE001 - a figure for the report, never a reason to fail the run
            return None

    def ask_speed(self) -> None:
        """Ask a running server for `machine_speed` now without waiting: it measures while the caller goes on (its
        last reports), and `machine_speed()` reads the answer. Nothing is asked of a server not running."""
        with self._lock:
            if not self._closed:
                self._server.ask_speed()

    def park(self, min_share: float = 0.0, answer: Callable[[bool], None] | None = None) -> bool:
        """Ask the server to hold the test now running off the CPUs until `resume()` (parking.py): its own time
        does not count on meanwhile, and the server resumes it by itself after the wall-clock backstop. Callable
        from another thread than the run's (a server with more long runs than CPUs: serve/pool.py); whether it
        was asked (a test was running, not parked). The server declines a test with less own time than
        `min_share` of its limit, one that uses no CPU, or where it has no cgroup to freeze: that test runs on.
        `answer(parked)` is called, in the run's thread, once the server has said (False if the test ended
        first)."""
        return self._control.tell(self._server.proc, "park", min_share, answer)

    def resume(self) -> bool:
        """Let a parked test run again (see `park`); whether it was asked."""
        return self._control.tell(self._server.proc, "resume")

    def start(self) -> None:
        """Start the server now without waiting for it: its interpreter start, fence set-up and the zygote's
        preload then overlap the caller's own work (its imports, collection); the first run or question waits
        for what is left. A server that cannot start is reported by that first run, as always."""
        with self._lock:
            if self._server.proc is None and not self._closed:
                try:
                    self._server.spawn(self.limits)
                except Exception:  # noqa: BLE001 - the first run starts it again and says why it cannot
                    pass

    def isolation(self) -> list[str]:
        """Names of the active isolation layers (starts the server if it is not running)."""
        if (self._server.proc is None or self._server.greeting) and not self._closed:
            try:
                with self._lock:
                    self._server.ready(self.limits)
            except Exception:  # noqa: BLE001
                return []
        return list(self._server.layers)

    def isolation_errors(self) -> dict[str, str]:
        """Why each missing optional layer is missing (for diagnostics)."""
        self.isolation()
        return dict(self._server.layer_errors)

    def renew(self) -> None:
        """Stop the server (and its zygote): the next run starts a fresh one. After a fault of the executor, so
        that a test run again does not meet what failed the first time."""
        with self._lock:
            self._server.stop()

    def close(self, wait: bool = True) -> None:
        """Stop the server. `wait=False` tells it to stop and returns at once: it cleans up while the caller goes on
        (its reports); a later `close()` (or the interpreter's exit) waits for it, so none is left behind."""
        self._closed = True
        if wait:
            self._server.stop()
            self._server.end_stopping()
        else:
            self._server.tell_to_stop()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._server.stop()
            self._server.end_stopping()
        except Exception:  # noqa: BLE001
            pass

    # -- internals ----------------------------------------------------------------------------------
    def _run(self, req: dict, source: str, stdin: bytes, args_blob: bytes, contents: list[bytes] = ()) -> Outcome:
        if self._closed:
            raise RuntimeError("Executor is closed")
        limits = self.limits
        req = dict(req, op="run", limits=_wire(limits))
        server = self._server
        with self._lock, (self.slot or nullcontext()):
            t0 = time.monotonic()
            try:
                proc = server.ready(limits)
                server.skip_speed_answer()  # (its answer comes first; machine_speed asks again)
            except Exception as e:  # noqa: BLE001
                self.faults += 1
                return Outcome(status=RUN_HARNESS_ERROR, error=f"executor server failed to start: {e}")
            try:
                self._control.send_run(proc, req, [source.encode("utf-8", "surrogateescape"), stdin, args_blob,
                                                   *contents])
                header, blobs = self._answer(limits.wall_backstop + SERVER_MARGIN)
            except (OSError, EOFError, TimeoutError, ValueError) as e:
                why = "hung" if isinstance(e, TimeoutError) else "died"
                rc = proc.poll()
                server.kill()
                self.faults += 1
                detail = f" (exit status {rc})" if rc is not None else ""
                return Outcome(status=RUN_HARNESS_ERROR, error=f"executor server {why}{detail}: {e}; restarted",
                               wall_time=time.monotonic() - t0)
            finally:
                self._control.ended()
        if header.get("status", RUN_HARNESS_ERROR) == RUN_HARNESS_ERROR:
            self.faults += 1
        return _outcome_of(header, blobs[0] if blobs else b"")

    def _answer(self, wait: float) -> tuple[dict, list[bytes]]:
        """The server's answer to a run; TimeoutError when none comes within `wait` seconds and the time the test
        was parked."""
        start = time.monotonic()
        while True:
            allowed = wait + self._control.parked_for(self.limits.wall_backstop)
            left = start + allowed - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"executor server did not answer within {allowed:.1f} s")
            try:
                header, blobs = self._server.recv_frame(min(left, 1.0))
            except TimeoutError:
                continue
            if header.get("op") == "park":  # (the server's answer to a park, before the run's)
                self._control.answered(bool(header.get("parked")))
                continue
            return header, blobs

    def _stats(self) -> dict:
        """Server counters (compiles, runs, pid); for tests and benchmarks."""
        with self._lock:
            proc = self._server.ready(self.limits)
            self._server.skip_speed_answer()
            _proto.send_frame(proc.stdin.fileno(), {"op": "stats"})
            return self._server.recv(10.0)

    def _server_pid(self) -> int | None:
        return self._server.proc.pid if self._server.proc is not None else None


def _outcome_of(header: dict, stdout: bytes) -> Outcome:
    """The `Outcome` of a run from the server's answer: its header and the program's standard output."""
    return Outcome(
        status=header.get("status", RUN_HARNESS_ERROR),
        exit_code=header.get("exit_code"),
        signal=header.get("signal"),
        stdout=stdout.decode("utf-8", "replace"),
        value_json=header.get("value_json"),
        error=header.get("error", ""),
        stderr_tail=header.get("stderr_tail", ""),
        wall_time=float(header.get("wall_time", 0.0)),
        own_time=float(header.get("own_time", 0.0)),
        cpu_time=float(header.get("cpu_time", 0.0)),
        peak_memory=int(header.get("peak_memory", 0)),
        speed=SpeedCredit.from_dict(header),
        files=header.get("files") or {},
    )


class RunControl:
    """What another thread may say to the server while a test runs (`Executor.park`, `resume`): the run's own frame
    and those words are sent under one lock, and only while the run goes, so that a word never reaches another
    test. It keeps how long the test was parked, as this side saw it, and whom to tell the server's answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = False
        self._since: float | None = None  # when the running test was parked (asked to be)
        self._held = 0.0  # seconds it was parked before that
        self._told: Callable[[bool], None] | None = None  # told whether the park asked for was made

    def send_run(self, proc: subprocess.Popen, req: dict, blobs: list[bytes]) -> None:
        with self._lock:
            _proto.send_frame(proc.stdin.fileno(), req, blobs)
            self._running, self._since, self._held, self._told = True, None, 0.0, None

    def ended(self) -> None:
        with self._lock:
            self._running = False
        self.answered(False)  # (a park the server did not answer: the test had ended)

    def answered(self, parked: bool) -> None:
        """The server's answer to the park asked for."""
        with self._lock:
            answer, self._told = self._told, None
            if not parked:
                self._since = None
        if answer is not None:
            answer(parked)

    def tell(self, proc: subprocess.Popen | None, op: str, min_share: float = 0.0,
             answer: Callable[[bool], None] | None = None) -> bool:
        """Send "park" or "resume" if a test runs and it is not parked / is parked; whether it was sent."""
        with self._lock:
            if not self._running or proc is None or (op == "park") == (self._since is not None):
                return False
            try:
                _proto.send_frame(proc.stdin.fileno(), {"op": op, "min_share": min_share})
            except (OSError, ValueError):  # (the server is gone: the run's answer says so)
                return False
            now = time.monotonic()
            if op == "park":
                self._since, self._told = now, answer
            else:
                self._held += now - (self._since or now)
                self._since = None
            return True

    def parked_for(self, longest: float) -> float:
        """Seconds the running test has been parked; an ongoing park counts up to `longest`, the longest the server
        holds one (its wall-clock backstop)."""
        with self._lock:
            since = self._since
            return self._held + (0.0 if since is None else min(time.monotonic() - since, longest))


class ServerProcess:
    """An executor's server process as its client sees it: started and greeted (`ready`), answering over its pipes
    (`recv`), stopped (told to, waited for, or killed and cleaned after). Used under its Executor's lock. `cpu` and
    `preload` go into its greeting, with the limits the server starts under."""

    def __init__(self, cpu: int | None = None, preload: tuple[str, ...] = ()) -> None:
        self.cpu = cpu
        self.preload = tuple(preload)
        self.proc: subprocess.Popen | None = None
        self.greeting = False  # the server was sent its greeting and has not been heard answering it
        self.stat_fd: int | None = None  # the server's /proc/<pid>/stat (see dying)
        self.layers: list[str] = []
        self.layer_errors: dict[str, str] = {}
        self.leftovers: tuple[str | None, str | None] = (None, None)
        self.speed_asked = False  # a speed question was sent to the server and its answer not yet read
        self.stopping: subprocess.Popen | None = None  # a server told to stop, not yet waited for (close)

    def ready(self, limits: Limits) -> subprocess.Popen:
        """The running server, greeted: the one there is, or a new one started under `limits`."""
        if self.proc is not None and self.proc.poll() is None and not self.dying():
            if self.greeting:
                self.greet()
            return self.proc
        self.stop()
        self.spawn(limits)
        self.greet()
        assert self.proc is not None
        return self.proc

    def spawn(self, limits: Limits) -> None:
        """Start the server and send it its greeting; its answer is read by `greet`."""
        pinned_speed = _speed.parse_pinned(os.environ.get(_speed.ENV))  # the testing seam (speed.py), checked first
        proc = subprocess.Popen(
            # -P -s (of -I): no script folder or user site on sys.path; not -E, so that the fixed hash seed
            # below applies: the children fork from this interpreter, and a program that prints a set of
            # strings must print it in the same order on every worker and every run
            [sys.executable, "-P", "-s", SERVER_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            close_fds=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
            start_new_session=True,  # Ctrl-C in the terminal goes to pytest, which closes us
        )
        self.proc = proc
        self.greeting = True
        try:
            _proto.send_frame(proc.stdin.fileno(), {"op": "hello", "processes": limits.processes,
                                                    "limits": _wire(limits), "cpu": self.cpu,
                                                    "preload": list(self.preload),
                                                    "speed_factor": pinned_speed})
        except Exception:
            self.stop()
            raise

    def greet(self) -> None:
        """Read the server's answer to its greeting: its isolation layers, what to clean after it, its CPU."""
        try:
            hello = self.recv(30.0)
        except Exception:
            self.stop()
            raise
        self.greeting = False
        self.leftovers = (hello.get("base"), hello.get("cgroup"))
        self.layers = list(hello.get("layers", []))
        self.layer_errors = dict(hello.get("layer_errors", {}))

    def ask_speed(self) -> None:
        """Send a running server the speed question without waiting for its answer (see Executor.ask_speed)."""
        if self.speed_asked or self.proc is None or self.proc.poll() is not None:
            return
        try:
            if self.greeting:
                self.greet()
            _proto.send_frame(self.proc.stdin.fileno(), {"op": "speed"})
            self.speed_asked = True
        except Exception:  # noqa: BLE001 - machine_speed() asks again, or says None
            pass

    def skip_speed_answer(self) -> None:
        """Read and drop the answer to a speed question asked ahead, so that the next answer read is the next
        request's."""
        if self.speed_asked:
            self.speed_asked = False
            self.recv(30.0)

    def dying(self) -> bool:
        """Whether the server is on its way out (PF_EXITING in /proc/<pid>/stat): a server killed between tests
        takes a while to be gone (its mount namespaces end first) and is then restarted at once, not sent a test."""
        try:
            if self.stat_fd is None:
                self.stat_fd = os.open(f"/proc/{self.proc.pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            stat = os.pread(self.stat_fd, 1024, 0)
            return bool(int(stat.rsplit(b")", 1)[1].split()[6]) & 0x4)
        except (OSError, ValueError, IndexError):
            return False  # (no /proc: poll() alone decides)

    def stop(self) -> None:
        """Tell the server to stop and wait for it (killed if it takes more than a few seconds)."""
        self.close_stat()
        self.speed_asked = False
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # EOF: the server cleans up and exits
        except Exception:  # noqa: BLE001
            pass
        _wait_for_server(proc)

    def tell_to_stop(self) -> None:
        """Tell the server to stop without waiting: it cleans up meanwhile, and `end_stopping` waits for it."""
        self.close_stat()
        proc, self.proc = self.proc, None
        if proc is None:
            return
        self.end_stopping()
        try:
            proc.stdin.close()  # EOF: the server cleans up and exits
        except Exception:  # noqa: BLE001
            pass
        self.stopping = proc

    def end_stopping(self) -> None:
        """Wait for a server `tell_to_stop` told to stop."""
        proc, self.stopping = self.stopping, None
        if proc is not None:
            _wait_for_server(proc)

    def close_stat(self) -> None:
        fd, self.stat_fd = self.stat_fd, None
        if fd is not None:
            os.close(fd)

    def kill(self) -> None:
        """Kill a server that failed (hung, or its pipe broke), and clean up what it could not."""
        self.close_stat()
        self.speed_asked = False
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.kill()
        except OSError:
            pass
        proc.wait()
        for f in (proc.stdin, proc.stdout):
            try:
                f.close()
            except Exception:  # noqa: BLE001
                pass
        self.clean_after_dead()

    def clean_after_dead(self) -> None:
        """A killed server could not clean up: kill what is left in its cgroup, remove its directories.
        (Its children die with it through PR_SET_PDEATHSIG; this catches their descendants too.)"""
        base, cgroup = self.leftovers
        self.leftovers = (None, None)
        if cgroup:
            for _ in range(50):
                try:
                    with open(os.path.join(cgroup, "cgroup.procs")) as f:
                        pids = [int(x) for x in f.read().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
                time.sleep(0.01)
            try:
                os.rmdir(cgroup)
            except OSError:
                pass
        if base and os.path.basename(base).startswith("pytest-apps-exec-"):
            import shutil

            shutil.rmtree(base, ignore_errors=True)

    def recv(self, timeout: float) -> dict:
        """The server's next answer: its header, with its blobs (if any) under "_blobs"."""
        header, blobs = self.recv_frame(timeout)
        if blobs:
            header["_blobs"] = blobs
        return header

    def recv_frame(self, timeout: float) -> tuple[dict, list[bytes]]:
        """The server's next answer as sent: (header, blobs); TimeoutError when none comes within `timeout`."""
        assert self.proc is not None
        fd = self.proc.stdout.fileno()
        r, _, _ = select.select([fd], [], [], timeout)
        if not r:
            raise TimeoutError(f"executor server did not answer within {timeout:.1f} s")
        # the server answers in one go once it has started answering
        return _proto.recv_frame(fd)


def _wait_for_server(proc: subprocess.Popen) -> None:
    """Wait for a server told to stop (killed if it takes more than a few seconds), and close its pipe."""
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    try:
        proc.stdout.close()
    except Exception:  # noqa: BLE001
        pass
