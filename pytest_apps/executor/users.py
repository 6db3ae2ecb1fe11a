"""The children's own user when the harness is root: which uid, and what it must still be able to read.

A child of a root harness that only drops its capabilities is still uid 0: it owns root's files (`/etc/shadow`,
0640 root:shadow, and the ssh host keys, 0600, are readable by their owner) and may `prlimit` or signal every
process of uid 0, the harness's own included. So each server's children run as a uid of their own, one no account
uses, that owns nothing on the machine but their work folders.

An interpreter installed under root's home (`/root/.pyenv`, a virtual environment in `/root/.cache`) lies below a
folder other users cannot pass (0700). In the server's own mount namespace (isolation.py), such a folder is
covered by a small tmpfs that holds only the paths the children need (the interpreter's prefixes, its packages,
this package), bound back at their places: the children reach those, and nothing else of root's home. The
machine's own view is untouched.

Standard library only: the server imports this as part of its private package.
"""

from __future__ import annotations

import os
import stat

from . import fence
from .fence import MS_BIND, MS_MOVE, MS_NODEV, MS_NOSUID, MS_REC

UID_BASE = 1_900_000_000  # far above any account's uid and below the 32-bit limit with any pid added


def child_uid(server_pid: int) -> int:
    """The uid of one server's children: one of their own per server, so that the children of two servers (two
    xdist workers) cannot reach each other's processes either."""
    return UID_BASE + server_pid


def closed_ancestors(paths: list[str]) -> dict[str, list[str]]:
    """For each folder that others may not pass (no execute bit for them) above one of `paths`: the paths below it
    that the children need. Only the topmost such folder of each path counts."""
    out: dict[str, list[str]] = {}
    for path in paths:
        real = os.path.realpath(path)
        parts = real.strip("/").split("/")
        for i in range(1, len(parts)):
            folder = "/" + "/".join(parts[:i])
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                break
            if not mode & stat.S_IXOTH:
                out.setdefault(folder, []).append(real)
                break
    return out


def reveal(closed: dict[str, list[str]], stage_base: str) -> None:
    """Cover each closed folder with a tmpfs (0755) that holds only its needed paths, bound at their places. Runs in
    the server's own mount namespace, before anything else of the server needs those folders. Raises OSError."""
    for n, (folder, needed) in enumerate(sorted(closed.items())):
        needed = sorted(set(needed))
        needed = [p for p in needed if not any(p.startswith(q + "/") for q in needed)]  # a folder brings its inside
        stage = os.path.join(stage_base, f"reveal{n}")
        os.mkdir(stage, 0o755)
        fence.mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
        for path in needed:
            target = os.path.join(stage, os.path.relpath(path, folder))
            if os.path.isdir(path):
                os.makedirs(target, 0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
                open(target, "a").close()
            _open_between(stage, target)
            fence.mount(path, target, None, MS_BIND | MS_REC)
        fence.mount(stage, folder, None, MS_MOVE)
        os.rmdir(stage)


def _open_between(stage: str, target: str) -> None:
    """The folders made between the stage and a target are passable by anyone (makedirs' mode is masked by umask)."""
    folder = os.path.dirname(target)
    while len(folder) > len(stage):
        os.chmod(folder, 0o755)
        folder = os.path.dirname(folder)

