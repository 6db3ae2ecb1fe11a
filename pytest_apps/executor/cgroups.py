"""Per-test cgroups: one group per test, made ahead of time as the spare children are, so that everything a
program starts (whoever becomes its parent: a double fork, a new session, clone(CLONE_PARENT)) is counted and
killed as one.

A spare joins its group before its test arrives by writing b"0" to each of `Group.attach_fds()` (the
cgroup.procs files, opened by the server); every process it starts from then on is born in the group. The
server then reads, from the kernel and never from the program:

- `cpu_ns()`: the CPU time of every process that was ever in the group, those that have exited included
  (cgroup v1 `cpuacct.usage`; v2 `cpu.stat` usage_usec);
- `memory_peak()`: the group's peak memory (v1 `memory.max_usage_in_bytes`; v2 `memory.peak`);
- `pids()`: the processes in it now;

`freeze()` holds them all off the CPUs until thawed (a test parked, parking.py), and `kill()` ends them all: v2
writes `cgroup.kill`; v1 freezes the group (a frozen process cannot fork, so a fork bomb cannot outrun the kill),
sends SIGKILL to every task in it, thaws it, and repeats until it is empty.

Both layouts are supported, chosen by probing /proc/self/mountinfo: cgroup v1, each controller (freezer,
cpuacct, memory, pids) a hierarchy of its own, and cgroup v2, one hierarchy (cgroup.kill needs Linux 5.14).
The server's groups live under a parent named `<prefix>-<server pid>` in its own cgroup of each hierarchy (so
that the limits of a container around it still hold); a parent whose server is gone (killed before it could
clean up) is emptied and removed by the next setup. Where no group can be had (not root and no delegated v2
subtree, no cgroup file system), `setup` says why and the server falls back to sampling /proc.

Standard library only: the server imports this as part of its private package.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time

V1_ROLES = ("freezer", "cpuacct", "memory", "pids")  # freezer first: the hierarchy kill() and pids() read
V1_REQUIRED = ("freezer", "cpuacct")  # without these there is no exact CPU or no sure kill
V2 = "unified"
KILL_TIMEOUT = 5.0  # seconds kill() tries before it gives up on a group (a process stuck in the kernel)
_RDWR = os.O_RDWR | os.O_CLOEXEC


def _read(fd: int) -> bytes:
    """The whole of a control file through a descriptor kept open (pread restarts the file at each call)."""
    chunks, at = [], 0
    while True:
        b = os.pread(fd, 1 << 16, at)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        at += len(b)


def _read_path(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _read(fd)
    finally:
        os.close(fd)


def _write_path(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _ids(data: bytes) -> list[int]:
    return [int(x) for x in data.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def hierarchies() -> dict[str, str]:
    """Role (a v1 controller's name, or "unified" for the v2 hierarchy) -> the folder of this process's own
    cgroup in that hierarchy, for every cgroup hierarchy mounted here."""
    own: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [V2]:
                    own[c] = path
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return {}
    out: dict[str, str] = {}
    for fields in mounts:
        sep = fields.index("-")
        root, point, fstype, options = fields[3], fields[4], fields[sep + 1], fields[sep + 3]
        roles = [V2] if fstype == "cgroup2" else [o for o in options.split(",") if o in V1_ROLES] \
            if fstype == "cgroup" else []
        for role in roles:
            path = own.get(role)
            if path is None or role in out:
                continue
            if root != "/" and (path == root or path.startswith(root + "/")):
                path = path[len(root):]  # a container's view: its mount starts at its own cgroup
            out[role] = point.replace("\\040", " ") + path.rstrip("/")
    return out


class Group:
    """One test's cgroup (a folder per hierarchy). The descriptors it keeps are close-on-exec."""

    def __init__(self, version: int, dirs: dict[str, str]) -> None:
        self.version = version
        self.dirs = dirs  # role -> folder
        self.fds: dict[str, int] = {}  # "<role>:<file>" -> descriptor, opened once
        self._attach: list[int] = []
        self._cpu_base = 0  # v2: cpu.stat cannot be zeroed; what it read at the last reset

    # -- the descriptors ----------------------------------------------------------------------------------
    def _fd(self, role: str, name: str, flags: int = _RDWR) -> int:
        key = f"{role}:{name}"
        fd = self.fds.get(key)
        if fd is None:
            fd = self.fds[key] = os.open(os.path.join(self.dirs[role], name), flags)
        return fd

    @property
    def _main(self) -> str:
        return V2 if self.version == 2 else "freezer"

    def attach_fds(self) -> list[int]:
        """The cgroup.procs of each of the group's folders, opened write-only and close-on-exec: a process
        (the spare, root, before its program runs) writes b"0" to each to join the group. The group owns
        them: they stay open until `remove()` (send copies)."""
        if not self._attach:
            folders = sorted(set(self.dirs.values()), key=lambda d: d != self.dirs[self._main])
            self._attach = [os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for d in folders]
        return self._attach

    # -- what the kernel counted ----------------------------------------------------------------------------
    def cpu_ns(self) -> int:
        """CPU time, in nanoseconds, of every process that was in the group since the last reset."""
        if self.version == 1:
            return int(_read(self._fd("cpuacct", "cpuacct.usage")))
        return self._usage_usec() * 1000 - self._cpu_base

    def _usage_usec(self) -> int:
        data = _read(self._fd(V2, "cpu.stat", os.O_RDONLY | os.O_CLOEXEC))
        m = re.search(rb"^usage_usec (\d+)", data, re.M)
        return int(m.group(1)) if m else 0

    def memory_peak(self) -> int | None:
        """The group's peak memory in bytes since the last reset; None without a memory controller."""
        role, name = ("memory", "memory.max_usage_in_bytes") if self.version == 1 else (V2, "memory.peak")
        if role not in self.dirs:
            return None
        try:
            return int(_read(self._fd(role, name)))
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int]:
        """The processes in the group now."""
        return self._list("cgroup.procs")

    def _list(self, name: str) -> list[int]:
        # opened anew each time: v1 keeps the list it made for an open descriptor (about a second) and would
        # show processes that have since left
        return _ids(_read_path(os.path.join(self.dirs[self._main], name)))

    def _tasks(self) -> list[int]:
        name = "tasks" if self.version == 1 else "cgroup.threads"
        try:
            return self._list(name)
        except OSError:  # v2: a domain group that is not threaded still lists its processes
            return self.pids()

    # -- ending it ------------------------------------------------------------------------------------------
    def kill(self, timeout: float = KILL_TIMEOUT, listed: list[int] | None = None) -> int:
        """Kill every process in the group and wait until it is empty; returns how many processes were
        killed. Raises TimeoutError if the group is not empty after `timeout` seconds. `listed`: the group's
        processes as the caller has just read them (one listing fewer)."""
        seen = set(self.pids() if listed is None else listed)
        if not seen:
            return 0  # nothing in it can start anything: an empty group stays empty
        deadline = time.monotonic() + timeout
        if self.version == 2 and "cgroup.kill" in self._files():
            os.write(self._fd(V2, "cgroup.kill", os.O_WRONLY | os.O_CLOEXEC), b"1")
            return self._wait_empty(seen, deadline)
        frozen = False  # a first round without the freezer, which costs more than the kill (tried: 0.4 ms)
        while True:
            if frozen:
                self._freeze(True, deadline)
            try:
                for tid in (*self._tasks(), *self.pids()):
                    try:
                        os.kill(tid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                seen.update(self.pids())
            finally:
                if frozen:
                    self._freeze(False, deadline)
            try:  # (a process forked between the listing and the signals is left: the next round freezes)
                return self._wait_empty(seen, min(deadline, time.monotonic() + (0.05 if frozen else 0.01)))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise
            frozen = self.can_freeze()

    def can_freeze(self) -> bool:
        return self.version == 1 or "cgroup.freeze" in self._files()

    def freeze(self, on: bool, timeout: float = KILL_TIMEOUT) -> None:
        """Freeze every process in the group (none runs or forks until thawed; each stays killable) and wait until
        they all are, or thaw them."""
        self._freeze(on, time.monotonic() + timeout)

    def _files(self) -> set[str]:
        files = getattr(self, "_listing", None)
        if files is None:
            files = self._listing = set(os.listdir(self.dirs[self._main]))
        return files

    def _freeze(self, on: bool, deadline: float) -> None:
        """v1 freezer.state FROZEN / THAWED (v2 without cgroup.kill: cgroup.freeze). Freezing waits until
        every task is frozen (FREEZING -> FROZEN), or until `deadline`: a frozen process cannot fork."""
        if self.version == 2:
            os.write(self._fd(V2, "cgroup.freeze"), b"1" if on else b"0")
            while on and b"frozen 1" not in _read(self._fd(V2, "cgroup.events", os.O_RDONLY | os.O_CLOEXEC)):
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.0005)
            return
        fd = self._fd("freezer", "freezer.state")
        os.write(fd, b"FROZEN" if on else b"THAWED")
        while on and _read(fd).strip() != b"FROZEN" and time.monotonic() < deadline:
            os.write(fd, b"FROZEN")
            time.sleep(0.0005)

    def _wait_empty(self, seen: set[int], deadline: float) -> int:
        pause = 0.0002
        while True:
            left = self._tasks()
            if not left:
                return len(seen)
            seen.update(self.pids())
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(left)} task(s) still in cgroup {self.dirs[self._main]} after the kill")
            time.sleep(pause)
            pause = min(pause * 2, 0.005)

    # -- reuse ----------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Zero the counters for the next test (the group must be empty: after `kill()`)."""
        if self.version == 1:
            os.write(self._fd("cpuacct", "cpuacct.usage"), b"0")
            if "memory" in self.dirs:
                os.write(self._fd("memory", "memory.max_usage_in_bytes"), b"0")
            return
        self._cpu_base = self._usage_usec() * 1000
        if V2 in self.dirs and "memory.peak" in self._files():
            # (a write resets the peak seen through this very descriptor, Linux >= 6.12; older kernels refuse)
            os.write(self._fd(V2, "memory.peak"), b"0")

    def set_limits(self, pids_max: int, memory_max: int) -> None:
        """Limits of the whole group (0: none): how many processes, how many bytes."""
        limits = []
        if pids_max:
            limits.append(("pids" if self.version == 1 else V2, "pids.max", pids_max))
        if memory_max:
            limits.append(("memory", "memory.limit_in_bytes", memory_max) if self.version == 1
                          else (V2, "memory.max", memory_max))
        for role, name, value in limits:
            if role in self.dirs:
                path = os.path.join(self.dirs[role], name)
                if os.path.exists(path):
                    _write_path(path, str(value).encode())

    def close_fds(self) -> None:
        for fd in (*self.fds.values(), *self._attach):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()
        self._attach = []

    def remove(self, timeout: float = KILL_TIMEOUT) -> None:
        """Kill what is in it and remove its folders."""
        try:
            self.kill(timeout)
        except (OSError, TimeoutError):
            pass
        self.close_fds()
        for d in set(self.dirs.values()):
            _rmdir(d, timeout)


