"""Per-test cgroups (executor/cgroups.py) with real processes: a process that joins through the group's
descriptors is in it; the CPU of children that live a few milliseconds and of orphans is counted; kill() ends
a daemon in a new session, a double-forked orphan, a clone(CLONE_PARENT) process and a fork bomb; reset zeroes
the counters; close() and the next setup after a killed server leave nothing behind. Each test runs on every
cgroup layout this machine offers (v1 and v2), and skips with the reason where there is none."""

from __future__ import annotations

import ctypes
import os
import platform
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_apps.executor import cgroups
from pytest_apps.executor.cgroups import CgroupPool
from pytest_apps.executor.reaper import gone

PREFIX = "pytest-apps-test"
PIDS_MAX = 40
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine())
CLONE_PARENT = 0x00008000


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def pool(request):
    if os.geteuid() != 0:
        pytest.skip("per-test cgroups need root here (a non-root run falls back to sampling)")
    p = CgroupPool(request.param)
    reason = p.setup(PREFIX, pids_max=PIDS_MAX)
    if reason:
        pytest.skip(f"no cgroup v{request.param} here: {reason}")
    yield p
    p.close()


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def in_group(group: cgroups.Group, body, expect: int = 1, timeout: float = 10.0) -> list[int]:
    """Fork a helper that joins `group` through its descriptors and runs `body(w)`; each process of the
    scenario writes its pid as a line to `w`. Returns the first `expect` pids written, the helper's first
    (the helper is reaped here once it has exited)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            for fd in group.attach_fds():
                os.write(fd, b"0")
            os.write(w, b"%d\n" % os.getpid())
            body(w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    data, end = b"", time.monotonic() + timeout
    try:
        while data.count(b"\n") < expect and time.monotonic() < end:
            if select.select([r], [], [], max(0.0, end - time.monotonic()))[0]:
                chunk = os.read(r, 4096)
                if not chunk:
                    break
                data += chunk
    finally:
        os.close(r)
    pids = [int(x) for x in data.split()]
    assert len(pids) >= expect, f"the scenario reported {pids}, expected {expect} pids"
    return pids[:expect]


def reap(pid: int, timeout: float = 10.0) -> int:
    """Wait for our child `pid` to exit; its wait status."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            return status
        time.sleep(0.005)
    raise AssertionError(f"process {pid} did not exit within {timeout} s")


