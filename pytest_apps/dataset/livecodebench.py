"""The LiveCodeBench entry (`livecodebench/code_generation_lite`, Jain et al. 2024): its row schema, its releases,
and how a row becomes a problem.

A row holds ``question_title``, ``question_content``, ``platform`` (leetcode, codeforces, atcoder),
``question_id``, ``contest_id``, ``contest_date`` (ISO), ``starter_code``, ``difficulty`` (easy, medium, hard),
``public_test_cases`` (a JSON list of ``{"input", "output", "testtype"}``), ``private_test_cases`` (the same list as
JSON, or that JSON text pickled, zlib-compressed and base64-encoded) and ``metadata`` (JSON; ``func_name`` names the
``class Solution`` method of a LeetCode problem).

* Tests are public then private, as LiveCodeBench's evaluator runs them. A ``stdin`` test is text in, text out; a
  ``functional`` test's input is one JSON value per line (the method's arguments) and its output one JSON value.
* The private tests are decoded **without unpickling**: :func:`decode_private` walks the pickle's opcodes
  (`pickletools`) and accepts only a pickle that is one plain string, the JSON text; anything else (another type,
  a global, a call) skips the row with the reason. Nothing of the data is ever executed.
* Releases are files of the repository: ``release_vN`` is ``test.jsonl`` .. ``testN.jsonl``, ``vN`` the file of
  release N alone, ``vI_vJ`` files I to J, ``release_latest`` all of them (:func:`release_splits`).
* Tiers are the difficulty; the platform is the problem's tag (``--apps-tag leetcode``); the contest date is the
  problem's date (``--apps-since`` / ``--apps-until``).
* LiveCodeBench's evaluator gives every test 6 seconds: that is each problem's own time limit
  (``--apps-limits row``).

Pure functions of a row's plain values; no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
import pickletools
import re
import zlib
from collections.abc import Collection
from typing import Any

from ..core import jsontext
from .apps import make_problem, marker
from .model import Cases, Problem, SkippedRow

TIERS = ("easy", "medium", "hard")
FIX = ("give it public_test_cases (and private_test_cases) as LiveCodeBench stores them: a JSON list of tests with "
       "input, output and testtype")  # what a refused row must hold
COLUMNS = ("question_title", "question_content", "platform", "question_id", "contest_id", "contest_date",
           "starter_code", "difficulty", "public_test_cases", "private_test_cases", "metadata")
REQUIRED = ("question_id", "question_content", "public_test_cases")
TIME_LIMIT = 6.0  # seconds per test: lcb_runner's --timeout default
RELEASES = 6  # test.jsonl .. test6.jsonl
LATEST = f"release_v{RELEASES}"
_MAX_DECODED = 1 << 31  # bytes a private-test blob may inflate to (the largest LCB rows are a few hundred MB)
# the opcodes of a pickle that is one string and nothing else (protocols 0-5; memo writes are harmless)
_STRING_OPS = {"UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
_FRAMING_OPS = {"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"}


def marks(columns: Collection[str]) -> bool:
    return "question_content" in columns or "public_test_cases" in columns


def file_of(release: int) -> str:
    return "test" if release == 1 else f"test{release}"


def release_splits(release: str) -> list[str]:
    """The split files (``test``, ``test2``, ...) a release name reads; ValueError naming the known ones."""
    name = release.strip()
    if name == "release_latest":
        numbers = range(1, RELEASES + 1)
    elif m := re.fullmatch(r"release_v(\d+)", name):
        numbers = range(1, int(m.group(1)) + 1)
    elif m := re.fullmatch(r"v(\d+)(?:_v(\d+))?", name):
        numbers = range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1)
    else:
        numbers = range(0)
    if not numbers or not all(1 <= n <= RELEASES for n in numbers):
        raise ValueError(f"--apps-release={release}: not a LiveCodeBench release; give release_v1 .. {LATEST}, "
                         f"release_latest, v1 .. v{RELEASES} (one release's problems) or vI_vJ (releases I to J)")
    return [file_of(n) for n in numbers]


def normalize(obj: dict, where: str, line: int | None = None) -> dict:
    """The row's columns as text (a decoded list or dict back to JSON), or a marker naming a missing field."""
    missing = [f for f in REQUIRED if obj.get(f) in (None, "")]
    if missing:
        held = ", ".join(sorted(k for k, v in obj.items() if v not in (None, ""))) or "nothing"
        return marker(f"{where}: a LiveCodeBench row without {', '.join(missing)} (it holds {held})", line)
    row: dict[str, Any] = {}
    for key in COLUMNS:
        value = obj.get(key)
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        row[key] = "" if value is None else str(value)
    return row


def problem_id(row: dict[str, Any], index: int) -> str:
    return str(row.get("question_id") or index)


def tier(row: dict[str, Any]) -> str:
    return str(row.get("difficulty") or "").strip().lower()


def date(row: dict[str, Any]) -> str:
    return str(row.get("contest_date") or "")


def solutions(row: dict[str, Any]) -> Any:
    return None  # LiveCodeBench publishes no reference programs


