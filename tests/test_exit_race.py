"""The flickering verdict: a correct program reported "wrong answer (got no output)".

The server's watch polls the child's pipes and its pidfd together, and the kernel looks at them one after
another: a program can write its output and exit between the look at its stdout pipe and the look at its pidfd.
The watch then knows the program has exited, and has read its report pipe (looked at after stdout), while its
output is still in the pipe. The server took the child's own "done" line on that report as the end and never read
the stdout pipe again: the output was lost, a correct program failed, rarely and only on a busy machine (the
server descheduled between the looks).

The kernel's order cannot be forced from outside, so this test makes the condition itself: a real server with a
real zygote and child, whose watch returns as soon as the child has exited, having read the report pipe and not
stdout (as the poll above does when it looked at stdout first, too early). Whatever the program wrote must still be in the outcome.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import asdict

import pytest

from pytest_apps.executor import Limits
from pytest_apps.executor.client import SERVER_SCRIPT

# Runs in a process of its own (the server forks its zygote: never from the pytest process), importing the executor
# as its private package, as serve.py does.
DRIVER = textwrap.dedent("""
    import json, os, select, sys, types

    package = types.ModuleType("_apps_executor")
    package.__path__ = [os.path.dirname(sys.argv[1])]
    sys.modules[package.__name__] = package
    from _apps_executor.server import Server

    class ExitSeenFirst(Server):
        def _wait(self, sp, clock, t0, lim, open_fds, probe, parking):
            # The kernel looked at the stdout pipe before the program wrote, and at the report pipe and the pidfd
            # after it had written and exited: the report is read, stdout is not.
            select.select([sp.pidfd], [], [], 10.0)
            rep = open_fds[sp.rep_r]
            while True:
                data = os.read(sp.rep_r, 1 << 16)
                if not data:
                    break
                rep += data
            del open_fds[sp.rep_r]
            return None, True

    limits = json.loads(sys.argv[2])
    r, w = os.pipe()
    server = ExitSeenFirst(r, w, limits)
    try:
        server.setup_layers(0)
        server.start_zygote()
        req = {"mode": "stdin", "filename": "prog.py", "limits": limits}
        source = sys.argv[3].encode()
        results = []
        for _ in range(3):
            res, out = server.run(req, [source, b"5\\n", b""])
            results.append({"status": res["status"], "exit_code": res.get("exit_code"), "stdout": out.decode()})
            server.settle()
        print(json.dumps(results))
    finally:
        server.cleanup()
""")


@pytest.mark.parametrize("program, expected", [
    ("print(int(input()) * 2)", "10\n"),
    ("import sys\nsys.stdout.write('x' * 60000)", "x" * 60000),  # most of what a pipe holds
], ids=["small", "most-of-a-pipe"])
def test_output_written_before_an_exit_the_watch_saw_first_is_kept(program, expected):
    limits = asdict(Limits(timeout=5.0))
    proc = subprocess.run([sys.executable, "-P", "-s", "-c", DRIVER, SERVER_SCRIPT, json.dumps(limits), program],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results == [{"status": "exited", "exit_code": 0, "stdout": expected}] * 3
