"""Unit tests for the comparison cascades and the outcome -> verdict mapping (pytest_apps.judge.seed)."""

from __future__ import annotations

import json
import signal

import pytest

from pytest_apps.core import outcome as oc
from pytest_apps.core.errors import HarnessError
from pytest_apps.judge.seed import compare_call, compare_stdin, cut, first_difference, judge
from pytest_apps.core.outcome import Outcome, Verdict

# --------------------------------------------------------------------------------------------------
# standard-input cascade

STDIN_ACCEPT = [
    # (expected, got, step)
    ("3\n", "3\n", "exact"),
    ("3", "3\n", "exact"),
    ("3\n", "3", "exact"),
    ("  3  \n\n", "3", "exact"),
    ("1 2\n3 4\n", "1 2\n3 4", "exact"),
    ("YES\n", "YES\r\n", "exact"),
    ("a\nb\n", "a  \nb\t\n", "lines"),
    ("a\r\nb\r\n", "a\nb\n", "lines"),
    ("a b\nc\n", "a b   \nc   \n\n\n", "lines"),
    ("\n\nhello world\n", "hello world", "exact"),
    # numeric: tolerance, formatting, whitespace layout
    ("0.333333\n", "0.3333333333\n", "numeric"),
    ("1.5\n", "1.50000\n", "numeric"),
    ("1\n", "1.0\n", "numeric"),
    ("2\n", "2.000001\n", "numeric"),
    ("1e-3\n", "0.001\n", "numeric"),
    ("-0.0\n", "0\n", "numeric"),
    ("1 2 3\n", "1\n2\n3\n", "numeric"),
    ("1 2\n", "1  2\n", "numeric"),
    ("+5\n", "5.\n", "numeric"),
    (".5\n", "0.5\n", "numeric"),
    ("1E+2 3\n", "100 3.0000001\n", "numeric"),
    ("0\n", "0.0000009\n", "numeric"),  # within atol=1e-6
    ("100000\n", "100000.9\n", "numeric"),  # within rtol*|expected| = 1.0
    # the list-of-lines expected form
    (["1", "2"], "1\n2\n", "exact"),
    (["1\n", "2\n"], "1\n2\n", "exact"),
    (["YES", ""], "YES\n", "exact"),
    (["1.0", "2"], "1\n2\n", "numeric"),
    (["a ", "b"], "a\nb", "lines"),
    ([], "", "exact"),
    ("", "", "exact"),
    ("", "\n  \n", "exact"),
]


@pytest.mark.parametrize(("expected", "got", "step"), STDIN_ACCEPT)
def test_compare_stdin_accepts(expected, got, step):
    assert compare_stdin(expected, got) == step


STDIN_REJECT = [
    # (expected, got) -- traps that must not pass
    ("1 2\n", "12\n"),
    ("12\n", "1 2\n"),
    ("YES\n", "yes\n"),
    ("Yes\n", "YES\n"),
    ("0\n", ""),
    ("0\n", "\n"),
    ("", "0\n"),
    ("a b\n", "a  b\n"),  # not numbers: intra-line spacing is significant
    ("a\nb\n", "a\n\nb\n"),  # blank line in the middle
    ("a\nb\n", "b\na\n"),
    ("1 2 3\n", "1 2\n"),  # token counts differ
    ("1 2\n", "1 2 3\n"),
    ("1 x\n", "1.0 x\n"),  # every token must be numeric
    ("x 1\n", "x 1.0\n"),
    ("1.5\n", "1.6\n"),
    ("0\n", "0.000002\n"),  # beyond atol
    ("100000\n", "100001.1\n"),  # beyond rtol
    ("1\n", "nan\n"),
    ("nan\n", "nan \n nan"),
    ("inf\n", "1e400\n"),  # 1e400 is not finite; inf is not a number token
    ("1e400\n", "1e401\n"),
    ("1000\n", "1_000\n"),
    ("16\n", "0x10\n"),
    ("1\n", "\u0661\n"),  # ARABIC-INDIC DIGIT ONE is not an ASCII digit
    ("1\n", "1,0\n"),
    ("3\n", "3\x00\n"),
    ("[1, 2]\n", "[1,2]\n"),
    (["a", "b"], "a b\n"),  # list of lines: layout still matters for text
    (None, ""),
    ({"a": 1}, "{'a': 1}"),
    ([["nested"]], "nested"),
]


@pytest.mark.parametrize(("expected", "got"), STDIN_REJECT)
def test_compare_stdin_rejects(expected, got):
    assert compare_stdin(expected, got) is None


