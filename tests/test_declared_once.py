"""What a run's options default to is declared once, in core/settings.py, and every front end reads it there: the
time limit's default, the default dataset, and the memory limit taken from the environment."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

import pytest_apps
from pytest_apps.core.settings import OptionError
from pytest_apps.executor import Limits

PACKAGE = Path(pytest_apps.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_the_time_limits_default_is_written_once() -> None:
    places = [f"{p.relative_to(PACKAGE)}:{tok.start[0]}" for p in SOURCES
              for tok in tokenize.tokenize(io.BytesIO(p.read_bytes()).readline)
              if tok.type == tokenize.NUMBER and tok.string in ("4.0", "4.")]
    assert len(places) == 1, places


def test_the_default_dataset_is_defined_once() -> None:
    places = [str(p.relative_to(PACKAGE)) for p in SOURCES for node in ast.walk(ast.parse(p.read_bytes()))
              if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DEFAULT_DATASET"
                                                      for t in node.targets)]
    assert places == ["core/settings.py"]


def test_a_bad_memory_variable_is_one_clear_error_for_every_front_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPS_CALL_BASED_MEMORY_BYTES", "lots")
    with pytest.raises(OptionError) as info:
        Limits()
    message = str(info.value)
    assert "APPS_CALL_BASED_MEMORY_BYTES='lots'" in message and "\n" not in message
    monkeypatch.setenv("APPS_CALL_BASED_MEMORY_BYTES", "2G")
    assert Limits().memory == 2 << 30


def test_every_option_is_a_settings_field_declared_there_once() -> None:
    """An option is written once: a `Settings` field whose metadata holds the rest of its `Option`; the option
    table is read from those fields, so an option in one is in the other with the same default."""
    from dataclasses import fields

    from pytest_apps.core.settings import OPTIONS, Settings

    declared = {f.name: f for f in fields(Settings)}
    options = {opt.dest[len("apps_"):]: opt for opt in OPTIONS}
    assert set(declared) - set(options) == {"rootdir", "project", "from_ini", "defaulted", "extra"}  # not options
    assert set(options) <= set(declared)
    for name, opt in options.items():
        assert "option" in declared[name].metadata and declared[name].default == opt.default, name
    assert [opt.dest[len("apps_"):] for opt in OPTIONS] == [f.name for f in fields(Settings) if f.name in options]
