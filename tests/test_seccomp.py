"""The syscall filter, with real forked processes: a child of the test sets no_new_privs, installs the filter, makes
the call and reports what it got through a pipe. Refused calls fail with their error number (and work without the
filter where the result is certain for any user); what contest programs use (fork, subprocess, threads,
multiprocessing, numpy, local sockets, their own limits) keeps working under it."""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import resource
import socket
import subprocess
import sys
import traceback
from collections.abc import Callable

import pytest

from pytest_apps.executor import fence, seccomp

WHY_NOT = seccomp.available()
needs_filter = pytest.mark.skipif(bool(WHY_NOT), reason=f"no seccomp filter here: {WHY_NOT}")

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SIGCHLD = 17
AF_PACKET, AF_NETLINK, AF_VSOCK = 17, 16, 40


def sys_call(nr: int, *args: int | ctypes.Array) -> int:
    """A raw system call; every integer argument is passed as a full 64-bit word. OSError on failure."""
    r = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return int(r)


def in_child(fn: Callable[[], object], *, filtered: bool = True, no_new_privs: bool = True,
             parts: tuple[str, ...] = ("whole",)) -> dict:
    """Run `fn` in a forked child (after no_new_privs and the filter's `parts`): {"value": what it returned} or
    {"errno": the errno of the OSError it raised}; the child's exit status must be 0."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        code = 0
        try:
            os.close(r)
            if no_new_privs:
                fence.prctl(fence.PR_SET_NO_NEW_PRIVS, 1)
            if filtered:
                for part in parts:
                    seccomp.install(part)
            try:
                out = {"value": fn()}
            except OSError as e:
                out = {"errno": e.errno}
        except BaseException:
            out, code = {"crash": traceback.format_exc()}, 70
        try:
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    out = json.loads(data or b"{}")
    assert os.waitstatus_to_exitcode(status) == 0, out
    return out


def python_under_filter(code: str) -> str:
    """A fresh interpreter running `code` under the filter (installed in the forked child, kept across execve):
    its stdout; its exit status must be 0."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(w, 1)
            fence.prctl(fence.PR_SET_NO_NEW_PRIVS, 1)
            seccomp.install()
            os.execv(sys.executable, [sys.executable, "-c", code])
        finally:
            os._exit(70)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    return out


# ------------------------------------------------------------------------------------------------ the filter


def test_filter_is_built_once():
    f = seccomp.build_filter()
    assert f is seccomp.build_filter() and len(f) % 8 == 0 and 0 < len(f) // 8 < 4096


