"""The hostile programs of test_adversarial.py, with the harness run by a user who is not root: each fails with no
harm there too (the layers a root harness has and a user's lacks are named where a program relies on them)."""

from __future__ import annotations

import pytest

from .test_adversarial import ADOPTED_HELPER, CLONE_PARENT_ESCAPE, FIND_SYSV, FOREIGN, FORGED_END, SYSV
from .unprivileged import outcomes

SCRIPT = """
import json, os
from pytest_apps.executor import Executor, Limits, Program

programs = json.loads({programs!r})
out = {{"uid": os.getuid()}}
with Executor(Limits(timeout={timeout}, memory=1 << 30)) as ex:
    out["layers"] = ex.isolation()
    for name, src in programs.items():
        o = ex.run_stdin(Program(src, "p.py"), "")
        out[name] = {{"status": o.status, "exit_code": o.exit_code, "stdout": o.stdout, "cpu": o.cpu_time,
                      "error": o.error}}
    stats = ex._stats()
    out["zygote_children"] = open(f"/proc/{{stats['zygote']}}/task/{{stats['zygote']}}/children").read().split()
print(json.dumps(out))
"""


# the zygote and the server share this user's uid: prlimit needs nothing more
PRLIMIT = """
import os, resource
for pid in (os.getppid(), 1):
    try:
        resource.prlimit(pid, resource.RLIMIT_AS, (4096, 4096))
        print("lowered", pid)
    except OSError:
        pass
"""


def results(programs: dict[str, str], timeout: float = 1.0) -> dict:
    import json

    return outcomes(SCRIPT.format(programs=json.dumps(programs), timeout=timeout))


@pytest.fixture(scope="module")
def hostile() -> dict:
    return results({
        "forged_crash": FORGED_END + "import ctypes; ctypes.string_at(0)",
        "forged_exit": FORGED_END + "os._exit(3)",
        "adopted": ADOPTED_HELPER,
        "clone_parent": CLONE_PARENT_ESCAPE,
        "listing": "import os, time\ntime.sleep(0.4)\nprint(os.listdir('.'))",
        "sysv": SYSV,
        "find_sysv": FIND_SYSV,
        "foreign": FOREIGN,
        "prlimit": PRLIMIT,
        "after_prlimit": "x = bytearray(200 * 1024 * 1024)\nprint(len(x))",
    })


def test_the_harness_runs_unprivileged(hostile):
    assert hostile["uid"] != 0
    assert "netns" in hostile["layers"] and "own-uid" not in hostile["layers"], hostile["layers"]


def test_a_forged_end_is_no_pass(hostile):
    assert hostile["forged_crash"]["status"] == "signaled"
    assert (hostile["forged_exit"]["status"], hostile["forged_exit"]["exit_code"]) == ("exited", 3)


def test_an_adopted_helpers_cpu_counts(hostile):
    assert hostile["adopted"]["status"] == "timeout" and hostile["adopted"]["cpu"] >= 1.55, hostile["adopted"]


def test_nothing_outlives_its_test(hostile):
    assert hostile["listing"]["stdout"] == "[]\n", hostile["listing"]
    assert len(hostile["zygote_children"]) <= 3  # its spares, nothing else


def test_ipc_objects_end_with_their_test(hostile):
    """The syscall filter refuses System V IPC; without it, each child has an IPC namespace of its own."""
    if "seccomp" in hostile["layers"]:
        assert hostile["sysv"]["stdout"] == "False False False\n", hostile["sysv"]
    elif "ipc-ns" in hostile["layers"]:
        assert hostile["sysv"]["stdout"] == "True True True\n"
    else:
        pytest.skip("neither a syscall filter nor an IPC namespace per child for this user here")
    assert hostile["find_sysv"]["stdout"] == "-1 -1 -1\n"


def test_the_filter_holds_for_a_user(hostile):
    if "seccomp" not in hostile["layers"]:
        pytest.skip("no syscall filter here")
    assert hostile["foreign"]["stdout"] == "vsock:EAFNOSUPPORT\n", hostile["foreign"]
    assert hostile["prlimit"]["stdout"] == "", hostile["prlimit"]
    assert hostile["after_prlimit"]["stdout"] == f"{200 * 1024 * 1024}\n", hostile["after_prlimit"]
