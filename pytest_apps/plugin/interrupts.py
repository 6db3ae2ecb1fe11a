"""SIGINT and SIGTERM on a run: the first stops it at once and its reports are written, marked interrupted by that
signal; a second (an impatient Ctrl-C, a CI runner's follow-up) never breaks the shutdown the first began.

A signal to the controller alone (SIGTERM from a CI runner) would leave its xdist workers running their queues
until execnet's own timeouts (5 s, then 10 s), so the controller interrupts its local workers itself, at the
first signal: each local worker leaves its pid in the plan folder (`note_worker`), and the controller sends SIGINT
to those that are still its own children (`interrupt_workers`); a worker still starting (no pid left yet: no
executor, no result) is ended with SIGTERM (`starting_workers`). A worker stops its case and closes its executor
(whose server kills the program and everything it started), so nothing of the run is left behind.

Only the first signal interrupts: a later one, raised as a KeyboardInterrupt in the middle of the shutdown
(xdist's teardown, the reports being written), would end it in a traceback without reports, so it is noted and
passed over (on the controller it interrupts the workers again).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

WORKERS_FOLDER = "workers"  # in the plan folder: one `<worker id>.pid` per local xdist worker


def note_worker(plan_folder: Path, worker: str, pid: int | None = None) -> None:
    """A local worker leaves its pid where its controller can find it (best effort: a worker that cannot is
    stopped by xdist's own shutdown, only later)."""
    folder = Path(plan_folder) / WORKERS_FOLDER
    try:
        folder.mkdir(exist_ok=True)
        (folder / f"{worker}.pid").write_text(str(os.getpid() if pid is None else pid), encoding="ascii")
    except OSError:
        pass


def worker_pids(plan_folder: Path) -> list[int]:
    """The pids the local workers left (`note_worker`)."""
    pids = []
    try:
        files = sorted((Path(plan_folder) / WORKERS_FOLDER).glob("*.pid"))
    except OSError:
        return []
    for file in files:
        try:
            pids.append(int(file.read_text(encoding="ascii").strip()))
        except (OSError, ValueError):
            continue
    return pids


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def interrupt_workers(pids: Iterable[int], sig: int = signal.SIGINT, parent: int | None = None) -> list[int]:
    """Send `sig` to each of `pids` that is still a child of `parent` (this process): never to a process that
    merely reuses a pid. Returns those signalled."""
    parent = os.getpid() if parent is None else parent
    sent = []
    for pid in pids:
        if parent_of(pid) != parent:
            continue
        try:
            os.kill(pid, sig)
        except OSError:
            continue
        sent.append(pid)
    return sent


def starting_workers(gateways: Iterable[Any], plan_folder: Path) -> list[int]:
    """The pids of local (popen) worker processes that have not left their pid yet: still starting, without this
    plugin configured, so without an executor or a result. (execnet keeps a popen gateway's process as
    `_io.popen`; where it does not, none are found.)"""
    pids = []
    for gateway in gateways:
        spec = getattr(gateway, "spec", None)
        popen = getattr(getattr(gateway, "_io", None), "popen", None)
        if not getattr(spec, "popen", False) or getattr(popen, "pid", None) is None:
            continue
        if not (Path(plan_folder) / WORKERS_FOLDER / f"{getattr(gateway, 'id', '')}.pid").exists():
            pids.append(popen.pid)
    return pids


class Interrupts:
    """The signals a process received, and what each one does: the first interrupts (the caller raises
    KeyboardInterrupt), later ones do not. `on_first` runs at the first signal, `on_later` at each later one,
    before the decision is returned (on the controller: interrupt the workers)."""

    def __init__(self, on_first: Callable[[], Any] | None = None, on_later: Callable[[], Any] | None = None) -> None:
        self.received: list[str] = []
        self.on_first = on_first
        self.on_later = on_later

    @property
    def first(self) -> str | None:
        """The name of the signal that interrupted the run (SIGINT, SIGTERM), or None."""
        return self.received[0] if self.received else None

    def receive(self, signum: int) -> bool:
        """Note a signal; True when the run is to be interrupted now (the first one)."""
        self.received.append(signal.Signals(signum).name)
        hook = self.on_first if len(self.received) == 1 else self.on_later
        if hook is not None:
            try:
                hook()
            except Exception:  # noqa: BLE001 - helping the shutdown along must never break it
                pass
        return len(self.received) == 1
