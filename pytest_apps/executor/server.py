"""The fork server: a warm, single-threaded process that forks one fenced child per test.

Started by `pytest_apps.executor.Executor` as `python -I server.py`. Standard library only, so that the
interpreter starts fast and nothing from the pytest process (or the project) is loaded here.

Protocol on the server's stdin/stdout (binary): each message is a frame
    [4-byte big-endian length of a JSON header][JSON header][blob 0][blob 1]...
where the header's "blobs" lists the byte lengths of the blobs that follow.

The child of each run reports to the server through fd 3 (JSON lines): "ready" right before the
candidate's code runs, then "exception" or "value". Everything there is the candidate's own claim
about itself and can only change its own outcome; verdicts are decided in the pytest process.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import pickle
import platform
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time

# ---------------------------------------------------------------------------------------------------
# framing (also imported by the client)


def read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        try:
            b = os.read(fd, min(n, 1 << 20))
        except InterruptedError:
            continue
        if not b:
            raise EOFError("pipe closed")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


def send_frame(fd: int, header: dict, blobs: list[bytes] = ()) -> None:
    header = dict(header, blobs=[len(b) for b in blobs])
    h = json.dumps(header).encode()
    write_all(fd, struct.pack(">I", len(h)) + h)
    for b in blobs:
        write_all(fd, b)


def _send_go(fd: int, header: dict, blobs: list[bytes]) -> None:
    """Server -> spare: like send_frame, but the header is marshalled (plain str/int/float/None values),
    which the child decodes in C without running the json module's Python code (fewer pages touched)."""
    import marshal

    h = marshal.dumps((header, [len(b) for b in blobs]))
    write_all(fd, struct.pack(">I", len(h)) + h)
    for b in blobs:
        write_all(fd, b)


def _recv_go(fd: int) -> tuple[dict, list[bytes]]:
    """In the spare: read what `_send_go` sent (data from the server, never from a candidate)."""
    import marshal

    (n,) = struct.unpack(">I", read_exact(fd, 4))
    header, sizes = marshal.loads(read_exact(fd, n))
    return header, [read_exact(fd, k) for k in sizes]


def recv_frame(fd: int) -> tuple[dict, list[bytes]]:
    (n,) = struct.unpack(">I", read_exact(fd, 4))
    header = json.loads(read_exact(fd, n))
    blobs = [read_exact(fd, k) for k in header.get("blobs", [])]
    return header, blobs


# ---------------------------------------------------------------------------------------------------
# constants

RUN_EXITED = "exited"
RUN_SIGNALED = "signaled"
RUN_TIMEOUT = "timeout"
RUN_MEMORY = "memory"
RUN_OUTPUT_LIMIT = "output_limit"
RUN_COMPILE_ERROR = "compile_error"
RUN_HARNESS_ERROR = "harness_error"

STDERR_TAIL = 2048
READY_LINE = b'{"kind": "ready"}\n'  # the child's report right before the candidate's code runs
SPARES = 2  # pre-forked, fenced children waiting for a test
_CPU_AT_START = 0.0  # in a child: CPU seconds it had used when its test arrived
HARNESS_EXIT = 125  # child exit code when the harness itself failed before the program ran
PRELOAD = (
    "math cmath collections itertools functools heapq bisect re string fractions decimal random "
    "statistics operator copy array typing io threading queue dataclasses enum numbers datetime "
    "calendar textwrap struct hashlib base64 json ast traceback linecache types weakref contextlib "
    "abc pprint time builtins codecs unicodedata collections.abc sys os atexit"
).split()

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def prctl(option: int, arg2: int = 0) -> None:
    if _libc.prctl(option, arg2, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl({option}): {os.strerror(e)}")


# ---------------------------------------------------------------------------------------------------
# Landlock (x86-64 system call numbers; see `man 7 landlock`)

SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    if platform.machine() != "x86_64":
        return 0
    v = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION)
    return int(v) if v > 0 else 0


