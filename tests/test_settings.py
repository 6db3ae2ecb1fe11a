"""Option resolution as a plain function: the command line over the ini file over the defaults, and each bad
value refused in one line that names the option (or the ini key) and what to give. The plugin's side (a usage
error, exit status 4, the line on stderr) is one end-to-end test in test_plugin.py."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_apps.core.settings import OPTIONS, OptionError, Settings, argparse_kwargs, resolve, settings_from
from pytest_apps.judge import profiles


def settings(*args: str, ini: dict[str, Any] | None = None) -> Settings:
    """The settings of a command line (and ini values), resolved as the plugin resolves pytest's."""
    parser = argparse.ArgumentParser()
    for opt in OPTIONS:
        parser.add_argument(opt.flag, **argparse_kwargs(opt))
    namespace = parser.parse_args(list(args))
    ini = ini or {}
    return resolve(lambda dest: getattr(namespace, dest), lambda dest: ini.get(dest), "/project", check=profiles.checked)


def refusal(*args: str, ini: dict[str, Any] | None = None) -> str:
    with pytest.raises(OptionError) as caught:
        settings(*args, ini=ini)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_defaults_then_the_ini_then_the_command_line() -> None:
    assert settings().limit is None and settings().timeout == 4.0
    assert settings(ini={"apps_limit": "2"}).limit == 2
    assert settings("--apps-limit=1", ini={"apps_limit": "2"}).limit == 1
    assert settings("--apps-dataset=sample", ini={"apps_dataset": "rows.jsonl"}).dataset == "sample"
    assert settings(ini={"apps_dataset": "rows.jsonl"}).dataset == "rows.jsonl"


BAD_VALUES = [
    (("--apps-limit", "x"), "--apps-limit: 'x' is not a valid int"),
    (("--apps-limit", "-1"), "--apps-limit: -1 is negative; give 0 or more problems"),
    (("--apps-offset", "-2"), "--apps-offset: -2 is negative; give 0 or more"),
    (("--apps-timeout", "0"), "--apps-timeout: 0.0 must be more than 0 seconds"),
    (("--apps-timeout-scale", "0"), "--apps-timeout-scale: 0.0 must be more than 0 (1 keeps the limits)"),
    (("--apps-cpu-pinning", "always"), "--apps-cpu-pinning: unknown mode 'always'; use auto or off"),
    (("--apps-work-stealing", "yes"), "--apps-work-stealing: unknown mode 'yes'; use on or off"),
    (("--apps-select", "best"), "--apps-select: unknown mode 'best'; use all or most-common"),
    (("--apps-samples", "0"), "--apps-samples: 0; give 1 or more"),
    (("--apps-fail-under", "101"), "--apps-fail-under: 101.0 is not a percentage from 0 to 100"),
    (("--apps-fail-on-regression",), "--apps-fail-on-regression: give --apps-baseline=PATH"),
    (("--apps-agent", "no_colon"), "--apps-agent: 'no_colon' is not module:callable"),
    (("--apps-judge", "mine"), "--apps-judge: unknown judge 'mine'; use seed, apps, taco, lcb or codecontests"),
    (("--apps-memory", "lots"), "--apps-memory: 'lots' is not a size; give bytes or a size such as 512M"),
    (("--apps-memory", "1M"), "--apps-memory: 1M is too small to start a Python program; give at least"),
    (("--apps-timeout", "nan"), "--apps-timeout: 'nan' is not a finite number"),
    (("--apps-timeout", "inf"), "--apps-timeout: 'inf' is not a finite number"),
    (("--apps-timeout", "1e308"), "--apps-timeout: 1e+308 seconds is more than a day"),
    (("--apps-timeout-scale", "1e300"), "--apps-timeout-scale: 4e+300 seconds"),
    (("--apps-agent-timeout", "1e9"), "--apps-agent-timeout: 1e+09 seconds is more than a day"),
    (("--apps-records", ""), "--apps-records: an empty path; give a folder path, or off"),
    (("--apps-report", ""), "--apps-report: an empty path; give a file path"),
]
EACH_BAD_VALUE = pytest.mark.parametrize("args, says", BAD_VALUES,
                                         ids=lambda value: value[0] if isinstance(value, tuple) else None)


@EACH_BAD_VALUE
def test_a_bad_value_is_one_line_naming_the_option_and_what_to_give(args: tuple[str, ...], says: str) -> None:
    assert refusal(*args).startswith(says)


@EACH_BAD_VALUE
def test_a_python_callers_values_are_converted_and_checked_as_the_command_lines(
        args: tuple[str, ...], says: str) -> None:
    """`settings_from` (the API's way in) takes the same table: the same refusal, naming the value as the
    caller does."""
    flag, value = args[0], (args[1] if len(args) > 1 else True)  # (a flag alone is a switch turned on)
    given = {flag[len("--apps-"):].replace("-", "_"): value}
    with pytest.raises(OptionError) as caught:
        settings_from(given, check=profiles.checked)
    assert str(caught.value).startswith(says)
    with pytest.raises(OptionError) as caught:
        settings_from(given, named=lambda option: f"<{option}>", check=profiles.checked)
    assert str(caught.value).startswith(re.sub(r"--apps-([a-z-]+)", r"<\1>", says))


