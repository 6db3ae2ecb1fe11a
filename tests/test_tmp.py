"""A test's temporary places, with the real executor: `tempfile`, `TMPDIR`, `/tmp`, `/dev/shm` (multiprocessing's
pools, queues, locks and shared memory) and the null device work as for a normal program, private to the one test
(unseen by the next test, gone after the run), and bounded by the file-size limit (docs/isolation.md)."""

from __future__ import annotations

import json
import os
import sys
import uuid

import pytest

from pytest_apps.core.outcome import OUTPUT_LIMIT, RUN_EXITED, RUN_OUTPUT_LIMIT
from pytest_apps.executor import STYLE_APPS_HARNESS, Executor, Limits, Program
from pytest_apps.executor.server import SPARES
from pytest_apps.judge.seed import ended_verdict

FILE_SIZE = 4 << 20  # a small limit keeps the filling tests quick


def without_private_tmp(why: str) -> None:
    """Skip where the layer cannot be had; in CI, which runs as root where it can, fail: a green CI must not
    hide a layer that stopped working (programs using /tmp or shared memory would fail falsely again)."""
    if os.environ.get("CI"):
        pytest.fail(f"CI has no private /tmp: {why}")
    pytest.skip(f"no private /tmp here: {why}")


@pytest.fixture(scope="module")
def ex():
    with Executor(Limits(timeout=10.0, memory=1 << 30, file_size=FILE_SIZE)) as e:
        if "private-tmp" not in e.isolation():
            without_private_tmp(str(e.isolation_errors().get("private-tmp")))
        yield e


# every temporary place a normal program uses; prints one JSON list
USES = """
import json, os, sys, tempfile
import multiprocessing as mp
from multiprocessing import shared_memory

def main(n):
    out = [os.environ["TMPDIR"], tempfile.gettempdir()]
    with tempfile.TemporaryFile() as f:
        f.write(b"kept"); f.seek(0); out.append(f.read().decode())
    with tempfile.NamedTemporaryFile("w+", dir="/tmp") as f:
        f.write("named"); f.flush(); out.append(open(f.name).read())
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "x"), "w") as f:
        f.write("in mkdtemp")
    out.append(open(os.path.join(d, "x")).read())
    with tempfile.TemporaryDirectory() as t:
        open(os.path.join(t, "y"), "w").close()
    fd, name = tempfile.mkstemp(suffix=".txt"); os.close(fd); out.append(name.startswith("/tmp/"))
    with mp.Pool(2) as pool:
        out.append(sum(pool.map(abs, range(-n, 0))))  # (the apps style nests a program's functions)
    q = mp.Queue()
    p = mp.Process(target=q.put, args=("queued",)); p.start(); out.append(q.get()); p.join()
    lock = mp.Lock()
    with lock:
        out.append("locked")
    shm = shared_memory.SharedMemory(create=True, size=4096)
    shm.buf[:5] = b"hello"
    other = shared_memory.SharedMemory(name=shm.name)
    out.append(bytes(other.buf[:5]).decode())
    other.close(); shm.close(); shm.unlink()
    with open(os.devnull, "w") as null:
        null.write("nothing")
    out.append(open("/dev/null").read() == "")
    return out
"""
EXPECTED = ["/tmp", "/tmp", "kept", "named", "in mkdtemp", True, 55, "queued", "locked", "hello", True]


def test_a_standard_input_program_uses_its_temporary_places(ex):
    o = ex.run_stdin(Program(USES + "print(json.dumps(main(int(input()))))\n", "uses.py"), "10\n")
    assert (o.status, o.exit_code) == (RUN_EXITED, 0), o
    assert json.loads(o.stdout) == EXPECTED


def test_a_call_based_program_uses_its_temporary_places(ex):
    """The reliability guard leaves tempfile and multiprocessing the functions it takes from the program's code."""
    o = ex.run_call(Program(USES, "uses.py"), "main", [10])
    assert (o.status, o.exit_code) == (RUN_EXITED, 0), o
    assert json.loads(o.value_json) == EXPECTED


