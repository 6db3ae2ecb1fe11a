"""A seccomp-BPF filter for candidate programs: the system calls no contest program needs and that reach beyond
the program itself (other processes, the kernel, the machine) fail with an error number, never a kill, so that a
program sees an ordinary `OSError` it may handle and its verdict still comes from how it ended. Standard library
only (ctypes); x86-64 only: elsewhere `available()` says why and nothing is installed. See `man 2 seccomp`.

The filter is built once, at import, in two parts: the zygote installs the larger one before it forks, which lets
through the one refused call a child's own set-up makes (setns, into its folder's mount namespace); each child
installs the small one, refusing that call, as the last fence before the program runs.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

from .fence import libc

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000

AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
CLONE_PARENT = 0x00008000
# new namespaces: a user namespace gives back every capability inside it; the others hide the program from the
# harness's view of its processes, mounts and network
CLONE_NEW = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
             "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
             "CLONE_NEWNET": 0x40000000}
CLONE_REFUSED = CLONE_PARENT | sum(CLONE_NEW.values())

# x86-64 system call numbers of the calls refused outright with EPERM, grouped by why
REFUSED: tuple[tuple[str, dict[str, int]], ...] = (
    ("reading or steering another process: the harness, the zygote or a later test's program",
     {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438}),
    ("the kernel keyrings outlive the run and are shared by every process of the user",
     {"add_key": 248, "request_key": 249, "keyctl": 250}),
    ("loading code into the kernel or replacing it",
     {"init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
      "bpf": 321}),
    ("watching the machine beyond the program: other processes' events, the kernel log, file system events",
     {"perf_event_open": 298, "syslog": 103, "fanotify_init": 300, "lookup_dcookie": 212}),
    ("a page-fault handler in user space: a tool for widening kernel races, never needed by a contest program",
     {"userfaultfd": 323}),
    ("changing what the harness sees of the file system, or leaving the program's namespaces",
     {"mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430,
      "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "setns": 308, "unshare": 272}),
    ("opening files by handle goes round path-based fences (Landlock)",
     {"name_to_handle_at": 303, "open_by_handle_at": 304}),
    ("machine-wide state: swap, reboot, process accounting, disk quotas, I/O ports",
     {"swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179, "quotactl_fd": 443,
      "iopl": 172, "ioperm": 173}),
    ("System V IPC and POSIX message queues outlive the program, and every process of the machine can reach them: "
     "no contest program needs them (multiprocessing's locks and shared memory are files in /dev/shm)",
     {"shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
      "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240, "mq_unlink": 241,
      "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245}),
    ("a program keeps to the CPUs it was given: a wider affinity takes CPU from the other tests",
     {"sched_setaffinity": 203}),
    ("io_uring does its work in kernel threads outside the program's accounting and has been a steady source of "
     "kernel flaws; the kernel's own switch (kernel.io_uring_disabled) refuses it with EPERM too",
     {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427}),
)
SYS_CLONE, SYS_CLONE3, SYS_SOCKET, SYS_SOCKETPAIR, SYS_PRLIMIT64 = 56, 435, 41, 53, 302

# classic BPF (linux/filter.h) and the offsets of struct seccomp_data: nr, arch, instruction pointer, args[6]
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
OFF_NR, OFF_ARCH = 0, 4


def _arg_low(i: int) -> int:
    return 16 + 8 * i


def _arg_high(i: int) -> int:
    return 20 + 8 * i


class _Program:
    """A classic BPF program with named jump targets, resolved into relative offsets by `assemble`."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def load(self, offset: int) -> None:
        self.code.append((BPF_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, yes: int | str = 0, no: int | str = 0) -> None:
        self.code.append((op, yes, no, k))

    def ret(self, value: int) -> None:
        self.code.append((BPF_RET_K, 0, 0, value))

    def assemble(self) -> bytes:
        out = bytearray()
        for i, (op, yes, no, k) in enumerate(self.code):
            jt, jf = (self.labels[t] - i - 1 if isinstance(t, str) else t for t in (yes, no))
            if not (0 <= jt <= 255 and 0 <= jf <= 255):
                raise ValueError(f"seccomp filter: jump out of range at instruction {i}")
            out += struct.pack("=HBBI", op, jt, jf, k)
        return bytes(out)


def _dispatch(p: _Program, calls: list[tuple[int, str]]) -> None:
    """Send the system call number (loaded) to the label of its entry in `calls` (sorted by number), or allow it:
    a binary search, so that every number passes a handful of comparisons. That keeps the filter fast for the
    kernel to install too: it runs the filter on every system call number once, when it is installed, to find
    the ones it may allow without running it (the seccomp action cache)."""
    if len(calls) <= 3:
        for nr, target in calls:
            p.jump(BPF_JEQ_K, nr, target)
        p.ret(SECCOMP_RET_ALLOW)
        return
    mid = len(calls) // 2
    upper = f"ge{calls[mid][0]}"
    p.jump(BPF_JGE_K, calls[mid][0], upper)
    _dispatch(p, calls[:mid])
    p.label(upper)
    _dispatch(p, calls[mid:])


def _compile(allowed: tuple[int, ...] = ()) -> bytes:
    """The filter; `allowed`: refused calls it lets through (the zygote's: the calls its children's set-up makes)."""
    p = _Program()
    p.load(OFF_ARCH)  # another ABI (i386 through int 0x80): nothing at all
    p.jump(BPF_JEQ_K, AUDIT_ARCH_X86_64, 0, "enosys")
    p.load(OFF_NR)
    p.jump(BPF_JGE_K, X32_SYSCALL_BIT, "enosys")  # the x32 ABI: a second table of the same calls
    calls = [(nr, "eperm") for _, refused in REFUSED for nr in refused.values() if nr not in allowed]
    calls += [(SYS_CLONE3, "enosys"),  # its flags are in memory the filter cannot read; glibc falls back to clone
              (SYS_CLONE, "clone"), (SYS_SOCKET, "family"), (SYS_SOCKETPAIR, "family"), (SYS_PRLIMIT64, "prlimit")]
    _dispatch(p, sorted(calls))
    p.label("clone")  # the kernel reads the low 32 bits of the flags only
    p.load(_arg_low(0))
    p.jump(BPF_JSET_K, CLONE_REFUSED, "eperm", "allow")
    p.label("family")  # the family is an int: its low 32 bits are all the kernel reads
    p.load(_arg_low(0))
    for family in (AF_UNIX, AF_INET, AF_INET6):
        p.jump(BPF_JEQ_K, family, "allow")
    p.ret(SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT)
    p.label("prlimit")  # its own limits only: pid 0, the whole 64-bit word
    p.load(_arg_low(0))
    p.jump(BPF_JEQ_K, 0, 0, "eperm")
    p.load(_arg_high(0))
    p.jump(BPF_JEQ_K, 0, "allow", "eperm")
    p.label("allow")
    p.ret(SECCOMP_RET_ALLOW)
    p.label("eperm")
    p.ret(SECCOMP_RET_ERRNO | errno.EPERM)
    p.label("enosys")
    p.ret(SECCOMP_RET_ERRNO | errno.ENOSYS)
    return p.assemble()


def _compile_last() -> bytes:
    """The child's own filter, stacked on the zygote's: it refuses the calls the zygote's filter left to the
    child's set-up (x86-64 only: the zygote's refuses every call of another ABI)."""
    p = _Program()
    p.load(OFF_ARCH)
    p.jump(BPF_JEQ_K, AUDIT_ARCH_X86_64, 0, "allow")
    p.load(OFF_NR)
    for nr in CHILD_SETUP:
        p.jump(BPF_JEQ_K, nr, "eperm")
    p.label("allow")
    p.ret(SECCOMP_RET_ALLOW)
    p.label("eperm")
    p.ret(SECCOMP_RET_ERRNO | errno.EPERM)
    return p.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _loaded(code: bytes) -> tuple[ctypes.Array, _SockFprog]:
    """`code` in memory the kernel reads at install (both objects must stay alive)."""
    buffer = ctypes.create_string_buffer(code, len(code))
    return buffer, _SockFprog(len(code) // 8, ctypes.addressof(buffer))


# setns: a child enters its folder's mount namespace (workdirs.py) after the zygote's fork
CHILD_SETUP = (308,)
_FILTER = _compile()
_LOADED = {name: _loaded(code) for name, code in (("whole", _FILTER), ("zygote", _compile(CHILD_SETUP)),
                                                  ("last", _compile_last()))}
_ADDRESS = {name: ctypes.addressof(fprog) for name, (_, fprog) in _LOADED.items()}
# fence's prctl, looked up before the zygote forks and called by every child already: a function of its own would
# cost each child some 20 microseconds more (its first call after the fork)
_prctl = libc.prctl
_available: str | None = None


def build_filter() -> bytes:
    """The filter, an array of struct sock_filter (8 bytes each), built once at import."""
    return _FILTER


def available() -> str:
    """"" when the filter can be installed here, else why not. The answer is kept: call it once before forking."""
    global _available
    if _available is None:
        _available = _probe()
    return _available


def _probe() -> str:
    if not sys.platform.startswith("linux"):
        return f"seccomp is a Linux feature; this is {sys.platform}"
    machine = platform.machine()
    if machine != "x86_64":
        return f"the syscall filter is written for x86-64; this machine is {machine}"
    if sys.maxsize <= 2**32:
        return "the syscall filter is written for 64-bit programs; this interpreter is 32-bit"
    # a filter address of NULL: a kernel with filters fails to read it (EFAULT) and installs nothing
    if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, 0, 0, 0) == 0:
        return "the kernel accepted a filter at address 0"  # cannot happen; never claim a filter that is not there
    e = ctypes.get_errno()
    return "" if e == errno.EFAULT else f"the kernel has no seccomp filters ({os.strerror(e)})"


def install(part: str = "whole") -> None:
    """Install the filter on the calling thread (a child is single-threaded) and on all it starts from now on.
    Needs PR_SET_NO_NEW_PRIVS (or CAP_SYS_ADMIN). Raises OSError when it cannot be installed.

    `part`: "whole", or the filter in two parts: "zygote" once in the zygote (everything but the calls of
    CHILD_SETUP), then "last" in each child, after its set-up (those calls). The kernel runs every filter a
    process has; installing one costs a child in proportion to its size, so each child installs the small part."""
    why = available()
    if why:
        raise OSError(errno.ENOSYS, f"seccomp: {why}")
    if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, _ADDRESS[part], 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"seccomp filter: {os.strerror(e)}")
