"""The `apps` judge profile: the verdicts of the original APPS harness (hendrycks/apps `eval/testing_util.py` at
b45c0ed, which produced the published APPS tables), decided here from plain data.

The executor runs the program the original's way (`executor/appsstyle.py`); this module does the rest of what the
original does per test: how it reads a test's input and expected output, its standard-input comparison steps and
its call-based matching. Each comparison below follows the original's code path step by step (same operations,
same order, same exceptions swallowed); the step that accepted a test is its name here, so a report shows how
much of a score rests on the lenient ones.

Standard input: the program's captured output is split with `str.splitlines()` (as the original's capture does);
the expected output is its text (a list of lines joined with "\\n"). The first step that accepts:
  "apps:exact"           the joined output lines, stripped, equal the stripped expected text;
  "apps:stripped_lines"  the same after stripping each output line;
  "apps:one_line"        the lines are exactly [expected] (never reached: "apps:exact" accepts it first);
  "apps:nonblank_expected"  the output lines equal the expected text's non-empty lines, each stripped
                         (the output lines are not stripped; a whitespace-only expected line stays as "");
  "apps:nonblank_lines"  the same after dropping the output's empty lines;
  "apps:float"           as many lines on both sides, each one float literal (Python's `float()`), and
                         `numpy.allclose` with its defaults (rtol 1e-5, atol 1e-8) against the expected;
  "apps:token_sets"      output lines equal to the expected lines' token sets (never true; kept for its order);
  "apps:set"             the set of the output lines' token sets equals the expected one (line order, token
                         order, repeated lines and repeated tokens are all ignored);
  "apps:set_rounded"     the same with every token as `round(float(token), 3)`, when all are numbers.

Call-based: the expected value gets the original's dict fix-ups (a dict, or a list starting with a dict, has its
keys made int when all are int-like); the arguments too (a first argument that is a dict becomes the only one,
keys made int). The return value arrives as tagged JSON (tuples, sets, dict key types, numpy values kept) and
the original's expression is evaluated on it with Python's `==`:
  "apps:equal"   output == expected (a top-level tuple was made a list in the child; no float tolerance);
  "apps:unwrap"  output == expected[0], when the expected value is a non-empty list;
  "apps:tuples"  [list(x) for x in output] == expected[0], when the output's first item is a tuple.
A comparison that raises (a numpy array of several items in a truth test) is the original's -1: runtime error.

The original's -2 (the program does not load) is a compile error here, its -1 a runtime error (or timeout,
memory limit, output limit, from our own limits), False a wrong answer. Its per-candidate effects (state across
tests, the escapable alarm, the 11 s global kill, crashes that score every test -1) are not reproduced: see the
docs/judges.md.
"""

from __future__ import annotations

import binascii
import decimal
import fractions
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from ..core import jsontext
from ..core.outcome import OUTPUT_LIMIT, PASS, RUNTIME_ERROR, WRONG_ANSWER, Outcome, Verdict
from .toolkit import (
    MAX_VALUE_JSON_CHARS,
    checked,
    cut,
    ended_verdict,
    first_difference,
    show_value,
)
from .toolkit import Checker as Checker

__all__ = [
    "CALL_STEPS",
    "STDIN_STEPS",
    "compare_call",
    "compare_stdin",
    "decode",
    "expected_text",
    "input_text",
    "judge",
    "original_call_args",
    "plain",
]

STDIN_STEPS = ("apps:exact", "apps:stripped_lines", "apps:one_line", "apps:nonblank_expected",
               "apps:nonblank_lines", "apps:float", "apps:token_sets", "apps:set", "apps:set_rounded")
CALL_STEPS = ("apps:equal", "apps:unwrap", "apps:tuples")


# --------------------------------------------------------------------------------------------------
# a test's data, read as the original reads it