def test_compare_stdin_numeric_tolerance_is_relative_to_expected():
    # |got - exp| <= atol + rtol * |exp|; with exp=1e6 the bound is 10.000001
    assert compare_stdin("1000000", "1000010") == "numeric"
    assert compare_stdin("1000000", "1000010.1") is None


def test_compare_stdin_numeric_accepts_close_integers_like_the_runner():
    # Pinned on purpose: integers are compared as floats within rtol, as the reference runner does.
    assert compare_stdin("123456", "123457") == "numeric"
    assert compare_stdin("12345", "12346") is None


def test_compare_stdin_huge_integers_need_exact_text():
    big = "9" * 5000
    assert compare_stdin(big, big + "\n") == "exact"
    assert compare_stdin(big, "9" * 4999 + "8") is None  # beyond float range: not numeric


def test_compare_stdin_non_text_got_is_rejected():
    assert compare_stdin("1", None) is None  # type: ignore[arg-type]
    assert compare_stdin("1", 1) is None  # type: ignore[arg-type]


def test_compare_stdin_numbers_in_expected():
    assert compare_stdin(3, "3\n") == "exact"
    assert compare_stdin(True, "True") is None


def test_compare_stdin_large_output():
    expected = "\n".join(str(i) for i in range(200_000))
    assert compare_stdin(expected, expected + "\n") == "exact"
    got = "\n".join(str(i) + ".0" for i in range(200_000))
    assert compare_stdin(expected, got) == "numeric"


# --------------------------------------------------------------------------------------------------
# call-based cascade

CALL_ACCEPT = [
    # (expected, got, step)
    (3, 3, "equal"),
    ("abc", "abc", "equal"),
    ([1, 2, 3], [1, 2, 3], "equal"),
    ({"a": [1]}, {"a": [1]}, "equal"),
    (None, None, "equal"),
    (1, 1.0, "equal"),
    (True, 1, "equal"),  # Python == semantics, as the APPS harness
    ([], [], "equal"),
    ((1, 2), [1, 2], "equal"),  # tuples in expected are lists
    # numeric
    (0.333333, 0.3333333333, "numeric"),
    ([1.0, 2.0], [1.0000001, 2.0], "numeric"),
    ([[1.5, 2.5], [3.5, 4.5]], [[1.5, 2.5000001], [3.5, 4.5]], "numeric"),
    (0, 1e-7, "numeric"),
    (100000, 100000.9, "numeric"),
    # set
    ([1, 2, 3], [3, 2, 1], "set"),
    (["a", "b"], ["b", "a"], "set"),
    ([[1, 2], [3, 4]], [[3, 4], [1, 2]], "set"),  # inner lists are frozen, inner order still counts
    ([1, 1, 2], [2, 1], "set"),  # duplicates collapse, as in the runner
    ([{"a": 1}, {"b": 2}], [{"b": 2}, {"a": 1}], "set"),
    # set_rounded
    ([0.1234, 0.5], [0.5, 0.12341], "set_rounded"),
    ([1.00049, 2], [2.0, 1.0001], "set_rounded"),
    # one-element unwrap
    ([3], 3, "unwrap+equal"),
    (["abc"], "abc", "unwrap+equal"),
    ([[1, 2]], [1, 2], "unwrap+equal"),
    ([None], None, "unwrap+equal"),
    ([0.333333], 0.3333333333, "unwrap+numeric"),
    ([[1.0, 2.0]], [1.0000001, 2.0], "unwrap+numeric"),
    ([[1, 2, 3]], [3, 1, 2], "unwrap+set"),
    ([[0.1234, 0.5]], [0.5, 0.12341], "unwrap+set_rounded"),
    ([[3]], [3], "unwrap+equal"),
    ([True], 1, "unwrap+equal"),
    ([5], [5], "equal"),  # the whole cascade on the full value comes first
    ([1.0], [1.0000001], "numeric"),
]


@pytest.mark.parametrize(("expected", "got", "step"), CALL_ACCEPT)
def test_compare_call_accepts(expected, got, step):
    assert compare_call(expected, got) == step


