"""Finding and killing what a test left behind. The server is a child subreaper: when a test's child is
gone, every process it started that is still alive (a daemon in another process group, say) has been
re-parented to the server, where these functions find it. A process made with clone(CLONE_PARENT) is a child of
the program's parent instead, the zygote: the same functions find it among the zygote's children that are not the
server's spares."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Collection


def children(children_path: str) -> list[int]:
    """The pids listed in /proc/<pid>/task/<tid>/children."""
    try:
        fd = os.open(children_path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        chunks = []
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                break
            chunks.append(b)
    except OSError:
        return []
    finally:
        os.close(fd)
    return [int(x) for x in b"".join(chunks).split()]


def live_children(children_path: str, keep: Collection[int], reaped: list[float] | None = None) -> list[int]:
    """The live children listed at `children_path` but those in `keep`; our own exited ones are reaped, and the CPU
    seconds each used (with the children it waited for) are added to `reaped` (another process's children, the
    zygote's, are only looked at)."""
    live = []
    for k in children(children_path):
        if k in keep:
            continue
        try:
            got, _, usage = os.wait4(k, os.WNOHANG)
            if got == 0:
                live.append(k)
            elif reaped is not None:
                reaped.append(usage.ru_utime + usage.ru_stime)
        except ChildProcessError:
            if not gone(k):
                live.append(k)
    return live


def descendants(roots: list[int]) -> list[int]:
    seen, stack = [], list(roots)
    while stack:
        p = stack.pop()
        seen.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    stack.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return seen


def sweep(children_path: str, keep: Collection[int]) -> tuple[int, float]:
    """Stop, then kill (and reap, where they are ours) every child listed at `children_path` but those in `keep`,
    with everything below them; returns how many were killed, and the CPU seconds of those we reaped (a process
    killed or exited, re-parented to us: its CPU is the program's too)."""
    killed = 0
    reaped: list[float] = []
    for _ in range(200):
        kids = live_children(children_path, keep, reaped)
        if not kids:
            return killed, sum(reaped)
        for p in descendants(kids):
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
        for p in descendants(kids):
            try:
                os.kill(p, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.001)
    live_children(children_path, keep, reaped)
    return killed, sum(reaped)


def gone(pid: int) -> bool:
    """Without a pidfd: has `pid` exited (a zombie waiting for its parent, or reaped)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True
