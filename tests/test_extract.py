"""Code extraction from model text: the rule of issue 4, one behaviour per test."""

from __future__ import annotations

from pytest_apps.candidates.extract import extract_code, looks_like_markdown

F = "```"


def test_takes_the_last_python_block():
    text = f"draft\n{F}python\nprint(1)\n{F}\nfinal\n{F}python\nprint(2)\n{F}\n"
    assert extract_code(text) == "print(2)"


def test_labels_python_and_py_in_any_case():
    assert extract_code(f"{F}PY\nx = 1\n{F}") == "x = 1"
    assert extract_code(f"{F}Python\nx = 2\n{F}") == "x = 2"


def test_skips_blocks_that_are_empty_json_or_not_python():
    text = (
        f"{F}python\nprint('answer')\n{F}\n"
        f"{F}python\n{{\"a\": 1}}\n{F}\n"
        f"{F}python\n[1, 2]\n{F}\n"
        f"{F}python\ndef broken(:\n{F}\n"
        f"{F}python\n   \n{F}\n"
    )
    assert extract_code(text) == "print('answer')"


def test_bare_fences_only_when_no_python_block_qualifies():
    assert extract_code(f"{F}\nprint('bare')\n{F}\n{F}python\nprint('py')\n{F}") == "print('py')"
    assert extract_code(f"{F}python\nnot python at all(\n{F}\n{F}\nprint('bare')\n{F}") == "print('bare')"


def test_other_languages_are_not_taken():
    assert extract_code(f"{F}cpp\nint main() {{}}\n{F}") is None


def test_cuts_everything_up_to_the_last_think_end():
    text = f"<think>{F}python\nprint('draft')\n{F}</think>more<THINK>x</Think>\nno code here"
    assert extract_code(text) is None
    text = f"<think>{F}python\nprint('draft')\n{F}</THINK>\n{F}python\nprint('final')\n{F}"
    assert extract_code(text) == "print('final')"


def test_no_block_is_no_code():
    assert extract_code("print(1)") is None
    assert extract_code("") is None
    assert extract_code(None) is None


def test_an_unclosed_final_python_block_is_a_truncated_generation():
    assert extract_code(f"{F}python\nprint(1)\n") == "print(1)"  # cut at the token limit after a whole statement
    assert extract_code(f"{F}python\nprint(1\n") is None  # cut mid-statement: it does not parse
    assert extract_code(f"{F}python\nx = 2\n{F}\nthen\n{F}python\nprint(1)\n") == "print(1)"  # the last one
    assert extract_code(f"{F}python\nx = 2\n{F}\nthen\n{F}python\nprint(1\n") == "x = 2"
    assert extract_code(f"{F}text\nprint(1)\n") is None  # only a python block is taken unclosed


def test_markdown_detection_for_program_fields():
    assert looks_like_markdown(f"Here:\n{F}python\nx=1\n{F}")
    assert not looks_like_markdown("s = '```'\nprint(s)")
