"""The table-shaped extension points: a conftest alone adds a report format and a judge profile (real runs with
xdist workers), and may write any report its own way; and the plain functions behind them (the tables' checks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import read_report, run
from pytest_apps.core.outcome import PASS, Verdict
from pytest_apps.core.settings import Settings
from pytest_apps.judge import profiles
from pytest_apps.judge.profiles import Profile
from pytest_apps.plugin.formats import FORMATS, FormatError, ReportFormat, requested, table

CSV_FORMAT = """\
from pytest_apps.plugin.formats import ReportFormat


def pytest_addoption(parser):
    parser.addoption("--csv-report", default=None, help="write one line per problem to PATH")


def write_csv(finished, path):
    with open(path, "w") as fh:
        for problem in finished.document["problems"]:
            fh.write(f"{problem['id']},{problem['verdict']},{len(finished.candidates[problem['id']])}\\n")


def pytest_apps_report_formats():
    return ReportFormat("csv", "--csv-report", write_csv, "CSV report")
"""


def test_a_conftest_adds_a_report_format_written_with_the_runs_results(sample_project: pytest.Pytester) -> None:
    sample_project.makeconftest(CSV_FORMAT)
    (sample_project.path / "solutions" / "900003.py").write_text("print(0)\n")  # wrong
    only = ("--apps-dataset", "sample", "--apps-only", "900001,900003")
    result = run(sample_project, *only, "-n", "2", "--csv-report", "out/problems.csv")
    assert result.ret == 1  # (900003 fails)
    lines = (sample_project.path / "out" / "problems.csv").read_text().splitlines()
    assert lines == ["900001,pass,1", "900003,fail,1"]
    assert [p["verdict"] for p in read_report(sample_project)["problems"]] == ["pass", "fail"]
    # not asked for, not written; a path that cannot be written is refused before any case, naming its option
    (sample_project.path / "out" / "problems.csv").unlink()
    run(sample_project, *only)
    assert not (sample_project.path / "out" / "problems.csv").exists()
    refused = run(sample_project, *only, "--csv-report", "solutions/900001.py/problems.csv")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --csv-report: cannot write *problems.csv: *900001.py is not a folder*"])
    refused.stdout.no_fnmatch_line("*passed*")


def test_a_conftest_writes_a_report_of_the_plugins_own_its_way(sample_project: pytest.Pytester) -> None:
    """`pytest_apps_write_report` is firstresult: the conftest's answer wins over the plugin's own writer, which
    writes the formats the conftest leaves to it."""
    sample_project.makeconftest("""
        def pytest_apps_write_report(report_format, finished, path):
            if report_format.name != "markdown":
                return None
            path.write_text(f"accuracy {finished.document['summary']['strict_accuracy']}\\n")
            return True
    """)
    run(sample_project, "--apps-dataset", "sample", "--apps-only", "900001", "--apps-markdown", "summary.md",
        "--apps-html", "report.html")
    assert (sample_project.path / "summary.md").read_text() == "accuracy 1.0\n"
    assert (sample_project.path / "report.html").read_text().startswith("<!DOCTYPE html>")


SIGN_BLIND = """\
from pytest_apps.core.outcome import PASS, RUN_EXITED, RUNTIME_ERROR, WRONG_ANSWER, Verdict
from pytest_apps.judge.profiles import Profile


def decide(fmt, expected, outcome, checker, step_prefix):
    if outcome.status != RUN_EXITED or outcome.exit_code != 0:
        return Verdict(RUNTIME_ERROR, reason="the program did not end well")
    got, want = outcome.stdout.strip(), str(expected).strip()
    if got.lstrip("-").isdigit() and want.lstrip("-").isdigit() and abs(int(got)) == abs(int(want)):
        return Verdict(PASS, step="sign-blind")
    return Verdict(WRONG_ANSWER, reason=f"{got!r} is not {want!r}, whatever the sign")


def pytest_apps_judge_profiles():
    return [Profile("sign-blind", "numbers compared without their signs", decide)]