def landlock_ruleset(abi: int, read_paths: list[str], write_paths: list[str], rw_files: list[str]) -> int:
    """Build a ruleset fd (kept open in the server; each child calls restrict_self with it)."""
    fs = (1 << 13) - 1
    if abi >= 2:
        fs |= FS_REFER
    if abi >= 3:
        fs |= FS_TRUNCATE
    if abi >= 5:
        fs |= FS_IOCTL_DEV
    attr = _RulesetAttr(fs, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    fd = int(fd)
    read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR

    def add(path: str, rights: int) -> None:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not os.path.isdir(path):
                rights &= FILE_RIGHTS
            rights &= fs
            rule = _PathBeneath(rights, pfd)
            if _libc.syscall(SYS_LANDLOCK_ADD_RULE, fd, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
        finally:
            os.close(pfd)

    for p in read_paths:
        add(p, read)
    for p in rw_files:
        add(p, read | FS_WRITE_FILE | FS_TRUNCATE)
    for p in write_paths:
        add(p, fs)
    return fd


def landlock_restrict(ruleset_fd: int) -> None:
    if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")


_CAPSET_ARGS = ((ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)())


def drop_capabilities() -> None:
    """Drop every capability (bounding set, then effective/permitted/inheritable)."""
    # The bounding set is left alone: with no_new_privs set, execve cannot grant capabilities anyway
    # (permitted is intersected with the old, empty, permitted set), and dropping 41 bits costs 0.3 ms.
    header, data = _CAPSET_ARGS  # built once in the server: no ctypes allocation (page faults) per child
    if _libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    # ambient caps are cleared together with permitted ones


# ---------------------------------------------------------------------------------------------------
# compilation (once per program, cached by a hash of its source)

RETURN_OUTSIDE = "'return' outside function"


def _syntax_error_line(e: BaseException) -> str:
    import traceback

    try:
        return traceback.format_exception_only(type(e), e)[-1].strip()
    except Exception:  # pragma: no cover
        return f"{type(e).__name__}: {e}"


def _wrap_in_function(source: str, filename: str):
    """APPS's harness runs standard-input programs inside a function, so some reference solutions
    use a top-level `return`. Wrap the module body in a function that declares every name it binds
    `global`, so that the rest keeps module semantics, and call it."""
    import ast
    import symtable

    tree = ast.parse(source, filename)
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])
    func = ast.FunctionDef(name="__apps_main__", args=args, body=tree.body, decorator_list=[], returns=None,
                           type_comment=None)
    probe = ast.Module(body=[func], type_ignores=[])
    ast.fix_missing_locations(probe)
    table = symtable.symtable(ast.unparse(probe), filename, "exec").get_children()[0]
    names = sorted(s.get_name() for s in table.get_symbols()
                   if s.is_local() and not s.is_annotated() and not s.is_parameter())
    if names:
        func.body = [ast.Global(names=names, lineno=1, col_offset=0)] + func.body
    call = ast.Expr(ast.Call(func=ast.Name(id="__apps_main__", ctx=ast.Load()), args=[], keywords=[]))
    mod = ast.Module(body=[func, call], type_ignores=[])
    ast.fix_missing_locations(mod)
    return compile(mod, filename, "exec", dont_inherit=True)


class Compiler:
    def __init__(self) -> None:
        self.cache: dict[str, tuple] = {}
        self.compiles = 0

    def get(self, source: str, filename: str) -> tuple:
        """-> (code or None, error line, wrapped)"""
        key = hashlib.sha256(filename.encode() + b"\0" + source.encode("utf-8", "surrogatepass")).hexdigest()
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        self.compiles += 1
        try:
            result = (compile(source, filename, "exec", dont_inherit=True), "", False)
        except SyntaxError as e:
            result = (None, _syntax_error_line(e), False)
            if e.msg == RETURN_OUTSIDE:
                try:
                    result = (_wrap_in_function(source, filename), "", True)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    pass
        except (ValueError, RecursionError, MemoryError, OverflowError) as e:  # null bytes, too deep
            result = (None, f"{type(e).__name__}: {e}", False)
        if len(self.cache) > 512:
            self.cache.clear()
        self.cache[key] = result
        return result


# ---------------------------------------------------------------------------------------------------
# the child (runs after fork; never returns)


def _report(obj: dict) -> None:
    try:
        write_all(3, (json.dumps(obj) + "\n").encode())
    except Exception:
        pass


def _exception_line(exc: BaseException) -> str:
    import traceback

    try:
        return traceback.format_exception_only(type(exc), exc)[-1].strip()
    except BaseException:
        return type(exc).__name__


def _make_stdio() -> tuple:
    """The child's text streams over fds 0-2. Built once in the server (`prepare_child_state`), which never
    uses them, so that each child starts from a pristine copy instead of allocating them after the fork."""
    import io

    return (io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding="utf-8", errors="strict", newline="\n"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False)), encoding="utf-8", errors="strict",
                         newline="\n"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "wb", closefd=False)), encoding="utf-8",
                         errors="backslashreplace", newline="\n", line_buffering=True))


_CHILD_STDIO: tuple | None = None  # set by prepare_child_state() in the server; used only by children
# the child's environment; HOME and TMPDIR are set to its work directory in the child
CHILD_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "", "TMPDIR": "", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
             "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8"}


