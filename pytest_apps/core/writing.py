"""Writing an output file whole: a reader never sees half of it, and nothing but a regular file is replaced.

A report path that is a regular file (or a link to one), or nothing yet, is written to a temporary file beside
it and renamed over it, so that a reader sees the old file or the new one. A path that exists and is not a
regular file (`/dev/null`, `/dev/stdout`, a FIFO a reader waits on) is written where it is: a rename would
replace the device or the FIFO itself (as root, `/dev/null` would become a regular file). A FIFO without a
reader is refused at once (an OSError), never waited on.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def written_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is written where it is, not replaced: it exists (links followed) and is not a regular file.
    Nothing is made beside such a path (no temporary file, no folder of case files, no lock)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


@contextmanager
def replacing(path: str | os.PathLike[str], encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write `path`'s new content into: renamed over `path` (over a link's target, the link
    kept) when the block ends without an error, removed when it raises; or `path` itself, opened in place,
    when `written_in_place(path)`."""
    if written_in_place(path):
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO without a reader: ENXIO
        os.set_blocking(fd, True)
        with open(fd, "w", encoding=encoding) as fh:
            yield fh
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding=encoding) as fh:
            yield fh
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)  # (a full disk: no half-written file left behind)
