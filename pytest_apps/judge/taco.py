"""TACO's verdicts (FlagOpen/TACO ``metrics/testing_util.py`` at 2ba6235, 2024-06-24), reproduced inside our
isolation: the program transforms here, the comparison is a pure function in the judging process.

TACO started from the APPS harness and changed how standard-input programs run and compare; the two decide
differently (docs/taco.md lists the cases). What TACO does, and what we do:

* Standard input. TACO inserts its import prelude (``sys``, ``itertools``, ``collections``, ``math`` names,
  ``numpy as np``, ``heapq`` ..., then ``stdin = sys.stdin`` / ``stdout = sys.stdout``) before the program's first
  line that is not an import (:func:`std_program`) and runs it as ``python prog.py`` with the input on stdin, 4 s of
  wall time per test. A test whose program exits non-zero fails (TACO then retries the same run with the input in a
  file, and then with ``input.txt``/``output.txt``; the first gives the same result, the second is not reproduced:
  a program that reads ``input.txt`` fails here). When *every* test of a problem exits with status 1 (a program that
  does not compile, a top-level ``return``), TACO runs the program again wrapped in a function ``code()`` that is
  then called (:func:`wrapped_program`); we decide per test: a test whose run exits with status 1 or does not
  compile is run again wrapped, its steps then named ``wrapped+...`` so the report counts them.
* The comparison (:func:`compare_stdin`) takes the program's stdout as *one string* where APPS had a list of lines,
  so most of the APPS cascade never applies: the stripped texts must be equal (spaces inside lines count), except
  for the quirks the string makes (``float`` of each *character*; sets of a token's characters against sets of a
  line's tokens), reproduced as steps of their own.
* Before any test of a standard-input problem TACO loads the program wrapped in ``code()`` as a module, without
  calling it, and fails the whole problem when that fails (:func:`loaded_program`, :func:`not_loaded`); the
  engine does the same in the fence, once per program.
* Call-based problems: TACO's code is APPS's (the program imported in process, the same comparisons), with TACO's
  prelude prepended (:func:`call_program`); they run and compare as the ``apps`` profile does.
* The time limit is our own-time limit (TACO's is wall time including the interpreter's start and numpy's import).
"""

from __future__ import annotations

from typing import Any

from ..core.outcome import COMPILE_ERROR, PASS, RUN_COMPILE_ERROR, RUN_EXITED, RUNTIME_ERROR, WRONG_ANSWER, Outcome, Verdict
from .toolkit import Checker, checked, cut, ended_verdict, first_difference

__all__ = ["PRELUDE", "WRAPPED", "call_program", "compare_stdin", "expected_text", "input_text", "judge_stdin",
           "loaded_program", "needs_wrapping", "not_loaded", "std_program", "wrapped_program"]

WRAPPED = "wrapped+"  # step prefix of a test decided by the function-wrapped rerun
PRELUDE = "\n".join((
    "import sys", "import time", "import itertools", "from itertools import accumulate, product, permutations, combinations",
    "import collections", "from collections import Counter, OrderedDict, deque, defaultdict, ChainMap",
    "from functools import lru_cache", "import math", "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2",
    "import fractions", "from typing import List, Tuple", "import numpy as np", "import random", "import heapq",
    "from heapq import *", "",
))
_STREAMS = "\nstdin = sys.stdin\nstdout = sys.stdout\n"
_CALL = "\ncode()\n"


def _line_kind(line: str) -> int:
    """2: a line with ``import *`` (anywhere); 1: an import line at column 0; 0: anything else."""
    if "import *" in line:
        return 2
    if line.startswith(("from ", "import ")):
        return 1
    return 0


def std_program(code: str) -> str:
    """The program TACO runs for a standard-input problem: the prelude before its first non-import line."""
    out, started = [], False
    for line in code.split("\n"):
        if _line_kind(line) == 0 and not started:
            out.append(PRELUDE + _STREAMS + line + "\n")
            started = True
        else:
            out.append(line + "\n")
    return "".join(out)


def wrapped_program(code: str) -> str:
    """TACO's fallback: the program's body inside ``def code():`` (its leading imports above it, ``import *`` lines
    hoisted), followed by a call ``code()``."""
    lines = code.split("\n")
    kinds = [_line_kind(line) for line in lines]
    star = "\n".join(line.lstrip("\t") for line, kind in zip(lines, kinds) if kind == 2)
    out, started = [], False
    for line, kind in zip(lines, kinds):
        if kind == 0 and not started:
            out.append(PRELUDE + star + _STREAMS + "def code():\n" + f"\t{line}\n")
            started = True
        elif kind < 2:
            out.append(("\t" if started else "") + line + "\n")
    return "".join(out) + _CALL