@needs_filter
def test_install_does_not_rebuild_the_filter():
    def rebuild() -> bytes:
        raise AssertionError("install() built the filter again")

    def installed() -> str:
        with open("/proc/self/status") as f:
            return "".join(line for line in f if line.startswith("Seccomp"))

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            seccomp.build_filter = rebuild  # in the child only
            fence.prctl(fence.PR_SET_NO_NEW_PRIVS, 1)
            seccomp.install()
            os.write(w, installed().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        status_lines = f.read().decode()
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert "Seccomp:\t2" in status_lines  # filter mode
    assert "Seccomp_filters:\t1" in status_lines or "Seccomp_filters" not in status_lines


@needs_filter
def test_install_without_no_new_privs_or_capability_raises():
    def install_unprivileged() -> None:
        fence.drop_capabilities()
        seccomp.install()

    assert in_child(install_unprivileged, filtered=False, no_new_privs=False) == {"errno": errno.EACCES}


# ------------------------------------------------------------------------------------- what the filter refuses


@needs_filter
@pytest.mark.parametrize("parts", [("whole",), ("zygote", "last")], ids=["whole", "zygote-then-last"])
def test_every_call_refused_outright_gets_eperm(parts):
    """Each with every argument -1: without the filter these fail in harmless ways of their own (EFAULT, EINVAL,
    EBADF, ...), so an EPERM from every one of them is the filter's. The executor's two parts (the zygote's, then
    each child's after its set-up) refuse what the whole filter does."""
    names = {name: nr for _, calls in seccomp.REFUSED for name, nr in calls.items()}

    def sweep() -> dict:
        got = {}
        for name, nr in names.items():
            try:
                sys_call(nr, -1, -1, -1, -1, -1, -1)
                got[name] = "succeeded"
            except OSError as e:
                got[name] = errno.errorcode.get(e.errno, e.errno)
        return got

    got = in_child(sweep, parts=parts)["value"]
    assert {n: e for n, e in got.items() if e != "EPERM"} == {}
    assert {"ptrace", "process_vm_readv", "keyctl", "add_key", "unshare", "setns", "io_uring_setup", "bpf",
            "perf_event_open", "userfaultfd", "sched_setaffinity", "mount", "pidfd_getfd"} <= set(got)


@needs_filter
def test_ptrace_traceme():
    traceme = lambda: sys_call(101, 0, 0, 0, 0)  # noqa: E731 - PTRACE_TRACEME
    assert in_child(traceme, filtered=False) == {"value": 0}
    assert in_child(traceme) == {"errno": errno.EPERM}


@needs_filter
def test_process_vm_readv_of_the_parent():
    secret = ctypes.create_string_buffer(b"the parent's secret", 64)  # at the same address in the forked child

    def read_parent() -> str:
        into = ctypes.create_string_buffer(64)
        local = (ctypes.c_uint64 * 2)(ctypes.addressof(into), 64)
        remote = (ctypes.c_uint64 * 2)(ctypes.addressof(secret), 64)
        sys_call(310, os.getppid(), local, 1, remote, 1, 0)
        return into.value.decode()

    assert in_child(read_parent) == {"errno": errno.EPERM}


@needs_filter
def test_keyrings():
    key_spec_process_keyring, keyctl_get_keyring_id = -2, 0
    add = lambda: sys_call(248, ctypes.c_char_p(b"user"), ctypes.c_char_p(b"k"), ctypes.c_char_p(b"v"), 1,  # noqa: E731
                           key_spec_process_keyring)
    assert in_child(add) == {"errno": errno.EPERM}
    get = lambda: sys_call(250, keyctl_get_keyring_id, key_spec_process_keyring, 1)  # noqa: E731
    assert in_child(get) == {"errno": errno.EPERM}


@needs_filter
@pytest.mark.parametrize("family", [AF_VSOCK, AF_PACKET, AF_NETLINK])
def test_socket_families_beyond_the_local_and_ip_ones(family):
    assert in_child(lambda: socket.socket(family, socket.SOCK_RAW).close()) == {"errno": errno.EAFNOSUPPORT}
    assert in_child(lambda: socket.socketpair(family, socket.SOCK_STREAM)) == {"errno": errno.EAFNOSUPPORT}


@needs_filter
def test_prlimit_on_another_process():
    parent = lambda: resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)  # noqa: E731
    assert "value" in in_child(parent, filtered=False)  # the same user: allowed by the kernel
    assert in_child(parent) == {"errno": errno.EPERM}
    # pid 0 with a high word: the kernel reads it as 0 (itself); the filter asks for the whole word to be 0
    old = (ctypes.c_uint64 * 2)()
    assert in_child(lambda: sys_call(302, 1 << 32, resource.RLIMIT_NOFILE, 0, old)) == {"errno": errno.EPERM}


@needs_filter
def test_clone_with_parent_or_new_namespaces():
    def clone(flags: int) -> Callable[[], int]:
        def call() -> int:
            pid = sys_call(56, flags | SIGCHLD, 0, 0, 0, 0)
            if pid == 0:
                os._exit(0)  # not refused: the new process leaves at once
            return pid
        return call

    for flags in (seccomp.CLONE_PARENT, *seccomp.CLONE_NEW.values()):
        got = in_child(clone(flags))
        if "value" in got and flags == seccomp.CLONE_PARENT:
            os.waitpid(got["value"], 0)  # a sibling of the child: ours to reap
        assert got == {"errno": errno.EPERM}, hex(flags)
    assert in_child(lambda: sys_call(435, 0, 0)) == {"errno": errno.ENOSYS}  # clone3


@needs_filter
def test_namespaces_and_affinity():
    uts = lambda: fence.setns(os.open("/proc/self/ns/uts", os.O_RDONLY), 0)  # noqa: E731
    assert in_child(uts) == {"errno": errno.EPERM}
    assert in_child(lambda: fence.unshare(seccomp.CLONE_NEW["CLONE_NEWUTS"])) == {"errno": errno.EPERM}
    same = lambda: os.sched_setaffinity(0, os.sched_getaffinity(0))  # noqa: E731
    assert in_child(same, filtered=False) == {"value": None}
    assert in_child(same) == {"errno": errno.EPERM}


