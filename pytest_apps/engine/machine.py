"""One pool of executors per machine, shared by every process that scores with the same settings:
`Evaluator(shared=True)` (verl's reward workers, each rank of a trainer, on one machine without Ray).

A server process (``python -m pytest_apps.engine.machine``) holds a `NodeRunner` (engine/cluster.py: one
node's executors, as many as the machine's CPUs) and answers on a unix socket at a well-known path: a folder
of the user's own (mode 0700; ``PYTEST_APPS_POOL_DIR`` overrides it), the socket named after the settings.
The first caller that finds no server starts one, under a file lock, so that callers starting at once start
one; it is started at the first score, in a session of its own (it serves every caller, not only the one
that started it), and leaves once no caller has been connected for `IDLE` seconds. Connections are
authenticated with a key in a file only the user can read.

A caller sends each program with its problem; a problem's test data goes once per connection, and the server
keeps it by its content's digest, so it is decoded once for every caller. A server that dies mid-batch
(killed, out of memory) costs only the programs in flight: the caller starts a new one and sends them again,
up to `RETRIES` times, as with a lost Ray node. The same run loop as one machine and Ray: the same verdicts.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from ..core.record import CaseRecord
from ..core.settings import Settings
from .cluster import IN_FLIGHT, RETRIES, STARTUP_TIMEOUT, NodeRunner, Setup, Work, setup_digest
from .waiting import wait_until

IDLE = float(os.environ.get("PYTEST_APPS_POOL_IDLE", "300"))  # seconds without a caller before the server leaves
LOST = (EOFError, OSError)  # the server went away under a request
SOCKET_PATH = 107  # bytes a unix socket's path may hold (sun_path, less its closing NUL)


def pool_folder() -> Path:
    """The user's own folder of machine pools (created 0700)."""
    given = os.environ.get("PYTEST_APPS_POOL_DIR")
    base = Path(given) if given else Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / (
        f"pytest-apps-{os.getuid()}")
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    if base.stat().st_uid != os.getuid() or base.stat().st_mode & 0o077:
        raise PermissionError(f"{base}: the machine pool's folder must be the user's own, mode 0700; "
                              "remove it or set PYTEST_APPS_POOL_DIR")
    return base


