"""The failure text of one case shows the difference it is about: for output of several lines both sides around
the first differing line, numbered, and a compact diff when more than that line differs, within the excerpts'
bounds; its header names the sample. Judged by the real seed and apps judges from the program's whole output."""

from __future__ import annotations

import pytest

from pytest_apps.core.outcome import Outcome
from pytest_apps.engine.failtext import case_failure_text, case_title, difference_view, failure_detail
from pytest_apps.engine.result import CaseResult
from pytest_apps.judge.seed import CUT_CHARS, CUT_LINES
from pytest_apps.judge.profiles import APPS, SEED, decide

# 31 lines as a problem printing one answer per query prints them ("<query> <answer>")
EXPECTED_LINES = [f"{q} {q * q % 97}" for q in range(1, 32)]


def _result(expected_lines, got_lines, profile=SEED):
    expected = "\n".join(expected_lines) + "\n"
    stdout = "\n".join(got_lines) + "\n"
    outcome = Outcome("exited", exit_code=0, stdout=stdout, value_json="null" if profile == APPS else None)
    verdict = decide(profile, "stdin", expected, outcome)
    assert verdict.kind == "wrong_answer", verdict
    return CaseResult(verdict, outcome, "31\n", expected)


def _section(text, name):
    """The lines of one part of a failure text (`expected (...)`, `got (...)`, `diff ...`), header included."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(name))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


@pytest.mark.parametrize("profile", [SEED, APPS])
def test_the_first_difference_on_line_20_of_31_is_in_view_on_both_sides(profile):
    got = list(EXPECTED_LINES)
    got[19] = "20 13"  # expected "20 12"
    text = case_failure_text(_result(EXPECTED_LINES, got, profile), case_title("15", 1, "sample_1"), "pytest x")
    assert text.startswith("APPS problem 15 sample_1 test 1: wrong answer (line 20: expected '20 12', got '20 13')")
    expected, shown = _section(text, "expected ("), _section(text, "got (")
    assert expected[0] == "expected (lines 17-24 of 31):" and shown[0] == "got (lines 17-24 of 31):"
    assert "    > 20 | 20 12" in expected and "    > 20 | 20 13" in shown  # marked, numbered, both sides
    assert "      17 | 17 95" in expected and "      24 | 24 91" in shown
    for part in (expected, shown):
        assert len(part) - 1 <= CUT_LINES
    assert "diff (" not in text  # one line differs: the two excerpts say it all


def test_missing_trailing_lines_show_where_got_ends_and_a_diff_of_what_is_missing():
    got = EXPECTED_LINES[:28]
    text = case_failure_text(_result(EXPECTED_LINES, got), case_title("15", 0), "pytest x")
    assert text.startswith("APPS problem 15 test 0: wrong answer (got fewer lines: 28 instead of 31")
    expected, shown = _section(text, "expected ("), _section(text, "got (")
    assert "    > 29 | 29 65" in expected and expected[0] == "expected (lines 24-31 of 31):"
    assert shown[0] == "got (lines 21-28 of 28; ends after line 28):" and shown[-1] == "      28 | 28 8"
    diff = _section(text, "diff (- expected, + got)")
    assert "    -29 65" in diff and "    -31 88" in diff


def test_long_lines_are_shown_around_the_differing_column_within_the_bounds():
    rows = [" ".join(str((i * 31 + j) % 1000) for j in range(60)) for i in range(31)]  # ~230 chars a line
    got = list(rows)
    numbers = got[19].split(" ")
    numbers[40] = "999999"
    got[19] = " ".join(numbers)
    view = difference_view("\n".join(rows) + "\n", "\n".join(got) + "\n")
    assert view["line"] == 20
    body = view["got"].split("\n")[1:]
    assert any(line.startswith("> 20 | ...") and "999999" in line for line in body)  # the column is in view
    assert sum(len(line.split(" | ", 1)[1]) for line in body) <= CUT_CHARS + 10
    assert len(body) <= CUT_LINES


def test_a_shifted_output_gets_a_compact_diff_naming_the_one_missing_line():
    got = EXPECTED_LINES[:10] + EXPECTED_LINES[11:]  # line 11 dropped: every later line differs
    view = difference_view("\n".join(EXPECTED_LINES) + "\n", "\n".join(got) + "\n")
    assert view["line"] == 11
    assert view["diff"].splitlines() == ["@@ -10,3 +10,2 @@", " 10 3", "-11 24", " 12 47"]


def test_single_line_outputs_keep_the_plain_excerpts():
    outcome = Outcome("exited", exit_code=0, stdout="41\n")
    verdict = decide(SEED, "stdin", "42\n", outcome)
    text = case_failure_text(CaseResult(verdict, outcome, "1\n", "42\n"), case_title("7", 3), "pytest x")
    assert "expected:\n    42" in text and "got:\n    41" in text and "diff" not in text
    assert difference_view("42\n", "41\n") is None


def test_the_reports_detail_holds_the_neighbourhood_and_the_diff():
    got = EXPECTED_LINES[:28]
    detail = failure_detail(_result(EXPECTED_LINES, got))
    assert detail["expected"].startswith("1 1\n2 4\n")  # the excerpt from the top stays as it was
    assert detail["diff_line"] == 29
    assert detail["expected_near"].startswith("expected (lines 24-31 of 31):\n")
    assert "> 29 | 29 65" in detail["expected_near"] and "-31 88" in detail["diff"]


def test_blank_lines_before_the_output_do_not_shift_the_line_the_reason_names():
    """The judge compares the output without its blank ends, and the view numbers its lines the same way."""
    got = ["", "", *EXPECTED_LINES]
    got[2 + 9] = "10 4"  # expected "10 3"
    text = case_failure_text(_result(EXPECTED_LINES, got), case_title("15", 2), "pytest x")
    assert text.startswith("APPS problem 15 test 2: wrong answer (line 10: expected '10 3', got '10 4')")
    assert "    > 10 | 10 4" in _section(text, "got (") and "    > 10 | 10 3" in _section(text, "expected (")


def test_a_failure_names_the_sample_of_a_folder_of_samples_as_of_a_file_of_several():
    from pytest_apps.candidates.sources import Candidate

    in_folder = Candidate("15", "/x/reference/15/solution_79.py", "print(1)", sample=79)
    in_file = Candidate("15", "/x/gens.jsonl", "print(1)", sample=1, label="sample_1")
    alone = Candidate("15", "/x/solutions/15.py", "print(1)")
    assert [c.sample_name for c in (in_folder, in_file, alone)] == ["solution_79", "sample_1", ""]
    assert case_title("15", 3, in_folder.sample_name) == "APPS problem 15 solution_79 test 3"
    assert case_title("15", 3, alone.sample_name) == "APPS problem 15 test 3"
