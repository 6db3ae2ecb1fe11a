"""The server: one per pytest worker, single-threaded, standard library only.

Started by `pytest_apps.executor.Executor` as `python -P -s serve.py`. It speaks the framed protocol
(`protocol.py`) on its stdin/stdout, compiles each program once (`compiler.py`), and runs each test in a
child that the zygote (`zygote.py`) forked ahead of time and that fenced itself (`child.py`). It watches
the child from outside (wall clock, output bytes, exit), kills its process group and every descendant
left behind (it is their subreaper), and answers with plain data about what it saw (`ending.py` decides, from
those values, how the run ended).
"""

from __future__ import annotations

import marshal
import os
import resource
import select
import signal
import socket
import time
from dataclasses import dataclass

from . import machine, reaper, speed, workdirs
from .cgroups import Group
from .clock import SAMPLE_INTERVAL, OwnClock
from .compiler import Compiler
from .ending import RUN_BACKSTOP, RunEnd, bus_error, outcome, stop_reason
from .fence import PR_SET_CHILD_SUBREAPER, prctl
from .isolation import Layers
from .parking import Parking
from .protocol import (STYLE_REAL, HARNESS_EXIT, RUN_COMPILE_ERROR, RUN_HARNESS_ERROR, RUN_OUTPUT_LIMIT, RUN_TIMEOUT, STDERR_TAIL,
                       recv_frame, send_frame, send_go)
from .zygote import zygote_main

DEFAULT_FOLDER_SIZE = 16 * 1024 * 1024  # a private folder's bytes when the client gave no limits
SPARES = 2  # children forked ahead of time, fenced and waiting for a test
EXIT_WAIT = 5.0  # seconds to wait for a killed child's exit to be reported before assuming SIGKILL


class ZygoteGone(Exception):
    pass


@dataclass(slots=True, eq=False)
class Spare:
    """A child asked of the zygote ahead of its test: its work directory, its pid once forked (and a pidfd where
    the kernel has them), or why the fork failed; and our ends of its pipes until they are closed (None after)."""

    dir: workdirs.WorkDir
    pid: int | None = None
    pidfd: int | None = None
    stdin: int | None = None  # a memfd: the test's input, written before it is handed over
    out_r: int | None = None
    err_r: int | None = None
    rep_r: int | None = None  # its report: one JSON object a line
    go_w: int | None = None  # where the test is handed over; EOF tells a spare never needed to exit
    failed: str | None = None
    retired: bool = False  # given up before it got a test: no pidfd is opened for it
    group: Group | None = None  # its test's cgroup (cgroups.py), which it joins before its test arrives
    swept: bool = False  # its test's end swept the zygote's children too (settle need not look there again)


