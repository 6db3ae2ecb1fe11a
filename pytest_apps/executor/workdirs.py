"""The children's work directories: one fresh, empty folder per test, with its own Landlock ruleset.

A ruleset is bound to its folder's inode, so a folder is kept, emptied once its test (and everything the
test started) is gone, and handed to a later child, ruleset and all, instead of making both anew for each
test. Emptying never follows a symlink a program left behind.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import tempfile

from .fence import LandlockRules

PREFIX = "pytest-apps-exec-"


class WorkDirs:
    def __init__(self, base: str, keep: int) -> None:
        self.base = base
        self.keep = keep  # emptied folders kept for reuse
        self.landlock: LandlockRules | None = None
        self.counter = 0
        self.free: list[tuple[str, int | None]] = []

    def take(self) -> tuple[str, int | None]:
        """An empty folder and its Landlock ruleset fd (None without Landlock)."""
        if self.free:
            return self.free.pop()
        self.counter += 1
        path = os.path.join(self.base, f"run{self.counter}")
        os.mkdir(path, 0o700)
        try:
            return path, (self.landlock.for_workdir(path) if self.landlock is not None else None)
        except OSError:
            os.rmdir(path)
            raise

    def recycle(self, path: str, ruleset: int | None) -> None:
        """Its test and everything the test started are gone: empty the folder for another test."""
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode):  # replaced (possible only without Landlock)
                raise OSError("not a directory any more")
            if stat.S_IMODE(st.st_mode) != 0o700:  # the program may have changed it
                os.chmod(path, 0o700)
            if os.listdir(path):
                clear(path)
                if os.listdir(path):
                    raise OSError("could not be emptied")
            if len(self.free) < self.keep:
                self.free.append((path, ruleset))
                return
        except OSError:
            pass
        self.drop(path, ruleset)

    def drop(self, path: str, ruleset: int | None) -> None:
        if ruleset is not None:
            os.close(ruleset)
        remove(path)

    def close(self) -> None:
        while self.free:
            self.drop(*self.free.pop())
        shutil.rmtree(self.base, ignore_errors=True)


def make_base(pid: int) -> str:
    base = tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-")
    os.chmod(base, 0o711)
    return base


def remove(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        clear(path)
        shutil.rmtree(path, ignore_errors=True)


def clear(path: str) -> None:
    """Remove everything inside `path` (read-only folders the program made included)."""
    for root, dirs, _ in os.walk(path):  # (os.walk lists symlinks to folders in dirs; never follow them)
        for d in dirs:
            p = os.path.join(root, d)
            try:
                if stat.S_ISDIR(os.lstat(p).st_mode):
                    os.chmod(p, 0o700)
            except OSError:
                pass
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def remove_stale() -> None:
    """Folders and cgroups left by servers that were killed (their pid is in the name)."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{PREFIX}*-*")) + glob.glob(
            "/sys/fs/cgroup/pids/pytest-apps-*") + glob.glob("/sys/fs/cgroup/pytest-apps-*"):
        try:
            pid = int(os.path.basename(path).split("-")[-2 if "exec" in path else -1])
        except ValueError:
            continue
        if os.path.exists(f"/proc/{pid}"):
            continue
        if path.startswith("/sys/"):
            try:
                os.rmdir(path)
            except OSError:
                pass
        else:
            shutil.rmtree(path, ignore_errors=True)
