"""Hostile candidates must score nothing and leave the machine as it was; correct-but-tricky programs
(that in-process harnesses fail) must produce the right output.

The judge is written elsewhere, so these assert on the `Outcome` directly: what the program could have
passed with (stdout / value), its status, and the state of the machine afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import textwrap

import pytest

from pytest_apps.executor.server import SPARES
from pytest_apps.executor import Executor, Limits, Program
from pytest_apps.core.outcome import RUN_EXITED, RUN_MEMORY, RUN_OUTPUT_LIMIT, RUN_SIGNALED, RUN_TIMEOUT

SECRET = "EXPECTED-OUTPUT-7f3a9c"  # an "expected output" the child must never be able to find


@pytest.fixture(scope="module")
def ex():
    with Executor(Limits(timeout=1.5, memory=1 << 30, output=1 << 20)) as e:
        yield e


@pytest.fixture
def sentinel(tmp_path):
    path = tmp_path / "expected_outputs.json"
    path.write_text(json.dumps({"outputs": [SECRET]}))
    return path


def run(ex, src: str, stdin: str = "", name: str = "cand.py"):
    return ex.run_stdin(Program(textwrap.dedent(src), name), stdin)


def children_of(pid: int) -> list[int]:
    kids = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            kids += [int(x) for x in f.read().split()]
    return kids  # zombies included


def server_descendants(ex) -> list[int]:
    """Processes below the server other than its zygote and the zygote's idle spares, once the server
    has cleaned up after the previous run."""
    stats = ex._stats()  # a round trip: the server has waited for the last child and swept
    stray = [k for k in children_of(stats["pid"]) if k != stats["zygote"]]
    spares = [k for k in children_of(stats["zygote"]) if alive(k)]  # an exited child waits to be reaped
    for k in spares:  # at most SPARES children (idle spares) may exist, and they must have no children
        stray += children_of(k)
    if len(spares) > SPARES:
        stray += spares
    return stray


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# -- hostile ------------------------------------------------------------------------------------------


def test_always_equal_object(ex):
    src = "class Eq:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n" \
          "def solve(x):\n    return Eq()\n"
    o = ex.run_call(Program(src, "c.py"), "solve", [1])
    assert o.value_json is None and "not JSON-serialisable" in o.error
    src2 = "class L(list):\n    def __eq__(self, o): return True\ndef solve(x):\n    return L([0])\n"
    o = ex.run_call(Program(src2, "c.py"), "solve", [1])
    assert json.loads(o.value_json) == [0]  # only plain data crosses: the __eq__ is gone


def test_walk_the_stack_and_heap(ex):
    src = """
    import gc, sys
    found = []
    f = sys._getframe()
    while f is not None:
        found += [repr(v) for v in f.f_locals.values()]
        f = f.f_back
    for o in gc.get_objects():
        if isinstance(o, dict):
            found += [v for v in o.values() if isinstance(v, str)]
        elif isinstance(o, (list, tuple)):
            found += [v for v in o if isinstance(v, str)]
    secret = "".join(["EXPECTED-OUTPUT-", "7f3a9c"])  # built at run time: nowhere in this source
    print(any(secret in s for s in found))
    print("_pytest" in sys.modules, "pytest_apps" in sys.modules)
    """
    o = run(ex, src)
    assert o.stdout == "False\nFalse False\n", o
    o = ex.run_call(Program("import sys\ndef f():\n    return [repr(sys._getframe(1).f_locals)]", "c.py"), "f", [])
    assert SECRET not in (o.value_json or "")


def test_read_files_outside(ex, sentinel):
    src = f"""
    import os, glob
    got = []
    for p in [{str(sentinel)!r}, "/work/shared/apps-data/apps_test_rows.jsonl", "/work/main/pyproject.toml",
              "/proc/1/environ", "/proc/%d/environ" % os.getppid(), "/proc/%d/cmdline" % os.getppid(),
              os.path.expanduser("~/.cache/huggingface/token"), "/root/.bash_history"]:
        try:
            with open(p) as f:
                got.append(p + ":" + f.read(100))
        except OSError:
            pass
    got += glob.glob("/work/*") + glob.glob("/tmp/*") + glob.glob("/root/*")
    print(got)
    print(sorted(os.environ))
    """
    o = run(ex, src)
    assert o.status == RUN_EXITED and o.exit_code == 0, o
    first, env = o.stdout.splitlines()
    assert first == "[]", first
    assert "APPS" not in env and "PYTEST" not in env


def test_ignore_sigterm_and_alarm(ex):
    src = """
    import signal
    signal.alarm(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    while True:
        pass
    """
    o = run(ex, src)
    # stopped at the end of the band above the limit (1.5 s x 1.15) of its own time, however busy the machine
    assert o.status == RUN_TIMEOUT and 1.72 <= o.own_time < 2.2
    assert server_descendants(ex) == []


def test_fork_bomb(ex):
    src = """
    import os
    print("start", flush=True)
    while True:
        try:
            os.fork()
        except OSError:
            pass
    """
    o = run(ex, src)
    assert o.status == RUN_TIMEOUT
    assert server_descendants(ex) == []


def test_daemonised_grandchild(ex):
    src = """
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            print(os.getpid(), flush=True)
            os.close(0); os.close(1); os.close(2)
            time.sleep(60)
        os._exit(0)
    time.sleep(0.2)
    """
    o = run(ex, src)
    pid = int(o.stdout.split()[0])
    assert server_descendants(ex) == []
    assert not alive(pid)


def test_daemon_keeping_stdout_open(ex):
    src = """
    import os, time
    if os.fork() == 0:
        os.setsid()
        time.sleep(60)
    print("parent done")
    """
    o = run(ex, src)
    assert o.stdout == "parent done\n" and o.wall_time < 1.5
    assert server_descendants(ex) == []


def test_ten_gigabytes_of_output(ex):
    o = run(ex, "import sys\nblock = 'x' * (1 << 20)\nfor _ in range(10 * 1024):\n    sys.stdout.write(block)\n")
    assert o.status == RUN_OUTPUT_LIMIT and len(o.stdout) <= (1 << 20)


def test_memory_bomb():
    # page faults are slow on a shared VM: a small address-space cap keeps the bomb short
    with Executor(Limits(timeout=8, memory=256 << 20)) as small:
        o = run(small, "a = []\nwhile True:\n    a.append(bytearray(1 << 24))\n")
        assert o.status == RUN_MEMORY, o
        o = run(small, "a = 'x' * (1 << 34)")
        assert o.status == RUN_MEMORY, o
        assert server_descendants(small) == []


def test_write_and_delete_outside(ex, sentinel):
    before = sentinel.read_text()
    src = f"""
    import os, shutil
    done = []
    for p in ["/tmp/apps-pwned.txt", {str(sentinel)!r}, "/work/main/apps-pwned.txt", "/root/apps-pwned"]:
        try:
            with open(p, "w") as f:
                f.write("pwned")
            done.append("wrote " + p)
        except OSError:
            pass
    for f in (lambda: os.remove({str(sentinel)!r}), lambda: shutil.rmtree({str(sentinel.parent)!r}),
              lambda: os.rename({str(sentinel)!r}, "x"), lambda: os.symlink({str(sentinel)!r}, "link")):
        try:
            f()
            done.append("did")
        except OSError:
            pass
    print(done)
    """
    o = run(ex, src)
    # a symlink inside its own dir is harmless; with the private-tmp layer /tmp is the test's own folder
    private = "['wrote /tmp/apps-pwned.txt', " if "private-tmp" in ex.isolation() else "["
    assert o.stdout in (private[:-2] + "]\n", private + "'did']\n"), o
    assert sentinel.read_text() == before
    for p in ("/tmp/apps-pwned.txt", "/work/main/apps-pwned.txt", "/root/apps-pwned"):
        assert not os.path.exists(p)


def test_kill_parent_and_everyone(ex):
    stats = ex._stats()
    if not any(layer.startswith("landlock-abi") and int(layer[12:]) >= 6 for layer in ex.isolation()):
        pytest.skip("needs Landlock signal scoping (ABI >= 6) to be safe to run")
    src = f"""
    import os, signal
    for target in (os.getppid(), {stats["pid"]}, 1, -1):
        try:
            os.kill(target, signal.SIGKILL)
            print("killed", target)
        except OSError as e:
            print("denied", target)
    """
    o = run(ex, src)
    assert "killed" not in o.stdout.replace("killed -1", ""), o
    after = ex._stats()
    assert alive(stats["pid"]) and alive(stats["zygote"]) and (after["pid"], after["zygote"]) == (
        stats["pid"], stats["zygote"])
    assert len([k for k in children_of(after["zygote"]) if alive(k)]) == SPARES  # kill(-1) spared them too
    assert ex.run_stdin(Program("print(1)", "c.py"), "").stdout == "1\n"


def test_no_way_into_the_next_tests_directory(ex):
    if not any(layer.startswith("landlock-abi") for layer in ex.isolation()):
        pytest.skip("needs Landlock")
    base = ex._leftovers[0]  # where the server keeps the folders (with the private-tmp layer, out of reach)
    src = f"""
    import os
    here = os.getcwd()
    open("/tmp/planted", "w").close()
    planted = []
    for k in range(1, 16):
        for path in (f"{base}/run{{k}}/planted", f"{base}/run{{k}}"):
            try:
                if path.endswith("planted"):
                    open(path, "w").close()
                else:
                    os.listdir(path)
                planted.append(path)
            except OSError:
                pass
    print(here, planted)
    print(os.listdir(".."))
    """
    if "private-tmp" not in ex.isolation():
        src = src.replace('open("/tmp/planted", "w")', 'open("planted", "w")')
    o = run(ex, src)
    assert o.status == RUN_EXITED and o.exit_code == 1 and "PermissionError" in o.stderr_tail, o
    here, planted = o.stdout.split(" ", 1)  # listing its parent folder was denied; its own folder is open
    assert planted == ("[]\n" if here == "/tmp" else f"['{here}/planted', '{here}']\n"), o
    for _ in range(3):  # nothing planted is seen by the next tests
        assert run(ex, "import os\nprint(os.listdir('.'))").stdout == "[]\n"


def test_a_mess_left_behind_is_gone_before_the_folder_serves_again(ex):
    """Work folders are reused (with their Landlock rulesets); whatever a program leaves there is removed,
    without following its symlinks, before another test gets the folder."""
    etc_mode = os.stat("/etc").st_mode
    mess = """
    import os
    os.symlink("/etc", "etc")
    os.symlink("/etc/passwd", "passwd")
    os.makedirs("deep/er/est")
    open("deep/er/est/f", "w").write("x")
    os.mkdir("locked")
    open("locked/f", "w").write("x")
    os.symlink("/etc", "locked/etc")
    os.chmod("locked", 0)
    os.mkfifo("fifo")
    open(".hidden", "w").write("x")
    os.chmod(".", 0o500)
    print(len(os.listdir(".")))
    """
    for _ in range(3):
        assert run(ex, mess).stdout == "6\n"
    seen = [run(ex, "import os\nprint(os.getcwd(), os.listdir('.'))").stdout.split() for _ in range(2 * SPARES + 4)]
    assert all(listing == "[]" for _, listing in seen), seen
    assert len({cwd for cwd, _ in seen}) < len(seen)  # folders were indeed reused
    assert os.stat("/etc").st_mode == etc_mode and os.path.exists("/etc/passwd")


def test_exit_before_printing(ex):
    o = run(ex, "import os\nos._exit(0)\nprint(42)")
    assert (o.status, o.exit_code, o.stdout) == (RUN_EXITED, 0, "")
    o = run(ex, "import sys\nsys.exit(0)\nprint(42)")
    assert (o.status, o.exit_code, o.stdout) == (RUN_EXITED, 0, "")
    o = ex.run_call(Program("import os\ndef f():\n    os._exit(0)", "c.py"), "f", [])
    assert o.value_json is None


def test_close_stdout(ex):
    o = run(ex, "import os, sys\nos.close(1)\nprint(42)")
    assert o.stdout == "" and o.exit_code != 0
    o = run(ex, "import sys\nsys.stdout.close()\nprint(42)")
    assert o.stdout == "" and o.exit_code != 0


def test_segfault(ex):
    o = run(ex, "import ctypes\nctypes.string_at(0)")
    assert o.status == RUN_SIGNALED and o.signal == signal.SIGSEGV


FORGED_END = '''
import os, sys
print(42)
sys.stdout.flush()
os.write(3, b'{"kind": "done", "status": 0, "cpu": 0.0, "maxrss": 0}\\n')
'''


@pytest.mark.parametrize("then, status", [
    ("import ctypes; ctypes.string_at(0)", RUN_SIGNALED),  # a crash
    ("os.kill(os.getpid(), 9)", RUN_SIGNALED),
    ("os._exit(3)", RUN_EXITED),
    ("[os.close(fd) for fd in (0, 1, 2, 3)]\nwhile True: pass", RUN_TIMEOUT),  # every pipe closed, still running
], ids=["segfault", "sigkill", "exit-3", "closed-pipes-then-spin"])
def test_a_program_cannot_report_its_own_end(ex, then, status):
    """The report channel (fd 3) is the child's, and so the program's: a "done, status 0" line written there
    before a crash, a failing exit or an endless loop must not make the run a clean exit."""
    o = run(ex, FORGED_END + then)
    assert o.status == status, (o.status, o.error)
    assert o.stdout == "42\n"
    if status == RUN_EXITED:
        assert o.exit_code == 3
    assert not (o.status == RUN_EXITED and o.exit_code == 0)


def test_no_pytest_objects_to_patch(ex):
    src = """
    import sys
    print([m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest", "xdist", "pytest_apps", "pluggy")])
    """
    assert run(ex, src).stdout == "[]\n"


def test_network_is_closed(ex):
    src = """
    import socket
    for addr in (("1.1.1.1", 80), ("127.0.0.1", 22)):
        try:
            socket.create_connection(addr, timeout=0.5)
            print("connected", addr)
        except OSError:
            pass
    try:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print("listening")
    except OSError:
        pass
    """
    assert run(ex, src).stdout == ""


# -- correct programs that in-process harnesses fail ---------------------------------------------------

TRICKY = {
    "main_guard": ("def main():\n    print(int(input()) + 1)\nif __name__ == '__main__':\n    main()\n", "1\n", "2\n"),
    "exit": ("print('a')\nexit()\nprint('b')\n", "", "a\n"),
    "sys_exit_zero_after_output": ("import sys\nprint(7)\nsys.exit(0)\n", "", "7\n"),
    "global": ("t = 0\ndef add(x):\n    global t\n    t += x\nfor v in input().split():\n    add(int(v))\n"
               "print(t)\n", "1 2 3\n", "6\n"),
    "open0": ("data = open(0).read().split()\nprint(sum(map(int, data)))\n", "1 2\n3\n", "6\n"),
    "stdin_buffer": ("import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))\n", "4 5\n", "9\n"),
    "from_sys_import_stdout": ("from sys import stdout, stdin\nstdout.write(stdin.readline().upper())\n", "ab\n",
                               "AB\n"),
    "input_then_readline": ("import sys\na = input()\nb = sys.stdin.readline()\nc = input()\nprint(a, b.strip(), c)\n",
                            "1\n2\n3\n", "1 2 3\n"),
    "ten_thousand_digits": ("n = int(input())\ns = str(n * n)\nprint(len(s))\n", "9" * 10000 + "\n", "20000\n"),
    "deep_recursion_thread": (
        "import sys, threading\nsys.setrecursionlimit(1 << 20)\nthreading.stack_size(1 << 27)\n"
        "def d(n):\n    return n if n == 0 else d(n - 1)\n"
        "def main():\n    print(d(200000))\nt = threading.Thread(target=main)\nt.start()\nt.join()\n", "", "0\n"),
    "print_flush_end": ("print(1, end='')\n", "", "1"),
    "unicode": ("print(input()[::-1])\n", "héllo→\n", "→olléh\n"),
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_correct_program(ex, name):
    src, stdin, expected = TRICKY[name]
    o = ex.run_stdin(Program(src, f"{name}.py"), stdin)
    assert (o.status, o.exit_code, o.stdout) == (RUN_EXITED, 0, expected), o


# -- a root harness: the children are not root ------------------------------------------------------------------------

def needs_own_uid(ex) -> None:
    if "own-uid" not in ex.isolation():
        pytest.skip(f"the children keep the harness's uid here ({os.geteuid()}): "
                    f"{ex.isolation_errors().get('own-uid', 'not root')}")


def test_root_secrets_stay_unread(ex, tmp_path):
    """Files only root may read (the shadow file, ssh host keys, a 0600 file of root's) never reach the program, so
    never the report's "got" text either."""
    needs_own_uid(ex)
    secret = tmp_path / "root-only"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    os.chmod(tmp_path, 0o755)  # a folder anyone may pass: only the file's own mode keeps it
    src = f"""
    import glob
    for path in ["/etc/shadow", "/etc/gshadow", {str(secret)!r}, *glob.glob("/etc/ssh/ssh_host_*_key"),
                 *glob.glob("/root/.ssh/*"), "/root/.bash_history"]:
        try:
            with open(path) as f:
                print(path, f.read(200))
        except OSError as e:
            pass
    """
    o = run(ex, src)
    assert (o.status, o.exit_code, o.stdout) == (RUN_EXITED, 0, ""), o


def test_the_harness_limits_cannot_be_lowered(ex):
    """prlimit needs only the same uid: a program that lowers the zygote's and the server's hard limits would fail the
    correct programs after it."""
    needs_own_uid(ex)
    stats = ex._stats()
    src = f"""
    import resource
    for pid in ({stats["zygote"]}, {stats["pid"]}):
        for res in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC):
            try:
                resource.prlimit(pid, res, (4096, 4096))
                print("lowered", pid, res)
            except OSError:
                pass
    """
    assert run(ex, src).stdout == ""
    for pid in (stats["zygote"], stats["pid"]):
        with open(f"/proc/{pid}/limits") as f:
            assert "4096                 4096" not in f.read()
    big = run(ex, "x = bytearray(200 * 1024 * 1024)\nprint(len(x))")
    assert (big.status, big.stdout) == (RUN_EXITED, f"{200 * 1024 * 1024}\n"), big


SYSV = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT = 0o1000
made = [libc.shmget(0x5e7a, 4096, IPC_CREAT | 0o666), libc.msgget(0x5e7a, IPC_CREAT | 0o666),
        libc.semget(0x5e7a, 1, IPC_CREAT | 0o666)]
print(*[m >= 0 for m in made])
"""
FIND_SYSV = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print(libc.shmget(0x5e7a, 0, 0), libc.msgget(0x5e7a, 0), libc.semget(0x5e7a, 0, 0))
"""


def sysv_keys() -> set[str]:
    keys = set()
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                keys |= {f"{kind}:{line.split()[0]}" for line in f.readlines()[1:]}
        except OSError:
            pass
    return keys


def test_ipc_objects_end_with_their_test(ex):
    """System V shared memory, message queues and semaphores made by a program are neither on the machine after its
    test nor found by the next test: the syscall filter refuses them, or, without it, each child has an IPC
    namespace of its own."""
    layers = ex.isolation()
    if "seccomp" in layers:
        expected = "False False False\n"
        assert "ipc-ns" not in layers and "syscall filter" in ex.isolation_errors()["ipc-ns"]
    elif "ipc-ns" in layers:
        expected = "True True True\n"
    else:
        pytest.skip(f"no IPC namespace per child here: {ex.isolation_errors().get('ipc-ns')}")
    before = sysv_keys()
    o = run(ex, SYSV)
    assert o.stdout == expected, o
    assert sysv_keys() == before
    assert run(ex, FIND_SYSV).stdout == "-1 -1 -1\n"


def test_a_root_harness_with_namespaces_runs_its_children_as_their_own_user(ex):
    """Where the harness is root and has a mount namespace of its own (as on CI's machines and training nodes), the
    own-uid layer is on; it turning itself off there would quietly bring back every root-only hole above."""
    layers = ex.isolation()
    if os.geteuid() != 0 or "private-tmp" not in layers:
        pytest.skip("not a root harness with a mount namespace of its own")
    assert "own-uid" in layers, ex.isolation_errors()
    v1 = all(os.path.isdir(f"/sys/fs/cgroup/{c}") for c in ("freezer", "cpuacct"))
    if v1 or os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        assert "cgroup-per-test" in layers, ex.isolation_errors()
    uid, euid, groups = run(ex, "import os\nprint(os.getuid(), os.geteuid(), os.getgroups())").stdout.split(maxsplit=2)
    assert (uid, groups) == (euid, "[]\n") and uid != "0"


CLONE_PARENT_ESCAPE = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
CLONE_PARENT, SIGCHLD = 0x8000, 17
pid = libc.syscall(56, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)  # clone(2): a sibling of ours, the zygote's child
if pid == 0:
    os.setsid()
    time.sleep(0.3)  # past the end of its test
    for i in range(3000):
        try:
            with open(f"junk{i}", "w") as f:
                f.write("x" * 4096)
        except OSError:
            pass
        time.sleep(0.001)
    os._exit(0)
print(pid if pid > 0 else -ctypes.get_errno())
"""


def test_a_process_made_the_zygotes_child_does_not_outlive_its_test(ex):
    """clone(CLONE_PARENT) makes the new process a child of the program's parent (the zygote), which the server's
    sweep of its own orphans never met: it lived on through later tests and filled the reused work folders."""
    o = run(ex, CLONE_PARENT_ESCAPE)
    assert o.status == RUN_EXITED, o
    pid = int(o.stdout)
    assert server_descendants(ex) == []
    if pid > 0:
        assert not alive(pid)
    seen = [run(ex, "import os, time\ntime.sleep(0.1)\nprint(os.listdir('.'))").stdout for _ in range(2 * SPARES + 2)]
    assert seen == ["[]\n"] * len(seen)


# -- CPU the sampler would not see ----------------------------------------------------------------------------------

SHORT_LIVED = """
import os, time
def burn(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
for _ in range(40):  # two at a time, 20 ms each, reaped at once: 1.6 s of CPU in about 0.8 s on two CPUs
    kids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            burn(0.02)
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)
print("done")
"""
ADOPTED_HELPER = """
import os, time
def burn(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # adopted by the harness once its parent is gone: not below the program any more
        burn(0.8)
        os.write(w, b"half")
        os._exit(0)
    os._exit(0)
burn(0.8)
print(os.read(r, 4).decode())
"""


def test_cpu_of_short_lived_children_is_counted():
    """Children that live 20 ms and are reaped at once: sampled /proc figures saw a fraction of their CPU, so on
    two CPUs a program needing 5.2 s of CPU passed a 4 s limit. Their CPU is the program's, to the millisecond."""
    # (a limit far above the work: a busy machine stretches the wall time of 80 forks waited for, which counts)
    with Executor(Limits(timeout=20.0, memory=1 << 30)) as roomy:
        o = run(roomy, SHORT_LIVED)
    assert (o.status, o.stdout) == (RUN_EXITED, "done\n"), o
    assert 1.55 <= o.cpu_time < 2.5, o


def test_cpu_of_an_adopted_helper_is_counted():
    """A double-forked helper is adopted by the harness (a child subreaper), out of the program's tree: its 0.8 s
    beside the program's own 0.8 s made 1.6 s of CPU under a 1 s limit, scored a pass."""
    with Executor(Limits(timeout=1.0, memory=1 << 30)) as small:
        o = run(small, ADOPTED_HELPER)
    assert o.status == RUN_TIMEOUT, o
    assert o.cpu_time >= 1.0, o  # (stopped at its limit where its cgroup counts as it runs; else all 1.6 s of it)


# -- what the syscall filter refuses ------------------------------------------------------------------------------

def needs_seccomp(ex) -> None:
    if "seccomp" not in ex.isolation():
        pytest.skip(f"no syscall filter here: {ex.isolation_errors().get('seccomp')}")


def key_users() -> str:
    try:
        with open("/proc/key-users") as f:
            return f.read()
    except OSError:
        return ""


FOREIGN = """
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
got = []
# a key in the user's keyring outlives the run; add_key(2), keyctl(2)
if libc.syscall(248, b"user", b"pytest-apps-key", b"secret", 6, -4) >= 0:  # KEY_SPEC_USER_KEYRING
    got.append("key")
if libc.syscall(250, 1, -4, 0, 0, 0) >= 0:  # KEYCTL_JOIN_SESSION_KEYRING... of the user keyring
    got.append("keyctl")
try:  # a channel to the machine's host
    s = socket.socket(40, socket.SOCK_STREAM)  # AF_VSOCK
    s.settimeout(0.5)
    s.connect((2, 1024))  # the host's CID
    got.append("vsock-connected")
except OSError as e:
    got.append(f"vsock:{errno.errorcode.get(e.errno)}")
try:
    socket.socket(17, socket.SOCK_RAW)  # AF_PACKET
    got.append("packet")
except OSError:
    pass
try:
    os.sched_setaffinity(0, range(os.cpu_count()))
    got.append("affinity")
except OSError:
    pass
print(*got)
"""


def test_keys_foreign_sockets_and_a_wider_affinity_are_refused(ex):
    """Keys in the kernel's keyrings outlive the run; a vsock socket is a channel to the machine's host; a wider CPU
    affinity takes CPUs from the other tests. The program gets an error for each, and nothing is left behind."""
    needs_seccomp(ex)
    before = key_users()
    o = run(ex, FOREIGN)
    assert (o.status, o.stdout) == (RUN_EXITED, "vsock:EAFNOSUPPORT\n"), o
    assert key_users() == before


NAMESPACES = """
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
got = []
for name, nr, args in (("setns", 308, (3, 0)), ("unshare", 272, (0x20000,)), ("shmget", 29, (0, 4096, 0o1000))):
    r = libc.syscall(nr, *args)
    got.append(f"{name}:{errno.errorcode.get(ctypes.get_errno()) if r < 0 else 'ok'}")
print(*got)
"""


def test_a_program_gets_the_whole_filter(ex):
    """The zygote's part of the filter lets its children's set-up enter their folder's mount namespace; each child's
    own part, stacked on it before its program runs, refuses that too: the program is under both."""
    needs_seccomp(ex)
    o = run(ex, NAMESPACES)
    assert o.stdout == "setns:EPERM unshare:EPERM shmget:EPERM\n", o


def test_the_filter_keeps_what_programs_use(ex):
    """Threads, processes, pipes, local sockets and a program's own limits work under the filter."""
    needs_seccomp(ex)
    src = """
    import multiprocessing, os, resource, socket, subprocess, sys, threading
    if __name__ == "__main__":
        t = threading.Thread(target=lambda: None); t.start(); t.join()
        with multiprocessing.Pool(2) as pool:
            assert pool.map(abs, [-1, -2]) == [1, 2]
        assert subprocess.run([sys.executable, "-c", "print(5)"], capture_output=True).stdout == b"5\\n"
        a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
        socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
        print("ok", len(os.sched_getaffinity(0)) >= 1)
    """
    o = run(ex, src)
    assert (o.status, o.stdout) == (RUN_EXITED, "ok True\n"), o
