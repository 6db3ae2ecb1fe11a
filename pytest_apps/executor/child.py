"""The child: one per test, forked by the zygote ahead of time (a "spare"), fenced before its test arrives.

`spare_main` sets up everything that does not depend on the test and waits on its `go` pipe; `child_main`
runs the candidate as `python prog.py` would (or calls its function), or the original APPS harness's way
(`appsstyle.py`, for the apps judge), and reports through fd 3 (JSON lines):
"ready" right before the candidate's code runs, then "exception" or "value". Everything there is the candidate's
own claim about itself (the program can write to fd 3 too): how the run ended, and what it cost, the server
learns from the kernel, and verdicts are decided in the pytest process.
"""

from __future__ import annotations

import atexit
import json
import linecache
import marshal
import os
import pickle
import random
import signal
import sys
import threading

from .fence import (CLONE_NEWIPC, CLONE_NEWNS, PR_SET_PDEATHSIG, apply_limits, become, drop_capabilities,
                    landlock_restrict, prctl, setns, unshare)
from . import seccomp  # (its filter is built at import: in the zygote, once)
from .protocol import HARNESS_EXIT, READY_LINE, STYLE_APPS_HARNESS, recv_go, write_all

# the child's environment; HOME and TMPDIR are set to its work directory in the child
CHILD_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "", "TMPDIR": "", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
             "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8"}
_ZYGOTE_STDIO: tuple = ()  # the zygote's own stdio objects, kept alive (see prepare_child_state)
_GUARD: list = []  # the reliability guard's stand-ins, made in the zygote (see _guard_replacements)


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


def _report_exception(e: BaseException) -> None:
    """The program's uncaught exception: its last line, and whether it is a limit's (no memory left; a file, or the
    private folder, at the file-size limit: EFBIG, ENOSPC)."""
    msg = {"kind": "exception", "memory": isinstance(e, MemoryError), "line": _exception_line(e)}
    if isinstance(e, OSError) and e.errno in (27, 28, 122):  # EFBIG, ENOSPC, EDQUOT
        msg["files"] = True
    _report(msg)


def _make_stdio() -> tuple:
    """sys.stdin, sys.stdout and sys.stderr as `python prog.py` makes them: UTF-8 text over the descriptors 0, 1
    and 2, named `<stdin>`, `<stdout>` and `<stderr>`, with the `mode` io.open gives a text file (the fast-I/O
    templates of competitive programming read `file.mode`)."""
    import io

    def stream(fd: int, name: str, mode: str, **text: object) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode + "b", closefd=False)
        raw.name = name
        wrapper = io.TextIOWrapper(io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw),
                                   encoding="utf-8", newline="\n", **text)
        wrapper.mode = mode
        return wrapper

    return (stream(0, "<stdin>", "r", errors="strict"),
            stream(1, "<stdout>", "w", errors="strict"),
            stream(2, "<stderr>", "w", errors="backslashreplace", line_buffering=True))


def prepare_child_state() -> None:
    """In the zygote, once: what every child would otherwise build after its fork (page faults are the main
    per-test cost of a fork). The zygote's environment becomes the children's fixed part, and the children's
    stdio objects are built here and installed as sys.stdin/stdout/stderr (the zygote never uses them; the
    ones it had are kept alive, so that no child spends its time freeing them)."""
    global _ZYGOTE_STDIO
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
        stdio = _make_stdio()
    finally:
        for fd, old in zip((0, 1, 2), saved):
            os.dup2(old, fd)
            os.close(old)
        for fd in made:
            os.close(fd)
    _ZYGOTE_STDIO = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
    sys.stdin = sys.__stdin__ = stdio[0]
    sys.stdout = sys.__stdout__ = stdio[1]
    sys.stderr = sys.__stderr__ = stdio[2]
    _GUARD[:] = _guard_replacements()  # (the call-based children's, installed by each of them)
    # as `python prog.py` starts: no limit on int/str conversion (APPS data needs it), the default recursion
    # limit, the program's folder first on sys.path (each child puts its own there), an empty __main__
    import builtins
    import types

    sys.set_int_max_str_digits(0)
    sys.setrecursionlimit(1000)
    sys.path.insert(0, "")
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    main.__cached__ = None
    sys.modules["__main__"] = main


