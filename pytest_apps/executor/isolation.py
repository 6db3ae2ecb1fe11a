"""The optional isolation layers, each probed once in the server; a failure only removes the layer.

No network (a network namespace, in a user namespace when not root), a private /tmp and /dev/shm per test
(a mount namespace of the server's own, then one per work folder: workdirs.py), a pids cgroup and a cgroup per
test (root only: cgroups.py),
no capabilities and a uid of the children's own (root only: users.py), an IPC namespace per child (System V
objects and POSIX message queues die with the test), a syscall filter (seccomp.py), Landlock (Linux >= 5.13). What is active, and why a layer is missing, goes into
the report header.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

from . import fence, seccomp, users
from .cgroups import CgroupPool
from .fence import CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWUSER, MS_PRIVATE, MS_REC, LandlockRules

BASE_LAYERS = ["fork-server", "rlimits", "pgroup-kill", "clean-env", "private-workdir"]


class Layers:
    def __init__(self) -> None:
        self.names = list(BASE_LAYERS)
        self.errors: dict[str, str] = {}
        self.landlock: LandlockRules | None = None
        self.drop_caps = False
        self.cgroup_dir: str | None = None
        self.cgroup_fd: int | None = None
        self.own_mounts = False  # the server has a mount namespace of its own, private to it
        self.uid: int | None = None  # the children's own uid (a root harness), None: they keep the server's
        self.ipc = False  # each child unshares an IPC namespace of its own
        self.seccomp = False  # each child installs the syscall filter (seccomp.py) before its program runs
        self.cgroups = CgroupPool()  # a cgroup per test (cgroups.py), where the machine gives one

    def setup(self, base: str, processes: int, extra_pids: int) -> None:
        """`processes`: the pids limit for a test's own process tree; `extra_pids`: what else lives in the
        cgroup during a run (the zygote, waiting spares, exited children not yet reaped)."""
        self._setup_netns()
        try:  # after the user namespace's maps: its tmpfs files then belong to our own uid
            fence.unshare(CLONE_NEWNS)
            fence.mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the machine's view
            self.own_mounts = True
        except OSError as e:
            self.errors["private-tmp"] = str(e)
        if os.geteuid() == 0 and processes > 0:
            self._setup_pids_cgroup(processes + extra_pids)
        why = self.cgroups.setup("pytest-apps-tests", pids_max=max(processes, 0))
        if why:
            self.errors["cgroup-per-test"] = why
        else:
            self.names.append("cgroup-per-test")
        if os.geteuid() == 0 and _probe(drop_caps=True):
            self.drop_caps = True
            self.names.append("no-caps")
        if os.geteuid() == 0:
            self._setup_own_uid(base)
        why = seccomp.available()
        if not why and _probe(seccomp=True, uid=self.uid, drop_caps=self.drop_caps):
            self.seccomp = True
            self.names.append("seccomp")
        else:
            self.errors["seccomp"] = why or "a child under the syscall filter could not load the standard library"
        self._setup_ipc()
        abi = fence.landlock_abi()
        if not abi:
            self.errors["landlock"] = "not available (kernel or architecture)"
            return
        try:
            rules = LandlockRules(abi, read_paths(), ["/dev/null", "/dev/zero"])
            fd = rules.for_workdir(base)
            try:
                ok = _probe(landlock_fd=fd, drop_caps=self.drop_caps, uid=self.uid)
            finally:
                os.close(fd)
            if ok:
                self.landlock = rules
                self.names.append(f"landlock-abi{abi}")
            else:
                rules.close()
        except OSError as e:
            self.errors["landlock"] = str(e)

    def _setup_netns(self) -> None:
        """A network namespace of the server's own (no network at all), in a user namespace of its own where the
        server is not root."""
        try:
            flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
            uid, gid = os.getuid(), os.getgid()
            if fence.libc.unshare(flags) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            if flags & CLONE_NEWUSER:
                for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                                   ("gid_map", f"{gid} {gid} 1")):
                    try:
                        with open(f"/proc/self/{name}", "w") as f:
                            f.write(text)
                    except OSError:
                        pass
            self.names.append("netns")
        except OSError as e:
            self.errors["netns"] = str(e)

    def _setup_ipc(self) -> None:
        """System V IPC and POSIX message queues: the syscall filter refuses them, which costs nothing per test;
        without the filter, each child has an IPC namespace of its own (its objects end with it), which costs
        the kernel a namespace per test."""
        if self.seccomp:
            self.errors["ipc-ns"] = ("not needed: the syscall filter refuses System V IPC and POSIX message "
                                     "queues")
        elif _probe(ipc=True):
            self.ipc = True
            self.names.append("ipc-ns")
        else:
            self.errors["ipc-ns"] = "a child could not have an IPC namespace of its own"

    def setup_private_tmp(self, dirs, size: int) -> None:
        """The private-tmp layer (workdirs.PrivateTmp), if a fenced child can use it: `dirs` keeps it."""
        if not self.own_mounts:
            return
        hidden = hidden_by_private_tmp()
        if hidden:
            self.errors["private-tmp"] = (f"{hidden} (the interpreter or its modules) lies under /tmp or /dev/shm, "
                                          "which a private /tmp would hide")
            return
        from .workdirs import PrivateTmp

        try:
            dirs.private = PrivateTmp()
            d = dirs.take(size)
            try:
                ok = _probe(landlock_fd=d.ruleset, drop_caps=self.drop_caps, mntns_fd=d.mntns, uid=self.uid)
            finally:
                dirs.recycle(d)
        except OSError as e:
            ok = False
            self.errors["private-tmp"] = str(e)
        if ok:
            self.names.append("private-tmp")
            return
        self.errors.setdefault("private-tmp", "a fenced child could not use its own /tmp and /dev/shm")
        while dirs.free:
            dirs.drop(dirs.free.pop())
        if dirs.private is not None:
            dirs.private.close()
            dirs.private = None

    def _setup_own_uid(self, base: str) -> None:
        """The children's own uid (users.py), where a child under it can still load what programs import: with
        a mount namespace of the server's own, root's closed folders above the interpreter are opened to it."""
        uid = users.child_uid(os.getpid())
        try:
            closed = users.closed_ancestors([*read_paths(), package_folder()])
            if closed and not self.own_mounts:
                raise OSError(f"{', '.join(sorted(closed))} cannot be passed by another user, and the server has "
                              "no mount namespace of its own to open them in")
            if closed:
                users.reveal(closed, base)
            os.chown(base, 0, 0)
            os.chmod(base, 0o711)
        except OSError as e:
            self.errors["own-uid"] = str(e)
            return
        if _probe(drop_caps=True, uid=uid):
            self.uid = uid
            self.names.append("own-uid")
        else:
            self.errors["own-uid"] = f"a child as uid {uid} could not load the standard library"

    def _setup_pids_cgroup(self, pids_max: int) -> None:
        for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
            if not os.path.isdir(root):
                continue
            path = os.path.join(root, f"pytest-apps-{os.getpid()}")
            try:
                os.mkdir(path)
            except OSError as e:
                self.errors["pids-cgroup"] = str(e)
                continue
            try:
                if not os.path.exists(os.path.join(path, "pids.max")):
                    raise OSError(errno.ENOENT, "no pids controller here")
                with open(os.path.join(path, "pids.max"), "w") as f:
                    f.write(str(pids_max))
                self.cgroup_fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
                self.cgroup_dir = path
                self.names.append("pids-cgroup")
                return
            except OSError as e:
                self.errors["pids-cgroup"] = str(e)
                try:
                    os.rmdir(path)
                except OSError:
                    pass

    def close(self) -> None:
        self.cgroups.close()
        if self.landlock is not None:
            self.landlock.close()
        if self.cgroup_dir:
            try:
                os.close(self.cgroup_fd)
                os.rmdir(self.cgroup_dir)
            except OSError:
                pass


def read_paths() -> list[str]:
    """What a child may read: the interpreter, its libraries and packages, a few system folders."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/dev/urandom", "/dev/random",
             "/dev/full", "/proc/sys/kernel/random", "/sys/devices/system/cpu"}
    prefixes = tuple(os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr/"))
    for p in sys.path:
        rp = os.path.realpath(p) if p else ""
        if rp and (rp + os.sep).startswith(prefixes) and ("site-packages" in rp or "dist-packages" in rp
                                                           or "python3" in rp):
            paths.add(rp)
    return sorted(p for p in paths if os.path.exists(p))


def _probe(**fenced) -> bool:
    """Fork a child that applies the fence and checks it can still import; True if it worked."""
    pid = os.fork()
    if pid == 0:
        try:
            fence.prctl(fence.PR_SET_NO_NEW_PRIVS, 1)
            if fenced.get("mntns_fd") is not None:
                fence.setns(fenced["mntns_fd"], CLONE_NEWNS)
            if fenced.get("ipc"):
                fence.unshare(CLONE_NEWIPC)
            if fenced.get("uid") is not None:
                fence.become(fenced["uid"])
            if fenced.get("drop_caps"):
                fence.drop_capabilities()
            if fenced.get("seccomp"):
                seccomp.install()
            if fenced.get("landlock_fd") is not None:
                fence.landlock_restrict(fenced["landlock_fd"])
                try:
                    open("/proc/1/environ").close()
                    os._exit(3)
                except OSError:
                    pass
            if fenced.get("mntns_fd") is not None:  # its folder is /tmp and /dev/shm, and nothing else is
                with open("/tmp/probe", "w") as f:
                    f.write("x")
                if os.path.isdir("/dev/shm") and not os.path.exists("/dev/shm/probe"):
                    os._exit(4)
            import email.mime.text  # noqa: F401 - a stdlib import that is not preloaded

            os._exit(0)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def package_folder() -> str:
    """The folder of the package this module belongs to (pytest_apps, or the server's private copy of it)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def hidden_by_private_tmp() -> str:
    """A folder the child reads that a private /tmp or /dev/shm would hide (a virtual environment or checkout
    under /tmp): the interpreter's prefixes, this package's folder and the module path; "" when none. Entries
    of PYTHONPATH do not count: a candidate runs on the standard library and the installed packages, and a run
    started with a folder under /tmp on PYTHONPATH (a scratch project, as pytester starts one) keeps the layer."""
    package = package_folder()
    added = {os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    own = [sys.prefix, sys.exec_prefix, sys.base_prefix, package]
    for path in (*own, *sys.path):
        if not path or (path not in own and not os.path.isabs(path)):
            continue  # (relative entries: the current folder, or a path hook's name such as an editable finder's)
        real = os.path.realpath(path)
        if real in added and path not in own:
            continue
        if any(real == top or real.startswith(top + "/") for top in ("/tmp", "/dev/shm")):
            return real
    return ""