CALL_REJECT = [
    # (expected, got)
    (3, 4),
    ("1", 1),  # strings are never numbers
    (1, "1"),
    ("1.0", 1.0),
    (["1", "2"], [1, 2]),
    ("abc", "cba"),  # a str is not a set of characters
    ("YES", "yes"),
    (True, 1.0000001),  # bools are not numbers in the numeric step
    ([True, False], [1.0000001, 0]),
    (False, None),
    (0, None),
    ([], None),
    ([], [[]]),
    ([1, 2], [1, 2, 3]),
    ([1, 2, 3], [1, 2]),
    ([[1, 2], [3]], [[1, 2], [3, 4]]),  # ragged: not numeric
    ([[1, 2]], [2, 1, 3]),
    ([[1, 2], [3, 4]], [[2, 1], [4, 3]]),  # only the top level is a set
    ({"a": 1}, {"a": 2}),
    ({"a": 1, "b": 2}, ["a", "b"]),
    (1.5, 1.6),
    (0, 2e-6),
    ([0.123, 0.5], [0.5, 0.124]),
    ([0.1234], 0.1244),
    (float("nan"), float("nan")),
    ([float("nan")], [float("nan")]),
    (float("inf"), 1e308),
    ([3], [[3]]),  # unwrapping goes one way: expected, not got
    ([[3]], 3),  # and one level only
    ([3, 4], 3),  # only one-element lists are unwrapped
    (None, []),
    (10**400, 10**400 + 1),  # beyond float range: exact only
    ([10**400], [10**400 + 1]),
]


@pytest.mark.parametrize(("expected", "got"), CALL_REJECT)
def test_compare_call_rejects(expected, got):
    assert compare_call(expected, got) is None


def test_compare_call_close_integers_like_the_runner():
    # Pinned on purpose: the runner's numeric step compares ints as floats within rtol.
    assert compare_call([123456], 123457) == "unwrap+numeric"
    assert compare_call(12345, 12346) is None


def test_compare_call_huge_ints_equal_exactly():
    assert compare_call(10**5000, 10**5000) == "equal"
    assert compare_call([10**5000], 10**5000) == "unwrap+equal"


def test_compare_call_deep_nesting_does_not_raise():
    deep_a: list = []
    deep_b: list = []
    for _ in range(100_000):
        deep_a = [deep_a]
        deep_b = [deep_b, 1]
    assert compare_call(deep_a, deep_b) is None


def test_compare_call_unhashable_items_do_not_raise():
    assert compare_call([{1, 2}], [[1, 2]]) is None
    assert compare_call([object()], [1]) is None


# --------------------------------------------------------------------------------------------------
# first_difference and cut


@pytest.mark.parametrize(
    ("expected", "got", "text"),
    [
        ("1\n2\n5\n", "1\n2\n6\n", "line 3: expected '5', got '6'"),
        ("a\n", "b\n", "line 1: expected 'a', got 'b'"),
        ("1\n2\n3\n", "1\n", "got fewer lines: 1 instead of 3; line 2 expected '2' (and 1 more)"),
        ("1\n2\n", "1\n", "got fewer lines: 1 instead of 2; line 2 expected '2'"),
        ("1\n", "1\n2\n", "got more lines: 2 instead of 1; line 2 got '2'"),
        ("0\n", "", "got no output"),
        ("1\n", "1\n", "no difference line by line"),
        (["1", "5"], "1\n6\n", "line 2: expected '5', got '6'"),
    ],
)
def test_first_difference(expected, got, text):
    assert first_difference(expected, got) == text


def test_first_difference_cuts_long_lines():
    text = first_difference("x" * 1000, "y" * 1000)
    assert text.startswith("line 1: expected 'xxx")
    assert len(text) < 250


def test_cut_keeps_short_text_and_marks_long_text():
    assert cut("short") == "short"
    long = "\n".join(str(i) for i in range(1000))
    short = cut(long)
    assert len(short) < 400
    assert short.count("\n") <= 8
    assert "more chars" in short and "1000 lines in all" in short
    assert len(cut("z" * 10_000)) < 400


# --------------------------------------------------------------------------------------------------
# judge(): status mapping


def _exited(stdout="", code=0, **kw):
    return Outcome(status=oc.RUN_EXITED, exit_code=code, stdout=stdout, **kw)


def _returned(value, **kw):
    return Outcome(status=oc.RUN_EXITED, exit_code=0, value_json=json.dumps(value), **kw)


