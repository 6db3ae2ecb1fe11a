"""The executor with real processes: semantics of standard-input and call-based runs, each limit and
status, compile-once, and recovery when the server dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from pytest_apps.executor import STYLE_APPS_HARNESS, Executor, Limits, Program, client
from pytest_apps.core.outcome import (
    RUN_COMPILE_ERROR, RUN_EXITED, RUN_HARNESS_ERROR, RUN_MEMORY, RUN_OUTPUT_LIMIT, RUN_SIGNALED, RUN_TIMEOUT,
)


@pytest.fixture(scope="module")
def ex():
    with Executor(Limits(timeout=2.0, memory=1 << 30, output=1 << 20)) as e:
        yield e


def test_the_server_speaks_the_statuses_outcomes_know():
    """The server's standalone protocol module repeats the run statuses (it cannot import the package)."""
    from pytest_apps.core import outcome
    from pytest_apps.executor import protocol

    names = [n for n in dir(outcome) if n.startswith("RUN_")]
    assert names and {n: getattr(protocol, n) for n in names} == {n: getattr(outcome, n) for n in names}


def P(src: str, name: str = "cand.py") -> Program:
    return Program(src, name)


# -- standard input -----------------------------------------------------------------------------------


def test_echo(ex):
    o = ex.run_stdin(P("print(input()[::-1])"), "abc\n")
    assert (o.status, o.exit_code, o.stdout, o.error) == (RUN_EXITED, 0, "cba\n", "")
    assert o.wall_time > 0 and o.peak_memory > 0


def test_real_program_semantics(ex):
    src = (
        "import sys\n"
        "assert __name__ == '__main__'\n"
        "assert sys.argv == ['cand.py']\n"
        "n = 0\n"
        "def bump():\n    global n\n    n += 1\n"
        "bump(); bump()\n"
        "a = input()\n"
        "b = sys.stdin.readline()\n"
        "rest = sys.stdin.read()\n"
        "print(n, a, b.strip(), rest.split())\n"
    )
    o = ex.run_stdin(P(src), "x\ny\nz w\n")
    assert o.stdout == "2 x y ['z', 'w']\n", o
    o = ex.run_stdin(P("print(open(0).read().split())"), "1 2\n3\n")
    assert o.stdout == "['1', '2', '3']\n", o


STREAMS = ("import json, sys\n"
           "print(json.dumps([[s.name, s.mode, s.encoding, s.fileno(), s.buffer.mode, s.buffer.name, s.readable(),\n"
           "                   s.writable()] for s in (sys.stdin, sys.stdout, sys.stderr)]))\n")


def test_the_standard_streams_are_those_of_python_prog_py(ex, tmp_path):
    """Names, modes, encoding and descriptors as `python prog.py < input` has them (the fast-I/O templates of
    competitive programming read `file.mode` and `file.fileno()`)."""
    (tmp_path / "prog.py").write_text(STREAMS)
    real = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}, check=True)
    assert ex.run_stdin(P(STREAMS), "").stdout == real.stdout
    fast_io = (
        "import os, sys\n"
        "from io import BytesIO, IOBase\n"
        "class FastIO(IOBase):\n"
        "    def __init__(self, file):\n"
        "        self._fd = file.fileno()\n"
        "        self.buffer = BytesIO()\n"
        "        self.writable = 'x' in file.mode or 'r' not in file.mode\n"
        "        self.write = self.buffer.write if self.writable else None\n"
        "    def read(self):\n"
        "        while True:\n"
        "            b = os.read(self._fd, max(os.fstat(self._fd).st_size, 8192))\n"
        "            if not b:\n"
        "                break\n"
        "            self.buffer.seek(0, 2), self.buffer.write(b)\n"
        "        self.buffer.seek(0)\n"
        "        return self.buffer.read()\n"
        "    def flush(self):\n"
        "        if self.writable:\n"
        "            os.write(self._fd, self.buffer.getvalue())\n"
        "            self.buffer.truncate(0), self.buffer.seek(0)\n"
        "inp, out = FastIO(sys.stdin), FastIO(sys.stdout)\n"
        "out.write(str(sum(map(int, inp.read().split()))).encode() + b'\\n')\n"
        "out.flush()\n"
    )
    o = ex.run_stdin(P(fast_io), "1 2\n3\n")
    assert (o.status, o.stdout) == (RUN_EXITED, "6\n"), o