def prepare_child_state() -> None:
    """In the server, once: what every child would otherwise build after its fork (page faults are the
    main per-test cost of a fork). The server's own environment becomes the children's fixed part (the
    server never reads it and starts nothing that would), and the children's stdio objects are built here
    and never touched by the server."""
    global _CHILD_STDIO
    os.environ.clear()
    os.environ.update(CHILD_ENV)
    # The io objects probe their file at creation (seekable, position, block size) and keep what they saw:
    # build them over files of the kinds the child has (a memfd for stdin, pipes for stdout and stderr).
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    made = [os.memfd_create("stdin", os.MFD_CLOEXEC)]
    try:
        made += os.pipe2(os.O_CLOEXEC)
        os.dup2(made[0], 0)
        os.dup2(made[2], 1)
        os.dup2(made[2], 2)
        _CHILD_STDIO = _make_stdio()
    finally:
        for fd, old in zip((0, 1, 2), saved):
            os.dup2(old, fd)
            os.close(old)
        for fd in made:
            os.close(fd)


def _setup_stdio() -> None:
    stdio = _CHILD_STDIO if _CHILD_STDIO is not None else _make_stdio()
    sys.stdin = sys.__stdin__ = stdio[0]
    sys.stdout = sys.__stdout__ = stdio[1]
    sys.stderr = sys.__stderr__ = stdio[2]


def _reliability_guard() -> None:
    """Call-based semantics of the APPS/human-eval harness: disable destructive functions.
    Not the security boundary (that is outside the child); it keeps call-based runs comparable."""
    import builtins
    import shutil as _shutil
    import subprocess

    os.environ["OMP_NUM_THREADS"] = "1"
    builtins.exit = None
    builtins.quit = None
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
                 "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown",
                 "chmod", "chown", "chroot", "lchown", "getcwd", "chdir", "lchflags", "lchmod"):
        if hasattr(os, name):
            setattr(os, name, None)
    _shutil.rmtree = None
    _shutil.move = None
    _shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for mod in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[mod] = None


def _finish(status: int) -> None:
    """What the interpreter does at exit: join threads, run atexit, flush stdio."""
    import threading

    try:
        threading._shutdown()
    except BaseException:
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            if status == 0:
                status = 120
    status &= 0xFF
    try:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        rc = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru.ru_utime + ru.ru_stime - _CPU_AT_START + rc.ru_utime + rc.ru_stime
        _report({"kind": "done", "status": status, "cpu": max(cpu, 0.0),
                 "maxrss": max(ru.ru_maxrss, rc.ru_maxrss) * 1024})
        for fd in (0, 1, 2, 3):
            try:
                os.close(fd)
            except OSError:
                pass
    except BaseException:
        pass
    os._exit(status)


def _system_exit_status(e: SystemExit) -> int:
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    if isinstance(code, bool):
        return int(code)
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:
        pass
    return 1


def spare_main(setup: dict) -> None:
    """A child forked ahead of time: it sets up what does not depend on the test, then waits for its
    job on the `go` pipe (so that the fork is off the critical path of a test)."""
    try:
        os.setpgid(0, 0)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != setup["server_pid"]:
            os._exit(HARNESS_EXIT)
        for fd_from, fd_to in ((setup["stdin"], 0), (setup["out"], 1), (setup["err"], 2), (setup["rep"], 3)):
            os.dup2(fd_from, fd_to, inheritable=True)
        cgroup_fd = setup.get("cgroup_fd")
        if cgroup_fd is not None:
            os.write(cgroup_fd, b"0")
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        workdir = setup["workdir"]
        os.chdir(workdir)
        os.umask(0o022)
        # the fence: everything that does not depend on the test happens before it is handed over
        if os.environ.keys() != CHILD_ENV.keys():  # prepare_child_state() normally did this in the server
            os.environ.clear()
            os.environ.update(CHILD_ENV)
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if setup.get("drop_caps"):
            drop_capabilities()
        if setup.get("landlock_fd") is not None:
            landlock_restrict(setup["landlock_fd"])
        os.dup2(setup["go"], 4, inheritable=False)
        os.closerange(5, setup["maxfd"])
        _setup_stdio()
        try:
            req, blobs = _recv_go(4)
        except EOFError:
            os._exit(0)  # the server retired this spare
        os.close(4)
        import marshal

        code = marshal.loads(blobs[0])
        args_blob = blobs[1]
    except BaseException as e:  # noqa: BLE001
        _report({"kind": "harness", "error": f"child setup failed: {type(e).__name__}: {e}"})
        os._exit(HARNESS_EXIT)
    child_main(req, code, args_blob, setup)


