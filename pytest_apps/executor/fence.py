"""The kernel's fences, through plain system calls: prctl, capabilities, Landlock, rlimits, and a fork
without Python's at-fork hooks. Standard library only (ctypes); see `man 7 landlock`."""

from __future__ import annotations

import ctypes
import os
import platform
import resource

from .speed import MOST

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_MOVE = 0x2000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 0x2

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
# Every function a child calls is looked up here, before the zygote forks: a ctypes function looked up in the child
# is built there anew (capset's lookup cost each child about 60 copy-on-write page faults, 0.2 ms of CPU).
libc.setns, libc.capset  # noqa: B018 - CDLL keeps what it looked up

# glibc's fork(), called with the GIL held: the child is a proper process (glibc's own bookkeeping is done)
# but skips Python's at-fork hooks (threading's and random's re-initialisation, ...), which cost about
# 180 copy-on-write page faults and 0.5 ms of CPU per child. Only for a single-threaded caller, whose
# child does not need them: the zygote, whose only thread is the one that forks.
fork_without_hooks = ctypes.PyDLL(None, use_errno=True).fork
fork_without_hooks.restype = ctypes.c_int


def prctl(option: int, arg2: int = 0) -> None:
    if libc.prctl(option, arg2, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl({option}): {os.strerror(e)}")


def unshare(flags: int) -> None:
    if libc.unshare(flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"unshare: {os.strerror(e)}")


def setns(fd: int, nstype: int) -> None:
    if libc.setns(fd, nstype) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if libc.mount(None if source is None else os.fsencode(source), os.fsencode(target),
                  None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                  None if data is None else data.encode()) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {target}: {os.strerror(e)}")


def umount(target: str) -> None:
    """Detach `target` (lazily: what still uses it keeps it until it lets go)."""
    if libc.umount2(os.fsencode(target), MNT_DETACH) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"umount {target}: {os.strerror(e)}")


_CAPSET_ARGS = ((ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)())


def drop_capabilities() -> None:
    """Drop every effective, permitted and inheritable capability (ambient ones go with permitted).
    The bounding set is left alone: with no_new_privs set, execve cannot grant capabilities anyway."""
    header, data = _CAPSET_ARGS
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def become(uid: int) -> None:
    """Be `uid` (and the group of the same number) for good, with no supplementary groups. Leaving uid 0 clears
    every capability, and what needs only the same uid (prlimit, signals, /proc/<pid>) or root's ownership (its
    files, 0600 keys) is out of reach of the harness's processes, which stay root."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


# -- Landlock (x86-64 system call numbers) --------------------------------------------------------------

SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    if platform.machine() != "x86_64":
        return 0
    v = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION)
    return int(v) if v > 0 else 0


class LandlockRules:
    """What every child may touch: read (and execute) the interpreter's paths, read and write a few device
    files, everything inside its own working directory, and nothing else; no TCP bind or connect (ABI >= 4);
    no signals or abstract sockets beyond its own domain (ABI >= 6). The fixed paths are opened once; each
    child gets a ruleset of its own (`for_workdir`), so that no child can reach another one's directory."""

    def __init__(self, abi: int, read_paths: list[str], rw_files: list[str]) -> None:
        fs = (1 << 13) - 1
        if abi >= 2:
            fs |= FS_REFER
        if abi >= 3:
            fs |= FS_TRUNCATE
        if abi >= 5:
            fs |= FS_IOCTL_DEV
        self.fs = fs
        self.attr = _RulesetAttr(fs, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                                 SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
        self.size = ctypes.c_size_t(24 if abi >= 6 else 16 if abi >= 4 else 8)
        self.fixed: list[_PathBeneath] = []
        for paths, rights in ((read_paths, READ_RIGHTS), (rw_files, READ_RIGHTS | FS_WRITE_FILE | FS_TRUNCATE)):
            for path in paths:
                rule = self._rule(path, rights)
                if rule is not None:
                    self.fixed.append(rule)

    def _rule(self, path: str, rights: int) -> _PathBeneath | None:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return None
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        return _PathBeneath(rights & self.fs, pfd)

    def for_workdir(self, workdir: str) -> int:
        """A new ruleset fd: the fixed rules plus full access beneath `workdir`."""
        fd = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(self.attr), self.size, 0)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
        fd = int(fd)
        own = self._rule(workdir, self.fs)
        try:
            if own is None:
                raise OSError(f"landlock: cannot open {workdir}")
            for rule in (*self.fixed, own):
                if libc.syscall(SYS_LANDLOCK_ADD_RULE, fd, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                    raise OSError(ctypes.get_errno(), "landlock_add_rule")
        except OSError:
            os.close(fd)
            raise
        finally:
            if own is not None:
                os.close(own.parent_fd)
        return fd

    def close(self) -> None:
        for rule in self.fixed:
            try:
                os.close(rule.parent_fd)
            except OSError:
                pass
        self.fixed = []


def landlock_restrict(ruleset_fd: int) -> None:
    if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")


# -- resource limits ----------------------------------------------------------------------------------


def apply_limits(lim: dict) -> None:
    """The per-test rlimits, relative to what this process has used so far, within existing hard limits."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    # a CPU-time limit just above the point where the server stops a run on a machine at its slowest credited speed
    # (see clock.py, speed.py): a backstop of its own
    stop = lim["timeout"] * (1 + lim.get("band", 0.0)) * MOST
    cpu = int(ru.ru_utime + ru.ru_stime) + int(-(-stop // 1)) + 1
    _setlim(resource.RLIMIT_CPU, cpu, cpu + 1)
    if lim["memory"] > 0:
        _setlim(resource.RLIMIT_AS, lim["memory"])
    _setlim(resource.RLIMIT_FSIZE, lim["file_size"])
    _setlim(resource.RLIMIT_NOFILE, lim["open_files"])
    _setlim(resource.RLIMIT_CORE, 0)
    if lim.get("processes", 0) > 0:
        _setlim(resource.RLIMIT_NPROC, lim["processes"])


def _setlim(res: int, soft: int, hard: int | None = None) -> None:
    _, old_hard = resource.getrlimit(res)
    hard = soft if hard is None else hard
    if old_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    resource.setrlimit(res, (soft, hard))