def row_of_tests(tests: dict[str, Any], pid: str) -> dict[str, Any]:
    """A row of only tests, from an ``input_output``-shaped dict (``inputs``, ``outputs``, optional ``fn_name``: what a
    trainer's ground truth holds): a functional test's input as LiveCodeBench's text (one JSON value per line) or as
    the list of arguments, its output as JSON text or the value; a stdin test's input and output as text. ValueError
    says what does not fit."""
    inputs, outputs, fn_name = tests.get("inputs"), tests.get("outputs"), tests.get("fn_name") or None
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ValueError(f"the tests need equal-length inputs and outputs lists (they hold "
                         f"{len(inputs) if isinstance(inputs, list) else 'no list'} and "
                         f"{len(outputs) if isinstance(outputs, list) else 'no list'})")
    cases = [{"input": _functional_input(i) if fn_name else i, "output": o if isinstance(o, str) or not fn_name
              else json.dumps(o), "testtype": "functional" if fn_name else "stdin"} for i, o in zip(inputs, outputs)]
    if not fn_name and not all(isinstance(c["input"], str) and isinstance(c["output"], str) for c in cases):
        raise ValueError("a stdin test's input and output must be text")
    return {"question_id": pid, "question_content": "(the row's tests)", "public_test_cases": json.dumps(cases),
            "metadata": json.dumps({"func_name": fn_name} if fn_name else {})}


def _functional_input(value: Any) -> str:
    return value if isinstance(value, str) else "\n".join(json.dumps(arg) for arg in value) \
        if isinstance(value, list) else json.dumps(value)


def decode_private(text: str) -> list:
    """The private tests: JSON text, or base64(zlib(pickle(JSON text))) decoded without running the pickle.
    ValueError says what the data holds when it is neither."""
    text = text.strip()
    if not text:
        return []
    if text[0] == "[":
        return _test_list(text, "private_test_cases")
    try:
        packed = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"private_test_cases is neither JSON nor base64 (it begins {text[:20]!r})") from None
    try:
        inflater = zlib.decompressobj()
        data = inflater.decompress(packed, _MAX_DECODED)
    except zlib.error as exc:
        raise ValueError(f"private_test_cases is base64 but not zlib data ({exc})") from None
    if inflater.unconsumed_tail:
        raise ValueError(f"private_test_cases inflates past {_MAX_DECODED >> 20} MiB")
    return _test_list(pickled_string(data), "private_test_cases")


def pickled_string(data: bytes) -> str:
    """The one string a pickle holds, read from its opcodes without unpickling; ValueError for any other pickle."""
    strings: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name in _STRING_OPS:
                strings.append(arg)
            elif opcode.name not in _FRAMING_OPS:
                raise ValueError(f"the pickle holds a {opcode.name} opcode, not only a string")
    except Exception as exc:  # noqa: BLE001 - a truncated or malformed pickle, or an opcode refused above
        raise ValueError(f"private_test_cases: {exc}; only a pickled string is read") from None
    if len(strings) != 1:
        raise ValueError(f"private_test_cases: the pickle holds {len(strings)} strings, not one")
    return strings[0]


def _test_list(text: str, field: str) -> list:
    try:
        tests = jsontext.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{field} is not JSON ({exc})") from None
    if not isinstance(tests, list) or not all(isinstance(t, dict) and "input" in t and "output" in t
                                              for t in tests):
        raise ValueError(f"{field} is not a list of {{input, output, testtype}} objects")
    return tests


def parse(row: dict[str, Any], index: int) -> tuple[Problem, Cases] | SkippedRow:
    pid = problem_id(row, index)
    try:
        tests = _test_list(row.get("public_test_cases") or "[]", "public_test_cases")
        tests += decode_private(row.get("private_test_cases") or "")
        inputs, outputs, fn_name = _decoded(tests, row)
    except ValueError as exc:
        return SkippedRow(index, pid, str(exc))
    platform = str(row.get("platform") or "").strip().lower()
    return make_problem(pid, index, tier(row), row.get("question_content") or "", str(row.get("starter_code") or ""),
                        fn_name, inputs, outputs, tags=(platform,) if platform else (), time_limit=TIME_LIMIT,
                        date=date(row))


def _decoded(tests: list, row: dict[str, Any]) -> tuple[list, list, str | None]:
    """Inputs, outputs and the method's name: a functional test's input is one JSON value per line."""
    if not tests:
        raise ValueError("no tests (public_test_cases and private_test_cases are empty)")
    kinds = {str(t.get("testtype") or "stdin") for t in tests}
    if kinds == {"stdin"}:
        return [str(t["input"]) for t in tests], [str(t["output"]) for t in tests], None
    if kinds != {"functional"}:
        raise ValueError(f"tests of kinds {', '.join(sorted(kinds))}; one problem is stdin or functional")
    try:
        metadata = json.loads(row.get("metadata") or "{}")
    except ValueError:
        raise ValueError(f"metadata is not JSON ({str(row.get('metadata'))[:60]!r})") from None
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    if not fn_name:
        raise ValueError(f"functional tests, but metadata names no func_name (it holds {row.get('metadata')!r})")
    try:
        inputs = [[jsontext.loads(line) for line in str(t["input"]).split("\n")] for t in tests]
        outputs = [jsontext.loads(str(t["output"])) for t in tests]
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"a functional test is not one JSON value per line ({exc})") from None
    return inputs, outputs, str(fn_name)
