"""Running the executor as a user who is not root, from a root test session: the same hostile programs must fail
with no harm whoever runs the harness.

A root test process starts a driver that makes a mount namespace of its own, opens the folders an unprivileged user
cannot pass above the interpreter and this checkout (root's home, where pyenv and nox keep them) exactly as the
executor does for its own children (`pytest_apps.executor.users`), becomes an unprivileged uid, and runs a Python
script there: the script starts an `Executor` as that user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pytest_apps

PACKAGE_HOME = Path(pytest_apps.__file__).resolve().parents[1]  # the checkout, or site-packages where installed
USER = 65534  # nobody

DRIVER = textwrap.dedent("""
    import json, os, sys, tempfile
    from pytest_apps.executor import fence, users
    from pytest_apps.executor.isolation import read_paths

    uid, paths, script = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
    fence.unshare(fence.CLONE_NEWNS)
    fence.mount(None, "/", None, fence.MS_REC | fence.MS_PRIVATE)
    closed = users.closed_ancestors([*read_paths(), *paths])
    stage = tempfile.mkdtemp()
    os.chmod(stage, 0o755)
    users.reveal(closed, stage)
    work = tempfile.mkdtemp()
    os.chown(work, uid, uid)
    os.chdir(work)
    fence.become(uid)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(paths),
           "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8"}
    os.execve(sys.executable, [sys.executable, "-c", script], env)
""")


def run_unprivileged(script: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """`script` run by Python as an unprivileged user (skips where the session is not root: then it already is one,
    and the tests that use this run their programs directly)."""
    if os.geteuid() != 0:
        pytest.skip("the session is not root: the executor's other tests already run as an unprivileged user")
    paths = [str(PACKAGE_HOME)] + [p for p in sys.path if p and os.path.isdir(p)]
    return subprocess.run([sys.executable, "-c", DRIVER, str(USER), json.dumps(paths), textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(PACKAGE_HOME)})


def outcomes(script: str) -> dict:
    """The JSON object the script printed last."""
    proc = run_unprivileged(script)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