"""


def test_a_conftest_adds_a_judge_profile_that_decides_the_tests(sample_project: pytest.Pytester) -> None:
    sample_project.makeconftest(SIGN_BLIND)
    (sample_project.path / "solutions" / "900001.py").write_text("a, b = map(int, input().split())\nprint(-(a + b))\n")
    (sample_project.path / "solutions" / "900003.py").write_text("print(0)\n")
    only = ("--apps-dataset", "sample", "--apps-only", "900001,900003")
    result = run(sample_project, *only, "--apps-judge", "sign-blind", "-n", "2")
    result.stdout.fnmatch_lines(["apps: judge sign-blind: numbers compared without their signs"])
    report = read_report(sample_project)
    assert report["settings"]["judge"] == "sign-blind"
    by_id = {p["id"]: p for p in report["problems"]}
    assert by_id["900001"]["verdict"] == "pass"  # judged on the workers by the conftest's cascade
    assert {t["step"] for t in by_id["900001"]["tests"]} == {"sign-blind"}
    assert by_id["900003"]["verdict"] == "fail"
    assert {t["kind"] for t in by_id["900003"]["tests"]} == {"wrong_answer"}
    # the same programs under the default profile: the negated sums fail
    run(sample_project, *only)
    assert {p["id"]: p["verdict"] for p in read_report(sample_project)["problems"]}["900001"] == "fail"
    # the option names the added profile among the choices
    refused = run(sample_project, *only, "--apps-judge", "sign-blnd")
    refused.stderr.fnmatch_lines(["*--apps-judge: unknown judge 'sign-blnd'; use seed, apps, taco, lcb, "
                                  "codecontests or sign-blind"])


def test_a_profile_that_cannot_be_used_is_a_usage_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        from pytest_apps.judge.profiles import Profile

        def pytest_apps_judge_profiles():
            return Profile("apps", "another apps", lambda *args: None)
    """)
    result = run(pytester, "--apps-dataset", "sample")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest_apps_judge_profiles: judge profile 'apps': the name is taken; *"])


SUMS = """\
from pytest_apps.dataset.apps import make_problem
from pytest_apps.dataset.table import Dataset

COLUMNS = ("name", "task", "cases", "level")


def marks(columns):
    return "task" in columns and "cases" in columns


def normalize(obj, where, line=None):
    if not isinstance(obj.get("cases"), list):
        return {"__error__": f"{where}: cases is not a list", "__line__": line}
    return {key: obj.get(key) for key in COLUMNS}


def parse(row, index):
    inputs, outputs = [case[0] for case in row["cases"]], [case[1] for case in row["cases"]]
    return make_problem(row["name"], index, row["level"], row["task"], "", None, inputs, outputs)


def pytest_apps_datasets():
    return Dataset("sums", "Sums", (), marks, COLUMNS, normalize, lambda row, index: row["name"],
                   lambda row: row["level"], parse, lambda row: "[]", ("warm-up", "main"))
"""