@pytest.mark.parametrize("fmt", ["stdin", "call"])
@pytest.mark.parametrize(
    ("outcome", "kind", "reason_part"),
    [
        (Outcome(status=oc.RUN_COMPILE_ERROR, error="SyntaxError: invalid syntax"), oc.COMPILE_ERROR,
         "SyntaxError"),
        (Outcome(status=oc.RUN_COMPILE_ERROR), oc.COMPILE_ERROR, "does not compile"),
        (Outcome(status=oc.RUN_TIMEOUT, error="wall clock limit 4s"), oc.TIMEOUT, "4s"),
        (Outcome(status=oc.RUN_TIMEOUT), oc.TIMEOUT, "time limit"),
        (Outcome(status=oc.RUN_MEMORY), oc.MEMORY_LIMIT, "memory"),
        (Outcome(status=oc.RUN_OUTPUT_LIMIT), oc.OUTPUT_LIMIT, "output"),
        (Outcome(status=oc.RUN_SIGNALED, signal=int(signal.SIGSEGV)), oc.RUNTIME_ERROR, "SIGSEGV"),
        (Outcome(status=oc.RUN_SIGNALED, signal=int(signal.SIGKILL)), oc.RUNTIME_ERROR, "SIGKILL"),
        (Outcome(status=oc.RUN_SIGNALED, signal=200), oc.RUNTIME_ERROR, "signal 200"),
        (Outcome(status=oc.RUN_SIGNALED), oc.RUNTIME_ERROR, "unknown signal"),
        (Outcome(status=oc.RUN_SIGNALED, signal=int(signal.SIGXCPU)), oc.TIMEOUT, "SIGXCPU"),
        (Outcome(status=oc.RUN_SIGNALED, signal=int(signal.SIGXFSZ)), oc.OUTPUT_LIMIT, "SIGXFSZ"),
    ],
)
def test_judge_status_mapping(fmt, outcome, kind, reason_part):
    verdict = judge(fmt, "1", outcome)
    assert isinstance(verdict, Verdict)
    assert verdict.kind == kind
    assert not verdict.passed
    assert reason_part in verdict.reason
    assert "\n" not in verdict.reason


@pytest.mark.parametrize("fmt", ["stdin", "call"])
def test_judge_harness_error_raises(fmt):
    with pytest.raises(HarnessError, match="fork server died"):
        judge(fmt, "1", Outcome(status=oc.RUN_HARNESS_ERROR, error="fork server died"))
    with pytest.raises(HarnessError):
        judge(fmt, "1", Outcome(status="something new"))


def test_judge_unknown_format():
    with pytest.raises(ValueError):
        judge("interactive", "1", _exited("1"))


def test_judge_stdin_pass_names_step():
    assert judge("stdin", "3\n", _exited("3\n")) == Verdict(oc.PASS, step="exact")
    assert judge("stdin", ["1", "2"], _exited("1  \n2\n")).step == "lines"
    assert judge("stdin", "0.5\n", _exited("0.5000001\n")).step == "numeric"


def test_judge_stdin_wrong_answer_details():
    verdict = judge("stdin", "1\n2\n5\n", _exited("1\n2\n6\n"))
    assert verdict.kind == oc.WRONG_ANSWER
    assert verdict.reason == "line 3: expected '5', got '6'"
    assert verdict.details["first_diff"] == verdict.reason
    assert verdict.details["expected"] == "1\n2\n5\n"
    assert verdict.details["got"] == "1\n2\n6\n"
    assert Verdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict


def test_judge_stdin_wrong_answer_details_are_cut():
    big = "\n".join(str(i) for i in range(100_000))
    verdict = judge("stdin", big, _exited(big + "\nextra"))
    assert verdict.kind == oc.WRONG_ANSWER
    assert len(json.dumps(verdict.details)) < 2000
    assert verdict.reason.startswith("got more lines")


def test_judge_stdin_empty_output():
    verdict = judge("stdin", "0\n", _exited(""))
    assert verdict.kind == oc.WRONG_ANSWER
    assert verdict.reason == "got no output"


def test_judge_stdin_non_zero_exit_is_runtime_error_even_with_right_output():
    error = "Traceback (most recent call last):\n  File ...\nZeroDivisionError: division by zero\n"
    verdict = judge("stdin", "3\n", _exited("3\n", code=1, error=error, stderr_tail=error))
    assert verdict.kind == oc.RUNTIME_ERROR
    assert verdict.reason == "ZeroDivisionError: division by zero"
    assert verdict.details["exit_code"] == 1
    assert "ZeroDivisionError" in verdict.details["stderr_tail"]

    verdict = judge("stdin", "3\n", _exited("3\n", code=2))
    assert verdict.kind == oc.RUNTIME_ERROR
    assert verdict.reason == "exit status 2"


def test_judge_stdin_unknown_exit_code_is_harness_error():
    with pytest.raises(HarnessError):
        judge("stdin", "3", Outcome(status=oc.RUN_EXITED, stdout="3"))