def test_stdin_buffer_and_big_int(ex):
    o = ex.run_stdin(P("import sys\nn = int(sys.stdin.buffer.read())\nprint(len(str(10 ** n)))"), "10000\n")
    assert o.stdout == "10001\n", o


def test_exit_codes(ex):
    assert ex.run_stdin(P("print(1)\nexit()"), "").exit_code == 0
    assert ex.run_stdin(P("import sys\nsys.exit(3)"), "").exit_code == 3
    o = ex.run_stdin(P("import sys\nsys.exit('bad input')"), "")
    assert (o.status, o.exit_code) == (RUN_EXITED, 1)
    assert "bad input" in o.stderr_tail


def test_exception(ex):
    o = ex.run_stdin(P("x = 1\n1/0\n"), "")
    assert (o.status, o.exit_code) == (RUN_EXITED, 1)
    assert o.error == "ZeroDivisionError: division by zero"
    assert 'File "cand.py", line 2' in o.stderr_tail
    assert "1/0" in o.stderr_tail  # the source line is shown although the file is not readable
    assert "child.py" not in o.stderr_tail and "server.py" not in o.stderr_tail  # no harness frame


def test_compile_error(ex):
    o = ex.run_stdin(P("def f(:\n  pass"), "")
    assert o.status == RUN_COMPILE_ERROR
    assert o.error.startswith("SyntaxError")


def test_top_level_return_is_a_compile_error_as_python_says(ex):
    # the seed runner runs a program as `python prog.py`; only the apps style wraps it in a function
    src = "n = int(input())\nif n > 1:\n    print('big')\n    return\nprint('small')\n"
    o = ex.run_stdin(P(src), "5\n")
    assert o.status == RUN_COMPILE_ERROR
    assert "'return' outside function" in o.error
    assert ex.run_stdin(P(src), "5\n", style=STYLE_APPS_HARNESS).stdout == "big\n"


def test_other_syntax_errors_are_compile_errors(ex):
    o = ex.run_stdin(P("def f():\n    yield 1\nyield 2\n"), "")
    assert o.status == RUN_COMPILE_ERROR


def test_timeout(ex):
    o = ex.run_stdin(P("while True: pass"), "")
    assert o.status == RUN_TIMEOUT
    # stopped once its own time passed the band above the 2 s limit, long before the wall-clock backstop (a busy
    # machine can keep the watching server from a CPU for a few tenths of a second past the band: CI saw 2.80)
    assert 2.3 <= o.own_time < 3.0 and o.wall_time < ex.limits.wall_backstop
    assert o.error.startswith("time limit of 2 s exceeded")


def test_timeout_sleeping(ex):
    o = ex.run_stdin(P("import time\nprint('a', flush=True)\ntime.sleep(30)"), "")
    assert o.status == RUN_TIMEOUT and o.own_time >= 2.3  # blocked time is the program's own time
    assert o.stdout == "a\n"


def test_memory(ex):
    o = ex.run_stdin(P("x = bytearray(2 << 30)"), "")
    assert o.status == RUN_MEMORY, o


def test_spares_follow_changed_limits():
    """Waiting children apply the limits before their test comes; other limits get children of their own."""
    with Executor(Limits(timeout=4.0, memory=256 << 20)) as e:
        prog = P("x = bytearray(320 << 20)\nprint(len(x) >> 20)")
        assert e.run_stdin(prog, "").status == RUN_MEMORY
        e.limits = Limits(timeout=4.0, memory=768 << 20)
        o = e.run_stdin(prog, "")
        assert (o.status, o.stdout) == (RUN_EXITED, "320\n"), o
        e.limits = Limits(timeout=4.0, memory=256 << 20)
        assert e.run_stdin(prog, "").status == RUN_MEMORY