def _reliability_guard() -> None:
    """Call-based semantics of the APPS/human-eval harness: destructive functions are unavailable to the
    program's own code (calling one is a runtime error). Modules the program imports still get the real
    functions while they are being imported (numpy's import calls `os.putenv`, for one). Not the security
    boundary (that is outside the child); it keeps call-based runs comparable."""
    import builtins

    os.environ["OMP_NUM_THREADS"] = "1"
    builtins.exit = None
    builtins.quit = None
    for module, name, disabled in _GUARD or _guard_replacements():
        setattr(module, name, disabled)
    builtins.help = None
    for mod in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[mod] = None


def _guard_replacements() -> list[tuple]:
    """(module, name, its disabled stand-in) for every function the reliability guard disables. Made once, in the
    zygote (`prepare_child_state`): a call-based child that imported `subprocess` and built these stand-ins itself
    spent about 3 ms of CPU on them."""
    import shutil
    import subprocess

    out = []
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
                 "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown",
                 "chmod", "chown", "chroot", "lchown", "getcwd", "chdir", "lchflags", "lchmod"):
        if hasattr(os, name):
            out.append((os, name, _disabled(os, name)))
    for name in ("rmtree", "move", "chown"):
        out.append((shutil, name, _disabled(shutil, name)))
    out.append((subprocess, "Popen", _disabled(subprocess, "Popen")))
    return out


def _disabled(module, name: str):
    """`module.name`, unavailable outside an import: calling it (or, for a class, making one) from the
    program's own code raises TypeError."""
    real = getattr(module, name)
    message = f"{module.__name__}.{name} is disabled for call-based programs (reliability guard)"

    if isinstance(real, type):  # a class stays a class, so that an imported module may still subclass it
        def __init__(self, *args, **kwargs):
            if not _importing() and not _for_the_library():
                raise TypeError(message)
            real.__init__(self, *args, **kwargs)

        return type(real.__name__, (real,), {"__init__": __init__, "__module__": real.__module__,
                                             "__qualname__": real.__qualname__, "__doc__": real.__doc__})

    def disabled(*args, **kwargs):
        if not _importing() and not _for_the_library():
            raise TypeError(message)
        return real(*args, **kwargs)

    disabled.__name__ = disabled.__qualname__ = name
    disabled.__dict__.update(getattr(real, "__dict__", {}))  # e.g. shutil.rmtree.avoids_symlink_attacks
    return disabled


# The standard library's modules that a program may use although they call disabled functions for it: `tempfile`
# removes the files it made, `multiprocessing` forks and stops its workers and removes its semaphores.
_LIBRARY = os.path.dirname(os.__file__) + os.sep
_FOR_THE_PROGRAM = (_LIBRARY + "tempfile.py", _LIBRARY + "multiprocessing" + os.sep)


def _for_the_library() -> bool:
    """Whether a disabled function is called by `tempfile` or `multiprocessing` on the program's behalf: on the
    way up the stack from the call, one of their frames comes before any frame of the program's own code (only
    the standard library's and this module's frames between)."""
    frame = sys._getframe(2)
    own = __file__
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_FOR_THE_PROGRAM):
            return True
        if name != own and (not name.startswith(_LIBRARY) or "site-packages" in name):
            return False  # (this module's frames pass wherever it is installed: site-packages, for a user)
        frame = frame.f_back
    return False


def _importing() -> bool:
    """Whether a module is being imported (its code runs under the import system's frames)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _plain_value(value):
    """What json cannot write by itself: numpy's scalars and arrays, as the numbers and lists they hold."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _finish(status: int) -> None:
    """What the interpreter does at exit: join threads, run atexit, flush stdio, close them; then exit."""
    try:
        if len(threading._active) > 1 or threading._limbo or threading._shutdown_locks:
            threading._shutdown()  # join the threads the program started
    except BaseException:
        pass
    try:
        if atexit._ncallbacks():
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
    for fd in (0, 1, 2, 3):
        try:
            os.close(fd)
        except OSError:
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