def test_a_conftest_adds_a_dataset_whose_rows_become_problems(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SUMS)
    rows = [{"name": "s1", "task": "add two", "cases": [["1 2\n", "3\n"], ["5 5\n", "10\n"]], "level": "warm-up"},
            {"name": "s2", "task": "add three", "cases": [["1 2 3\n", "6\n"]], "level": "main"},
            {"name": "s3", "task": "broken", "cases": "none", "level": "main"}]
    (pytester.path / "sums.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "solutions").mkdir()
    (pytester.path / "solutions" / "s1.py").write_text("print(sum(map(int, input().split())))\n")
    (pytester.path / "solutions" / "s2.py").write_text("print(0)\n")
    run(pytester, "--apps-dataset=sums.jsonl", "-n", "2")
    report = read_report(pytester)
    assert {p["id"]: p["verdict"] for p in report["problems"]} == {"s1": "pass", "s2": "fail"}
    assert list(report["summary"]["per_tier"]) == ["warm-up", "main"]  # the entry's tiers, in its order
    [skipped] = report["skipped_rows"]  # (the entry's marker row: skipped and counted)
    assert skipped["index"] == 2 and skipped["reason"].endswith("sums.jsonl line 3: cases is not a list")
    # the selection takes the entry's tier names
    run(pytester, "--apps-dataset=sums.jsonl", "--apps-difficulty=MAIN")
    assert [p["id"] for p in read_report(pytester)["problems"]] == ["s2"]


# -- the plain functions behind the hooks ------------------------------------------------------------


def _decide(*args: object) -> Verdict:
    return Verdict(PASS)


def test_the_judge_table_takes_a_profile_once_and_refuses_what_it_cannot_run() -> None:
    mine = Profile("mine-test", "a test's", _decide)
    try:
        profiles.add(mine)
        profiles.add(mine)  # (the same entry again: each worker's conftest gives it too)
        assert profiles.names()[-1] == "mine-test" and profiles.TABLE["mine-test"].runs == profiles.RUNS_REAL
        with pytest.raises(ValueError, match="'mine-test': the name is taken"):
            profiles.add(Profile("mine-test", "another", _decide))
    finally:
        profiles.remove("mine-test")
    assert "mine-test" not in profiles.TABLE
    with pytest.raises(ValueError, match="runs='docker'; use real, apps-harness or taco-harness"):
        profiles.add(Profile("other-test", "", _decide, runs="docker"))
    with pytest.raises(ValueError, match="audit_with='nope' is no other profile"):
        profiles.add(Profile("other-test", "", _decide, audit_with="nope"))
    profiles.remove("seed")  # a built-in profile stays
    assert "seed" in profiles.TABLE and "other-test" not in profiles.TABLE


def test_the_settings_check_asks_the_table_and_gives_its_default() -> None:
    named = lambda name: f"--apps-{name}"  # noqa: E731
    checked = profiles.checked(Settings(), named)
    assert checked.judge == profiles.DEFAULT_JUDGE and checked.defaulted == ("judge",)
    assert profiles.checked(Settings(judge="seed"), named) == Settings(judge="seed", defaulted=("judge",))
    assert profiles.checked(Settings(judge="apps"), named) == Settings(judge="apps")
    with pytest.raises(Exception, match="give at least 256M"):
        profiles.checked(Settings(judge="taco", memory=100 << 20), named)


def _write(finished: object, path: Path) -> None:
    path.write_text("x")


def test_the_format_table_adds_entries_and_refuses_a_taken_name_or_a_non_entry() -> None:
    csv, tsv = ReportFormat("csv", "--csv", _write), ReportFormat("tsv", "--tsv", _write)
    assert table([None, csv, [tsv]]) == (*FORMATS, csv, tsv)
    assert csv.title == "csv report" and FORMATS[0].title == "HTML report"
    with pytest.raises(FormatError, match="report format 'html' is taken"):
        table([ReportFormat("html", "--mine", _write)])
    with pytest.raises(FormatError, match="gave dict"):
        table([[{"name": "csv"}]])


def test_a_format_is_requested_by_its_option_from_the_settings_or_the_command_line(tmp_path: Path) -> None:
    csv = ReportFormat("csv", "--csv", _write)
    settings = Settings(html="r.html", rootdir=str(tmp_path))
    given = {"--csv": "out/p.csv"}
    assert requested(settings, (*FORMATS, csv), given.get) == [(FORMATS[0], tmp_path / "r.html"),
                                                              (csv, tmp_path / "out" / "p.csv")]
    assert requested(Settings(), (*FORMATS, csv), {}.get) == []

    def undeclared(flag: str) -> object:
        raise ValueError(f"no option named {flag!r}")

    with pytest.raises(FormatError, match="report format 'csv': no option --csv is declared"):
        requested(settings, (csv,), undeclared)



def test_the_dataset_table_takes_an_entry_once_and_its_tiers_join_the_order() -> None:
    from pytest_apps.dataset import table as datasets

    apps = datasets.TABLE["apps"]
    mine = datasets.Dataset(**{**{f: getattr(apps, f) for f in apps.__dataclass_fields__},
                               "name": "mine-test", "tiers": ("Warm-Up", "main-test")})
    try:
        datasets.add(mine)
        datasets.add(mine)
        assert datasets.all_tiers()[-2:] == ("Warm-Up", "main-test")
        assert datasets.canonical_tier("warm-up") == "Warm-Up"
        assert datasets.tier_order(["main-test", "Warm-Up", "interview"]) == ["interview", "Warm-Up", "main-test"]
        with pytest.raises(ValueError, match="dataset 'mine-test': the name is taken"):
            datasets.add(datasets.Dataset(**{**mine.__dict__, "tiers": ("other",)}))
    finally:
        datasets.remove("mine-test")
    assert "mine-test" not in datasets.TABLE and "main-test" not in datasets.all_tiers()
    assert datasets.canonical_tier("warm-up") == "warm-up"
    with pytest.raises(ValueError, match="give its tiers"):
        datasets.add(datasets.Dataset(**{**mine.__dict__, "tiers": ()}))
    datasets.remove("apps")
    assert "apps" in datasets.TABLE