def test_output_limit(ex):
    o = ex.run_stdin(P("while True: print('x' * 1000)"), "")
    assert o.status == RUN_OUTPUT_LIMIT
    assert len(o.stdout) <= (1 << 20)


def test_signal(ex):
    o = ex.run_stdin(P("import os, signal\nos.kill(os.getpid(), signal.SIGABRT)"), "")
    assert (o.status, o.signal) == (RUN_SIGNALED, signal.SIGABRT)


def test_big_input_and_output_do_not_deadlock():
    data = "x" * (3 << 20) + "\n"
    with Executor(Limits(timeout=4)) as ex:
        o = ex.run_stdin(P("import sys\ns = sys.stdin.read()\nsys.stdout.write(s)\nsys.stdout.write(s[:1000])"), data)
    assert o.status == RUN_EXITED, o.error
    assert len(o.stdout) == len(data) + 1000


def test_stderr_is_tailed(ex):
    o = ex.run_stdin(P("import sys\nfor i in range(100000): print(i, file=sys.stderr)"), "")
    assert o.status == RUN_EXITED
    assert len(o.stderr_tail) <= 2048 and o.stderr_tail.endswith("99999\n")


def test_recursion_in_thread_with_big_stack(ex):
    src = (
        "import sys, threading\n"
        "sys.setrecursionlimit(10 ** 6)\n"
        "threading.stack_size(1 << 27)\n"
        "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
        "def main():\n    print(f(100000))\n"
        "threading.Thread(target=main).start()\n"
    )
    o = ex.run_stdin(P(src), "")
    assert o.stdout == "100000\n", o


def test_fresh_recursion_limit(ex):
    ex.run_stdin(P("import sys\nsys.setrecursionlimit(50000)"), "")
    o = ex.run_stdin(P("import sys\nprint(sys.getrecursionlimit())"), "")
    assert o.stdout == "1000\n"


def test_clean_env_and_workdir(ex):
    o = ex.run_stdin(P("import os\nprint(sorted(os.environ))\nprint(os.listdir('.'))\nprint(os.getcwd())"), "")
    lines = o.stdout.splitlines()
    assert "PYTEST_CURRENT_TEST" not in lines[0] and "APPS" not in lines[0]
    assert lines[1] == "[]"
    assert not lines[2].startswith("/work")