def machine_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class MachinePool:
    """The caller's side of this machine's shared executors (the interface of `cluster.RayExecutors`)."""

    kind = "machine"

    def __init__(self, settings: Settings, executors: int | None = None, confirm: bool = True) -> None:
        self.setup = Setup(settings, executors or machine_cpus(), confirm)
        self.folder = pool_folder()
        self.name = f"pool-{setup_digest(self.setup)}"
        self.socket = str(self.folder / f"{self.name}.sock")
        if len(self.socket.encode()) > SOCKET_PATH:
            raise ValueError(f"{self.socket}: too long for a unix socket ({SOCKET_PATH} bytes at most); set "
                             "PYTEST_APPS_POOL_DIR to a shorter folder")
        self._local = threading.local()  # each thread its own connection, and the test data sent on it
        self._threads = ThreadPoolExecutor(IN_FLIGHT * self.setup.executors, thread_name_prefix="apps-pool")
        self._connections: list[Connection] = []
        self._lock = threading.Lock()
        self._started: list[subprocess.Popen[bytes]] = []  # servers started here (reaped, so a dead one shows)
        self.resent = 0  # programs sent again after the server was lost
        self._digests: dict[int, int] = {}  # the caller's key of a problem's test data -> its content's digest
        self._closed = False

    # -- the server ------------------------------------------------------------------------------------
    def _key(self) -> bytes:
        return (self.folder / f"{self.name}.key").read_bytes()

    def _connect(self) -> Connection:
        """A connection to the server, started here when there is none."""
        until = time.monotonic() + STARTUP_TIMEOUT
        while True:
            try:
                return Client(self.socket, family="AF_UNIX", authkey=self._key())
            except (FileNotFoundError, ConnectionRefusedError):
                self._start()
            if time.monotonic() > until:
                raise RuntimeError(f"the machine's executor pool did not start at {self.socket} within "
                                   f"{STARTUP_TIMEOUT:.0f} s; see {self.socket}.log")
            time.sleep(0.05)

    def _start(self) -> None:
        """Start the server unless another caller did (under the folder's lock), replacing a dead one's socket."""
        with open(self.folder / f"{self.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                Client(self.socket, family="AF_UNIX", authkey=self._key()).close()
                return  # up: another caller started it
            except (FileNotFoundError, ConnectionRefusedError):
                pass
            starting = self.folder / f"{self.name}.starting"
            if starting.exists() and time.time() - starting.stat().st_mtime < STARTUP_TIMEOUT and \
                    self._alive(starting.read_text()):
                return  # started a moment ago: its socket comes soon
            Path(self.socket).unlink(missing_ok=True)
            key = self.folder / f"{self.name}.key"
            if not key.exists():  # written whole, readable by the user only from its first byte
                fresh = self.folder / f"{self.name}.key.{os.getpid()}"
                fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(secrets.token_bytes(32))
                os.replace(fresh, key)
            (self.folder / f"{self.name}.setup").write_bytes(pickle.dumps(self.setup))
            # the server runs this very package, wherever the caller imported it from
            package_root = str(Path(__file__).resolve().parents[2])
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root,
                                                                             os.environ.get("PYTHONPATH")]))}
            with open(f"{self.socket}.log", "ab") as log:
                server = subprocess.Popen(
                    [sys.executable, "-m", "pytest_apps.engine.machine", str(self.folder), self.name],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=env)
            self._started.append(server)
            starting.write_text(str(server.pid))

    def _alive(self, pid: str) -> bool:
        for server in self._started:
            server.poll()  # reaps one that ended, so that it no longer looks alive
        try:
            os.kill(int(pid), 0)
        except (ValueError, ProcessLookupError):
            return False
        except PermissionError:
            return True
        return True

    def _ask(self, message: tuple[Any, ...]) -> Any:
        local = self._local
        if getattr(local, "conn", None) is None:
            local.conn, local.sent = self._connect(), set()
            with self._lock:
                self._connections.append(local.conn)
        try:
            local.conn.send(message)
            return local.conn.recv()
        except LOST:
            local.conn.close()
            local.conn = None
            raise

    def ready(self) -> dict[str, Any]:
        """The server's process id, executors and connections (starting it if it is not up)."""
        try:
            return self._ask(("ready",))
        except LOST:  # this thread's connection was to a server that is gone: the next one starts a new one
            return self._ask(("ready",))

    # -- work ------------------------------------------------------------------------------------------
    def _digest(self, work: Work) -> int:
        """The digest of a problem's test data, the server's key for it (computed once per problem here)."""
        with self._lock:
            found = self._digests.get(work.key)
        if found is None:
            found = int(hashlib.sha256(pickle.dumps(work.cases)).hexdigest()[:15], 16)
            with self._lock:
                if len(self._digests) > 4096:
                    self._digests.clear()
                self._digests[work.key] = found
        return found

    def _one(self, work: Work, fail_fast: bool, deadline: float | None) -> list[CaseRecord] | None:
        digest = self._digest(work)
        for attempt in range(RETRIES + 1):
            left = None if deadline is None else deadline - time.monotonic()
            if self._closed or (left is not None and left <= 0):
                return None
            try:
                fresh = digest not in getattr(self._local, "sent", ())
                kind, value = self._ask(("run", digest, work.cases if fresh else None, work.problem,
                                         work.candidate, left, fail_fast))
                if kind == "need":  # the server dropped it (or is a new one)
                    kind, value = self._ask(("run", digest, work.cases, work.problem, work.candidate, left,
                                             fail_fast))
                self._local.sent.add(digest)
                if kind == "error":
                    raise RuntimeError(f"the machine's executor pool failed: {value}")
                return value
            except LOST:
                if attempt < RETRIES:
                    self.resent += 1
        return None

    def run(self, work: Sequence[Work], fail_fast: bool, deadline: float | None = None,
            times: list[tuple[float, float] | None] | None = None) -> list[list[CaseRecord] | None]:
        """Records per work item, in order; None for an item not scored by `deadline` (time.monotonic())."""
        sent = [0.0] * len(work)
        came = [0.0] * len(work)

        def one(i: int) -> list[CaseRecord] | None:
            sent[i] = time.monotonic()
            records = self._one(work[i], fail_fast, deadline)
            came[i] = time.monotonic()
            return records

        futures = [self._threads.submit(one, i) for i in range(len(work))]
        left = wait_until(futures, deadline)
        for future in left:
            future.cancel()
        results = [f.result() if f.done() and not f.cancelled() else None for f in futures]
        if times is not None:
            times.extend(None if r is None else (sent[i], came[i]) for i, r in enumerate(results))
        return results

    def close(self) -> None:
        """Close this caller's connections; the server stays for the others and leaves once idle."""
        self._closed = True
        self._threads.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            try:
                conn.close()
            except OSError:
                pass


# --------------------------------------------------------------------------------------------- the server

class Server:
    """The pool's process: a thread per connected caller, the node's runner shared by all."""

    def __init__(self, folder: Path, name: str) -> None:
        self.setup: Setup = pickle.loads((folder / f"{name}.setup").read_bytes())
        self.runner = NodeRunner(self.setup)
        self.socket = str(folder / f"{name}.sock")
        self.listener = Listener(self.socket, family="AF_UNIX", authkey=(folder / f"{name}.key").read_bytes())
        (folder / f"{name}.starting").unlink(missing_ok=True)
        self.callers = 0
        self.last_seen = time.monotonic()
        self.lock = threading.Lock()

    def serve(self) -> None:
        threading.Thread(target=self._watch, daemon=True).start()
        while True:
            try:
                conn = self.listener.accept()
            except (OSError, EOFError):  # a caller that failed the key, or went away while connecting
                continue
            with self.lock:
                self.callers += 1
            threading.Thread(target=self._caller, args=(conn,), daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(min(IDLE, 1.0))
            with self.lock:
                idle = self.callers == 0 and time.monotonic() - self.last_seen > IDLE
            if idle:
                try:
                    os.unlink(self.socket)
                except OSError:
                    pass
                self.runner.close()
                os._exit(0)

    def _caller(self, conn: Connection) -> None:
        try:
            while True:
                message = conn.recv()
                conn.send(self._answer(message))
        except (EOFError, OSError):
            pass
        finally:
            conn.close()
            with self.lock:
                self.callers -= 1
                self.last_seen = time.monotonic()

    def _answer(self, message: tuple[Any, ...]) -> Any:
        if message[0] == "ready":
            with self.lock:
                return {**self.runner.ready(), "connections": self.callers}
        _, digest, cases, problem, candidate, left, fail_fast = message
        if cases is None and not self.runner.knows(digest):
            return ("need", None)
        try:
            return ("ok", self.runner.run(problem, candidate, digest, [cases], left, fail_fast))
        except Exception as exc:  # noqa: BLE001 - the caller says it, with the pool's log
            return ("error", f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    Server(Path(sys.argv[1]), sys.argv[2]).serve()
