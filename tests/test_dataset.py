"""Row parsing, skipping and selection (pure functions)."""

import json

import pytest

from pytest_apps.dataset.problems import (
    CALL, STDIN, Selection, SkippedRow, parse_call_args, parse_only, parse_row, select, stdin_text,
)


def make_row(pid, difficulty="interview", n=3, fn_name=None, **over):
    io = {"inputs": [f"{i}\n" for i in range(n)], "outputs": [f"{i * 2}\n" for i in range(n)]}
    if fn_name:
        io["fn_name"] = fn_name
    row = {
        "problem_id": pid,
        "question": f"question {pid}",
        "solutions": "",
        "input_output": json.dumps(io),
        "difficulty": difficulty,
        "url": "",
        "starter_code": "",
    }
    row.update(over)
    return row


def test_parse_stdin_row_keeps_everything_under_the_cap():
    problem, cases = parse_row(make_row(7, n=3), 0, max_tests=20)
    assert problem.id == "7" and problem.fmt == STDIN and problem.fn_name is None
    assert problem.n_cases == 3 and problem.n_cases_total == 3
    assert cases.inputs == ["0\n", "1\n", "2\n"] and cases.outputs == ["0\n", "2\n", "4\n"]
    assert problem.input_sizes == (2, 2, 2)


def test_parse_call_row_and_cap():
    problem, cases = parse_row(make_row(9, n=30, fn_name="f"), 4, max_tests=20)
    assert problem.fmt == CALL and problem.fn_name == "f"
    assert problem.n_cases == 20 and problem.n_cases_total == 30 and len(cases) == 20
    assert problem.index == 4


@pytest.mark.parametrize("cap", [0, -1])
def test_cap_zero_or_less_keeps_all(cap):
    problem, cases = parse_row(make_row(1, n=30), 0, max_tests=cap)
    assert problem.n_cases == 30 and len(cases) == 30


@pytest.mark.parametrize(
    "override, reason",
    [
        ({"question": ""}, "empty question"),
        ({"question": "   \n"}, "empty question"),
        ({"input_output": ""}, "empty input_output"),
        ({"input_output": "{not json"}, "input_output is not JSON"),
        ({"input_output": "[1, 2]"}, "input_output is not an object"),
        ({"input_output": json.dumps({"inputs": [], "outputs": ["1"]})}, "input_output has no inputs"),
        ({"input_output": json.dumps({"inputs": ["1"], "outputs": []})}, "input_output has no outputs"),
        ({"input_output": json.dumps({"outputs": ["1"]})}, "input_output has no inputs"),
    ],
)
def test_unusable_rows_are_skipped_with_a_reason(override, reason):
    parsed = parse_row(make_row(5, **override), 3, max_tests=20)
    assert isinstance(parsed, SkippedRow)
    assert parsed.problem_id == "5" and parsed.index == 3
    assert parsed.reason.startswith(reason)


def test_length_mismatch_is_not_skipped_but_broken():
    io = json.dumps({"inputs": ["1", "2", "3"], "outputs": ["1", "2"]})
    problem, _ = parse_row(make_row(5, input_output=io), 0, max_tests=20)
    assert problem.broken == "inputs (3) and outputs (2) differ in length"
    assert problem.n_cases == 0


def test_huge_integers_in_input_output_parse():
    big = "9" * 5000
    io = '{"inputs": [[' + big + ']], "outputs": [[' + big + ']], "fn_name": "f"}'
    problem, cases = parse_row(make_row(1, input_output=io), 0, max_tests=20)
    assert cases.inputs[0][0] == int(big)


def rows_of(n, tiers=("introductory", "interview", "competition")):
    return [make_row(i, difficulty=tiers[i % len(tiers)]) for i in range(n)]


def ids(parsed):
    return [p.id for p in parsed.problems]


def test_limit_without_filters_is_the_first_rows():
    parsed = select(rows_of(100), Selection(limit=50), 20)
    assert ids(parsed) == [str(i) for i in range(50)]


def test_limit_counts_rows_so_a_skipped_row_stays_in_the_window():
    rows = rows_of(10)
    rows[3]["question"] = ""
    parsed = select(rows, Selection(limit=5), 20)
    assert ids(parsed) == ["0", "1", "2", "4"]
    assert [s.problem_id for s in parsed.skipped] == ["3"]


def test_order_is_filter_only_offset_limit():
    sel = Selection(difficulties=["interview"], only=["1,4", "7", "10", "13"], offset=1, limit=2)
    parsed = select(rows_of(20), sel, 20)
    # interview rows are 1, 4, 7, 10, 13, 16, 19; only keeps 1, 4, 7, 10, 13; offset 1; limit 2
    assert ids(parsed) == ["4", "7"]


def test_difficulty_is_case_insensitive_and_repeatable():
    parsed = select(rows_of(9), Selection(difficulties=["Competition", "introductory"]), 20)
    assert ids(parsed) == ["0", "2", "3", "5", "6", "8"]


def test_unknown_difficulty_is_an_error():
    with pytest.raises(ValueError, match="unknown tier 'expert'"):
        select(rows_of(3), Selection(difficulties=["expert"]), 20)


def test_only_reports_ids_not_found():
    parsed = select(rows_of(5), Selection(only=["2", "42"]), 20)
    assert ids(parsed) == ["2"] and parsed.missing == ["42"]