class Server:
    def __init__(self, rfd: int, wfd: int, limits: dict | None = None) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.pid = os.getpid()
        self.children_path = f"/proc/{self.pid}/task/{self.pid}/children"
        self.compiler = Compiler()
        self.runs = 0
        self.limits = limits  # what the spares apply before their test arrives (a test may ask for others)
        workdirs.remove_stale()
        self.base = workdirs.make_base(self.pid)
        self.dirs = workdirs.WorkDirs(self.base, keep=SPARES + 2)
        self.layers = Layers()
        try:
            self.maxfd = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            if self.maxfd == resource.RLIM_INFINITY or self.maxfd > 1 << 20:
                self.maxfd = 1 << 20
        except Exception:
            self.maxfd = 65536
        try:
            prctl(PR_SET_CHILD_SUBREAPER, 1)
            self.layers.names.append("subreaper")
        except OSError:
            pass
        self.ctl: socket.socket | None = None  # the zygote's control socket
        self.zygote_pid: int | None = None
        self.spares: list[Spare] = []  # requested from the zygote, oldest first
        self.forking: list[Spare] = []  # requested and not yet answered, in order (retired ones included)
        self.exits: dict[int, tuple] = {}  # pid -> (wait status, cpu seconds, maxrss bytes), as asked for
        self.ended: list[Spare] = []  # children done with their test, to see gone before the next sweep
        self.trash: list[workdirs.WorkDir] = []  # their work directories
        self.preload: tuple[str, ...] = ()  # modules the zygote loads besides its own list
        self.speed = speed.Speed()  # the machine's speed now against its quiet speed (speed.py)

    def setup_layers(self, processes: int) -> None:
        # in the pids cgroup beside a test's own processes: the zygote, the spares waiting for the next
        # tests, and up to two children that have exited and wait to be reaped
        self.layers.setup(self.base, processes, extra_pids=1 + SPARES + 2)
        self.dirs.landlock = self.layers.landlock
        self.dirs.uid = self.layers.uid
        self.layers.setup_private_tmp(self.dirs, folder_size(self.limits))

    # -- the zygote and its children ------------------------------------------------------------------
    def start_zygote(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                # the zygote keeps its capabilities where each child needs them (to enter its mount namespace, make
                # its IPC namespace, become its own uid), and each child drops them right after (child.py)
                drop_caps = self.layers.drop_caps and not self._children_drop_caps()
                zygote_main(theirs, self.pid, self.layers.cgroup_fd, drop_caps, self.maxfd, self.preload,
                            filtered=self.layers.seccomp)
            finally:
                os._exit(HARNESS_EXIT)
        theirs.close()
        self.ctl, self.zygote_pid = ours, pid

    def _children_drop_caps(self) -> bool:
        """Whether each child drops the capabilities itself, after the steps that need them (else the zygote does)."""
        return self.dirs.private is not None or self.layers.ipc or self.layers.uid is not None

    def _zygote_gone(self) -> None:
        """The zygote died (its children died with it): forget them; a new zygote starts on demand."""
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if self.zygote_pid is not None:
            try:
                os.kill(self.zygote_pid, signal.SIGKILL)
                os.waitpid(self.zygote_pid, 0)
            except (OSError, ChildProcessError):
                pass
            self.zygote_pid = None
        while self.spares:
            self._retire(self.spares.pop())
        self.forking.clear()

    def _request_spare(self) -> None:
        if self.ctl is None:
            self.start_zygote()
        d = self.dirs.take(folder_size(self.limits))
        sp = Spare(d)
        theirs = []
        try:
            sp.stdin = os.memfd_create("stdin", os.MFD_CLOEXEC)
            theirs.append(sp.stdin)
            sp.out_r, w = os.pipe2(os.O_CLOEXEC)
            theirs.append(w)
            sp.err_r, w = os.pipe2(os.O_CLOEXEC)
            theirs.append(w)
            sp.rep_r, w = os.pipe2(os.O_CLOEXEC)
            theirs.append(w)
            r, sp.go_w = os.pipe2(os.O_CLOEXEC)
            theirs.append(r)
            cgroups = self.layers.cgroups
            if cgroups.available:
                sp.group = cgroups.take()
                theirs += sp.group.attach_fds()  # (the group's own: copies go to the zygote)
            for fd in (d.ruleset, d.mntns):  # the zygote gets copies; ours stay with the directory
                if fd is not None:
                    theirs.append(fd)
            workdir = d.child_path
            socket.send_fds(self.ctl, [marshal.dumps({"workdir": workdir, "workdir_bytes": os.fsencode(workdir),
                                                      "limits": self.limits, "landlock": d.ruleset is not None,
                                                      "mntns": d.mntns is not None, "ipc": self.layers.ipc,
                                                      "uid": self.layers.uid, "seccomp": self.layers.seccomp,
                                                      "cgroups": len(sp.group.attach_fds()) if sp.group else 0,
                                                      "drop_caps": self.layers.drop_caps and self._children_drop_caps()})],
                            theirs)
        except OSError:
            self._retire(sp)
            raise
        finally:
            for fd in theirs[1:5]:
                os.close(fd)
        self.spares.append(sp)
        self.forking.append(sp)

    def _pump(self, timeout: float) -> bool:
        """Handle one message from the zygote if one comes within `timeout` seconds; False if none came."""
        if self.ctl is None:
            raise ZygoteGone()
        if not select.select([self.ctl], [], [], timeout)[0]:
            return False
        try:
            msg = self.ctl.recv(4096)
        except OSError:
            msg = b""
        if not msg:
            self._zygote_gone()
            raise ZygoteGone()
        m = marshal.loads(msg)
        if m[0] == "exit":
            self.exits[m[1]] = m[2:]
            return True
        waiting = self.forking.pop(0)  # the zygote answers in the order it was asked
        if m[0] == "forked":
            waiting.pid = m[1]
            if not waiting.retired:
                try:
                    waiting.pidfd = os.pidfd_open(m[1])
                except OSError:  # kernels before 5.3: see _gone()
                    pass
        else:
            waiting.failed = str(m[1])
        return True

    def _live_spare(self) -> Spare:
        """A spare whose process is alive (the zygote may have died since, and its children with it)."""
        for _ in range(3):
            try:
                while self.ctl is not None and self._pump(0.0):  # notices a zygote that has gone
                    pass
                sp = self._take_spare()
            except ZygoteGone:
                continue  # the next attempt starts a new zygote
            pidfd = sp.pidfd
            if (select.select([pidfd], [], [], 0)[0] if pidfd is not None else reaper.gone(sp.pid)):
                self._retire(sp)
                continue
            return sp
        raise OSError("no child could be started (the zygote keeps dying)")

    def _take_spare(self) -> Spare:
        if not self.spares:
            self._request_spare()
        sp = self.spares[0]
        while sp.pid is None and sp.failed is None:
            if not self._pump(30.0):
                self._zygote_gone()
                raise OSError("the zygote did not fork within 30 s")
        self.spares.pop(0)
        if sp.failed is not None:
            self._retire(sp)
            raise OSError(f"fork failed: {sp.failed}")
        return sp

    def _retire(self, sp: Spare) -> None:
        """Close our ends; a spare that never got its test sees EOF on `go` and exits."""
        sp.retired = True
        for fd in (sp.stdin, sp.out_r, sp.err_r, sp.rep_r, sp.go_w, sp.pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        sp.stdin = sp.out_r = sp.err_r = sp.rep_r = sp.go_w = sp.pidfd = None
        self.dirs.drop(sp.dir)
        self._recycle_group(sp)

    def _recycle_group(self, sp: Spare) -> None:
        """Its cgroup emptied (everything in it killed) and zeroed, ready for a later test."""
        if sp.group is not None:
            self.layers.cgroups.recycle(sp.group)
            sp.group = None

    # -- running one test -----------------------------------------------------------------------------
    def run(self, req: dict, blobs: list[bytes]) -> tuple[dict, bytes]:
        source = blobs[0].decode("utf-8", "surrogateescape")
        stdin_data, args_blob = blobs[1], blobs[2]
        code, err = self.compiler.get(source, req["filename"], req.get("style", STYLE_REAL), req["mode"])
        if code is None:
            return {"status": RUN_COMPILE_ERROR, "error": err}, b""
        self.runs += 1
        self.settle()  # nothing from the previous test is alive when this one starts
        if req["limits"] != self.limits:  # the waiting spares applied other limits (hard ones cannot be raised)
            self.limits = req["limits"]
            while self.spares:
                self._retire(self.spares.pop())
        sp = self._live_spare()
        try:
            view, at = memoryview(stdin_data), 0
            while at < len(view):
                at += os.pwrite(sp.stdin, view[at:], at)
            go = {"mode": req["mode"], "filename": req["filename"], "fn_name": req.get("fn_name"),
                  "limits": req["limits"], "source": source, "style": req.get("style", STYLE_REAL),
                  "files": req.get("files", [])}  # placed in its folder by the child, with the program's rights
            res, stdout = self._watch(sp, go, [self.compiler.marshalled(code), args_blob, *blobs[3:]])
            if req.get("fetch"):  # (everything the test started is gone: nothing writes to its folder any more)
                res["files"] = workdirs.fetch(sp.dir, req["fetch"], req["limits"]["output"])
            return res, stdout
        finally:
            for fd in (sp.stdin, sp.out_r, sp.err_r, sp.rep_r, sp.go_w):
                if fd is not None:
                    os.close(fd)
            sp.stdin = sp.out_r = sp.err_r = sp.rep_r = sp.go_w = None
            self.trash.append(sp.dir)
            self.ended.append(sp)

    def settle(self, timeout: float = EXIT_WAIT) -> None:
        """Wait for the children that ended their tests to be gone, then kill and reap whatever they left
        behind (orphans come to us, the subreaper, once their parent is gone) and remove their directories."""
        if not self.ended and not self.trash:
            return
        end = time.monotonic() + timeout
        for sp in self.ended:
            pidfd, sp.pidfd = sp.pidfd, None
            if pidfd is not None:
                select.select([pidfd], [], [], max(0.0, end - time.monotonic()))
                os.close(pidfd)
            else:
                while not reaper.gone(sp.pid) and time.monotonic() < end:
                    time.sleep(0.001)
        zygote_too = not all(sp.swept for sp in self.ended)
        for sp in self.ended:
            self._recycle_group(sp)
        self.ended.clear()
        self._sweep(zygote_too)
        while self.trash:
            self.dirs.recycle(self.trash.pop())

    def after_run(self) -> None:
        """Off the critical path (after the answer is sent): ask for the spares of the next tests."""
        try:
            while self.ctl is not None and self._pump(0.0):
                pass
            while len(self.spares) < SPARES:
                self._request_spare()
            self.layers.cgroups.prepare(2)  # the groups of the spares after these
        except (OSError, ZygoteGone):
            pass

    def _watch(self, sp: Spare, go: dict, go_blobs: list[bytes]) -> tuple[dict, bytes]:
        """Hand the test to the child, watch it until it ends or a limit stops it, and say how it ended."""
        lim = go["limits"]
        pid, pidfd, group = sp.pid, sp.pidfd, sp.group
        clock = OwnClock(pid, group_cpu(group) if group is not None else None)
        t0 = time.monotonic()
        clock.start(t0)
        try:
            send_go(sp.go_w, go, go_blobs)
        except BrokenPipeError:  # it died (with its zygote) since it was found alive: its exit says so below
            pass
        os.close(sp.go_w)
        sp.go_w = None
        out = bytearray()
        err = bytearray()
        rep = bytearray()
        open_fds = {sp.out_r: out, sp.err_r: err, sp.rep_r: rep}
        probe = Probe()
        parking = Parking(group, clock, t0, lim["timeout"])
        try:
            stopped, exited = self._wait(sp, clock, t0, lim, open_fds, probe, parking)
        finally:
            kill_pgroup(pid)  # (a test still parked is killed, then thawed to die)
            parking.resume()
        in_group = kill_group(group, pid)  # everything the test started, whoever its parent is
        if pidfd is not None and not exited:
            # until it is dead (it has to get a CPU to die): then its last wait for one is in its figures too
            select.select([pidfd], [], [], 1.0)
        wall = time.monotonic() - t0
        clock.finish()  # the leader's last figures (it is not reaped before the zygote is asked to)
        # How it ended comes from the kernel (the zygote's wait4), never from the child: anything the program's
        # process can write, its report pipe included, it can forge.
        status, cpu, maxrss, known = self._exit_status(pid)  # the zygote has reaped it: its orphans come to us
        leftovers, orphans_cpu = self._sweep()
        sp.swept = True
        leftovers = max(leftovers, in_group)
        if group is not None:
            clock.count_exact()  # (the group's count, now that nothing in it runs; the leader is reaped)
            maxrss = max(maxrss, group.memory_peak() or 0)
        # The exact CPU of the whole tree, as the kernel's rusage tells it to the processes that reaped it: the
        # child with every child it waited for (less what it used before its test), and each orphan we reaped.
        # Sampling misses children that live a few milliseconds, and processes adopted by us.
        clock.count_at_least(cpu - clock.base[0] / 1e9 + orphans_cpu)
        own = clock.own(wall)
        if own >= lim["timeout"] * speed.PROBE_FROM:  # once more, right after it: the speed it ended at
            probe.take(self.speed)
        own = speed.charged(own, clock.cpu, probe.credit)
        if not known and stop_reason(stopped, own, lim) is None:
            # it died with its zygote (or the zygote could not say how it ended): the harness failed, not
            # the program; the client's caller runs the test again on a fresh executor
            return {"status": RUN_HARNESS_ERROR, "error": "the zygote was lost while the program ran, so how "
                    "the program ended is unknown", "wall_time": wall}, b""
        # Every writer is gone now: what is still in the pipes is read to the end. The watch may have seen the
        # child's exit before the output it wrote just before (poll looks at the pipes, then at the pidfd, and
        # the program can write and exit between the two looks).
        drain(open_fds, sp.out_r, sp.err_r, lim["output"])
        res, stdout = outcome(RunEnd(lim, stopped, status, cpu, maxrss, wall, own, clock.cpu, out, err, rep,
                                     leftovers, folder_full=bus_error(status) and workdirs.full(sp.dir)))
        res.update(probe.figures() if probe.count else {}, **parking.figures())
        return res, stdout

    def _wait(self, sp: Spare, clock: OwnClock, t0: float, lim: dict, open_fds: dict,
              probe: Probe, parking: Parking) -> tuple[str | None, bool]:
        """Read the child's pipes into their buffers (`open_fds`: fd -> buffer, left with those not at EOF) and keep
        its clock until a limit stops it or it has ended: (why it was stopped or None, whether its pidfd said it
        had exited). Once its own time passes a share of the limit, the machine's speed is probed as it runs
        (`probe`), and its own time is charged at quiet-machine speed (speed.py). The client may park and
        resume it meanwhile (`parking`; the wall-clock backstop moves on by the time it was parked)."""
        pid, pidfd = sp.pid, sp.pidfd
        out = open_fds[sp.out_r]
        # The limit counts the program's own time (clock.py). A program over it runs on to the end of the band
        # above it, so that one finishing there is known to be a near miss; the wall-clock backstop ends
        # anything the accounting cannot see.
        stop_at = lim["timeout"] * (1 + lim["band"])
        probe_from = lim["timeout"] * speed.PROBE_FROM
        next_probe = t0
        settled = 0.0  # the own time at the last sample
        backstop = t0 + lim["timeout"] * lim["backstop"]
        next_sample = t0 + SAMPLE_INTERVAL
        poller = select.poll()
        for fd in (*open_fds, *([pidfd] if pidfd is not None else []), self.rfd):
            poller.register(fd, select.POLLIN)  # (our parent's pipe: a word from it, or it went away)
        exited = False
        out_limit = lim["output"]
        while True:
            now = time.monotonic()
            own_deadline = t0 + clock.delay + stop_at  # the earliest its own time can reach stop_at
            if now >= next_sample or now >= own_deadline:
                if settled >= probe_from and now >= next_probe:  # before the sample: it decides on fresh figures
                    probe.take(self.speed)
                    now = time.monotonic()
                    next_probe = now + speed.PROBE_EVERY
                clock.sample(now)
                next_sample = now + SAMPLE_INTERVAL
                settled = clock.settled(now - t0)
                if speed.charged(settled, clock.cpu, probe.credit) >= stop_at:
                    return RUN_TIMEOUT, exited
                own_deadline = t0 + clock.delay + stop_at
            if now >= backstop:
                return RUN_BACKSTOP, exited
            wait_ms = max(1, int((min(next_sample, own_deadline, backstop) - now) * 1000) + 1)
            ready = poller.poll(wait_ms if pidfd is not None else min(wait_ms, 10))
            if any(fd == self.rfd for fd, _ev in ready):  # a word from our client, or it went away
                held = client_words(self.rfd, self.wfd, sp, parking, lim["timeout"] * lim["backstop"])
                backstop, next_sample = backstop + held, next_sample + held
                ready = [(fd, ev) for fd, ev in ready if fd != self.rfd]
            exited = read_ready(ready, poller, open_fds, sp, self.rfd) or exited
            if len(out) > out_limit:
                return RUN_OUTPUT_LIMIT, exited
            if pidfd is None and not open_fds:
                exited = reaper.gone(pid)
            if exited:
                return None, exited

    def _exit_status(self, pid: int) -> tuple[int, float, int, bool]:
        """How a killed or crashed child ended, as the zygote reaped it: its wait status, CPU seconds, peak resident
        bytes, and whether the zygote said so (when it cannot tell, SIGKILL and False)."""
        end = time.monotonic() + EXIT_WAIT
        try:
            self.ctl.send(marshal.dumps(("wait", pid)))
            while pid not in self.exits:
                if not self._pump(max(0.0, end - time.monotonic())):
                    break
        except (OSError, AttributeError, ZygoteGone):  # AttributeError: no zygote any more
            pass
        if pid not in self.exits:
            return signal.SIGKILL, 0.0, 0, False
        status, cpu, maxrss = self.exits.pop(pid)
        return status, float(cpu), int(maxrss), True

    def _sweep(self, zygote_too: bool = True) -> tuple[int, float]:
        """Kill what the last tests left behind: our orphans (we are their subreaper), and (`zygote_too`) the zygote's
        children that are not our spares (a program's clone(CLONE_PARENT) makes its new process a child of the
        zygote). Returns how many were killed, and the CPU seconds of the orphans we reaped."""
        killed, cpu = reaper.sweep(self.children_path, keep=(self.zygote_pid,))
        if not zygote_too:
            return killed, cpu
        zygote = self.zygote_pid
        try:
            while self.forking and self._pump(1.0):  # every child the zygote forked for us has a pid here
                pass
        except ZygoteGone:
            return killed, cpu
        if zygote is None or self.forking:
            return killed, cpu
        spares = {sp.pid for sp in self.spares}
        return killed + reaper.sweep(f"/proc/{zygote}/task/{zygote}/children", keep=spares)[0], cpu

    def cleanup(self) -> None:
        while self.spares:
            self._retire(self.spares.pop())
        if self.ctl is not None:
            self.ctl.close()  # the zygote sees EOF and exits; its children die with it
            self.ctl = None
        if self.zygote_pid is not None:
            try:
                os.waitpid(self.zygote_pid, 0)
            except ChildProcessError:
                pass
            self.zygote_pid = None
        self.settle(timeout=1.0)
        self._sweep()
        self.dirs.close()
        self.layers.close()

    def serve(self) -> None:
        while True:
            try:
                req, blobs = recv_frame(self.rfd)
            except EOFError:
                return
            op = req.get("op")
            if op == "run":
                try:
                    res, out = self.run(req, blobs)
                except EOFError:
                    return
                except Exception as e:  # noqa: BLE001 - report, keep serving
                    import traceback

                    res, out = {"status": RUN_HARNESS_ERROR, "error": f"server: {type(e).__name__}: {e}",
                                "stderr_tail": traceback.format_exc()[-STDERR_TAIL:]}, b""
                send_frame(self.wfd, res, [out])
                self.after_run()
            elif op == "stats":  # also a point where the previous run is cleaned up and the spares are forked
                self.settle()
                try:
                    while any(sp.pid is None and sp.failed is None for sp in self.spares) and self._pump(5.0):
                        pass
                except ZygoteGone:
                    pass
                send_frame(self.wfd, {"compiles": self.compiler.compiles, "runs": self.runs, "pid": self.pid,
                                      "zygote": self.zygote_pid, "layers": self.layers.names})
            elif op == "speed":
                send_frame(self.wfd, {"speed": machine.speed(), "factor": self.speed.factor(),
                                      "low": self.speed.low, "high": self.speed.high})
            elif op == "exit":
                return
            elif op in ("park", "resume"):  # (about a test that has ended since: nothing to do, no answer)
                continue
            else:
                send_frame(self.wfd, {"error": f"unknown op {op!r}"})


def main() -> None:
    # protocol pipes move away from 0/1 so that nothing (a stray print) can corrupt them
    rfd, wfd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    for fd in (rfd, wfd):
        os.set_inheritable(fd, False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the pytest process; it closes us
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    hello, _ = recv_frame(rfd)
    pinned = _pin(hello.get("cpu"))  # before the zygote starts: it and every child inherit the affinity
    server = Server(rfd, wfd, hello.get("limits"))
    server.preload = tuple(str(m) for m in hello.get("preload") or ())
    server.speed = speed.of_seam(hello.get("speed_factor"))
    try:
        server.setup_layers(int(hello.get("processes", 0)))
        server.start_zygote()  # it loads the modules programs use meanwhile
        server.speed.calibrate()
        send_frame(wfd, {"ok": True, "pid": server.pid, "layers": server.layers.names,
                         "layer_errors": server.layers.errors, "base": server.base,
                         "cgroup": server.layers.cgroup_dir, "cpu": pinned})
        server.after_run()
        server.serve()
    finally:
        server.cleanup()


def folder_size(limits: dict | None) -> int:
    """Bytes a test's private folder holds at most: the file-size limit (every file it writes together)."""
    return int((limits or {}).get("file_size") or DEFAULT_FOLDER_SIZE)


def kill_pgroup(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def client_words(rfd: int, wfd: int, sp: Spare, parking: Parking, longest: float) -> float:
    """The client's frames on `rfd` while a test runs: "park" (answered on `wfd`: whether it was parked) freezes the
    test (parking.py) until "resume", or for `longest` seconds at most; the seconds it was parked. EOFError when
    the client went away (the test is killed)."""
    watch, until = select.poll(), 0.0
    watch.register(rfd, select.POLLIN)
    if sp.pidfd is not None:
        watch.register(sp.pidfd, select.POLLIN)
    while True:
        if parking.parked:  # nothing of the test runs: only a word, the end of the longest park or a kill
            ready = watch.poll(max(1, int((until - time.monotonic()) * 1000) + 1))
            if not any(fd == rfd for fd, _ev in ready):
                if ready or time.monotonic() >= until:  # (the pidfd: killed from outside, seen once thawed)
                    return parking.resume()
                continue
        try:
            req, _blobs = recv_frame(rfd)
        except EOFError:
            kill_pgroup(sp.pid)
            parking.resume()
            raise EOFError("parent went away") from None
        op = req.get("op")
        if op == "resume" or (op != "park" and not parking.parked):
            return parking.resume()
        if op == "park" and not parking.parked:
            parked = parking.park(time.monotonic(), float(req.get("min_share") or 0.0))
            send_frame(wfd, {"op": "park", "parked": parked})
            if not parked:
                return 0.0
            until = time.monotonic() + longest


def read_ready(ready: list, poller: select.poll, open_fds: dict, sp: Spare, parent_fd: int) -> bool:
    """Read the child's pipes that `poll` found `ready` into their buffers (`open_fds`: fd -> buffer; a pipe at EOF
    leaves it and the poller); True if its pidfd said it has exited. EOFError if our parent went away."""
    exited = False
    for fd, _ev in ready:
        if fd == parent_fd:
            kill_pgroup(sp.pid)
            raise EOFError("parent went away")
        if fd == sp.pidfd:
            exited = True
            continue
        buf = open_fds.get(fd)
        if buf is None:
            continue
        data = os.read(fd, 1 << 20)
        if not data:
            poller.unregister(fd)
            del open_fds[fd]
            continue
        buf += data
        if fd == sp.err_r and len(buf) > 4 * STDERR_TAIL:
            del buf[: len(buf) - STDERR_TAIL]
        elif fd == sp.rep_r and len(buf) > 1 << 22:
            del buf[: len(buf) - (1 << 21)]
    return exited


def drain(open_fds: dict, out_r: int, err_r: int, out_limit: int) -> None:
    """Read what is still in the pipes (every writer is dead now)."""
    end = time.monotonic() + 1.0
    for fd in list(open_fds):
        buf = open_fds[fd]
        os.set_blocking(fd, False)
        while time.monotonic() < end:
            try:
                data = os.read(fd, 1 << 20)
            except BlockingIOError:
                r, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
                if not r:
                    break
                continue
            if not data:
                break
            if fd == out_r and len(buf) + len(data) > out_limit:
                buf += data[: out_limit + 1 - len(buf)]
                break
            buf += data
            if fd == err_r and len(buf) > 4 * STDERR_TAIL:
                del buf[: len(buf) - STDERR_TAIL]
            elif fd != out_r and len(buf) > 1 << 22:  # the report: its last lines are what counts
                del buf[: len(buf) - (1 << 21)]


def group_cpu(group: Group):
    """The test's CPU seconds from its cgroup's count, from now on (what the spare used before is not the test's)."""
    base = group.cpu_ns()
    return lambda: (group.cpu_ns() - base) / 1e9


def kill_group(group: Group | None, pid: int) -> int:
    """Kill everything in the test's cgroup and wait for it to be empty; how many processes there were besides the
    child `pid` (0 without a group; where the kill cannot finish, the sweeps do the work)."""
    if group is None:
        return 0
    try:
        listed = group.pids()
        group.kill(listed=listed)
        return len(set(listed) - {pid})
    except (OSError, TimeoutError):
        return 0


class Probe:
    """The machine's speed around one test: the factors measured (speed.py), smallest, largest and their sum, and
    the credit its own time gets: that of the smallest slowdown seen (never more lenient than what was seen)."""

    __slots__ = ("low", "high", "total", "count", "credit", "read")

    def __init__(self) -> None:
        self.low = self.high = None
        self.total = 0.0
        self.count = 0
        self.credit = 1.0
        self.read = None  # this test's readings of the machine's slowdown (speed.Speed.readings)

    def take(self, machine_speed: speed.Speed) -> None:
        if self.read is None:
            self.read = machine_speed.readings()
        factor = self.read()
        if factor is None:
            return
        self.low = factor if self.low is None else min(self.low, factor)
        self.high = factor if self.high is None else max(self.high, factor)
        self.total += factor
        self.count += 1
        self.credit = speed.credit(self.low)

    def figures(self) -> dict[str, float]:
        """What the outcome carries: the credit, and the smallest, largest and mean slowdown seen."""
        return {"speed_factor": self.credit, "speed_low": self.low, "speed_high": self.high,
                "speed_mean": round(self.total / self.count, 9)}  # (n probes of x1.15 sum to less than n x 1.15)


def _pin(cpu: int | None) -> int | None:
    """Run on `cpu` only; None where it is not asked for or not allowed (a cpuset changed since): unpinned."""
    if cpu is None:
        return None
    try:
        os.sched_setaffinity(0, {int(cpu)})
    except (OSError, ValueError, AttributeError):
        return None
    return int(cpu)