def child_main(req: dict, code, args_blob: bytes, setup: dict) -> None:
    status = HARNESS_EXIT
    try:
        workdir = setup["workdir"]
        lim = req["limits"]
        ru = resource.getrusage(resource.RUSAGE_SELF)
        global _CPU_AT_START
        _CPU_AT_START = ru.ru_utime + ru.ru_stime  # the spare's own setup is not the program's time
        used = int(_CPU_AT_START)
        cpu = used + int(-(-lim["timeout"] // 1)) + 1

        def setlim(res: int, soft: int, hard: int | None = None) -> None:
            _, old_hard = resource.getrlimit(res)
            hard = soft if hard is None else hard
            if old_hard != resource.RLIM_INFINITY:
                soft, hard = min(soft, old_hard), min(hard, old_hard)
            resource.setrlimit(res, (soft, hard))

        setlim(resource.RLIMIT_CPU, cpu, cpu + 1)
        if lim["memory"] > 0:
            setlim(resource.RLIMIT_AS, lim["memory"])
        setlim(resource.RLIMIT_FSIZE, lim["file_size"])
        setlim(resource.RLIMIT_NOFILE, lim["open_files"])
        setlim(resource.RLIMIT_CORE, 0)
        if lim.get("processes", 0) > 0:
            setlim(resource.RLIMIT_NPROC, lim["processes"])

        import builtins
        import linecache
        import types

        sys.set_int_max_str_digits(0)
        sys.setrecursionlimit(1000)
        filename = req["filename"]
        source = req["source"]
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        sys.argv = [filename]
        sys.path[0] = workdir
        main = types.ModuleType("__main__")
        main.__file__ = filename
        main.__builtins__ = builtins
        main.__cached__ = None
        sys.modules["__main__"] = main
        call = req["mode"] == "call"
        if call:
            args = pickle.loads(args_blob)
            _reliability_guard()
    except BaseException as e:  # noqa: BLE001 - report anything, never run the program half-fenced
        _report({"kind": "harness", "error": f"child setup failed: {type(e).__name__}: {e}"})
        os._exit(HARNESS_EXIT)

    try:
        write_all(3, READY_LINE)
    except Exception:  # noqa: BLE001, S110 - as _report: a closed report pipe only costs the child its verdict
        pass
    status = 0
    try:
        exec(code, main.__dict__)
        if call:
            fn_name = req["fn_name"]
            sol = main.__dict__.get("Solution")
            fn = None
            if isinstance(sol, type) and callable(getattr(sol, fn_name, None)):
                fn = getattr(sol(), fn_name)
            elif callable(main.__dict__.get(fn_name)):
                fn = main.__dict__[fn_name]
            if fn is None:
                raise NameError(f"the program defines no function {fn_name!r} (neither at top level nor in "
                                f"class Solution)")
            value = fn(*args)
            try:
                text = json.dumps(value)
            except (TypeError, ValueError, RecursionError) as e:
                raise TypeError(f"return value of type {type(value).__name__} is not JSON-serialisable") from e
            _report({"kind": "value", "json": text})
    except SystemExit as e:
        status = _system_exit_status(e)
    except BaseException as e:  # noqa: BLE001 - an uncaught exception, as the interpreter would
        _report({"kind": "exception", "memory": isinstance(e, MemoryError), "line": _exception_line(e)})
        try:
            tb = e.__traceback__
            tb = tb.tb_next if tb is not None else None  # hide the harness's own frame
            e.__traceback__ = tb
            if sys.excepthook is sys.__excepthook__:  # the C hook reads source files itself; we can't
                import traceback

                traceback.print_exception(e)
            else:
                sys.excepthook(type(e), e, tb)
        except BaseException:
            pass
        status = 1
    _finish(status)


# ---------------------------------------------------------------------------------------------------
# the server


class _Usage:
    __slots__ = ("cpu", "maxrss")

    def __init__(self, cpu: float, maxrss: int) -> None:
        self.cpu, self.maxrss = float(cpu), int(maxrss)


class Server:
    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.pid = os.getpid()
        self.tid = self.pid
        self.children_path = f"/proc/{self.pid}/task/{self.tid}/children"
        self.compiler = Compiler()
        self.runs = 0
        self.marshalled: dict = {}  # code object -> its marshal bytes
        self.layers = ["fork-server", "rlimits", "pgroup-kill", "clean-env", "private-workdir"]
        self._remove_stale()
        self.base = tempfile.mkdtemp(prefix=f"pytest-apps-exec-{self.pid}-")
        os.chmod(self.base, 0o711)
        try:
            self.maxfd = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            if self.maxfd == resource.RLIM_INFINITY or self.maxfd > 1 << 20:
                self.maxfd = 1 << 20
        except Exception:
            self.maxfd = 65536
        try:
            prctl(PR_SET_CHILD_SUBREAPER, 1)
            self.subreaper = True
            self.layers.append("subreaper")
        except OSError:
            self.subreaper = False
        self.landlock_fd = None
        self.drop_caps = False
        self.cgroup_dir = None
        self.cgroup_fd = None
        self.counter = 0
        # Ready spares, oldest first; the replacement is forked after the answer is sent. With SPARES = 2 the
        # spare a test gets was forked a test earlier and has finished fencing itself even when tests come
        # back to back (echo round trip, same run and load: 2.7 ms against 3.3 ms with one spare).
        self.spares: list[dict] = []
        self.pool_size = SPARES
        self.no_new_spares = False
        self.pending: int | None = None  # a child that reported "done" and still has to be reaped
        self.trash: list[str] = []  # work directories to remove once the answer is sent
        self.layer_errors: dict[str, str] = {}

    # -- optional layers, each probed; a failure only removes the layer ---------------------------------
    def setup_layers(self, processes: int) -> None:
        try:
            flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
            uid, gid = os.getuid(), os.getgid()
            if _libc.unshare(flags) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            if flags & CLONE_NEWUSER:
                for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                                   ("gid_map", f"{gid} {gid} 1")):
                    try:
                        with open(f"/proc/self/{name}", "w") as f:
                            f.write(text)
                    except OSError:
                        pass
            self.layers.append("netns")
        except OSError as e:
            self.layer_errors["netns"] = str(e)
        if os.geteuid() == 0 and processes > 0:
            self._setup_pids_cgroup(processes)
        if os.geteuid() == 0 and self._probe(drop_caps=True):
            self.drop_caps = True
            self.layers.append("no-caps")
        abi = landlock_abi()
        if abi:
            try:
                fd = landlock_ruleset(abi, self._read_paths(), [self.base], ["/dev/null", "/dev/zero"])
                if self._probe(landlock_fd=fd, drop_caps=self.drop_caps):
                    self.landlock_fd = fd
                    self.layers.append(f"landlock-abi{abi}")
                else:
                    os.close(fd)
            except OSError as e:
                self.layer_errors["landlock"] = str(e)
        else:
            self.layer_errors["landlock"] = "not available (kernel or architecture)"

    def _setup_pids_cgroup(self, processes: int) -> None:
        for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
            if not os.path.isdir(root):
                continue
            path = os.path.join(root, f"pytest-apps-{self.pid}")
            try:
                os.mkdir(path)
            except OSError as e:
                self.layer_errors["pids-cgroup"] = str(e)
                continue
            try:
                if not os.path.exists(os.path.join(path, "pids.max")):
                    raise OSError(errno.ENOENT, "no pids controller here")
                with open(os.path.join(path, "pids.max"), "w") as f:
                    # + SPARES - 1: the spares that wait for the next tests are in the cgroup during a run
                    f.write(str(processes + SPARES - 1))
                self.cgroup_fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
                self.cgroup_dir = path
                self.layers.append("pids-cgroup")
                return
            except OSError as e:
                self.layer_errors["pids-cgroup"] = str(e)
                try:
                    os.rmdir(path)
                except OSError:
                    pass

    def _read_paths(self) -> list[str]:
        paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                 "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/dev/urandom", "/dev/random",
                 "/dev/full", "/proc/sys/kernel/random", "/sys/devices/system/cpu"}
        prefixes = tuple(os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                                              "/usr/"))
        for p in sys.path:
            rp = os.path.realpath(p) if p else ""
            if rp and (rp + os.sep).startswith(prefixes) and ("site-packages" in rp or "dist-packages" in rp
                                                               or "python3" in rp):
                paths.add(rp)
        return sorted(p for p in paths if os.path.exists(p))

    def _probe(self, **fence) -> bool:
        """Fork a child that applies the fence and checks it can still import; True if it worked."""
        pid = os.fork()
        if pid == 0:
            try:
                prctl(PR_SET_NO_NEW_PRIVS, 1)
                if fence.get("drop_caps"):
                    drop_capabilities()
                if fence.get("landlock_fd") is not None:
                    landlock_restrict(fence["landlock_fd"])
                    try:
                        open("/proc/1/environ").close()
                        os._exit(3)
                    except OSError:
                        pass
                import email.mime.text  # noqa: F401 - a stdlib import that is not preloaded

                os._exit(0)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    # -- running one test -----------------------------------------------------------------------------
    def run(self, req: dict, blobs: list[bytes]) -> tuple[dict, bytes]:
        source = blobs[0].decode("utf-8", "surrogateescape")
        stdin_data, args_blob = blobs[1], blobs[2]
        code, err, _wrapped = self.compiler.get(source, req["filename"])
        if code is None:
            return {"status": RUN_COMPILE_ERROR, "error": err}, b""
        self.runs += 1
        import marshal

        spare = self.spares.pop(0) if self.spares else self._make_spare()
        try:
            if stdin_data:
                write_all(spare["stdin"], stdin_data)
                os.lseek(spare["stdin"], 0, os.SEEK_SET)
            go = {"mode": req["mode"], "filename": req["filename"], "fn_name": req.get("fn_name"),
                  "limits": req["limits"], "source": source}
            if code not in self.marshalled:  # the child gets the code object once per program, not per test
                if len(self.marshalled) > 64:
                    self.marshalled.clear()
                self.marshalled[code] = marshal.dumps(code)
            return self._watch(spare, go, [self.marshalled[code], args_blob])
        finally:
            self._retire(spare, remove=False)
            self.trash.append(spare["workdir"])

    def after_run(self) -> None:
        """Off the critical path (after the answer is sent): reap, sweep, and fork the next spare."""
        for path in list(self.trash):  # empty ones first, so that a child that is still exiting does so meanwhile
            try:
                os.rmdir(path)
                self.trash.remove(path)
            except OSError:
                pass
        if self.pending is not None:
            try:  # the child said it was done and has been SIGKILLed: this returns at once
                os.waitpid(self.pending, 0)
            except ChildProcessError:
                pass
            self.pending = None
        self._sweep()
        while self.trash:  # what is left, once nothing the runs started is alive to write there
            self._remove(self.trash.pop())
        while not self.no_new_spares and len(self.spares) < self.pool_size:
            try:
                self.spares.append(self._make_spare())
            except OSError:
                break

    def after_run_cleanup_only(self) -> None:
        self.no_new_spares = True  # keep after_run from forking new spares
        try:
            self.after_run()
        finally:
            self.no_new_spares = False

    def _spare_pids(self) -> set:
        return {sp.get("pid") for sp in self.spares}

    def _make_spare(self) -> dict:
        self.counter += 1
        workdir = os.path.join(self.base, f"run{self.counter}")
        os.mkdir(workdir, 0o700)
        sp = {"workdir": workdir, "server_pid": self.pid, "maxfd": self.maxfd, "landlock_fd": self.landlock_fd,
              "drop_caps": self.drop_caps, "cgroup_fd": self.cgroup_fd}
        sp["stdin"] = os.memfd_create("stdin", os.MFD_CLOEXEC)
        sp["out_r"], sp["out"] = os.pipe2(os.O_CLOEXEC)
        sp["err_r"], sp["err"] = os.pipe2(os.O_CLOEXEC)
        sp["rep_r"], sp["rep"] = os.pipe2(os.O_CLOEXEC)
        sp["go"], sp["go_w"] = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            try:
                spare_main(sp)
            finally:
                os._exit(HARNESS_EXIT)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        for k in ("out", "err", "rep", "go"):
            os.close(sp.pop(k))
        sp["pid"] = pid
        try:
            sp["pidfd"] = os.pidfd_open(pid)
        except OSError:
            sp["pidfd"] = None
        return sp

    def _retire(self, sp: dict, remove: bool = True) -> None:
        for k in ("stdin", "out_r", "err_r", "rep_r", "go_w", "pidfd"):
            fd = sp.pop(k, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if sp.get("pid"):
            try:
                os.killpg(sp["pid"], signal.SIGKILL)
            except OSError:
                pass
        if remove:
            self._remove(sp["workdir"])

    def _watch(self, sp: dict, go: dict, go_blobs: list[bytes]):
        lim = go["limits"]
        pid, pidfd = sp["pid"], sp["pidfd"]
        out_r, err_r, rep_r = sp["out_r"], sp["err_r"], sp["rep_r"]
        t0 = time.monotonic()
        _send_go(sp["go_w"], go, go_blobs)
        os.close(sp.pop("go_w"))
        out = bytearray()
        err = bytearray()
        rep = bytearray()
        reason = None
        deadline = t0 + lim["timeout"]
        poller = select.poll()
        open_fds = {out_r: out, err_r: err, rep_r: rep}
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        poller.register(self.rfd, select.POLLIN)  # readable while a run is going = our parent went away
        exited = False
        out_limit = lim["output"]
        while True:
            now = time.monotonic()
            if now >= deadline:
                reason = RUN_TIMEOUT
                break
            wait_ms = max(1, int((deadline - now) * 1000) + 1)
            if pidfd is None:
                wait_ms = min(wait_ms, 10)
            for fd, _ev in poller.poll(wait_ms):
                if fd == self.rfd:
                    self._kill(pid)
                    raise EOFError("parent went away")
                if fd == pidfd:
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
                if fd == err_r and len(err) > 4 * STDERR_TAIL:
                    del err[: len(err) - STDERR_TAIL]
                elif fd == rep_r and len(rep) > 1 << 22:
                    del rep[: len(rep) - (1 << 21)]
            if len(out) > out_limit:
                reason = RUN_OUTPUT_LIMIT
                break
            if pidfd is None and not exited:
                try:  # no pidfd: poll the child (WNOWAIT keeps it for wait4 below)
                    if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                        exited = True
                except ChildProcessError:
                    exited = True
            if exited:
                break
            if not open_fds:
                # every pipe is closed: the child reported "done" and closed its stdio right before exiting
                # (or it closed them all itself); either way it has nothing more to say
                done = self._done(rep)
                if done is not None:
                    break
        wall = time.monotonic() - t0
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        done = self._done(rep) if (reason is None and not exited) else None
        if done is not None:
            # the child is exiting by itself: it is reaped by after_run(), off the critical path
            status = (done["status"] & 0xFF) << 8
            ru = _Usage(done.get("cpu", 0.0), done.get("maxrss", 0))
            leftovers = 0
            self.pending = pid
        else:
            _, status, ru = os.wait4(pid, 0)
            ru = _Usage(ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024)
            leftovers = self._sweep()
            self._drain(open_fds, out_r, err_r, out_limit)
            if reason is None and len(out) > out_limit:
                reason = RUN_OUTPUT_LIMIT
        sp["pid"] = None
        return self._outcome(reason, status, ru, wall, lim, out, err, rep, leftovers)

    @staticmethod
    def _done(rep: bytearray) -> dict | None:
        """The child's last-words report, if it is the last line of its report pipe."""
        lines = bytes(rep).rstrip(b"\n").rsplit(b"\n", 1)
        try:
            msg = json.loads(lines[-1])
        except ValueError:
            return None
        if isinstance(msg, dict) and msg.get("kind") == "done" and isinstance(msg.get("status"), int):
            return msg
        return None

    def _drain(self, open_fds: dict, out_r: int, err_r: int, out_limit: int) -> None:
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

    def _outcome(self, reason, status, ru, wall, lim, out, err, rep, leftovers):
        cpu = ru.cpu
        res = {"wall_time": wall, "cpu_time": cpu, "peak_memory": ru.maxrss, "error": "",
               "exit_code": None, "signal": None, "value_json": None}
        if os.WIFSIGNALED(status):
            res["signal"] = os.WTERMSIG(status)
        elif os.WIFEXITED(status):
            res["exit_code"] = os.WEXITSTATUS(status)
        ready = False
        exc = None
        harness = None
        for line in bytes(rep).split(b"\n"):
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            kind = msg.get("kind")
            if kind == "ready":
                ready = True
            elif kind == "harness" and not ready:
                harness = str(msg.get("error", "child setup failed"))
            elif kind == "value" and ready and isinstance(msg.get("json"), str):
                res["value_json"] = msg["json"]
            elif kind == "exception" and ready:
                exc = msg
        tail = bytes(err[-STDERR_TAIL:]).decode("utf-8", "replace")
        res["stderr_tail"] = tail
        sig = res["signal"]
        if reason == RUN_TIMEOUT:
            res.update(status=RUN_TIMEOUT, error=f"wall-clock limit of {lim['timeout']:g} s exceeded")
        elif reason == RUN_OUTPUT_LIMIT:
            res.update(status=RUN_OUTPUT_LIMIT, error=f"output limit of {lim['output']} bytes exceeded")
        elif sig in (signal.SIGXCPU,) or (sig == signal.SIGKILL and cpu >= lim["timeout"]):
            res.update(status=RUN_TIMEOUT, error="CPU time limit exceeded")
        elif not ready:
            res.update(status=RUN_HARNESS_ERROR, error=harness or f"child died before the program ran "
                                                                  f"(status {status})")
        elif exc is not None and exc.get("memory"):
            res.update(status=RUN_MEMORY, error=str(exc.get("line", "MemoryError")))
        elif sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            res.update(status=RUN_SIGNALED, error=f"killed by signal {name}")
        else:
            res["status"] = RUN_EXITED
            if exc is not None:
                res["error"] = str(exc.get("line", ""))
            elif res["exit_code"]:
                lines = [ln for ln in tail.strip().splitlines() if ln.strip()]
                res["error"] = f"exit status {res['exit_code']}" + (f": {lines[-1].strip()}" if lines else "")
        if leftovers:
            res["leftovers"] = leftovers
        if res["status"] == RUN_OUTPUT_LIMIT:
            del out[lim["output"]:]
        return res, bytes(out)

    @staticmethod
    def _remove_stale() -> None:
        """Directories and cgroups left by servers that were killed (their pid is in the name)."""
        import glob

        for path in glob.glob(os.path.join(tempfile.gettempdir(), "pytest-apps-exec-*-*")) + glob.glob(
                "/sys/fs/cgroup/pids/pytest-apps-*"):
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

    def _children(self) -> list[int]:
        # os.read rather than open(): no text-file objects built twice per test (allocations dirty pages
        # the spares share, and each dirtied page costs a copy-on-write fault)
        try:
            fd = os.open(self.children_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            chunks = []
            while True:
                b = os.read(fd, 1 << 16)
                if not b:
                    break
                chunks.append(b)
        except OSError:
            return []
        finally:
            os.close(fd)
        return [int(x) for x in b"".join(chunks).split()]

    def _live_children(self) -> list[int]:
        """Our children other than the waiting spares, after reaping those that have exited."""
        keep = self._spare_pids()
        live = []
        for k in self._children():
            if k in keep:
                continue
            try:
                if os.waitpid(k, os.WNOHANG)[0] == 0:
                    live.append(k)
            except ChildProcessError:
                pass
        return live

    def _descendants(self, roots: list[int]) -> list[int]:
        seen, stack = [], list(roots)
        while stack:
            p = stack.pop()
            seen.append(p)
            try:
                for tid in os.listdir(f"/proc/{p}/task"):
                    with open(f"/proc/{p}/task/{tid}/children") as f:
                        stack.extend(int(x) for x in f.read().split())
            except OSError:
                pass
        return seen

    def _sweep(self) -> int:
        """Kill and reap every process the run left behind (orphans are re-parented to us)."""
        killed = 0
        for _ in range(200):
            if not self.spares:
                self._reap()  # no spare to keep: reap every exited child (waitpid(-1), without /proc)
            kids = self._live_children()
            if not kids:
                return killed
            for p in self._descendants(kids):
                try:
                    os.kill(p, signal.SIGSTOP)
                except OSError:
                    pass
            for p in self._descendants(kids):
                try:
                    os.kill(p, signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
            time.sleep(0.001)
        self._reap()
        return killed

    def _reap(self) -> None:
        keep = self._spare_pids()
        if keep:  # reap only what is not a waiting spare
            for k in self._children():
                if k not in keep:
                    try:
                        os.waitpid(k, os.WNOHANG)
                    except ChildProcessError:
                        pass
            return
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def _kill(self, pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        self._sweep()

    def _remove(self, path: str) -> None:
        try:
            os.rmdir(path)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
            if os.path.exists(path):  # read-only dirs made by the program
                for root, dirs, _ in os.walk(path):
                    for d in dirs:
                        try:
                            os.chmod(os.path.join(root, d), 0o700)
                        except OSError:
                            pass
                shutil.rmtree(path, ignore_errors=True)

    def cleanup(self) -> None:
        self.after_run_cleanup_only()
        while self.spares:
            self._retire(self.spares.pop())
        self._sweep()
        shutil.rmtree(self.base, ignore_errors=True)
        if self.cgroup_dir:
            try:
                os.close(self.cgroup_fd)
                os.rmdir(self.cgroup_dir)
            except OSError:
                pass

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
            elif op == "stats":
                send_frame(self.wfd, {"compiles": self.compiler.compiles, "runs": self.runs,
                                      "pid": self.pid, "layers": self.layers})
            elif op == "exit":
                return
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
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    hello, _ = recv_frame(rfd)
    server = Server(rfd, wfd)
    try:
        server.setup_layers(int(hello.get("processes", 0)))
        import gc

        prepare_child_state()
        gc.collect()
        gc.freeze()
        send_frame(wfd, {"ok": True, "pid": server.pid, "layers": server.layers,
                         "layer_errors": server.layer_errors, "base": server.base,
                         "cgroup": server.cgroup_dir})
        server.after_run()
        server.serve()
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
