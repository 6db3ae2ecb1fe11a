"""The executor on every other CPython >= 3.11 found on this machine.

The zygote forks through glibc without Python's at-fork hooks; whether a child still behaves (threads,
deep recursion in a big-stack thread, atexit, limits, call-based runs, fresh randomness, a fork of its
own) depends on the interpreter's internals, so each interpreter found runs the same checks. Interpreters
come from PATH (python3.11, python3.12, ...) and pyenv's usual folder; none found: skipped.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_apps"

CHECKS = r'''
import sys, types
pkg = types.ModuleType("pytest_apps"); pkg.__path__ = [sys.argv[1]]; sys.modules["pytest_apps"] = pkg
from pytest_apps.executor import Executor, Limits, Program  # the executor needs nothing else of the package
P = lambda s: Program(s, "c.py")
with Executor(Limits(timeout=2, memory=1 << 30)) as ex:
    assert ex.run_stdin(P("import sys\nsys.stdout.write(sys.stdin.read())"), "hi\n").stdout == "hi\n"
    deep = ("import sys, threading\nsys.setrecursionlimit(10**6)\nthreading.stack_size(1 << 27)\n"
            "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
            "def main():\n    print(f(100000))\nt = threading.Thread(target=main)\nt.start()\nt.join()\n")
    o = ex.run_stdin(P(deep), ""); assert o.stdout == "100000\n", o
    late = "import threading, time\ndef w():\n    time.sleep(0.05); print('late')\nthreading.Thread(target=w).start()\nprint('early')"
    o = ex.run_stdin(P(late), ""); assert o.stdout == "early\nlate\n", o
    o = ex.run_stdin(P("1/0"), ""); assert o.exit_code == 1 and "ZeroDivisionError" in o.error, o
    o = ex.run_stdin(P("while True: pass"), ""); assert o.status == "timeout", o
    o = ex.run_stdin(P("x = bytearray(2 << 30)"), ""); assert o.status == "memory", o
    o = ex.run_call(Program("def f(a, b):\n    return a + b", "c.py"), "f", [1, 2]); assert o.value_json == "3", o
    seen = {ex.run_stdin(P("import random\nprint(random.random())"), "").stdout for _ in range(5)}
    assert len(seen) == 5, seen
    o = ex.run_stdin(P("import atexit\natexit.register(lambda: print('bye'))\nprint('hi')"), "")
    assert o.stdout == "hi\nbye\n", o
    fork = "import os\npid = os.fork()\nif pid == 0:\n    print('child', flush=True); os._exit(0)\nos.waitpid(pid, 0)\nprint('parent')"
    o = ex.run_stdin(P(fork), ""); assert o.stdout == "child\nparent\n", o
print("ok", sys.version.split()[0])
'''


def other_pythons() -> list[str]:
    found = {}
    names = [shutil.which(f"python3.{minor}") for minor in range(11, 20)]
    names += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[1-9]*/bin/python")))
    for exe in filter(None, names):
        try:
            version = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] >= (3, 11), sys.version)"],
                                     capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if version.startswith("True") and os.path.realpath(exe) != os.path.realpath(sys.executable):
            found.setdefault(version.split()[1], exe)
    return list(found.values())


@pytest.mark.parametrize("python", other_pythons() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no other CPython >= 3.11 on this machine"))])
def test_children_behave_on_this_python(python):
    done = subprocess.run([python, "-c", CHECKS, str(PACKAGE)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stdout + done.stderr
