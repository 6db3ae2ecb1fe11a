"""The `apps` judge profile: the original APPS harness's verdicts (hendrycks/apps eval/testing_util.py at b45c0ed)
reproduced inside our isolation, and the `seed` profile beside it.

The expectations marked "original" were produced by running the original harness itself (Python 3.10, pyext 0.7)
on the same program, input and expected output, one test per fresh process: True is a pass, False a wrong answer,
-1 a runtime error and -2 a compile error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_problem

from pytest_apps.candidates.sources import Candidate
from pytest_apps.dataset.problems import CALL, STDIN, Cases, Problem
from pytest_apps.engine.run import Trial, run_case, run_judged
from pytest_apps.executor import APPS_STYLE_PRELOAD, STYLE_APPS_HARNESS, Executor, Program
from pytest_apps.executor.appsstyle import encode, transform_stdin
from pytest_apps.judge import apps
from pytest_apps.judge.profiles import APPS, SEED, Judging

KIND = {True: "pass", False: "wrong_answer", -1: "runtime_error", -2: "compile_error"}


@pytest.fixture(scope="module")
def ex():
    with Executor(preload=APPS_STYLE_PRELOAD) as executor:
        yield executor


def problem(fmt: str = STDIN, fn_name: str | None = None, pid: str = "1") -> Problem:
    return make_problem(pid, index=0, fmt=fmt, fn_name=fn_name)


def stdin_kind(ex: Executor, profile: str, source: str, given, expected) -> tuple[str, str]:
    _, verdict = run_judged(ex, Trial(profile, problem(), Program(source, "cand.py"), given, expected))
    return verdict.kind, verdict.step


def call_kind(ex: Executor, profile: str, source: str, fn: str, args, expected) -> tuple[str, str]:
    _, verdict = run_judged(ex, Trial(profile, problem(CALL, fn), Program(source, "cand.py"), args, expected))
    return verdict.kind, verdict.step


# --------------------------------------------------------------------------------------------------
# the comparison steps, on plain data

STDIN_STEPS = [  # (what the program printed, expected output, the step that accepts; every row checked on the original)
    ("1 2\n", "1 2\n", "apps:exact"),
    ("\n\n  hello world  \n\n\n", "  hello world\n", "apps:exact"),
    ("a   \n   b\n", "a\nb\n", "apps:stripped_lines"),
    ("1\n2\n", "1 \n2\n", "apps:nonblank_expected"),
    ("a\nb\n", "a\n\nb\n", "apps:nonblank_expected"),
    ("a\nb\n", "a\r\nb\r\n", "apps:nonblank_expected"),
    ("a\n\nb\n", "a\nb\n", "apps:nonblank_lines"),
    ("0.333333\n", "0.3333333333\n", "apps:float"),
    ("0\n", "1e-7\n", "apps:set_rounded"),
    ("100000.9\n", "100000\n", "apps:float"),
    ("12345678901234567000\n", "12345678901234567890\n", "apps:float"),
    ("0.333333 1\n", "0.3333333333 1\n", "apps:set_rounded"),
    ("3\n2 1\n", "1 2\n3\n", "apps:set"),  # lines and tokens in another order
    ("NO\nYES\n", "YES\nYES\nNO\n", "apps:set"),  # a repeated line dropped
    ("2 1\n", "1 1 2\n", "apps:set"),  # a repeated token dropped
    ("def abc\n", "abc def\n", "apps:set"),
    ("0.333\n", "0.3333333\n", "apps:set_rounded"),
    ("5 1\n", "1.0004 5\n", "apps:set_rounded"),
    ("3.0004\n", "3\n", "apps:set_rounded"),
    ("1000.1\n", "1000\n", None),
    ("1 3\n", "1 2\n", None),
    ("a b\n", "a\nb\n", None),
    ("a\nb\n", "a\n \nb\n", None),
    ("", "0\n", None),
    ("", "\n", "apps:exact"),
    ("1.0005\n", "1\n", "apps:set_rounded"),
    ("Yes\n", "YES\n", None),
    ("nan\n", "nan\n", "apps:exact"),
    ("inf\n", "1e309\n", "apps:float"),
    ("1000000.5 2\n", "1000001 2\n", None),  # the seed cascade accepts this one (numbers within 1e-5)
    ("1 2\n", "1\n2\n", None),  # and this one (the same numbers on other lines)
    ("1000002\n", "1000000\n", "apps:float"),
    ("0.0000005\n", "0.0000001\n", "apps:set_rounded"),
    ("1 2 \n3 \n", "1 2\n3\n", "apps:stripped_lines"),
    ("1\r2\r", "1\n2\n", "apps:exact"),  # the capture splits lines at any line boundary
]


@pytest.mark.parametrize(("printed", "expected", "step"), STDIN_STEPS)
def test_stdin_steps_as_the_original(printed: str, expected: str, step: str | None):
    assert apps.compare_stdin(printed.splitlines(), expected) == step


def test_input_and_expected_are_read_as_the_original_reads_them():
    assert apps.input_text(["1", "2"]) == "1\n2"  # joined, no newline added at the end
    assert apps.input_text("3\n") == "3\n"
    assert apps.input_text([1, 2]) is None and apps.input_text(5) is None
    assert apps.original_call_args([{"1": 2}, 5]) == [{1: 2}]  # a dict first argument becomes the only one, int keys
    assert apps.original_call_args([{"a": 2}, 5]) == [{"a": 2}, 5]
    assert apps.original_call_args("ab") == ["a", "b"] and apps.original_call_args(7) is None
    assert apps.call_expected([{"1": "a"}]) == [{1: "a"}]
    assert apps.call_expected({"2": 3}) == [{2: 3}]
    assert apps.call_expected([{"x": 1}]) == [{"x": 1}]


@pytest.mark.parametrize("value", [
    [1, (2, 3), {"a": (4,)}], {1: "a", (1, 2): frozenset({3})}, {5, 6}, b"\x00\xff", 1 + 2j, None, True, 2**200,
    [float("inf"), -0.0], "text", [],
])
def test_return_values_cross_as_tagged_json_and_come_back_equal(value):
    text = json.dumps(encode(value))
    back = apps.decode(json.loads(text))
    assert back == value and type(back) is type(value)


def test_numpy_values_come_back_as_numpy_values():
    np = pytest.importorskip("numpy")  # a declared dependency: never skipped in practice
    back = apps.decode(json.loads(json.dumps(encode(np.array([[1, 2], [3, 4]])))))
    assert isinstance(back, np.ndarray) and back.shape == (2, 2) and back.tolist() == [[1, 2], [3, 4]]
    scalar = apps.decode(json.loads(json.dumps(encode(np.float64(2.5)))))
    assert isinstance(scalar, np.float64) and scalar == 2.5


def test_objects_of_other_types_equal_nothing():
    class Mine:
        def __eq__(self, other):  # would pass everything in the original; here it never runs
            return True

    back = apps.decode(json.loads(json.dumps(encode(Mine()))))
    assert back != 5 and back != [5] and isinstance(back, apps.Opaque)


@pytest.mark.parametrize("sent", [
    '{"v": {"$q": [1, 0]}}', '{"v": {"$D": "not a number"}}', '{"v": {"$a": ["<U999999999", [1], ["x"]]}}',
    '{"v": {"$a": ["O", [1], [1]]}}', '{"v": {"$a": ["<i8", [3], [1, 2]]}}', '{"v": {"$x": 1}}', '{"w": 1}',
    '{"v": ' + "[" * 5000 + "]" * 5000 + "}", "not json",
])
def test_whatever_the_child_sends_is_its_own_failure_never_a_harness_error(sent: str):
    from pytest_apps.core.outcome import Outcome

    verdict = apps.judge("call", [1], Outcome(status="exited", exit_code=0, value_json=sent))
    assert verdict.kind == "wrong_answer"


def test_the_transformation_is_the_originals():
    src = "import sys\nfrom math import *\nn = int(input())\nimport os\nprint(n)\n"
    assert transform_stdin(src) == (
        "import sys\nfrom math import *\nstdin = sys.stdin\nstdout = sys.stdout\ndef code():\n"
        "\tn = int(input())\n\timport os\n\tprint(n)\n\t\n"
    )


# --------------------------------------------------------------------------------------------------
# programs run the original's way, judged here (the real executor)

STDIN_RUNS = [  # (program, input, expected output, the original's result)
    ("a=input()\nb=input()\nprint(int(a)+int(b))", "2\n3\n", "5\n", True),
    ("import sys\nprint(sum(map(int, sys.stdin.read().split())))", "2\n3\n", "5\n", True),
    ("import sys\nprint(sum(int(l) for l in sys.stdin))", "2\n3\n", "5\n", True),
    ("import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))", "2\n3\n", "5\n", -1),
    ("print(sum(map(int, open(0).read().split())))", "2\n3\n", "5\n", True),
    ("from sys import stdin\nprint(sum(map(int, stdin.read().split())))", "2\n3\n", "5\n", True),
    ("a=int(stdin.readline())\nb=int(stdin.readline())\nprint(a+b)", "2\n3\n", "5\n", True),
    ("import sys\nprint(sys.stdin.read().count(chr(10)))", ["1", "2", "3"], "2\n", True),
    ("import os\nprint(sum(map(int, os.read(0, 100).split())))", "2\n3\n", "5\n", False),
    ("a=input()\nb=input()\nc=input()\nprint(a)", "2\n", "2\n", -1),
    ("from sys import stdout\nstdout.write('5\\n')", "", "5\n", False),
    ("import sys\nsys.stdout.buffer.write(b'5\\n')", "", "5\n", -1),
    ("import sys\nprint(5, file=sys.stderr)", "", "5\n", False),
    ("def main():\n    print(5)\nif __name__ == '__main__':\n    main()", "", "5\n", False),
    ("print(5)\nexit()", "", "5\n", -1),
    ("import sys\nprint(5)\nsys.exit(0)", "", "5\n", True),
    ("print(5)\nreturn\nprint(6)", "", "5\n", True),
    ("x = 5\ndef f():\n    global x\n    return x\nprint(f())", "", "5\n", -1),
    ("# hi\nfrom math import *\nprint(int(pi))", "", "3\n", -2),
    ("from math import *\nprint(int(pi))", "", "3\n", True),
    ("import resource\nprint(5)", "", "5\n", -2),
    ("s = '''a\nb'''\nprint(s)", "", "a\nb\n", True),
    ("print(5)\nraise ValueError", "", "5\n", -1),
    ("print(gcd(10, 15), np.int64(2))", "", "5 2\n", True),
    ("from __future__ import annotations\nprint(5)", "", "5\n", -2),
    ("import sys\nprint(5)\nsys.stdout.close()", "", "5\n", -1),
    ("print(open('input.txt').read().split()[0])", "5\n", "5\n", True),
    ("x = input('n? ')\nprint(x)", "5\n", "5\n", False),
    ("from sys import stdin\ns = stdin.readline()[:-1]\nprint(s)", "abc\n", "abc\n", False),
    ("from sys import stdin\nprint(sum(int(l) for l in stdin.readlines()))", "2\n3\n", "5\n", -1),
    ("from sys import stdin\nprint(sum(int(l) for l in stdin))", "2\n3\n", "5\n", False),
    ("import threading\ndef main():\n    print(5)\nt = threading.Thread(target=main)\nt.start()\nt.join()", "", "5\n",
     True),
    ("from os import name\nprint(5)", "", "5\n", -2),  # a top-level `name` clashes with the original's loader
]


@pytest.mark.parametrize(("source", "given", "expected", "original"), STDIN_RUNS)
def test_stdin_programs_get_the_originals_verdict(ex, source, given, expected, original):
    kind, _ = stdin_kind(ex, APPS, source, given, expected)
    assert kind == KIND[original]


CALL_RUNS = [  # (program, fn_name, arguments, expected output, the original's result)
    ("def f(x):\n    return (1, 2)", "f", [0], [[1, 2]], True),
    ("def f(x):\n    return 1", "f", [0], [True], True),
    ("def f(x):\n    return [5]", "f", [0], [5], True),
    ("def f(x):\n    return 0.1 + 0.2", "f", [0], [0.3], False),  # no float tolerance
    ("def f(x):\n    return {1: 'a'}", "f", [0], [{"1": "a"}], True),  # expected keys made int
    ("def f(x):\n    return {'1': 'a'}", "f", [0], [{"1": "a"}], False),  # so string keys no longer match
    ("def f(x):\n    return {'a': 1}", "f", [0], [{"a": 1}], True),
    ("def f(d, y):\n    return y", "f", [{"1": 2}, 5], [5], -1),  # the dict argument became the only one
    ("def f(x):\n    return np.array([1, 2])", "f", [0], [[1, 2]], -1),  # bool() of an array raises
    ("class Solution:\n    def f(self, x):\n        return x + 1", "f", [1], [2], True),
    ("def g(x):\n    return x", "f", [1], [1], -2),
    ("# class Solution\ndef f(x):\n    return x", "f", [1], [1], -2),
    ("def f(x):\n    return [(1, 2), (3, 4)]", "f", [0], [[[1, 2], [3, 4]]], True),
    ("def f(x):\n    exit()", "f", [0], [1], -1),
    ("def f(x):\n    return None", "f", [0], [None], True),
    ("def f(x):\n    return 'ab'", "f", [0], [["a", "b"]], False),
    ("def f(x):\n    return 1.0", "f", [0], [True], True),
    ("def f(x):\n    return ((1, 2),)", "f", [0], [[[1, 2]]], True),
    ("x = 1/0\ndef f(x):\n    return 1", "f", [0], [1], -2),
    ("def f(x):\n    if x: raise ValueError\n    return x", "f", [1], [1], -1),
    ("import sys\ndef f(x):\n    sys.exit(0)", "f", [0], [1], -1),  # escapes the original: every test -1
    ("name = 'n'\ndef f(x):\n    return x", "f", [1], [1], -2),
    ("def f(x):\n    return {5, 6}", "f", [0], [[5, 6]], False),
    ("def f(x):\n    return __name__", "f", [0], ["builtins"], True),
]


@pytest.mark.parametrize(("source", "fn", "args", "expected", "original"), CALL_RUNS)
def test_call_based_programs_get_the_originals_verdict(ex, source, fn, args, expected, original):
    kind, _ = call_kind(ex, APPS, source, fn, args, expected)
    assert kind == KIND[original]


def test_a_main_guard_fails_under_apps_and_passes_under_seed(ex):
    src = "import sys\ndef main():\n    print(int(sys.stdin.readline()) * 2)\nif __name__ == '__main__':\n    main()\n"
    assert stdin_kind(ex, SEED, src, "21\n", "42\n") == ("pass", "exact")
    assert stdin_kind(ex, APPS, src, "21\n", "42\n")[0] == "wrong_answer"  # the guard's body never runs


def test_a_top_level_return_runs_under_apps_and_does_not_compile_under_seed(ex):
    src = "n = int(input())\nif n > 1:\n    print('big')\n    return\nprint('small')\n"
    assert stdin_kind(ex, APPS, src, "5\n", "big\n") == ("pass", "apps:exact")
    assert stdin_kind(ex, APPS, src, "0\n", "small\n") == ("pass", "apps:exact")
    assert stdin_kind(ex, SEED, src, "5\n", "big\n")[0] == "compile_error"


def test_lenient_matches_pass_under_apps_only_and_name_their_step(ex):
    # the same tokens in another order: the original's set step accepts them, the seed cascade does not
    src = "print('3')\nprint('2 1')\n"
    assert stdin_kind(ex, APPS, src, "", "1 2\n3\n") == ("pass", "apps:set")
    assert stdin_kind(ex, SEED, src, "", "1 2\n3\n")[0] == "wrong_answer"
    assert stdin_kind(ex, APPS, "print('0.333')", "", "0.3333333\n") == ("pass", "apps:set_rounded")
    assert stdin_kind(ex, SEED, "print('0.333')", "", "0.3333333\n")[0] == "wrong_answer"
    # and the other way round: the seed cascade's numeric step accepts what the original does not
    assert stdin_kind(ex, SEED, "print('1 2')", "", "1\n2\n") == ("pass", "numeric")
    assert stdin_kind(ex, APPS, "print('1 2')", "", "1\n2\n")[0] == "wrong_answer"
    # call-based: the original matches against the one-element list's item, and a list of tuples as lists
    assert call_kind(ex, APPS, "def f(x):\n    return 4", "f", [0], [4]) == ("pass", "apps:unwrap")
    assert call_kind(ex, APPS, "def f(x):\n    return [(1, 2)]", "f", [0], [[[1, 2]]]) == ("pass", "apps:tuples")


def test_the_apps_style_keeps_every_fence(ex):
    o = ex.run_stdin(Program("while True: pass", "cand.py"), "", style=STYLE_APPS_HARNESS)
    assert o.status == "timeout"
    o = ex.run_stdin(Program("import os\nprint(os.system('true'))", "cand.py"), "", style=STYLE_APPS_HARNESS)
    assert o.status == "exited" and o.exit_code == 1 and "disabled" in o.error  # the reliability guard
    o = ex.run_stdin(Program("print(open('/etc/hostname', 'w'))", "cand.py"), "", style=STYLE_APPS_HARNESS)
    assert o.exit_code == 0  # open() is the original's mock: nothing is written anywhere


def test_a_program_that_ends_its_process_is_a_runtime_error(ex):
    kind, _ = stdin_kind(ex, APPS, "import os\nprint(5)\nos._exit(0)", "", "5\n")
    assert kind == "runtime_error"  # the original loses the whole candidate ([-1] * 21)


def test_run_case_defaults_to_seed_and_takes_a_judging(ex):
    prob = problem()
    cand = Candidate(prob.id, "cand.py", "print(5)\nreturn\n")
    cases = Cases(["\n"], ["5\n"])
    assert run_case(ex, prob, cand, cases, 0).verdict.kind == "compile_error"
    assert run_case(ex, prob, cand, cases, 0, Judging(APPS)).verdict.kind == "pass"


# --------------------------------------------------------------------------------------------------
# the real rows

def reference_programs(shared: Path) -> dict[str, list[str]]:
    rows = [json.loads(line) for line in (shared / "apps_test_rows.jsonl").open()]
    return {str(r["problem_id"]): json.loads(r["solutions"]) for r in rows if r["solutions"]}


def test_seed_passes_none_of_the_top_level_return_programs_and_apps_passes_them(shared_data: Path):
    """The three reference solutions (among each problem's first five) that use a top-level `return`, every test:
    a compile error under seed, as the seed runner says; every test passes under apps, as the original says."""
    from pytest_apps import Evaluator, load_problems

    found = []
    for pid, solutions in reference_programs(shared_data).items():
        for index, source in enumerate(solutions[:5]):
            try:
                compile(source, "ref.py", "exec")
            except SyntaxError as exc:
                if exc.msg == "'return' outside function":
                    found.append((pid, index, source))
    assert [(pid, index) for pid, index, _ in found] == [("7", 4), ("15", 0), ("16", 0)]
    problems = {p.id: p for p in load_problems(dataset=str(shared_data / "apps_test_rows.jsonl"),
                                               only=["7", "15", "16"], max_tests=0)}
    tests = 0
    with Evaluator(workers=2) as seed, Evaluator(workers=2, judge="apps") as original:
        pairs = [(problems[pid], source) for pid, _, source in found]
        for under_seed, under_apps in zip(seed.score_many(pairs), original.score_many(pairs)):
            assert {t["kind"] for t in under_seed.tests} == {"compile_error"}
            assert under_apps.verdict == "pass" and under_apps.tests_passed == under_apps.tests_total
            tests += under_seed.tests_total
    assert tests == 574