def test_duplicate_ids_keep_the_first_and_count_the_second():
    rows = rows_of(3) + [make_row(1)]
    parsed = select(rows, Selection(), 20)
    assert ids(parsed) == ["0", "1", "2"]
    assert parsed.skipped[0].reason.startswith("duplicate problem_id")


def test_loader_error_rows_are_skipped_and_counted():
    rows = [make_row(0), {"__error__": "line 2: not JSON", "__line__": 2}, make_row(2)]
    parsed = select(rows, Selection(), 20)
    assert ids(parsed) == ["0", "2"]
    assert parsed.skipped[0].reason == "line 2: not JSON"


def test_stop_hint_only_without_filters():
    assert Selection(limit=50).stop_hint() == 50
    assert Selection(offset=10, limit=5).stop_hint() == 15
    assert Selection().stop_hint() is None
    assert Selection(difficulties=["interview"], limit=5).stop_hint() is None


def test_parse_only_splits_commas_and_repeats():
    assert parse_only(["1,2", " 3 ", "4,,"]) == ["1", "2", "3", "4"]


@pytest.mark.parametrize(
    "raw, args",
    [
        ([1, 2], [1, 2]),
        ("[1, [2, 3]]", [1, [2, 3]]),
        ("(1, 2)", [(1, 2)]),
        ("['a', None]", ["a", None]),
        ("just text", ["just text"]),
        (5, [5]),
        ({"a": 1}, [{"a": 1}]),
    ],
)
def test_call_args(raw, args):
    assert parse_call_args(raw) == args


def test_stdin_text_joins_lists():
    assert stdin_text("1 2\n") == "1 2\n"
    assert stdin_text(["1", "2"]) == "1\n2\n"


def test_only_with_a_limit_does_not_call_unread_ids_missing():
    parsed = select(rows_of(10), Selection(only=["2", "5", "42"], limit=1), 20)
    assert ids(parsed) == ["2"] and parsed.missing == []


def test_a_sink_takes_each_problems_cases_as_its_row_is_parsed():
    got = []
    rows = rows_of(4)
    rows[2]["question"] = ""
    parsed = select(iter(rows), Selection(), 2, sink=lambda p, c: got.append((p.id, len(c))))
    assert got == [("0", 2), ("1", 2), ("3", 2)]
    assert parsed.cases == {} and ids(parsed) == ["0", "1", "3"]


def test_a_tier_no_row_has_is_named_with_the_tiers_the_rows_have():
    from pytest_apps.dataset.problems import absent_tiers_line

    apps = [make_row(1, "interview"), make_row(2, "introductory")]
    taco = [make_row(1, "MEDIUM"), make_row(2, "HARD")]

    def line(rows, *tiers, **selection):
        return absent_tiers_line(tiers, select(rows, Selection(tiers, **selection), 20), "rows.jsonl")

    assert line(apps, "HARD") == ("--apps-difficulty=HARD: no row of rows.jsonl has that tier; its tiers are "
                                  "introductory, interview (APPS's names): give one of them")
    assert line(taco, "interview", "competition").startswith(
        "--apps-difficulty=interview, competition: no row of rows.jsonl has that tier; its tiers are MEDIUM, HARD "
        "(TACO's names)")
    # a tier the rows have, even where the rest of the selection leaves nothing, is not this line's business
    assert line(apps, "interview") is None and line(apps, "interview", only=["99"]) is None
    assert line(taco, "hard", "interview") is None
    assert absent_tiers_line((), select(apps, Selection(), 20), "rows.jsonl") is None


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_a_null_test_in_a_standard_input_row_skips_the_row_with_the_reason(side):
    io = {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]}
    io[side][1] = None
    parsed = parse_row(make_row(5, input_output=json.dumps(io)), 3, max_tests=20)
    assert isinstance(parsed, SkippedRow)
    assert parsed.reason == f"input_output: test 1's {side[:-1]} is null in a standard-input problem"


@pytest.mark.parametrize("value, kind", [(7, "int"), ({"a": 1}, "dict"), (["1 2", 3], "list")])
def test_a_standard_input_that_is_not_text_skips_the_row_with_the_reason(value, kind):
    """A number or an object is not turned into text by guess: the row is skipped and counted, with why."""
    io = {"inputs": ["1\n", value], "outputs": ["2\n", "4\n"]}
    parsed = parse_row(make_row(5, input_output=json.dumps(io)), 3, max_tests=20)
    assert isinstance(parsed, SkippedRow)
    assert parsed.reason == (f"input_output: test 1's input is a {kind}, not text or a list of lines, in a "
                             "standard-input problem")
    lines = {"inputs": ["1\n", ["1 2", "3"]], "outputs": ["2\n", "4\n"]}  # a list of lines is text
    problem, cases = parse_row(make_row(5, input_output=json.dumps(lines)), 3, max_tests=20)
    assert problem.n_cases == 2 and cases.inputs[1] == ["1 2", "3"]


def test_a_null_value_of_a_call_based_row_stays_a_json_value():
    io = {"inputs": [[None], [1]], "outputs": [None, 2], "fn_name": "f"}
    problem, cases = parse_row(make_row(5, input_output=json.dumps(io)), 3, max_tests=20)
    assert problem.fmt == CALL and cases.inputs == [[None], [1]] and cases.outputs == [None, 2]