def spare_main(cfg: dict, fds: list[int], parent: int, maxfd: int) -> None:
    """Right after the zygote's fork: fence and set up what does not depend on the test, then wait for it.
    `fds` are [stdin memfd, stdout, stderr, report, go, its cgroup's cgroup.procs files (cfg "cgroups" of them),
    Landlock ruleset (cfg "landlock"), mount namespace (cfg "mntns")], all numbered >= 5. Never returns."""
    try:
        os.setpgid(0, 0)  # its own process group, which the server kills as a whole
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(HARNESS_EXIT)
        groups = cfg.get("cgroups", 0)
        for fd in fds[5:5 + groups]:
            os.write(fd, b"0")  # into its test's cgroup, one per hierarchy: everything it starts is born there
        for target in (0, 1, 2, 3):
            os.dup2(fds[target], target, inheritable=True)
        os.dup2(fds[4], 4, inheritable=False)
        extra = fds[5 + groups:]
        if cfg.get("mntns"):
            setns(extra.pop(), CLONE_NEWNS)  # its folder is its /tmp and /dev/shm (workdirs.py)
        if cfg.get("ipc"):
            unshare(CLONE_NEWIPC)  # System V objects and POSIX queues it makes end with it
        if cfg.get("uid") is not None:
            become(cfg["uid"])  # a uid of its own: not the harness's (users.py)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # (a change of credentials clears it)
            if os.getppid() != parent:
                os._exit(HARNESS_EXIT)
        if cfg.get("drop_caps"):
            drop_capabilities()
        if cfg.get("landlock"):
            landlock_restrict(extra[0])  # a domain of its own: only its directory, no signals beyond itself
        os.closerange(5, maxfd)
        workdir = cfg["workdir"]
        os.chdir(workdir)
        home = cfg["workdir_bytes"]  # os.environ's own storage, without its Python-level encoding
        os.putenv(b"HOME", home)
        os.putenv(b"TMPDIR", home)
        os.environ._data[b"HOME"] = os.environ._data[b"TMPDIR"] = home
        cached = sys.modules.get("tempfile")
        if cached is not None:  # a folder the server found before the fork: the program's is its TMPDIR
            cached.tempdir = None
        limits = cfg.get("limits")
        if limits:
            apply_limits(limits)
        if cfg.get("seccomp"):
            seccomp.install("last")  # on the zygote's part: it refuses the setns above
        random._inst.seed()  # the zygote's fork skips Python's at-fork hooks: this is random's
        sys.path[0] = workdir
        main = sys.modules["__main__"]  # made empty by prepare_child_state()
        try:
            req, blobs = recv_go(4)
        except EOFError:
            os._exit(0)  # the server retired this spare
        os.close(4)
        code = marshal.loads(blobs[0])
    except MemoryError as e:
        _out_of_memory(e)  # within its limit, taking its program in: the program's limit
    except BaseException as e:  # noqa: BLE001
        _report({"kind": "harness", "error": f"child setup failed: {type(e).__name__}: {e}"})
        os._exit(HARNESS_EXIT)
    child_main(req, code, blobs[1:], main, limits)


def _out_of_memory(e: MemoryError) -> None:
    """What the test brings (its program, its arguments) does not fit in its memory limit, which applies from
    before the test arrives: the same limit for every format, met by the test, so its verdict (memory limit), never a
    harness error. Never returns."""
    try:
        write_all(3, READY_LINE)
        write_all(3, b'{"kind": "exception", "memory": true, "line": "MemoryError: the test does not fit in its '
                     b'memory limit"}\n')
    except BaseException:  # noqa: BLE001, S110
        pass
    os._exit(1)


def child_main(req: dict, code, blobs: list[bytes], main, limits_applied: dict | None) -> None:
    """Run the test: `blobs` are its arguments (a call's pickled list, or the apps style's input) and the contents
    of the files the request places in its folder (req "files": their paths, relative to it)."""
    args_blob = blobs[0]
    try:
        if req["limits"] != limits_applied:
            apply_limits(req["limits"])
        place_files(req.get("files") or (), blobs[1:])
        filename = req["filename"]
        source = req["source"]
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        sys.argv = [filename]
        main.__file__ = filename
        call = req["mode"] == "call"
        apps = req.get("style") == STYLE_APPS_HARNESS
        if apps:
            payload, out_fd = _apps_setup(req, args_blob)
        elif call:
            args = pickle.loads(args_blob)
            _reliability_guard()
    except MemoryError as e:
        _out_of_memory(e)  # its arguments (or the apps style's modules) do not fit in its limit
    except BaseException as e:  # noqa: BLE001 - report anything, never run the program half-fenced
        _report({"kind": "harness", "error": f"child setup failed: {type(e).__name__}: {e}"})
        os._exit(HARNESS_EXIT)

    try:
        write_all(3, READY_LINE)
    except Exception:  # noqa: BLE001, S110 - as _report: a closed report pipe only costs the child its verdict
        pass
    if apps:
        _apps_main(req, code, payload, out_fd)
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
                text = json.dumps(value, default=_plain_value)
            except RecursionError:  # (json's encoder counts its levels against the recursion limit)
                raise ValueError(f"return value of type {type(value).__name__} is nested too deeply to serialise "
                                 f"(deeper than about {sys.getrecursionlimit()} levels)") from None
            except (TypeError, ValueError) as e:
                raise TypeError(f"return value of type {type(value).__name__} is not JSON-serialisable") from e
            _report({"kind": "value", "json": text})
    except SystemExit as e:
        status = _system_exit_status(e)
    except BaseException as e:  # noqa: BLE001 - an uncaught exception, as the interpreter would
        status = _uncaught(e)
    _finish(status)