def test_exact_env_and_stdio_objects(ex):
    """The environment is exactly the fixed one with HOME and TMPDIR at the work directory (a new one per test,
    or the test's own folder seen as /tmp with the private-tmp layer), and the text
    streams (built once in the server, copied into each child) behave like fresh ones over the child's own
    files: a seekable stdin, unseekable pipes for stdout and stderr, nothing carried over from a previous
    test (unflushed output, read-ahead input, position)."""
    src = ("import os, sys, json\n"
           "env = dict(os.environ)\n"
           "print(json.dumps([env, os.getcwd(), sys.stdin.seekable(), sys.stdout.seekable(),\n"
           "    sys.stderr.seekable(), sys.stdin.read(), sys.stdin.tell(), sys.stdout.line_buffering,\n"
           "    sys.stderr.line_buffering, sys.stdout.errors, sys.stderr.errors, sys.stdout.encoding,\n"
           "    sys.stdin is sys.__stdin__, sys.stdout is sys.__stdout__, sys.stderr is sys.__stderr__]), flush=True)\n"
           "sys.stdout.write('unflushed-' + sys.argv[0])\n"
           "sys.stderr.write('err-unflushed')\n"
           "sys.stdin.seek(0)\n"
           "os._exit(0)\n")
    seen = []
    for i in range(3):
        o = ex.run_stdin(P(src, f"c{i}.py"), f"in{i}")
        first = o.stdout.splitlines()[0]
        assert "unflushed" not in o.stdout and "unflushed" not in o.stderr_tail, o
        env, cwd, *rest = json.loads(first)
        assert list(env) == ["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "PYTHONHASHSEED", "PYTHONIOENCODING"]
        assert env["HOME"] == env["TMPDIR"] == cwd
        assert rest == [True, False, False, f"in{i}", 3, False, True, "strict", "backslashreplace", "utf-8",
                        True, True, True]
        seen.append(cwd)
    if "private-tmp" in ex.isolation():  # each test's own folder, seen as /tmp (tests/test_tmp.py)
        assert seen == ["/tmp"] * 3
    else:
        assert len(set(seen)) == 3


def test_fds_closed(ex):
    o = ex.run_stdin(P("import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))"), "")
    # /proc is not readable under Landlock; fall back to probing with fstat
    if o.status != RUN_EXITED or o.exit_code:
        o = ex.run_stdin(P("import os\nopen_=[]\nfor fd in range(64):\n    try:\n        os.fstat(fd)\n"
                           "        open_.append(fd)\n    except OSError:\n        pass\nprint(open_)"), "")
    assert o.stdout.strip() in ("[0, 1, 2, 3]", "[0, 1, 2, 3, 4]"), o


def test_workdir_is_writable_and_fresh(ex):
    o = ex.run_stdin(P("open('f.txt', 'w').write('hi')\nprint(open('f.txt').read())"), "")
    assert o.stdout == "hi\n"
    o = ex.run_stdin(P("import os\nprint(os.listdir('.'))"), "")
    assert o.stdout == "[]\n"


def test_file_size_limit():
    with Executor(Limits(timeout=2, file_size=1000)) as ex:
        o = ex.run_stdin(P("with open('f', 'wb') as f:\n    f.write(b'x' * 5000)"), "")
        # a limit met, as SIGXFSZ is (tests/test_tmp.py); the exception says which
        assert o.status == RUN_OUTPUT_LIMIT and o.exit_code == 1
        assert "file-size limit of 1000 bytes" in o.error and "File too large" in o.error


# -- call-based ---------------------------------------------------------------------------------------


def test_call_top_level(ex):
    o = ex.run_call(P("def add(a, b):\n    return (a + b, [a, b])"), "add", [1, 2])
    assert o.status == RUN_EXITED and o.exit_code == 0
    assert json.loads(o.value_json) == [3, [1, 2]]


def test_call_solution_class_and_prints(ex):
    src = "class Solution:\n    def twice(self, xs):\n        print('noise', xs)\n        return [x * 2 for x in xs]\n"
    o = ex.run_call(P(src), "twice", [[1, 2]])
    assert json.loads(o.value_json) == [2, 4]
    assert o.stdout == "noise [1, 2]\n"


def test_call_does_not_block_on_stdin(ex):
    o = ex.run_call(P("import sys\ndata = sys.stdin.read()\ndef f():\n    return data"), "f", [])
    assert json.loads(o.value_json) == ""


def test_call_missing_function(ex):
    o = ex.run_call(P("def g(): return 1"), "f", [])
    assert o.value_json is None and o.exit_code == 1
    assert "'f'" in o.error


def test_call_not_serialisable(ex):
    o = ex.run_call(P("def f(): return object()"), "f", [])
    assert o.value_json is None
    assert o.error == "TypeError: return value of type object is not JSON-serialisable"


@pytest.mark.parametrize("style", ["seed", "apps"])
def test_call_return_value_too_deep(ex, style):
    """A value nested deeper than can be serialised is refused for its depth, not its type."""
    src = "def f(n):\n    x = []\n    for _ in range(n):\n        x = [x]\n    return x"
    o = ex.run_call(P(src), "f", [200_000], style=style)
    assert o.status == RUN_EXITED and o.exit_code == 1 and o.value_json is None, o
    assert "nested too deeply" in o.error and "JSON-serialisable" not in o.error, o
    o = ex.run_call(P(src), "f", [100], style=style)
    assert o.status == RUN_EXITED and o.exit_code == 0 and o.value_json.count("[") in (101, 102), o


def test_call_exception(ex):
    o = ex.run_call(P("def f(x): return x[5]"), "f", [[1]])
    assert o.error == "IndexError: list index out of range"


def test_call_big_int(ex):
    o = ex.run_call(P("def f(n): return 7 ** n"), "f", [20000])
    assert o.value_json is not None and len(o.value_json) > 16000


@pytest.mark.parametrize("call", ["os.system('true')", "os.kill(os.getpid(), 0)", "shutil.rmtree('x')",
                                  "subprocess.Popen(['true'])"])
def test_call_guard(ex, call):
    """The destructive calls stay unavailable to a call-based program's own code: a runtime error."""
    src = f"import os, shutil, subprocess\nos.mkdir('x')\ndef f():\n    {call}\n    return 1"
    o = ex.run_call(P(src), "f", [])
    assert o.status == RUN_EXITED and o.exit_code == 1 and o.value_json is None
    assert o.error.startswith("TypeError") and "reliability guard" in o.error


def test_call_guard_at_top_level(ex):
    o = ex.run_call(P("import os\nos.system('true')\ndef f():\n    return 1"), "f", [])
    assert o.exit_code == 1 and o.value_json is None and "reliability guard" in o.error


@pytest.mark.parametrize("src, args, value", [
    ("import numpy as np\ndef f(a, b):\n    return np.int64(a) + np.int64(b)", [1, 2], 3),
    ("import numpy as np\ndef f(xs):\n    return np.mean(xs)", [[1, 2, 4, 5]], 3.0),
    ("import numpy as np\ndef f(n):\n    return np.arange(n).reshape(2, -1) * 2", [4], [[0, 2], [4, 6]]),
    ("import numpy as np\ndef f(xs):\n    return [np.bool_(x > 1) for x in xs]", [[1, 2]], [False, True]),
    ("import numpy as np\nclass Solution:\n    def f(self, xs):\n        return {'s': np.sum(xs)}", [[1, 2]],
     {"s": 3}),
], ids=["int64-sum", "mean", "array", "bool_", "in-a-dict"])
def test_call_imports_numpy_and_returns_its_values_as_plain_data(ex, src, args, value):
    o = ex.run_call(P(src), "f", args)
    assert (o.status, o.exit_code, o.error) == (RUN_EXITED, 0, "")
    assert json.loads(o.value_json) == value


@pytest.mark.parametrize("module", ["numpy", "scipy.special", "sortedcontainers", "fractions", "email.mime.text",
                                    "decimal", "tempfile", "shutil", "subprocess", "multiprocessing", "asyncio"])
def test_call_imports_what_the_zygote_does_not_preload(ex, module):
    pytest.importorskip(module)
    o = ex.run_call(P(f"import {module}\ndef f():\n    return {module}.__name__"), "f", [])
    assert (o.exit_code, o.error, o.value_json) == (0, "", json.dumps(module))


# -- server -------------------------------------------------------------------------------------------


def test_compile_once():
    with Executor(Limits(timeout=2)) as ex:
        prog = P("print(int(input()) * 2)")
        outs = [ex.run_stdin(prog, f"{i}\n").stdout for i in range(5)]
        assert outs == [f"{2 * i}\n" for i in range(5)]
        assert ex._stats()["compiles"] == 1
        ex.run_stdin(P("print(1)"), "")
        assert ex._stats()["compiles"] == 2


def test_restart_after_server_death():
    with Executor(Limits(timeout=2)) as ex:
        assert ex.run_stdin(P("print(1)"), "").stdout == "1\n"
        pid = ex._server_pid()
        threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
        o = ex.run_stdin(P("import time\ntime.sleep(1.5)\nprint(2)"), "")
        assert o.status == RUN_HARNESS_ERROR and "server" in o.error
        assert ex.run_stdin(P("print(3)"), "").stdout == "3\n"
        assert ex._server_pid() != pid
        # killed between tests: restarted quietly, the next test runs normally
        os.kill(ex._server_pid(), signal.SIGKILL)
        time.sleep(0.05)
        assert ex.run_stdin(P("print(4)"), "").stdout == "4\n"


def test_new_zygote_after_the_zygote_dies():
    """The zygote forks the children; if it dies (its children die with it), the server starts another."""
    with Executor(Limits(timeout=2)) as ex:
        assert ex.run_stdin(P("print(1)"), "").stdout == "1\n"
        server, zygote = ex._stats()["pid"], ex._stats()["zygote"]
        os.kill(zygote, signal.SIGKILL)  # between tests: the waiting spares go with it
        time.sleep(0.05)
        assert ex.run_stdin(P("print(2)"), "").stdout == "2\n"
        stats = ex._stats()
        assert stats["pid"] == server and stats["zygote"] not in (None, zygote)
        threading.Timer(0.3, os.kill, (stats["zygote"], signal.SIGKILL)).start()  # during a test
        start = time.monotonic()
        o = ex.run_stdin(P("import time\ntime.sleep(1.5)\nprint(3)"), "")
        # not the program's doing (never a SIGKILL charged to it): a fault of the harness, run again by the engine
        assert o.status == RUN_HARNESS_ERROR and "zygote was lost" in o.error and o.stdout == "", o
        assert time.monotonic() - start < 1.4  # it died with its parent, and the server saw it at once
        assert ex.run_stdin(P("print(4)"), "").stdout == "4\n"
        assert ex._stats()["pid"] == server


def test_restart_after_server_hang(monkeypatch):
    monkeypatch.setattr(client, "SERVER_MARGIN", 0.5)
    with Executor(Limits(timeout=0.5)) as ex:
        assert ex.run_stdin(P("print(1)"), "").stdout == "1\n"
        pid = ex._server_pid()
        os.kill(pid, signal.SIGSTOP)
        t = time.monotonic()
        o = ex.run_stdin(P("print(2)"), "")
        assert o.status == RUN_HARNESS_ERROR and "hung" in o.error
        # given up once the run could no longer be going on: the wall-clock backstop and a margin
        assert time.monotonic() - t < ex.limits.wall_backstop + client.SERVER_MARGIN + 2
        assert ex.run_stdin(P("print(3)"), "").stdout == "3\n"
        assert ex._server_pid() != pid


def test_isolation_layers():
    with Executor() as ex:
        layers = ex.isolation()
    assert {"fork-server", "rlimits", "pgroup-kill"} <= set(layers)
    if os.uname().machine == "x86_64":
        assert any(layer.startswith("landlock-abi") for layer in layers), layers


def test_close_is_idempotent_and_stops_server():
    ex = Executor()
    ex.run_stdin(P("print(1)"), "")
    pid = ex._server_pid()
    ex.close()
    ex.close()
    time.sleep(0.05)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_string_hashing_is_the_same_in_every_executor():
    """Children fork from the server's interpreter, so its hash seed is theirs: fixed (0, as the children's
    PYTHONHASHSEED says), a program that prints a set of strings prints it in the same order on every worker,
    every run and every machine with this Python."""
    src = "print(hash('abc'), list({'apple', 'pear', 'fig', 'kiwi', 'plum'}))"
    seen = set()
    for _ in range(3):
        with Executor(Limits(timeout=5.0)) as ex:
            seen.add(ex.run_stdin(Program(src), "").stdout)
    assert len(seen) == 1
    # the same as a fresh interpreter with the seed fixed
    fresh = subprocess.run([sys.executable, "-c", src], env={"PYTHONHASHSEED": "0"}, capture_output=True, text=True)
    assert seen == {fresh.stdout}