@needs_filter
def test_the_zygotes_part_leaves_a_child_its_setup_call():
    """Between the zygote's part and its own, a child may enter its folder's mount namespace (setns: EBADF on a
    bad descriptor, not EPERM); after its own part it may not, nor anything else the whole filter refuses."""
    setns = lambda: sys_call(308, -1, 0)  # noqa: E731
    assert in_child(setns, parts=("zygote",)) == {"errno": errno.EBADF}
    assert in_child(setns, parts=("zygote", "last")) == {"errno": errno.EPERM}
    unshare_ipc = lambda: sys_call(272, 0x08000000)  # noqa: E731 - CLONE_NEWIPC
    assert in_child(unshare_ipc, parts=("zygote",)) == {"errno": errno.EPERM}


@needs_filter
@pytest.mark.parametrize("parts", [("whole",), ("zygote", "last")], ids=["whole", "zygote-then-last"])
def test_other_abis_get_nothing(parts):
    x32_getpid = seccomp.X32_SYSCALL_BIT | 39
    assert in_child(lambda: sys_call(x32_getpid), parts=parts) == {"errno": errno.ENOSYS}
    # i386's getpid (20) through int 0x80 from this 64-bit process: `mov eax, 20; int 0x80; ret`
    code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    code.write(b"\xb8\x14\x00\x00\x00\xcd\x80\xc3")
    i386_getpid = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(code)))
    try:
        try:
            unfiltered = in_child(lambda: i386_getpid() == os.getpid(), filtered=False)
        except AssertionError:  # killed: a kernel without i386 emulation faults on int 0x80
            unfiltered = {}
        if unfiltered != {"value": True}:
            pytest.skip("this kernel runs no i386 system calls")
        assert in_child(i386_getpid, parts=parts) == {"value": -errno.ENOSYS}
    finally:
        del i386_getpid
        code.close()


# --------------------------------------------------------------------------------------- what keeps working


@needs_filter
def test_fork_sockets_limits_and_affinity_keep_working():
    def everyday() -> list:
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        forked = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        a, b = socket.socketpair(socket.AF_UNIX)
        a.sendall(b"ping")
        pair = b.recv(4).decode()
        for family in (socket.AF_INET, socket.AF_INET6):
            socket.socket(family, socket.SOCK_STREAM).close()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 100), hard))
        own = resource.prlimit(0, resource.RLIMIT_NOFILE)[0]
        return [forked, pair, own, len(os.sched_getaffinity(0)) > 0]

    assert in_child(everyday) == {"value": [7, "ping", min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 100), True]}


@needs_filter
def test_threads_keep_working():
    # glibc's pthread_create asks for clone3 first and falls back to clone on ENOSYS
    code = ("import threading, sys\nsys.setrecursionlimit(10**6); threading.stack_size(256 << 20)\n"
            "def deep(n): return 0 if n == 0 else 1 + deep(n - 1)\nout = []\n"
            "t = threading.Thread(target=lambda: out.append(deep(100000))); t.start(); t.join()\nprint(out[0])")
    assert python_under_filter(code) == "100000\n"


@needs_filter
def test_subprocess_keeps_working():
    code = "import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', 'print(1)'], capture_output=True).stdout)"
    assert python_under_filter(code) == "b'1\\n'\n"


@needs_filter
def test_multiprocessing_keeps_working():
    code = ("import multiprocessing as mp\n"
            "if __name__ == '__main__':\n"
            "    with mp.Pool(2) as p: print(p.map(abs, [-1, -2, 3]))\n"
            "    with mp.get_context('forkserver').Pool(2) as p: print(p.map(abs, [-4]))\n"
            "    from multiprocessing import shared_memory\n"  # (a file in /dev/shm, as its locks are)
            "    m = shared_memory.SharedMemory(create=True, size=8); m.buf[0] = 7; print(m.buf[0]); m.close(); m.unlink()\n"
            "    q = mp.Queue(); v = mp.Value('i', 5); q.put(v.value); print(q.get())\n")
    assert python_under_filter(code) == "[1, 2, 3]\n[4]\n7\n5\n"


@needs_filter
def test_numpy_keeps_working():
    pytest.importorskip("numpy")
    code = "import numpy as np\na = np.arange(300.0).reshape(20, 15)\nprint(int((a @ a.T).trace()))"
    import numpy as np

    a = np.arange(300.0).reshape(20, 15)
    assert python_under_filter(code) == f"{int((a @ a.T).trace())}\n"