def test_the_guard_lets_tempfile_through_when_the_package_is_installed(tmp_path) -> None:
    """As a user installs it, the package lies in site-packages: the reliability guard still tells its own frames
    from a third-party library's, so tempfile cleans up after a call-based program. (Here the copy lies under
    /tmp, so the child has no private /tmp: tempfile must find its folder from TMPDIR, not from the server.)"""
    import shutil
    import subprocess

    package = tmp_path / "lib" / "site-packages" / "pytest_apps"
    here = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules[Executor.__module__].__file__)))
    shutil.copytree(here, package, ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(package.parent)!r})\n"
        "from pytest_apps.executor import Executor, Limits, Program\n"
        "import pytest_apps.executor.child as child\n"
        "assert 'site-packages' in child.__file__, child.__file__\n"
        "code = 'import tempfile, os\\ndef main():\\n    with tempfile.TemporaryDirectory() as d:\\n'"
        " '        with tempfile.NamedTemporaryFile(dir=d) as f:\\n            f.write(b\"x\")\\n'"
        " '        return os.path.isdir(d)\\n'\n"
        "with Executor(Limits(timeout=5)) as ex:\n"
        "    o = ex.run_call(Program(code, 'c.py'), 'main', [])\n"
        "print(json.dumps([o.status, o.exit_code, o.value_json, o.error]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [RUN_EXITED, 0, "true", ""]


@pytest.mark.parametrize("mode", ["stdin", "call"])
def test_the_original_harness_way_too(mode):
    with Executor(Limits(timeout=10.0, memory=2 << 30)) as e:
        if "private-tmp" not in e.isolation():
            without_private_tmp(str(e.isolation_errors().get("private-tmp")))
        if mode == "stdin":
            o = e.run_stdin(Program(USES + "print(json.dumps(main(int(input()))))\n"), "10\n", style=STYLE_APPS_HARNESS)
            assert (o.status, o.exit_code) == (RUN_EXITED, 0), o
            # the original mocks `open` to read the input, whatever the file
            assert json.loads(o.stdout) == [*EXPECTED[:3], "10\n", "10\n", *EXPECTED[5:-1], False]
        else:
            o = e.run_call(Program(USES), "main", [10], style=STYLE_APPS_HARNESS)
            assert (o.status, o.exit_code) == (RUN_EXITED, 0), o
            assert json.loads(o.value_json)["v"] == EXPECTED


LEAVE = """
import os, sys, tempfile
mark = sys.argv[0] + "-" + input()
seen = [sorted(os.listdir(p)) for p in (".", "/tmp", "/dev/shm")]
open(os.path.join("/tmp", mark), "w").write("left")
open(os.path.join("/dev/shm", "shm-" + mark), "w").write("left")
tempfile.mkdtemp(prefix=mark)
fd, _ = tempfile.mkstemp(prefix=mark)
from multiprocessing import shared_memory
shared_memory.SharedMemory(name="psm-" + mark, create=True, size=100)  # never unlinked
print(seen)
"""


def test_one_tests_files_are_not_seen_by_the_next_nor_after_the_run(tmp_path):
    mark = uuid.uuid4().hex
    with Executor(Limits(timeout=10.0)) as e:
        if "private-tmp" not in e.isolation():
            without_private_tmp(str(e.isolation_errors().get("private-tmp")))
        base = e._server.leftovers[0]
        # more tests than folders: folders (and their namespaces) are reused, emptied in between
        for i in range(2 * SPARES + 4):
            o = e.run_stdin(Program(LEAVE, "leave.py"), f"{mark}{i}\n")
            assert (o.status, o.exit_code, o.stdout) == (RUN_EXITED, 0, "[[], [], []]\n"), o
    assert not os.path.exists(base)
    for folder in ("/tmp", "/dev/shm", tempfile_dir()):
        assert not [n for n in os.listdir(folder) if mark in n], folder  # the machine's places never saw them


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