def input_text(raw: Any) -> str | None:
    """A standard-input test's input as the original feeds it: the text as stored, a list of lines joined with
    "\\n" (no newline added at the end). None when the original cannot feed it (not text): it scores -1 there."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return "\n".join(raw)
    return None


def expected_text(raw: Any) -> str | None:
    """A standard-input test's expected output as the original compares it (a list of lines joined with "\\n");
    None when it is not text, on which the original fails every program."""
    return input_text(raw)


def _int_keys(value: dict) -> dict:
    return {int(k): v for k, v in value.items()}


def original_call_args(raw: Any) -> list | None:
    """A call-based test's arguments as the original passes them: the stored list, except that a first argument
    which is a dict with int-like keys becomes the only argument, with int keys. None when `method(*raw)` itself
    would fail (the stored input is not iterable): the original's -1."""
    inputs = raw
    try:
        if isinstance(inputs[0], dict):
            inputs = [_int_keys(inputs[0])]
    except Exception:  # noqa: BLE001, S110 - the original's bare except
        pass
    if isinstance(inputs, list):
        return inputs
    if isinstance(inputs, (str, dict, tuple)):
        return list(inputs)  # what `*inputs` unpacks
    return None


def call_expected(raw: Any) -> Any:
    """The expected value after the original's fix-ups of dict keys."""
    expected = raw
    try:
        if isinstance(expected, dict):
            expected = [_int_keys(expected)]
    except Exception:  # noqa: BLE001, S110
        pass
    try:
        if isinstance(expected[0], dict):
            expected = [_int_keys(expected[0])]
    except Exception:  # noqa: BLE001, S110
        pass
    return expected


# --------------------------------------------------------------------------------------------------
# standard input


def _stripped_equal(a: str, b: str) -> bool:
    return a.strip() == b.strip()


def compare_stdin(lines: list[str], expected: str) -> str | None:
    """The step that accepts the output `lines` (the captured text's `splitlines()`) for the expected text, or
    None: the original's checks in its order."""
    output: Any = list(lines)
    # custom_compare_: the joined lines, then the joined stripped lines, against the expected text (both stripped)
    if _stripped_equal("\n".join(output), expected):
        return "apps:exact"
    if _stripped_equal("\n".join(o.strip() for o in output), expected):
        return "apps:stripped_lines"
    # check1: the expected text is a str here, so only `output == [expected]`
    if output == [expected]:
        return "apps:one_line"
    # check2: expected -> its non-empty lines (empty ones dropped before stripping), stripped
    exp_lines = [x.strip() for x in expected.split("\n") if len(x)]
    if output == [exp_lines] or output == exp_lines:
        return "apps:nonblank_expected"
    # check3: the output's empty lines dropped too
    output = [o for o in output if len(o)]
    result = output == [exp_lines] or output == exp_lines
    if result:
        return "apps:nonblank_lines"
    # floats: one float per line on both sides, numpy.allclose with its default tolerances
    try:
        output_float = [float(e) for e in output]
        expected_float = [float(e) for e in exp_lines]
        result = (len(output_float) == len(expected_float)) and bool(_numpy().allclose(output_float, expected_float))
    except Exception:  # noqa: BLE001, S110 - the original swallows every error of this step
        pass
    if result:
        return "apps:float"
    # check4: expected lines -> token sets, compared with the output lines (a list of str: never equal)
    exp_sets = [set(x.split()) for x in exp_lines]
    if output == exp_sets:
        return "apps:token_sets"
    # check5: the set of the lines' token sets (blank output lines dropped)
    out_sets = [set(t) for t in (o.split() for o in output) if len(t)]
    try:
        result = {frozenset(s) for s in out_sets} == {frozenset(s) for s in exp_sets}
    except Exception:  # noqa: BLE001, S110
        pass
    if result:
        return "apps:set"
    # check6: the same with every token rounded to 3 places, when all are numbers
    try:
        result = ({frozenset(round(float(t), 3) for t in s) for s in out_sets}
                  == {frozenset(round(float(t), 3) for t in s) for s in exp_sets})
    except Exception:  # noqa: BLE001, S110
        pass
    return "apps:set_rounded" if result else None


# --------------------------------------------------------------------------------------------------
# call-based: the tagged return value and the original's expression