def test_judge_stdin_unusable_expected_is_wrong_answer():
    verdict = judge("stdin", None, _exited(""))
    assert verdict.kind == oc.WRONG_ANSWER
    assert "not text" in verdict.reason


def test_judge_call_pass_and_steps():
    assert judge("call", [3], _returned(3)) == Verdict(oc.PASS, step="unwrap+equal")
    assert judge("call", [[1, 2]], _returned((2, 1))).step == "unwrap+set"
    assert judge("call", 0.5, _returned(0.5000001)).step == "numeric"


def test_judge_call_wrong_answer_details():
    verdict = judge("call", [[1, 2, 3]], _returned([1, 2, 4]))
    assert verdict.kind == oc.WRONG_ANSWER
    assert verdict.reason == "item 2: expected 3, got 4"
    assert verdict.details["expected"] == "[[1, 2, 3]]"
    assert verdict.details["got"] == "[1, 2, 4]"

    verdict = judge("call", ["abc"], _returned(5))
    assert verdict.reason == "type: expected str, got int"
    verdict = judge("call", [[1, 2]], _returned([1, 2, 3]))
    assert verdict.reason == "length: expected 2 items, got 3"
    verdict = judge("call", [7], _returned(8))
    assert verdict.reason == "expected 7, got 8"


def test_judge_call_exception_is_runtime_error():
    outcome = Outcome(status=oc.RUN_EXITED, exit_code=1, error="IndexError: list index out of range")
    verdict = judge("call", [3], outcome)
    assert verdict.kind == oc.RUNTIME_ERROR
    assert verdict.reason == "IndexError: list index out of range"


def test_judge_call_no_value():
    verdict = judge("call", [3], Outcome(status=oc.RUN_EXITED, exit_code=3))
    assert (verdict.kind, verdict.reason) == (oc.RUNTIME_ERROR, "exit status 3")
    verdict = judge("call", [3], Outcome(status=oc.RUN_EXITED, exit_code=0))
    assert verdict.kind == oc.RUNTIME_ERROR


def test_judge_call_returned_none_is_compared():
    assert judge("call", [None], _returned(None)).passed
    assert judge("call", [0], _returned(None)).kind == oc.WRONG_ANSWER


@pytest.mark.parametrize(
    "value_json",
    [
        "not json",
        "{'a': 1}",  # a Python literal: never eval'd
        "__import__('os').system('true')",
        "[1, 2",
        "",
    ],
)
def test_judge_call_malformed_value_is_wrong_answer(value_json):
    outcome = Outcome(status=oc.RUN_EXITED, exit_code=0, value_json=value_json)
    verdict = judge("call", [1], outcome)
    assert verdict.kind == oc.WRONG_ANSWER
    assert "not valid JSON" in verdict.reason


def test_judge_call_deeply_nested_value_is_wrong_answer():
    outcome = Outcome(status=oc.RUN_EXITED, exit_code=0, value_json="[" * 200_000 + "]" * 200_000)
    verdict = judge("call", [1], outcome)
    assert verdict.kind == oc.WRONG_ANSWER


def test_judge_call_huge_value_is_output_limit(monkeypatch):
    import pytest_apps.judge.seed as judge_module

    monkeypatch.setattr(judge_module, "MAX_VALUE_JSON_CHARS", 100)
    verdict = judge("call", [1], _returned(list(range(100))))
    assert verdict.kind == oc.OUTPUT_LIMIT


def test_judge_call_ints_beyond_the_digit_limit():
    # The child has no int-to-str limit; the parent must still decode and compare such values.
    value_json = "9" * 6000
    outcome = Outcome(status=oc.RUN_EXITED, exit_code=0, value_json=value_json)
    assert judge("call", [int("9" * 3000) * 10**3000 + int("9" * 3000)], outcome).passed
    verdict = judge("call", [1], outcome)
    assert verdict.kind == oc.WRONG_ANSWER
    json.dumps(verdict.to_dict())  # details stay printable


def test_judge_call_nan_value():
    outcome = Outcome(status=oc.RUN_EXITED, exit_code=0, value_json="NaN")
    assert judge("call", [1.0], outcome).kind == oc.WRONG_ANSWER
    assert judge("call", [float("nan")], outcome).kind == oc.WRONG_ANSWER


def test_verdicts_are_plain_data():
    for verdict in (
        judge("stdin", "1", _exited("2")),
        judge("call", [1], _returned(2)),
        judge("stdin", "1", _exited("", code=1, stderr_tail="boom\n" * 100)),
    ):
        assert Verdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict
