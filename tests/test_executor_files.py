"""Files placed in a program's folder before it runs and fetched from it after (SandboxFusion's `files` and
`fetch_files`), with real processes: what a program gets, what comes back, and what a hostile program cannot make
the harness read (a link to root's files, a FIFO, a file linked from elsewhere), whether the harness runs as root or
as a user who is not."""

from __future__ import annotations

import base64

import pytest

from adversarial.unprivileged import outcomes
from pytest_apps.core.outcome import RUN_EXITED
from pytest_apps.executor import MAX_FILES, Executor, Limits, Program, check_path

# Leaves one file of its own and every kind of thing a reader must not follow or open.
HOSTILE = r"""
import os
open("out.txt", "w").write("mine")
os.symlink("/etc/shadow", "shadow")
os.symlink("/etc", "etc")
os.mkfifo("fifo")
open("twice.txt", "w").write("linked")
os.link("twice.txt", "twice-too.txt")
os.mkdir("folder")
open("big.bin", "wb").write(b"x" * 5000)
print("left")
"""
HOSTILE_FETCH = ["out.txt", "shadow", "etc/shadow", "etc/passwd", "fifo", "twice.txt", "folder", "big.bin",
                 "missing.txt"]


@pytest.fixture(scope="module")
def ex():
    with Executor(Limits(timeout=5.0, memory=1 << 30, output=4096)) as e:
        yield e


def fetched(outcome) -> dict[str, bytes]:
    return {path: base64.b64decode(text) for path, text in outcome.files.items()}


def test_placed_files_are_in_the_programs_folder_and_gone_for_the_next_test(ex):
    src = ("import os\nprint(open('data/in.txt').read().strip(), open('blob.bin', 'rb').read().hex())\n"
           "print(sorted(os.listdir('.')), oct(os.stat('data/in.txt').st_mode & 0o777))")
    o = ex.run_stdin(Program(src), "", files={"data/in.txt": b"hello\n", "blob.bin": bytes([0, 255, 10])})
    assert o.status == RUN_EXITED and o.exit_code == 0, o
    assert o.stdout.splitlines()[0] == "hello 00ff0a"
    assert o.stdout.splitlines()[1].startswith("['blob.bin', 'data']")
    later = ex.run_stdin(Program("import os\nprint(os.listdir('.'))"), "")
    assert later.stdout == "[]\n"


def test_fetched_files_come_back_and_only_the_ones_asked_for(ex):
    src = "import sys\nopen('out.txt', 'w').write(sys.stdin.read().upper())\nopen('other.txt', 'w').write('no')"
    o = ex.run_stdin(Program(src), "abc", fetch=["out.txt", "missing.txt"])
    assert o.status == RUN_EXITED and o.exit_code == 0, o
    assert fetched(o) == {"out.txt": b"ABC"}
    crashed = ex.run_stdin(Program("open('out.txt', 'w').write('half')\nraise SystemExit(3)"), "",
                           fetch=["out.txt"])
    assert crashed.exit_code == 3 and fetched(crashed) == {"out.txt": b"half"}  # (a failed run's files too)
    placed = ex.run_stdin(Program("pass"), "", files={"in.txt": b"back"}, fetch=["in.txt"])
    assert fetched(placed) == {"in.txt": b"back"}


def test_no_link_fifo_or_oversized_file_is_read_for_the_program(ex):
    o = ex.run_stdin(Program(HOSTILE), "", fetch=HOSTILE_FETCH)
    assert o.status == RUN_EXITED and o.stdout == "left\n", o
    # only its own single-linked regular file within the cap (the output limit, 4096 bytes) comes back: not root's
    # shadow through a link, not /etc through a linked folder, not a FIFO (whose open would wait for a writer)
    assert fetched(o) == {"out.txt": b"mine"}


def test_files_over_the_limits_or_outside_the_folder_are_refused_before_anything_runs(ex):
    for path in ("../x", "/etc/passwd", "a//b", "a/./b", "", "a/../../b", "x" * 256, "a\0b"):
        with pytest.raises(ValueError, match="file path"):
            ex.run_stdin(Program("pass"), "", files={path: b""})
        with pytest.raises(ValueError, match="file path"):
            ex.run_stdin(Program("pass"), "", fetch=[path])
    assert check_path("a/b/c.txt") == "a/b/c.txt"
    for files in ({"a": b"", "a/b": b""}, {"a/b/c": b"", "a/b": b""}):
        with pytest.raises(ValueError, match="is also a folder of another file placed"):
            ex.run_stdin(Program("pass"), "", files=files)
    deep = ex.run_stdin(Program("print(open('a/b/c').read(), open('a/d').read())"), "",
                        files={"a/b/c": b"1", "a/d": b"2"})
    assert deep.stdout == "1 2\n"
    with pytest.raises(ValueError, match=f"at most {MAX_FILES}"):
        ex.run_stdin(Program("pass"), "", files={f"f{i}": b"" for i in range(MAX_FILES + 1)})
    with ex.limited(Limits(timeout=5.0, memory=1 << 30, file_size=1000)):
        with pytest.raises(ValueError, match="over the file-size limit of 1000 bytes"):
            ex.run_stdin(Program("pass"), "", files={"a": b"x" * 600, "b": b"y" * 600})
        assert ex.run_stdin(Program("print(len(open('a').read()))"), "", files={"a": b"x" * 1000}).stdout == "1000\n"


def test_a_harness_that_is_not_root_reads_nothing_for_the_program_either():
    script = f"""
import base64, json
from pytest_apps.executor import Executor, Limits, Program
with Executor(Limits(timeout=5.0, memory=1 << 30, output=4096)) as ex:
    o = ex.run_stdin(Program({HOSTILE!r}), "", fetch={HOSTILE_FETCH!r})
print(json.dumps({{"status": o.status, "stdout": o.stdout,
                  "files": {{k: base64.b64decode(v).decode() for k, v in o.files.items()}}}}))
"""
    out = outcomes(script)
    assert out["status"] == RUN_EXITED and out["stdout"] == "left\n", out
    assert out["files"] == {"out.txt": "mine"}
