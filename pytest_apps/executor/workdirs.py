"""The children's work directories: one fresh, empty folder per test, with its own Landlock ruleset.

A ruleset is bound to its folder's inode, so a folder is kept, emptied once its test (and everything the
test started) is gone, and handed to a later child, ruleset and all, instead of making both anew for each
test. Emptying never follows a symlink a program left behind.

With the private-tmp layer (`PrivateTmp`) each folder is a tmpfs of its own, of at most the file-size limit,
with a mount namespace of its own in which that tmpfs is also `/tmp` and `/dev/shm`: the child enters the
namespace (setns) and works in `/tmp`, so that `tempfile`, `TMPDIR`, `/tmp` and `multiprocessing`'s
semaphores and shared memory all land in its own folder. Namespace and tmpfs are made once per folder and
kept with it, like its ruleset: making a mount namespace is cheap, but ending one waits for an RCU grace
period, which a child that had its own would add to every test.
"""

from __future__ import annotations

import base64
import glob
import os
import shutil
import stat
import tempfile

from . import fence
from .fence import CLONE_NEWNS, MS_BIND, MS_NODEV, MS_NOSUID, MS_REMOUNT, LandlockRules

PREFIX = "pytest-apps-exec-"
CHILD_TMP = "/tmp"  # where a child of the private-tmp layer finds its folder (and works)
INODES = 16384  # files and folders a test may make in its private tmpfs (each costs the kernel memory)


class WorkDir:
    """One folder: its path (in the server's view), its Landlock ruleset fd, and with the private-tmp layer its
    mount namespace fd and tmpfs size."""

    __slots__ = ("path", "ruleset", "mntns", "size")

    def __init__(self, path: str) -> None:
        self.path = path
        self.ruleset: int | None = None
        self.mntns: int | None = None
        self.size = 0  # bytes of its tmpfs; 0 = a plain folder

    @property
    def child_path(self) -> str:
        """Where the child works: the folder is its /tmp when it has a namespace of its own."""
        return CHILD_TMP if self.mntns is not None else self.path


class PrivateTmp:
    """Makes a folder a tmpfs and gives it a mount namespace where that tmpfs is /tmp and /dev/shm too. The
    server runs in a mount namespace of its own (isolation.py): nothing mounted here is seen outside it, and all
    of it goes when the server's processes are gone."""

    def __init__(self) -> None:
        self.home = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)  # the server's own namespace

    def setup(self, d: WorkDir, size: int, uid: int | None = None) -> None:
        owner = "" if uid is None else f",uid={uid},gid={uid}"
        fence.mount("tmpfs", d.path, "tmpfs", MS_NOSUID | MS_NODEV,
                    f"size={size},nr_inodes={INODES},mode=0700{owner}")
        d.size = size
        d.mntns = self._namespace(d.path)

    def resize(self, d: WorkDir, size: int) -> None:
        fence.mount(None, d.path, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, f"size={size}")
        d.size = size

    def _namespace(self, path: str) -> int:
        """A new mount namespace, a copy of the server's, with `path` bound on /dev/shm and /tmp; its fd."""
        cwd = os.open(".", os.O_PATH | os.O_CLOEXEC)
        try:
            fence.unshare(CLONE_NEWNS)
            try:
                if os.path.isdir("/dev/shm"):
                    fence.mount(path, "/dev/shm", None, MS_BIND)
                fence.mount(path, CHILD_TMP, None, MS_BIND)  # last: `path` may lie under /tmp
                return os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
            finally:
                fence.setns(self.home, CLONE_NEWNS)  # (which also sets the root and the working directory)
                os.fchdir(cwd)
        finally:
            os.close(cwd)

    def close(self) -> None:
        os.close(self.home)


class WorkDirs:
    def __init__(self, base: str, keep: int) -> None:
        self.base = base
        self.keep = keep  # emptied folders kept for reuse
        self.landlock: LandlockRules | None = None
        self.private: PrivateTmp | None = None
        self.uid: int | None = None  # the children's own uid, which owns each folder (users.py)
        self.counter = 0
        self.free: list[WorkDir] = []

    def take(self, size: int) -> WorkDir:
        """An empty folder with its Landlock ruleset (None without Landlock) and, with the private-tmp layer,
        its namespace and a tmpfs of `size` bytes."""
        while self.free:
            d = self.free.pop()
            if d.mntns is None or d.size == size:
                return d
            try:
                self.private.resize(d, size)
                return d
            except OSError:
                self.drop(d)
        self.counter += 1
        d = WorkDir(os.path.join(self.base, f"run{self.counter}"))
        os.mkdir(d.path, 0o700)
        try:
            if self.private is not None:
                self.private.setup(d, size, self.uid)
            elif self.uid is not None:
                os.chown(d.path, self.uid, self.uid)
            if self.landlock is not None:
                d.ruleset = self.landlock.for_workdir(d.path)  # (the tmpfs's root, once mounted)
        except OSError:
            self.drop(d)
            raise
        return d

    def recycle(self, d: WorkDir) -> None:
        """Its test and everything the test started are gone: empty the folder for another test."""
        path = d.path
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
                self.free.append(d)
                return
        except OSError:
            pass
        self.drop(d)

    def drop(self, d: WorkDir) -> None:
        for fd in (d.ruleset, d.mntns):
            if fd is not None:
                os.close(fd)
        d.ruleset = d.mntns = None
        if d.size:
            d.size = 0
            try:
                fence.umount(d.path)  # its namespace is gone with its fd: this was the tmpfs's last mount
            except OSError:
                pass
        remove(d.path)

    def close(self) -> None:
        while self.free:
            self.drop(self.free.pop())
        if self.private is not None:
            self.private.close()
            self.private = None
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


def full(d: WorkDir) -> bool:
    """Whether the folder's tmpfs has (almost) no room left: no block of 64 KiB, or no inode."""
    if not d.size:
        return False
    try:
        st = os.statvfs(d.path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 65536 or st.f_favail == 0


def fetch(d: WorkDir, paths: list[str], cap: int) -> dict[str, str]:
    """The files at `paths` (relative to the folder) that a test left, once everything it started is gone: path ->
    base64 of the content, at most `cap` bytes in all; a path that is missing, or that is not a regular file with a
    single link reached without following a symlink, is left out. The server may be root and the files are the
    program's: nothing here follows a link the program made, opens a device or FIFO, or reads a file linked from
    elsewhere."""
    out: dict[str, str] = {}
    left = cap
    for path in paths:
        data = _read_own(d.path, path, left)
        if data is not None:
            out[path] = base64.b64encode(data).decode("ascii")
            left -= len(data)
    return out


def _read_own(root: str, path: str, cap: int) -> bytes | None:
    """The content of regular file `path` under `root`, opened one component at a time without following a symlink;
    None when it is missing, anything but a regular file with one link, or over `cap` bytes."""
    parts = path.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
        nxt = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=fd)
        os.close(fd)
        fd = nxt
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > cap:
            return None
        data = os.read(fd, cap + 1) if cap else b""
        while len(data) < st.st_size and len(data) <= cap:  # (a read may return less than asked)
            more = os.read(fd, cap + 1 - len(data))
            if not more:
                break
            data += more
        return data if len(data) <= cap else None
    except OSError:
        return None
    finally:
        os.close(fd)