@pytest.mark.parametrize("how", [
    "f = open('/tmp/big', 'wb')\n[f.write(b'x' * (1 << 20)) for _ in range(FILE_SIZE >> 19)]",  # one file (EFBIG)
    "[open(f'/tmp/part{i}', 'wb').write(b'x' * (FILE_SIZE // 3)) for i in range(4)]",  # the folder full (ENOSPC)
    "[open(f'part{i}', 'wb').write(b'x' * (FILE_SIZE // 3)) for i in range(4)]",  # its working folder is the same
    "import tempfile\nfiles = [tempfile.TemporaryFile() for _ in range(4)]\n"
    "[f.write(b'x' * (FILE_SIZE // 3)) and f.flush() for f in files]",
    "[open(f'/tmp/{i}', 'w').close() for i in range(10 ** 6)]",  # out of inodes (ENOSPC)
    "from multiprocessing import shared_memory\n"  # pages of shared memory it cannot have (SIGBUS)
    "s = [shared_memory.SharedMemory(create=True, size=FILE_SIZE // 2) for _ in range(3)]\n"
    "[m.buf.__setitem__(slice(None), b'x' * len(m.buf)) for m in s]",
])
def test_filling_the_temporary_folder_is_the_file_size_limit(ex, how):
    before = os.statvfs("/tmp").f_bfree
    o = ex.run_stdin(Program(f"FILE_SIZE = {FILE_SIZE}\n{how}\nprint('wrote it all')\n"), "")
    assert o.status == RUN_OUTPUT_LIMIT and "file-size limit" in o.error and "wrote it all" not in o.stdout, o
    assert ended_verdict(o).kind == OUTPUT_LIMIT
    assert abs(os.statvfs("/tmp").f_bfree - before) * os.statvfs("/tmp").f_frsize < FILE_SIZE  # not on the disk
    # the next test has the whole folder again
    o = ex.run_stdin(Program(f"open('/tmp/again', 'wb').write(b'x' * {FILE_SIZE - 65536})\nprint('ok')"), "")
    assert (o.status, o.stdout) == (RUN_EXITED, "ok\n"), o


def test_a_program_that_handles_a_full_folder_goes_on(ex):
    src = f"""
try:
    with open('/tmp/big', 'wb') as f:
        for _ in range({FILE_SIZE >> 19}):
            f.write(b'x' * (1 << 20))
except OSError as e:
    print('full:', e.errno)
"""
    o = ex.run_stdin(Program(src), "")
    assert (o.status, o.exit_code, o.stdout) == (RUN_EXITED, 0, "full: 27\n"), o


def test_no_private_tmp_where_it_would_hide_the_interpreter_or_its_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """A virtual environment or a checkout under /tmp (as a CI clone or a nox session may be): a private /tmp
    would hide its modules from the child, so the layer is left out, with the reason. A folder on PYTHONPATH
    (a scratch project under /tmp, as pytester's runs have) is not the interpreter's: the layer stays."""
    from pytest_apps.executor.isolation import hidden_by_private_tmp

    monkeypatch.setattr(sys, "path", [*sys.path, "/tmp/venv/lib/python3.11/site-packages"])
    assert hidden_by_private_tmp().startswith("/tmp/")
    monkeypatch.setattr(sys, "path", ["/tmp/scratch", "/usr/lib/python3.11"])
    monkeypatch.setattr(sys, "prefix", "/usr")
    monkeypatch.setattr(sys, "exec_prefix", "/usr")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    import pytest_apps.executor.isolation as isolation

    if os.path.realpath(isolation.__file__).startswith(("/tmp/", "/dev/shm/")):
        pytest.skip("this checkout lies under /tmp: the layer is left out whatever the path")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert hidden_by_private_tmp() == "/tmp/scratch"  # on the module path by other means: it would be hidden
    monkeypatch.setenv("PYTHONPATH", "/tmp/scratch")
    assert hidden_by_private_tmp() == ""
