"""Judge profiles are one table (judge/profiles.py): its entries say how a profile's programs run, what the
executor preloads for them, the least memory they start in and the profile an audit compares with; every front
end asks the table, so the names are spelled in few places outside it."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

import pytest_apps
from pytest_apps.core.settings import MIN_MEMORY_APPS, OptionError, memory_floor, resolve
from pytest_apps.executor import APPS_STYLE_PRELOAD
from pytest_apps.judge.profiles import PROFILES, TABLE, Judging, other_profile, preload_for

PACKAGE = Path(pytest_apps.__file__).parent


def test_every_profile_has_an_entry_and_the_audit_compares_with_another() -> None:
    assert tuple(TABLE) == PROFILES
    for name, entry in TABLE.items():
        assert entry.name == name and entry.audit_with in TABLE and entry.audit_with != name
        assert other_profile(name) == entry.audit_with
        assert memory_floor(name) == entry.memory_floor  # the option check refuses what the entry cannot start in


def test_the_preload_is_the_profiles_and_its_audits() -> None:
    assert preload_for(Judging("seed")) == ()
    assert preload_for(Judging("seed", audit=True)) == APPS_STYLE_PRELOAD
    assert preload_for(Judging("apps")) == APPS_STYLE_PRELOAD
    assert preload_for(Judging("taco")) == APPS_STYLE_PRELOAD


def _settings(**values: object):
    return resolve(lambda dest: values.get(dest[len("apps_"):]), lambda dest: None, ".")


def test_taco_has_the_apps_memory_floor_its_call_based_problems_run_in_the_apps_style() -> None:
    assert TABLE["taco"].memory_floor == TABLE["apps"].memory_floor == MIN_MEMORY_APPS
    with pytest.raises(OptionError, match="give at least 256M"):
        _settings(judge="taco", memory="100M")
    assert _settings(judge="taco", memory="256M").memory == MIN_MEMORY_APPS


def test_profile_names_are_spelled_in_at_most_three_modules_outside_the_table() -> None:
    names = {f'"{n}"' for n in PROFILES} | {f"'{n}'" for n in PROFILES}
    modules = sorted(
        str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
        if "judge" not in p.relative_to(PACKAGE).parts[:1] and p.relative_to(PACKAGE).as_posix() != "core/settings.py"
        and any(t.type == tokenize.STRING and t.string in names
                for t in tokenize.tokenize(io.BytesIO(p.read_bytes()).readline)))
    assert len(modules) <= 3, modules