def wait_empty(group: cgroups.Group, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while group.pids():
        assert time.monotonic() < end, f"still in the group: {group.pids()}"
        time.sleep(0.005)


def daemon(w: int) -> None:
    """A double fork into a new session: the grandchild reports itself and sleeps; its parent is gone."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, b"%d\n" % os.getpid())
            os.close(w)
            time.sleep(300)
        os._exit(0)


def test_a_process_joined_through_the_descriptors_is_in_the_group(pool):
    g = pool.take()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in g.attach_fds():
                os.write(fd, b"0")
            os.read(r, 1)
        finally:
            os._exit(0)
    try:
        wait = time.monotonic() + 5
        while pid not in g.pids() and time.monotonic() < wait:
            time.sleep(0.002)
        assert g.pids() == [pid]
        with open(f"/proc/{pid}/cgroup") as f:
            paths = [line.rstrip("\n").split(":", 2)[2] for line in f]
        for folder in g.dirs.values():  # "<parent>/t<n>" in each hierarchy
            assert any(p.endswith("/" + "/".join(folder.split("/")[-2:])) for p in paths), (folder, paths)
    finally:
        os.write(w, b"x")
        reap(pid)
        os.close(r)
        os.close(w)
    assert g.pids() == []


def test_a_process_that_gave_up_root_joins_through_the_descriptors(pool):
    """The descriptors were opened by root: the kernel checks the opener, so a spare may join after it has
    become an unprivileged user without capabilities."""
    g = pool.take()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            for fd in g.attach_fds():
                os.write(fd, b"0")
            os.read(r, 1)
            code = 0
        finally:
            os._exit(code)
    try:
        wait = time.monotonic() + 5
        while pid not in g.pids() and time.monotonic() < wait:
            time.sleep(0.002)
        assert g.pids() == [pid]
    finally:
        os.write(w, b"x")
        status = reap(pid)
        os.close(r)
        os.close(w)
    assert os.waitstatus_to_exitcode(status) == 0


def test_cpu_of_many_short_lived_children_is_counted(pool):
    """40 children of 20 ms of CPU each, reaped at once: a sampler of /proc sees few of them; the group
    counts them all."""
    g = pool.take()

    def body(w: int) -> None:
        for _ in range(40):
            pid = os.fork()
            if pid == 0:
                burn(0.02)
                os._exit(0)
            os.waitpid(pid, 0)

    helper = in_group(g, body)[0]
    reap(helper)
    wait_empty(g)
    assert g.cpu_ns() >= 40 * 0.02 * 1e9


def test_cpu_of_a_double_forked_orphan_is_counted(pool):
    g = pool.take()

    def body(w: int) -> None:
        if os.fork() == 0:
            if os.fork() == 0:
                os.write(w, b"%d\n" % os.getpid())
                burn(0.3)
            os._exit(0)

    helper, orphan = in_group(g, body, expect=2)
    reap(helper)
    wait_empty(g)
    assert gone(orphan)
    assert g.cpu_ns() >= 0.3e9


@pytest.mark.parametrize("kind", ["daemon", "clone-parent"])
def test_kill_ends_what_escaped_its_parent(pool, kind):
    """A daemon (double fork, new session: its parent gone) and a clone(CLONE_PARENT) process in a new session
    (a child of the helper's parent, here the test's process, as it would be the zygote's) both die."""
    g = pool.take()
    if kind == "clone-parent":
        if SYS_CLONE is None:
            pytest.skip(f"no clone syscall number for {platform.machine()}")
        libc = ctypes.CDLL(None, use_errno=True)

        def body(w: int) -> None:
            if libc.syscall(SYS_CLONE, CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0) == 0:
                os.setsid()
                os.write(w, b"%d\n" % os.getpid())
                os.close(w)
                time.sleep(300)
    else:
        body = daemon
    helper, escaped = in_group(g, body, expect=2)
    reap(helper)
    assert escaped in g.pids() and not gone(escaped)
    if kind == "clone-parent":
        assert int(Path(f"/proc/{escaped}/stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid()
    assert g.kill() >= 1  # (the daemon's first parent may still be on its way out when the kill lists the group)
    assert g.pids() == []
    if kind == "clone-parent":  # our own child: reaped here, killed by SIGKILL
        assert os.WTERMSIG(reap(escaped)) == signal.SIGKILL
    assert gone(escaped)


def test_kill_beats_a_fork_bomb(pool):
    if "pids.max" in pool.missing or "pids" in pool.missing:
        pytest.skip("no pids controller in this layout: a fork bomb would fill the machine")
    g = pool.take()

    def body(w: int) -> None:
        os.close(w)
        os.setsid()
        while True:
            try:
                os.fork()
            except OSError:
                pass

    helper = in_group(g, body)[0]
    deadline = time.monotonic() + 30  # the bomb fills its pids limit (slowly on a busy machine) and keeps forking
    while len(g.pids()) <= PIDS_MAX // 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(g.pids()) > PIDS_MAX // 2
    assert len(g.pids()) <= PIDS_MAX
    assert g.kill() >= PIDS_MAX // 2
    assert g.pids() == []
    reap(helper)


def test_kill_of_an_empty_group_is_free_and_says_zero(pool):
    g = pool.take()
    assert g.kill() == 0


def test_freeze_holds_every_process_off_the_cpus_until_thawed_and_kill_still_ends_them(pool):
    g = pool.take()
    if not g.can_freeze():
        pytest.skip("this cgroup v2 has no cgroup.freeze (Linux before 5.2)")

    def body(w: int) -> None:
        if os.fork() == 0:  # two busy processes
            os.write(w, b"%d\n" % os.getpid())
            burn(60)
        burn(60)

    helper, child = in_group(g, body, expect=2)
    time.sleep(0.2)
    g.freeze(True)
    frozen_at = g.cpu_ns()
    time.sleep(0.5)
    assert g.cpu_ns() - frozen_at < 0.02e9  # nothing ran while frozen
    g.freeze(False)
    time.sleep(0.3)
    assert g.cpu_ns() - frozen_at > 0.2e9  # both run again
    g.freeze(True)
    assert g.kill() == 2  # frozen, and still killed
    reap(helper)
    wait_empty(g)
    assert gone(child)


def test_reset_zeroes_the_counters(pool):
    g = pool.take()

    def body(w: int) -> None:
        block = bytearray(64 << 20)  # touched: 64 MB of the group's memory
        for i in range(0, len(block), 4096):
            block[i] = 1
        burn(0.1)

    helper = in_group(g, body)[0]
    reap(helper)
    wait_empty(g)
    assert g.cpu_ns() >= 0.1e9
    peak = g.memory_peak()
    if peak is not None:
        assert peak >= 64 << 20
    pool.recycle(g)
    assert pool.take() is g
    assert g.cpu_ns() == 0
    if peak is not None:
        assert g.memory_peak() < 16 << 20


def parents_of(pool_or_names, bases: dict[str, str]) -> list[str]:
    """The folders named like a server's parent that exist under `bases`."""
    return [os.path.join(b, n) for b in bases.values() for n in pool_or_names if os.path.isdir(os.path.join(b, n))]


def bases_for(version: int) -> dict[str, str]:
    found = cgroups.hierarchies()
    roles = cgroups.V1_ROLES if version == 1 else (cgroups.V2,)
    return {r: found[r] for r in roles if r in found}


def test_close_leaves_nothing_behind(pool):
    g = pool.take()
    pool.prepare(3)
    helper, escaped = in_group(g, daemon, expect=2)
    reap(helper)
    parents = dict(pool.parents)
    assert all(os.path.isdir(p) for p in parents.values())
    pool.close()
    assert [p for p in parents.values() if os.path.exists(p)] == []
    assert gone(escaped)
    assert not pool.available


def test_the_next_setup_removes_what_a_killed_server_left(pool, tmp_path):
    """A server SIGKILLed with a test's daemon still running in its group: the next setup kills the daemon and
    removes the parent; a parent of a live server is left alone."""
    version = pool.version
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from pytest_apps.executor.cgroups import CgroupPool
        p = CgroupPool({version})
        assert p.setup({PREFIX!r}) == "", p.reason
        g = p.take()
        if os.fork() == 0:
            for fd in g.attach_fds():
                os.write(fd, b"0")
            if os.fork() == 0:
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 1)
                os.dup2(null, 2)
                time.sleep(300)
            os._exit(0)
        while len(g.pids()) < 1 or os.waitpid(-1, os.WNOHANG)[0] == 0:
            time.sleep(0.01)
        print(os.getpid(), g.pids()[0], flush=True)
        os.kill(os.getpid(), 9)
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    server, left = (int(x) for x in proc.stdout.split())
    name = f"{PREFIX}-{server}"
    bases = bases_for(version)
    assert parents_of([name], bases), "the killed server's parent should still be there"
    assert not gone(left)
    later = CgroupPool(version)
    try:
        assert later.setup(PREFIX) == ""
        assert parents_of([name], bases) == []
        assert gone(left)
        assert all(os.path.isdir(p) for p in pool.parents.values())  # ours: the server is alive
    finally:
        later.close()


def test_without_root_setup_says_why():
    if os.geteuid() != 0:
        reason = CgroupPool().setup(PREFIX)
        assert reason
        return
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            p = CgroupPool()
            os.write(w, p.setup(PREFIX).encode() or b"-")
        finally:
            os._exit(0)
    os.close(w)
    reason = os.read(r, 4096).decode()
    os.close(r)
    reap(pid)
    assert reason != "-", "a non-root process should not get a per-test cgroup here"
    assert "root" in reason