def loaded_program(code: str) -> str:
    """What TACO loads as a module before it runs any test of a standard-input problem: the wrapped program
    without its call (the prelude, the hoisted ``import *`` lines and ``def code():``). When that fails to
    compile or to import, TACO fails the whole problem (one -2 result) whatever the program would print."""
    return wrapped_program(code)[: -len(_CALL)]


def call_program(code: str) -> str:
    """A call-based program as TACO imports it: the prelude, then the program."""
    return PRELUDE + code


def input_text(raw: Any) -> str:
    """The text TACO feeds: a list of lines joined by newlines (no final newline), else the value as text."""
    return "\n".join(str(x) for x in raw) if isinstance(raw, list) else str(raw)


def expected_text(raw: Any) -> str:
    return "\n".join(str(x) for x in raw) if isinstance(raw, list) else str(raw)


def not_loaded(outcome: Outcome) -> Verdict:
    """The verdict of every test of a standard-input problem whose program TACO cannot load wrapped in ``code()``
    (`loaded_program` ended badly): TACO scores the whole problem as failing (-2) before running a test."""
    detail = (outcome.error or outcome.stderr_tail or "").strip().splitlines()
    why = detail[-1] if detail else f"exit status {outcome.exit_code}"
    return Verdict(COMPILE_ERROR, reason=f"TACO's harness cannot load the program wrapped in code() ({cut(why, 200)}); "
                                         "it fails every test of the problem", step="taco_load")


def needs_wrapping(outcome: Outcome | None) -> bool:
    """A run TACO would repeat wrapped in ``code()`` (when all of a problem's tests end so): exit status 1, which is
    also what ``python prog.py`` gives for a program that does not compile."""
    if outcome is None:
        return False
    return outcome.status == RUN_COMPILE_ERROR or (outcome.status == RUN_EXITED and outcome.exit_code == 1)


def _floats(items: Any) -> list[float]:
    return [float(x) for x in items]


def _numpy() -> Any:
    """numpy, loaded when a comparison first needs it (not for an exact answer, nor by a run of another judge)."""
    import numpy

    return numpy


def compare_stdin(got: str, expected: str) -> str | None:
    """TACO's ``compare_std_results`` on a program's stdout (one string) and the expected text: the name of the step
    that accepts, or None. Each step below is one of TACO's checks that can accept a string output."""
    if got.strip() == expected.strip():
        return "exact"
    lines = [line.strip() for line in expected.split("\n") if line]
    # float() of every character of the output against the expected lines' numbers
    try:
        mine, theirs = _floats(got), _floats(lines)
        if len(mine) == len(theirs) and _numpy().allclose(mine, theirs):
            return "chars_numeric"
    except (ValueError, TypeError, OverflowError):
        pass
    line_sets = [set(line.split()) for line in lines]
    tokens = set(token for token in got.split() if token)
    # the set of each token's characters against the set of each line's tokens
    try:
        accepted = {frozenset(t) for t in tokens} == {frozenset(s) for s in line_sets}
    except TypeError:
        accepted = False
    if accepted:
        return "char_sets"
    try:
        rounded_mine = {frozenset(round(float(c), 3) for c in t) for t in tokens}
        rounded_theirs = {frozenset(round(float(t), 3) for t in s) for s in line_sets}
        if rounded_mine == rounded_theirs:
            return "char_sets_rounded"
    except (ValueError, TypeError, OverflowError):
        pass
    return None


def judge_stdin(expected: Any, outcome: Outcome, checker: Checker | None = None, prefix: str = "") -> Verdict:
    """One standard-input test as TACO decides it; `prefix` names the run (``wrapped+`` for the fallback)."""
    details: dict[str, Any] = {}
    ended = ended_verdict(outcome, details)
    if ended is not None:
        return ended
    if outcome.exit_code != 0:
        details["got"] = cut(outcome.stdout)
        return Verdict(RUNTIME_ERROR, reason=f"exit status {outcome.exit_code}" + (
            f": {outcome.error.strip().splitlines()[-1]}" if outcome.error.strip() else ""), details=details)
    if checker is not None:
        details.update(got=cut(outcome.stdout))
        verdict = checked(checker, outcome.stdout, details)
        return Verdict(verdict.kind, step=prefix + verdict.step, reason=verdict.reason, details=verdict.details)
    text = expected_text(expected)
    step = compare_stdin(outcome.stdout, text)
    if step is not None:
        return Verdict(PASS, step=prefix + step)
    diff = first_difference(text, outcome.stdout)
    details.update(expected=cut(text), got=cut(outcome.stdout), first_diff=diff)
    return Verdict(WRONG_ANSWER, reason=diff, details=details)