def place_files(paths, contents: list[bytes]) -> None:
    """Write the request's files into the folder the program works in (relative paths the client checked), as the
    program itself could: with its uid, its fence and its limits."""
    for path, content in zip(paths, contents):
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path, "wb") as f:
            f.write(content)


def _uncaught(e: BaseException) -> int:
    """Report an exception the program did not catch and print its traceback as the interpreter would, without
    the harness's own frame; the exit status (1)."""
    _report_exception(e)
    try:
        tb = e.__traceback__
        tb = tb.tb_next if tb is not None else None  # hide the harness's own frame
        e.__traceback__ = tb
        if sys.excepthook is sys.__excepthook__:  # the C hook reads source files itself; we can't
            import traceback

            traceback.print_exception(e)
        else:
            sys.excepthook(type(e), e, tb)
    except BaseException:  # noqa: BLE001, S110
        pass
    return 1


def _apps_setup(req: dict, args_blob: bytes) -> tuple:
    """Before a program runs the original APPS harness's way (appsstyle.py): what that harness's process had.
    Its modules numpy and unittest.mock are loaded (preloaded by the zygote when asked, see zygote.py); the
    reliability guard applies in both modes; the real stdout (fd 1, the `stdout` name the harness injects) goes
    to stderr, because only what the program writes to `sys.stdout` is its output there. Returns the test's
    payload (the input text, or the call's arguments) and the descriptor the captured output is written to."""
    import io  # noqa: F401 - loaded before the guard, as in the original's process
    import linecache
    import unittest.mock  # noqa: F401

    from . import appsstyle

    try:
        import numpy  # noqa: F401
    except ImportError:  # the prefix's `import numpy as np` then fails the load, as it would in the original
        pass
    filename, source, mode = req["filename"], req["source"], req["mode"]
    full = appsstyle.full_source(source, mode)  # what was compiled: tracebacks show its lines
    linecache.cache[filename] = (len(full), None, full.splitlines(True), filename)
    payload = pickle.loads(args_blob) if mode == "call" else args_blob.decode("utf-8", "surrogateescape")
    out_fd = os.dup(1)
    os.dup2(2, 1)
    _reliability_guard()
    return payload, out_fd


def _apps_main(req: dict, code, payload, out_fd: int) -> None:
    """Run the test the original APPS harness's way and report: "value" (call-based: the tagged return value;
    standard input: {"done": true} once the captured output is written to `out_fd`), "load_error" (its -2), or
    "exception" (its -1, or a BaseException that would have ended its whole candidate). Never returns."""
    from . import appsstyle

    status = 0
    try:
        if req["mode"] == "call":
            _report({"kind": "value", "json": appsstyle.run_call(code, req["source"], req["fn_name"], payload)})
        else:
            captured = appsstyle.run_stdin(code, req["source"], payload)
            write_all(out_fd, captured.encode("utf-8", "surrogatepass"))
            _report({"kind": "value", "json": '{"done": true}'})
    except appsstyle.LoadError as e:
        _report({"kind": "load_error", "line": str(e)})
        status = 1
    except appsstyle.Escaped as e:
        _report({"kind": "exception", "memory": False,
                 "line": f"{e} (escaped the original harness, which then scores every test of the program -1)"})
        status = 1
    except BaseException as e:  # noqa: BLE001 - the program's exception: the original's -1
        _report_exception(e)
        try:
            import traceback

            traceback.print_exception(e)
        except BaseException:  # noqa: BLE001, S110
            pass
        status = 1
    try:
        os.close(out_fd)
    except OSError:
        pass
    _finish(status)
