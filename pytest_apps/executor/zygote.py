"""The zygote: a single-threaded process that does nothing but fork children for the server.

Forked once from the server, it imports the modules competitive programs use, applies the fence every
child shares (no new privileges, no capabilities, the pids cgroup, signal dispositions, umask, a clean
environment, the larger part of the syscall filter), and then loops: fork a child on each request and tell the server its pid; reap children
and, when asked, tell how one ended. Its own work per fork is a few system calls, so it dirties few
copy-on-write pages; the server, which does the protocol and the watching, is never forked again and
pays no copy-on-write faults at all.

Control socket (AF_UNIX, SOCK_SEQPACKET), marshalled messages:
  server -> zygote: {"workdir", "limits"} with fds [stdin, stdout, stderr, report, go, (cgroup.procs...),
                    (ruleset), (mount namespace)]
                    | ("wait", pid)
  zygote -> server: ("forked", pid) | ("failed", error) | ("exit", pid, wait status, cpu s, maxrss bytes)
"""

from __future__ import annotations

import gc
import importlib
import marshal
import os
import signal
import socket

from . import seccomp
from .child import prepare_child_state, spare_main
from .fence import PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG, drop_capabilities, fork_without_hooks, prctl
from .protocol import HARNESS_EXIT

PRELOAD = (
    "math cmath collections itertools functools heapq bisect re string fractions decimal random "
    "statistics operator copy array typing io threading queue dataclasses enum numbers datetime "
    "calendar textwrap struct hashlib base64 json ast traceback linecache types weakref contextlib "
    "abc pprint time builtins codecs unicodedata collections.abc sys os atexit"
).split()
CONTROL_FD = 9  # where the control socket lives; fds 3 and 4 stay taken so that received fds are >= 5
MAX_FDS = 16  # a child's descriptors: stdio, report, go, its cgroup's (one a hierarchy), ruleset, namespace


def zygote_main(sock: socket.socket, server_pid: int, cgroup_fd: int | None, drop_caps: bool, maxfd: int,
                preload: tuple[str, ...] = (), filtered: bool = False) -> None:
    """`preload`: modules to load besides PRELOAD (their import errors are ignored); `filtered`: install the
    syscall filter's larger part here, once, for every child (each child adds the small part). Never returns."""
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server_pid:
            os._exit(HARNESS_EXIT)
        os.setpgid(0, 0)
        if cgroup_fd is not None:  # every child inherits the membership
            os.write(cgroup_fd, b"0")
        ctl = socket.socket(fileno=os.dup2(sock.detach(), CONTROL_FD, inheritable=False))
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (3, 4):
            if fd != devnull:
                os.dup2(devnull, fd, inheritable=False)
        os.closerange(5, CONTROL_FD)
        os.closerange(CONTROL_FD + 1, maxfd)
        if preload:
            # numpy's BLAS would start threads at import: the zygote must stay single-threaded to fork safely
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ[var] = "1"
        for name in (*PRELOAD, *preload):
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        if "unittest.mock" in preload:
            from . import appsstyle

            try:
                appsstyle.warm_up()
            except Exception:  # noqa: BLE001, S110 - only a head start; the children do it themselves otherwise
                pass
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.umask(0o022)
        prepare_child_state()
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if drop_caps:  # else each child drops them, once it has entered its mount namespace (child.py)
            drop_capabilities()
        if filtered:
            seccomp.install("zygote")
        gc.collect()
        gc.freeze()  # the collector leaves what is here alone: no page touched by it after a fork
    except BaseException:  # noqa: BLE001 - the server sees the socket close
        os._exit(HARNESS_EXIT)
    try:
        _serve(ctl, maxfd)
    finally:
        os._exit(0)


def _serve(ctl: socket.socket, maxfd: int) -> None:
    """One wake-up per test: a fork request. Children that exited are reaped at the next request (their
    exit status is kept for a while, until the server asks for it): the server watches each child through a
    pidfd of its own and, once it has ended, asks ("wait", pid) how it ended."""
    me = os.getpid()
    ancillary = socket.CMSG_SPACE(MAX_FDS * 4)
    ended: dict[int, tuple] = {}  # pid -> (wait status, cpu seconds, maxrss bytes), the most recent ones
    while True:
        msg, anc, _flags, _addr = ctl.recvmsg(1 << 16, ancillary)
        if not msg:
            return  # the server closed the socket: our children die with us (PDEATHSIG)
        fds = [fd for level, kind, data in anc if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
               for fd in memoryview(data[: len(data) - len(data) % 4]).cast("i")]
        _reap(ended, -1, os.WNOHANG)
        if fds:
            pid = _fork(ctl, msg, fds, me, maxfd)
            if pid is not None:
                ctl.send(marshal.dumps(("forked", pid)))
            continue
        pid = marshal.loads(msg)[1]  # ("wait", pid)
        if pid not in ended:
            _reap(ended, pid, 0)
        ctl.send(marshal.dumps(("exit", pid, *ended.pop(pid, (9, 0.0, 0)))))


def _reap(ended: dict, pid: int, flags: int) -> None:
    """Reap `pid` (-1: every child that has exited) and keep how each ended."""
    while True:
        try:
            got, status, ru = os.wait4(pid, flags)
        except ChildProcessError:
            return
        if got == 0:
            return
        ended[got] = (status, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024)
        if len(ended) > 64:
            del ended[next(iter(ended))]
        if pid != -1:
            return


def _fork(ctl: socket.socket, msg: bytes, fds: list[int], me: int, maxfd: int) -> int | None:
    try:
        pid = fork_without_hooks()
        if pid == 0:
            try:
                spare_main(marshal.loads(msg), fds, me, maxfd)
            finally:
                os._exit(HARNESS_EXIT)
    finally:
        for f in fds:
            os.close(f)
    if pid < 0:
        import ctypes

        ctl.send(marshal.dumps(("failed", os.strerror(ctypes.get_errno()))))
        return None
    return pid