def _rmdir(path: str, timeout: float = 1.0) -> None:
    """Remove a cgroup folder (its processes gone): EBUSY lasts while a killed task is still leaving."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() >= deadline:
                return
            time.sleep(0.001)


class CgroupPool:
    """The per-test groups of one server: `setup` once, `take` a ready group for each test, `recycle` it once
    the test is over (killed, counters zeroed, ready again), `prepare` more ahead of time, `close` at the end."""

    def __init__(self, version: int | None = None) -> None:
        """`version`: 1 or 2 to use only that layout (tests); None probes (v1 where its controllers are mounted,
        else v2)."""
        self.want = version
        self.version = 0
        self.reason = "not set up"
        self.parents: dict[str, str] = {}  # role -> this server's parent folder
        self.missing: list[str] = []  # what the groups cannot do here (a controller not available)
        self.ready: list[Group] = []
        self.pids_max = self.memory_max = 0
        self._count = 0

    @property
    def available(self) -> bool:
        return not self.reason

    def describe(self) -> str:
        """A line for the report's isolation section."""
        if not self.available:
            return f"no per-test cgroup ({self.reason})"
        roles = ", ".join(sorted(self.parents)) if self.version == 1 else "cgroup.kill, cpu.stat"
        lacking = f"; without {', '.join(self.missing)}" if self.missing else ""
        return f"per-test cgroup v{self.version} ({roles}){lacking}"

    def setup(self, name_prefix: str = "pytest-apps", pids_max: int = 0, memory_max: int = 0) -> str:
        """Make this server's parent groups; "" when per-test groups work here, else the reason they do not."""
        self.pids_max, self.memory_max = pids_max, memory_max
        found = hierarchies()
        bases, self.version, self.reason = self._choose(found)
        if self.reason:
            return self.reason
        remove_stale(bases, name_prefix, self.version)
        name = f"{name_prefix}-{os.getpid()}"
        taken = 0
        while any(os.path.exists(os.path.join(b, name)) for b in bases.values()):
            taken += 1  # another pool of this very process (each server has one; tests make a second)
            name = f"{name_prefix}-{os.getpid()}.{taken}"
        try:
            for role, base in bases.items():
                if role == V2:
                    self._enable_v2(base)
                path = os.path.join(base, name)
                os.mkdir(path)
                self.parents[role] = path
                if role == V2:
                    self._enable_v2(path)
            self.reason = self._probe()
        except OSError as e:
            self.reason = (f"cannot use a cgroup under {e.filename or base}: {e.strerror} (a per-test cgroup "
                           "needs root, or a cgroup v2 subtree delegated to this user)")
        if self.reason:
            reason = self.reason
            self.close()
            self.reason = reason
        return self.reason

    def _choose(self, found: dict[str, str]) -> tuple[dict[str, str], int, str]:
        v1 = {r: found[r] for r in V1_ROLES if r in found}
        if self.want != 2 and all(r in v1 for r in V1_REQUIRED):
            self.missing = [r for r in V1_ROLES if r not in v1]
            return v1, 1, ""
        if self.want != 1 and V2 in found:
            if not os.path.exists(os.path.join(found[V2], "cgroup.procs")):
                return {}, 0, f"the cgroup v2 folder {found[V2]} of this process is not reachable"
            return {V2: found[V2]}, 2, ""
        if self.want == 1:
            return {}, 0, "no cgroup v1 hierarchy with the freezer and cpuacct controllers is mounted"
        return {}, 0, "no cgroup file system with what a per-test group needs (v1 freezer and cpuacct, or v2)"

    @staticmethod
    def _enable_v2(path: str) -> None:
        """Hand the memory and pids controllers down to the children of `path`, where the kernel allows."""
        try:
            available = _read_path(os.path.join(path, "cgroup.controllers")).split()
        except OSError:
            available = []
        for c in (b"memory", b"pids"):
            if c in available:
                try:
                    _write_path(os.path.join(path, "cgroup.subtree_control"), b"+" + c)
                except OSError:
                    pass

    def _probe(self) -> str:
        """Make one group and have a forked child join it: "" if the child was in it, else why not."""
        g = self._make()
        pid = os.fork()
        if pid == 0:
            try:
                for fd in g.attach_fds():
                    os.write(fd, b"0")
                os._exit(0 if os.getpid() in g.pids() else 3)
            except BaseException:  # noqa: BLE001
                os._exit(2)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code != 0:
            g.remove()
            return "a child could not join its cgroup (writing cgroup.procs failed)"
        if self.version == 2:
            files = g._files()  # noqa: SLF001 - our own class
            self.missing = [f for f in ("cgroup.kill", "memory.peak", "pids.max") if f not in files]
        self.ready.append(g)
        return ""

    def _make(self) -> Group:
        self._count += 1
        dirs = {}
        try:
            for role, parent in self.parents.items():
                dirs[role] = os.path.join(parent, f"t{self._count}")
                os.mkdir(dirs[role])
            g = Group(self.version, dirs)
            g.set_limits(self.pids_max, self.memory_max)
            g.attach_fds()
            return g
        except OSError:
            Group(self.version, dirs).remove()
            raise

    def prepare(self, n: int) -> None:
        """Keep `n` groups ready (off the critical path: after a test's answer is sent)."""
        while self.available and len(self.ready) < n:
            self.ready.append(self._make())

    def take(self) -> Group:
        """A ready group for the next test."""
        if not self.available:
            raise OSError(f"no per-test cgroup: {self.reason}")
        return self.ready.pop() if self.ready else self._make()

    def recycle(self, g: Group) -> None:
        """The test is over: kill what is left in its group, zero the counters and keep it for a later test
        (a group that cannot be emptied or reset is removed instead)."""
        try:
            g.kill()
            g.reset()
        except (OSError, TimeoutError, ValueError):
            g.remove()
            return
        self.ready.append(g)

    def close(self) -> None:
        """Kill everything in this server's groups and remove them and the parents."""
        while self.ready:
            self.ready.pop().remove()
        if self.parents:
            _remove_parents(dict(self.parents), self.version)
        self.parents.clear()
        if not self.reason:
            self.reason = "closed"


