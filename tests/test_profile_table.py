"""Judge profiles are one table (judge/profiles.py): its entries say how a profile's programs run, what the
executor preloads for them, the least memory they start in and the profile an audit compares with; every front
end asks the table, so the names are spelled in few places outside it."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

import pytest_apps
from pytest_apps.core.settings import OptionError, resolve
from pytest_apps.executor import APPS_STYLE_PRELOAD, STYLE_APPS_HARNESS, STYLE_REAL
from pytest_apps.judge import profiles
from pytest_apps.judge.profiles import MIN_MEMORY_APPS, TABLE, Judging, names, other_profile, preload_for

PACKAGE = Path(pytest_apps.__file__).parent


def test_every_profile_has_an_entry_and_the_audit_compares_with_another() -> None:
    assert names() == tuple(TABLE)
    for name, entry in TABLE.items():
        assert entry.name == name and entry.audit_with in TABLE and entry.audit_with != name
        assert other_profile(name) == entry.audit_with
        # the option check asks the entry: it refuses what the entry's programs cannot start in, takes its floor
        with pytest.raises(OptionError, match="too small"):
            _settings(judge=name, memory=str(entry.memory_floor - 1))
        assert _settings(judge=name, memory=str(entry.memory_floor)).memory == entry.memory_floor


def test_the_preload_is_the_profiles_and_its_audits() -> None:
    assert preload_for(Judging("seed")) == ()
    assert preload_for(Judging("seed", audit=True)) == APPS_STYLE_PRELOAD
    assert preload_for(Judging("apps")) == APPS_STYLE_PRELOAD
    assert preload_for(Judging("taco")) == APPS_STYLE_PRELOAD


def _settings(**values: object):
    return resolve(lambda dest: values.get(dest[len("apps_"):]), lambda dest: None, ".", check=profiles.checked)


def test_taco_has_the_apps_memory_floor_its_call_based_problems_run_in_the_apps_style() -> None:
    assert TABLE["taco"].memory_floor == TABLE["apps"].memory_floor == MIN_MEMORY_APPS
    with pytest.raises(OptionError, match="give at least 256M"):
        _settings(judge="taco", memory="100M")
    assert _settings(judge="taco", memory="256M").memory == MIN_MEMORY_APPS


def _spelling_a_profile_name() -> list[str]:
    """The modules outside `judge/` and the dataset table (dataset/table.py, whose entries are named after their datasets: APPS and TACO, as two profiles are) with a profile name as a
    string literal. (The plugin's own name "apps", its option group and ini prefix in plugin/options.py, its record
    key in plugin/collect.py and the rewards' figure prefix, is spelled the same and counts too: the rule is the
    spelling, not the meaning. report/comparison.py names the profile a report that names none was judged by.)"""
    tables = ("dataset/table.py",)
    spelt = {f'"{n}"' for n in names()} | {f"'{n}'" for n in names()}
    return sorted(
        p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
        if "judge" not in p.relative_to(PACKAGE).parts[:1] and p.relative_to(PACKAGE).as_posix() not in tables
        and any(t.type == tokenize.STRING and t.string in spelt
                for t in tokenize.tokenize(io.BytesIO(p.read_bytes()).readline)))


def test_profile_names_are_spelled_in_at_most_four_modules_outside_the_table() -> None:
    modules = _spelling_a_profile_name()
    assert len(modules) <= 4 and not [m for m in modules if m.startswith("core/")], modules


def test_the_executors_ways_of_running_are_not_named_after_profiles() -> None:
    """The executor runs a program as a real program or as the APPS harness does; which profile runs which way is
    the table's `runs`, so no executor module names a profile."""
    assert (STYLE_REAL, STYLE_APPS_HARNESS) == ("real", "apps-harness")
    assert not [m for m in _spelling_a_profile_name() if m.startswith("executor/")]
    assert {entry.runs for entry in TABLE.values()} >= {STYLE_REAL, STYLE_APPS_HARNESS}
