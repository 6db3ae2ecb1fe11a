"""`--apps-memory`: sizes with units, a floor below which no Python program starts, and the limit met by a program as
its verdict (memory limit) in both formats, never a harness error (docs/isolation.md)."""

from __future__ import annotations

import pytest
from conftest import run

from pytest_apps.api import Evaluator
from pytest_apps.core.outcome import MEMORY_LIMIT, RUN_EXITED, RUN_MEMORY
from pytest_apps.core.settings import OptionError, parse_size, resolve
from pytest_apps.executor import APPS_STYLE_PRELOAD, STYLE_APPS_HARNESS, STYLE_REAL, Executor, Limits, Program
from pytest_apps.judge import profiles
from pytest_apps.judge.profiles import MIN_MEMORY, MIN_MEMORY_APPS
from pytest_apps.judge.seed import ended_verdict


@pytest.mark.parametrize("text, size", [
    ("1073741824", 1 << 30), ("512M", 512 << 20), ("512m", 512 << 20), ("4G", 4 << 30), ("4GiB", 4 << 30),
    ("4gb", 4 << 30), ("1.5G", 3 << 29), ("64MiB", 64 << 20), ("2048K", 2 << 20), ("1T", 1 << 40), ("0", 0),
    (" 256 M ", 256 << 20), ("100B", 100), (12345, 12345),
])
def test_sizes_people_write(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "-1", "4 X", "4GiBs", "1.5", "0x100", "4iB", "1e9", True])
def test_what_is_not_a_size(text):
    with pytest.raises(ValueError):
        parse_size(text)


def settings(monkeypatch, **given):
    monkeypatch.delenv("APPS_CALL_BASED_MEMORY_BYTES", raising=False)
    values = {f"apps_{k}": v for k, v in given.items()}
    return resolve(lambda dest: values.get(dest), lambda dest: None, ".", check=profiles.checked)


def test_the_option_takes_sizes(monkeypatch):
    assert settings(monkeypatch, memory="512M").memory == 512 << 20
    assert settings(monkeypatch, memory="0").memory == 0
    assert settings(monkeypatch).memory is None
    monkeypatch.setenv("APPS_CALL_BASED_MEMORY_BYTES", "2G")
    assert resolve(lambda dest: None, lambda dest: None, ".").memory == 2 << 30


@pytest.mark.parametrize("given, judge, message", [
    ("10", "seed", "--apps-memory: 10 bytes is too small to start a Python program; give at least 64M, or 0 for no "
                   "limit"),
    ("1M", "seed", "--apps-memory: 1M is too small to start a Python program; give at least 64M, or 0 for no limit"),
    ("128M", "apps", "--apps-memory: 128M is too small to start a Python program; give at least 256M (the apps "
                     "judge's harness loads numpy), or 0 for no limit"),
    ("lots", "seed", "--apps-memory: 'lots' is not a size; give bytes or a size such as 512M, 4G or 4GiB (0 for no "
                     "limit)"),
])
def test_what_cannot_work_is_refused_in_one_line(monkeypatch, given, judge, message):
    with pytest.raises(OptionError) as info:
        settings(monkeypatch, memory=given, judge=judge)
    assert str(info.value) == message and "\n" not in message
    assert settings(monkeypatch, memory=str(MIN_MEMORY_APPS if judge == "apps" else MIN_MEMORY), judge=judge)


def test_the_evaluator_takes_sizes_and_refuses_the_same():
    with Evaluator(workers=1, memory="1G") as ev:
        assert ev.limits.memory == 1 << 30
    with pytest.raises(ValueError, match="at least 64M"):
        Evaluator(workers=1, memory=10)


@pytest.mark.parametrize("style", [STYLE_REAL, STYLE_APPS_HARNESS])
def test_the_floor_is_enough_and_the_limit_is_the_programs_verdict_in_both_formats(style):
    """At the floor a small program runs in both formats; a test over the limit (its arguments, its allocations)
    is a memory limit in both, never a harness error."""
    floor = MIN_MEMORY_APPS if style == STYLE_APPS_HARNESS else MIN_MEMORY
    with Executor(Limits(timeout=10, memory=floor), preload=APPS_STYLE_PRELOAD if style == STYLE_APPS_HARNESS else ()) as ex:
        o = ex.run_stdin(Program("print(sum(map(int, input().split())))"), "1 2\n", style=style)
        assert (o.status, o.exit_code, o.stdout) == (RUN_EXITED, 0, "3\n"), o
        o = ex.run_call(Program("def f(xs):\n    return sum(xs)"), "f", [list(range(10000))], style=style)
        assert (o.status, o.exit_code) == (RUN_EXITED, 0), o
        for o in (ex.run_stdin(Program("x = bytearray(1 << 30)\nprint(len(x))"), "", style=style),
                  ex.run_call(Program("def f():\n    return len(bytearray(1 << 30))"), "f", [], style=style),
                  ex.run_call(Program("def f(xs):\n    return len(xs)"), "f", [list(range(1 << 24))], style=style)):
            assert o.status == RUN_MEMORY, o
            assert ended_verdict(o).kind == MEMORY_LIMIT


def test_end_to_end_a_tiny_limit_is_one_clear_line(sample_project: pytest.Pytester) -> None:
    result = run(sample_project, "--apps-dataset", "sample", "--apps-memory", "10")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if "apps-memory" in line]
    assert len(errors) == 1 and "give at least 64M" in errors[0], result.stderr.str()
    result = run(sample_project, "--apps-dataset", "sample", "--apps-memory", "512M", "--apps-only", "900001")
    assert result.ret == 0 and "memory limit 0.5 GiB" in result.stdout.str(), result.stdout.str()