def _remove_parents(parents: dict[str, str], version: int) -> None:
    """Empty and remove a server's parent folders (one per hierarchy) and every group under them."""
    names: set[str] = set()
    for p in parents.values():
        try:
            names.update(e.name for e in os.scandir(p) if e.is_dir())
        except OSError:
            pass
    for name in sorted(names):
        dirs = {r: os.path.join(p, name) for r, p in parents.items() if os.path.isdir(os.path.join(p, name))}
        Group(version, dirs).remove() if version == 1 and "freezer" in dirs or version == 2 \
            else _remove_plain(dirs)
    for p in parents.values():
        _remove_plain({"": p})


def _remove_plain(dirs: dict[str, str]) -> None:
    """Without a freezer folder: SIGKILL what each folder lists until it is empty, then remove it."""
    for d in dirs.values():
        for _ in range(100):
            try:
                left = _ids(_read_path(os.path.join(d, "cgroup.procs")))
            except OSError:
                break
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.002)
        _rmdir(d)


def remove_stale(bases: dict[str, str], prefix: str, version: int) -> list[str]:
    """Remove the parents `<prefix>-<pid>` (or `<prefix>-<pid>.<n>`) under `bases` (role -> folder) whose server is no longer alive,
    killing what is left in them; returns their names."""
    pattern = re.compile(re.escape(prefix) + r"-(\d+)(?:\.\d+)?$")
    stale: set[str] = set()
    for base in bases.values():
        try:
            for e in os.scandir(base):
                m = pattern.match(e.name)
                if m and e.is_dir() and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
                    stale.add(e.name)
        except OSError:
            pass
    for name in sorted(stale):
        parents = {r: os.path.join(b, name) for r, b in bases.items() if os.path.isdir(os.path.join(b, name))}
        _remove_parents(parents, version)
    return sorted(stale)