class Opaque:
    """A returned object of a type the child does not send (a class of the program, a generator, a deque, ...):
    equal to nothing but itself, as an object without its own `==` is."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


def decode(value: Any) -> Any:
    """Plain data (a tagged JSON value, see `executor/appsstyle.encode`) to the Python value it stands for."""
    if isinstance(value, list):
        return [decode(x) for x in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError("not a tagged value")
    (tag, data), = value.items()
    if tag == "$t":
        return tuple(decode(x) for x in data)
    if tag == "$d":
        return {decode(k): decode(v) for k, v in data}
    if tag == "$s":
        return {decode(x) for x in data}
    if tag == "$f":
        return frozenset(decode(x) for x in data)
    if tag == "$b":
        return binascii.unhexlify(data)
    if tag == "$c":
        return complex(float(data[0]), float(data[1]))
    if tag == "$q":
        return fractions.Fraction(int(data[0]), int(data[1]))
    if tag == "$D":
        return decimal.Decimal(str(data))
    if tag == "$n":
        return _numpy_scalar(str(data[0]), decode(data[1]))
    if tag == "$a":
        return _numpy_array(str(data[0]), data[1], decode(data[2]))
    if tag == "$o":
        return Opaque(str(data))
    raise ValueError(f"unknown tag {tag!r}")


_NUMPY_KINDS = "biufcUS"


def _numpy() -> Any:
    """numpy, loaded on first use: most runs never compare floats this way or meet a numpy value, and loading
    it costs every pytest process (and each xdist worker) a tenth of a second."""
    import numpy

    return numpy


def _dtype(name: str, items: Any) -> np.dtype:
    """The dtype the child named, if it is one it sends and its item size fits the data it sent (a string dtype
    wider than its longest string would make us allocate what the child never had to send)."""
    dtype = _numpy().dtype(name)
    if dtype.kind not in _NUMPY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"dtype {name!r} is not sent")
    if dtype.kind in "US":
        longest = max((len(x) for x in _leaves(items)), default=0)
        if dtype.itemsize > (4 if dtype.kind == "U" else 1) * (longest + 1):
            raise ValueError(f"dtype {name!r} is wider than its data")
    return dtype


def _leaves(items: Any) -> list:
    if isinstance(items, list):
        return [leaf for item in items for leaf in _leaves(item)]
    return [items] if isinstance(items, (str, bytes)) else []


def _numpy_scalar(dtype_name: str, item: Any) -> Any:
    return _numpy().array(item, dtype=_dtype(dtype_name, item))[()]


def _numpy_array(dtype_name: str, shape: Any, items: Any) -> np.ndarray:
    array = _numpy().array(items, dtype=_dtype(dtype_name, items))
    if list(array.shape) != [int(n) for n in shape]:
        array = array.reshape([int(n) for n in shape])
    return array


def plain(value: Any) -> Any:
    """A decoded value as JSON-like data for people and checkers' messages: tuples and sets as lists, numpy
    values as Python ones."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(x) for x in value]
    if isinstance(value, dict):
        return {(k if isinstance(k, (str, int, float, bool)) or k is None else show_value(plain(k))): plain(v)
                for k, v in value.items()}
    np = sys.modules.get("numpy")  # (a value is a numpy one only once numpy is loaded)
    if np is not None and isinstance(value, np.ndarray):
        return plain(value.tolist())
    if np is not None and isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, (bytes, complex, fractions.Fraction, decimal.Decimal, Opaque)):
        return repr(value)
    return value


class _Raised(Exception):
    """The original's comparison raised: its -1."""


def _truth(value: Any) -> bool:
    try:
        return bool(value)
    except Exception as exc:  # noqa: BLE001 - e.g. a numpy array of several items
        raise _Raised(f"{type(exc).__name__}: {exc}") from exc


def compare_call(output: Any, alternative: Any, expected: Any, has_alternative: bool) -> tuple[Any, str]:
    """The original's result for return value `output` (decoded; a top-level tuple already a list) against the
    fixed-up `expected`: (result, step). `result` is what it appends (True, False, or an array it later reads
    its first item of); raises _Raised where its comparison raises. `step` names the part that made it true."""
    try:
        result = output == expected
        step = "apps:equal"
        if isinstance(expected, list) and expected:
            if not _truth(result):
                result = output == expected[0]
                step = "apps:unwrap"
    except _Raised:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _Raised(f"{type(exc).__name__}: {exc}") from exc
    if has_alternative:
        try:
            if not _truth(result):
                result = alternative == expected[0]
                step = "apps:tuples"
        except Exception:  # noqa: BLE001, S110 - the original's `except: True` (its truth test included)
            pass
    return result, step