def test_a_python_callers_values_give_the_command_lines_settings() -> None:
    given = settings("--apps-only=15,17", "--apps-difficulty=interview", "--apps-limit=5", "--apps-timeout=2",
                     "--apps-memory=512M", "--apps-judge=apps")
    assert settings_from({"only": [15, "17"], "difficulty": ("interview",), "limit": "5", "timeout": 2,
                          "memory": "512M", "judge": "apps"}, rootdir="/project", check=profiles.checked) == given
    assert settings_from({"timeout": None, "limit": None}) == Settings()  # None keeps the default
    with pytest.raises(TypeError, match="unknown option"):
        settings_from({"timeuot": 2})


def test_the_memory_variable_is_read_and_checked_for_every_front_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPS_CALL_BASED_MEMORY_BYTES", "1G")
    assert settings().memory == settings_from({}).memory == 1 << 30
    assert settings_from({"memory": "2G"}).memory == 2 << 30  # a value given wins
    monkeypatch.setenv("APPS_CALL_BASED_MEMORY_BYTES", "lots")
    with pytest.raises(OptionError, match="APPS_CALL_BASED_MEMORY_BYTES='lots' is not a size"):
        settings_from({})


def test_a_bad_ini_value_names_the_ini_key() -> None:
    assert refusal(ini={"apps_limit": "many"}).startswith("ini option apps_limit: 'many' is not a valid int")
    # a value that converts but is out of range names the ini key too, never a flag the user did not type
    assert refusal(ini={"apps_timeout": "-1"}).startswith("ini option apps_timeout: -1.0 must be more than 0")
    assert refusal(ini={"apps_timeout_scale": "0"}).startswith("ini option apps_timeout_scale: 0.0 must be")
    assert refusal(ini={"apps_timeout": "nan"}).startswith("ini option apps_timeout: 'nan' is not a finite")
    assert refusal(ini={"apps_fail_on_regression": "true"}).startswith(
        "ini option apps_fail_on_regression: give --apps-baseline=PATH")
    assert settings("--apps-limit=3", ini={"apps_limit": "many"}).limit == 3  # the command line wins unread


def test_a_rerun_repeats_the_selection_and_report_options_the_command_line_gave() -> None:
    from pytest_apps.core.settings import rerun_args

    given = settings("--apps-dataset=rows.jsonl", "--apps-only=15,17", "--apps-difficulty=interview",
                     "--apps-difficulty=competition", "--apps-tag=math", "--apps-limit=5", "--apps-offset=2",
                     "--apps-report=out/r.json", "--apps-html=r.html", "--apps-records=recs", "--apps-timeout=2")
    assert rerun_args(given) == [
        "--apps-dataset=rows.jsonl", "--apps-only=15,17", "--apps-difficulty=interview",
        "--apps-difficulty=competition", "--apps-tag=math", "--apps-offset=2", "--apps-limit=5",
        "--apps-timeout=2", "--apps-records=recs", "--apps-report=out/r.json", "--apps-html=r.html"]
    # what the ini file gave, the ini gives the rerun again: a pasted id needs none of it
    from_ini = settings(ini={"apps_dataset": "rows.jsonl", "apps_only": ["15,17"], "apps_report": "r.json"})
    assert from_ini.only == ("15", "17") and rerun_args(from_ini) == []
    assert rerun_args(settings("--apps-limit=3", ini={"apps_dataset": "rows.jsonl"})) == ["--apps-limit=3"]
    # the judge table's default profile, given or not, is not repeated; another profile is
    assert settings().judge == settings("--apps-judge=seed").judge == "seed"
    assert rerun_args(settings()) == rerun_args(settings("--apps-judge=seed")) == []
    assert rerun_args(settings("--apps-judge=apps")) == ["--apps-judge=apps"]


def test_an_ini_path_is_taken_from_the_ini_files_folder_and_a_command_line_path_from_where_pytest_started() -> None:
    def from_sub(*args: str, **ini: str) -> Settings:
        parser = argparse.ArgumentParser()
        for opt in OPTIONS:
            parser.add_argument(opt.flag, **argparse_kwargs(opt))
        namespace = parser.parse_args(list(args))
        return resolve(lambda dest: getattr(namespace, dest), ini.get, "/project/sub", "/project")

    s = from_sub("--apps-html=h.html", apps_candidates="gens.jsonl", apps_dataset="rows.jsonl",
                 apps_report="out/r.json", apps_records="recs", apps_generations="../gen", apps_markdown="/abs/m.md")
    assert s.candidates_path == Path("/project/gens.jsonl") and s.dataset_ref() == "/project/rows.jsonl"
    assert s.report_path == Path("/project/out/r.json") and s.records_path == Path("/project/recs")
    assert s.path(s.generations) == Path("/gen") and s.markdown == "/abs/m.md"
    assert s.path(s.html) == Path("/project/sub/h.html")
    # words and hub ids are no paths
    words = from_sub(apps_candidates="reference", apps_dataset="codeparrot/apps", apps_records="off")
    assert (words.candidates, words.dataset, words.records_path) == ("reference", "codeparrot/apps", None)
    assert from_sub(apps_dataset="sample").dataset == "sample"
    # run where the ini file is, the values stay as written
    assert resolve(lambda dest: None, {"apps_candidates": "gens.jsonl"}.get, "/project", "/project").candidates \
        == "gens.jsonl"
