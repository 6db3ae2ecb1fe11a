"""Candidates are read as Python reads source: UTF-8 or the PEP 263 coding line; what python refuses is a
compile error saying what `python prog.py` says, and a generations file names the line of a bad byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SOLUTIONS, read_report, run
from pytest_apps.candidates.decoding import SourceRefused, source_text
from pytest_apps.candidates.sources import CandidateError, load_candidates

SUM = (SOLUTIONS / "900001.py").read_bytes()  # a + b, from standard input
NOT_UTF8 = b"# r\xe9sum\xe9 of the problem\n" + SUM  # Latin-1 bytes, no coding line: python refuses the file
LATIN1 = b"# -*- coding: latin-1 -*-\n# r\xe9sum\xe9\n" + SUM  # the same, declared: python reads it


def python_says(path: Path) -> str:
    """The last line `python prog.py` prints when it refuses the file."""
    done = subprocess.run([sys.executable, str(path)], input="1 2\n", capture_output=True, text=True, timeout=60)
    return done.stderr.strip().splitlines()[-1]


def test_a_file_python_refuses_is_refused_with_pythons_own_message(tmp_path: Path):
    path = tmp_path / "prog.py"
    path.write_bytes(NOT_UTF8)
    with pytest.raises(SourceRefused) as info:
        source_text(NOT_UTF8, str(path))
    assert str(info.value) == python_says(path)
    assert str(info.value).startswith("SyntaxError: Non-UTF-8 code starting with '\\xe9' in file ")


def test_a_coding_line_and_a_bom_are_honoured_as_python_honours_them():
    assert "résumé" in source_text(LATIN1, "prog.py")
    assert source_text(b"\xef\xbb\xbf" + SUM, "prog.py") == SUM.decode()
    with pytest.raises(SourceRefused, match="^SyntaxError: encoding problem: nope "):
        source_text(b"# coding: nope\nprint(1)\n", "prog.py")


def test_a_non_utf8_candidate_is_a_compile_error_not_a_changed_program(pytester: pytest.Pytester):
    """Before, its bytes became U+FFFD and it ran (and failed as a wrong answer, or passed)."""
    folder = pytester.path / "solutions"
    folder.mkdir()
    (folder / "900001.py").write_bytes(NOT_UTF8)
    (folder / "900003.py").write_bytes(b"# -*- coding: latin-1 -*-\n# r\xe9sum\xe9\n"
                                       + (SOLUTIONS / "900003.py").read_bytes())
    result = run(pytester, "--apps-dataset=sample", "--apps-only=900001,900003", "--apps-candidates=solutions",
                 "-n", "2")
    report = {p["id"]: p for p in read_report(pytester)["problems"]}
    assert report["900003"]["verdict"] == "pass"  # declared Latin-1: read as python reads it, and run
    refused = report["900001"]
    assert {t["kind"] for t in refused["tests"]} == {"compile_error"}
    assert refused["reason"].startswith("test 0: compile_error (SyntaxError: Non-UTF-8 code starting with '\\xe9' "
                                        "in file ")
    assert refused["reason"].endswith("900001.py on line 1, but no encoding declared; see "
                                      "https://peps.python.org/pep-0263/ for details)")
    result.stdout.fnmatch_lines(["APPS problem 900001 test 0: compile error (SyntaxError: Non-UTF-8 code *"])


def test_a_bad_byte_in_a_generations_file_names_the_file_and_line(pytester: pytest.Pytester, tmp_path: Path):
    lines = [json.dumps({"problem_id": 900001, "code": "print(3)"}).encode(),
             b'{"problem_id": 900003, "code": "print(\'r\xe9sum\xe9\')"}']
    path = pytester.path / "gens.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CandidateError, match=r"gens\.jsonl:2: byte 0xe9 at column 41 is not UTF-8"):
        load_candidates(path, ["900001", "900003"])
    result = run(pytester, "--apps-dataset=sample", "--apps-candidates=gens.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gens.jsonl:2: byte 0xe9 at column 41 is not UTF-8; save the file as UTF-8*"])