def _passed(result: Any) -> bool:
    """How the original's caller reads one appended result: an array by its first item, then `> 0`."""
    np = sys.modules.get("numpy")  # (a result is an array only once numpy is loaded)
    if np is not None and isinstance(result, np.ndarray):
        if result.size == 0:
            return False
        result = result.item(0)
    try:
        return bool(result > 0)
    except Exception:  # noqa: BLE001
        return False


# --------------------------------------------------------------------------------------------------
# the verdict


def judge(fmt: str, expected: Any, outcome: Outcome, checker: Checker | None = None) -> Verdict:
    """Decide one test the original harness's way: `fmt` "stdin" or "call", `expected` the stored output,
    `outcome` a run in the executor's "apps" style. `checker` (see `judge.checkers`) decides in place of the
    comparison when the program ran to its end."""
    if fmt not in ("stdin", "call"):
        raise ValueError(f"unknown problem format {fmt!r} (expected 'stdin' or 'call')")
    details: dict[str, Any] = {}
    if outcome.stderr_tail:
        details["stderr_tail"] = outcome.stderr_tail[-600:]
    ended = ended_verdict(outcome, details)
    if ended is not None:
        return ended
    if outcome.exit_code != 0 or outcome.value_json is None:
        if outcome.exit_code == 0:
            reason = ("the program ended its own process before the harness read its output (the original "
                      "harness then scores every test of the program -1)")
        else:
            reason = outcome.error or f"exit status {outcome.exit_code}"
        return Verdict(RUNTIME_ERROR, reason=reason, details=details)
    if fmt == "stdin":
        return _judge_stdin(expected, outcome, details, checker)
    return _judge_call(expected, outcome, details, checker)


def _judge_stdin(expected: Any, outcome: Outcome, details: dict[str, Any], checker: Checker | None) -> Verdict:
    text = expected_text(expected)
    if text is None:
        return Verdict(RUNTIME_ERROR, reason=f"the expected output is not text ({type(expected).__name__}); the "
                                             "original harness fails every program on this test", details=details)
    details["got"] = cut(outcome.stdout)
    if checker is not None:
        return checked(checker, outcome.stdout, details)
    step = compare_stdin(outcome.stdout.splitlines(), text)
    if step is not None:
        return Verdict(PASS, step=step)
    diff = first_difference(text, outcome.stdout)
    details.update(expected=cut(text), first_diff=diff)
    return Verdict(WRONG_ANSWER, reason=diff, details=details)


def _judge_call(expected: Any, outcome: Outcome, details: dict[str, Any], checker: Checker | None) -> Verdict:
    size = len(outcome.value_json or "")
    if size > MAX_VALUE_JSON_CHARS:
        return Verdict(OUTPUT_LIMIT, reason=f"return value too large ({size} chars of JSON)", details=details)
    try:
        report = jsontext.loads(outcome.value_json or "")
        output = decode(report["v"])
        has_alternative = "a" in report
        alternative = decode(report["a"]) if has_alternative else None
        shown = cut(show_value(plain(output)))
    except RecursionError:
        return Verdict(WRONG_ANSWER, reason="return value nested too deeply to compare", details=details)
    except Exception as exc:  # noqa: BLE001 - whatever the child sent, its failure, never a harness error
        details["got"] = cut(outcome.value_json or "")
        return Verdict(WRONG_ANSWER, reason=f"return value could not be read ({type(exc).__name__})",
                       details=details)
    details["got"] = shown
    if checker is not None:
        return checked(checker, output, details)
    fixed = call_expected(expected)
    try:
        result, step = compare_call(output, alternative, fixed, has_alternative)
    except _Raised as exc:
        return Verdict(RUNTIME_ERROR, reason=f"comparing the return value raised {exc} (the original's -1)",
                       details=details)
    except RecursionError:
        return Verdict(RUNTIME_ERROR, reason="comparing the return value raised RecursionError", details=details)
    if _passed(result):
        return Verdict(PASS, step=step)
    try:
        wanted = show_value(plain(fixed))
    except RecursionError:
        wanted = "(nested too deeply to show)"
    diff = f"expected {cut(wanted, 80, 1)}, got {cut(shown, 80, 1)}"
    details.update(expected=cut(wanted), first_diff=diff)
    return Verdict(WRONG_ANSWER, reason=diff, details=details)
