"""Running and rerunning as a user does: option spelling and the rootdir, pasted node ids, dormancy, and a
benchmark run inside this checkout (docs/running.md). Real pytest subprocesses, the real executor."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run

SAMPLE_ROWS = REPO / "pytest_apps" / "data" / "sample.jsonl"

# each rests on pytest's own collection and start-up (the rootdir found again, collectors for candidate files):
# the oldest releases pyproject.toml accepts run them too (noxfile.py, tests-oldest)
pytestmark = pytest.mark.interfaces


def test_a_benchmark_run_in_the_checkout_keeps_the_users_index_cache(
    sample_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's own test set-up (tests/conftest.py, loaded whenever `tests` is a test path) points the
    index cache at a temporary folder for the project's tests only, not for a benchmark run."""
    (sample_project.path / "tests").mkdir()
    shutil.copy(REPO / "tests" / "conftest.py", sample_project.path / "tests" / "conftest.py")
    sample_project.makeini("[pytest]\ntestpaths = tests\n")
    shutil.copy(SAMPLE_ROWS, sample_project.path / "rows.jsonl")
    cache = tmp_path / "cache"
    monkeypatch.setenv("PYTEST_APPS_CACHE", str(cache))
    first = run(sample_project, "--apps-dataset=rows.jsonl", "--apps-max-tests=1", "-n", "0")
    first.stdout.fnmatch_lines(["apps: dataset *rows.jsonl *, problem index built and cached"])
    second = run(sample_project, "--apps-dataset=rows.jsonl", "--apps-max-tests=1", "-n", "0")
    second.stdout.fnmatch_lines(["apps: dataset *rows.jsonl *, problem index cached"])
    assert any(cache.iterdir())
    second.assert_outcomes(passed=6)
    # nor the xdist workers the project's own tests run on: a benchmark run without -n stays in one process
    serial = run(sample_project, "--apps-dataset=rows.jsonl", "--apps-max-tests=1")
    serial.assert_outcomes(passed=6)
    assert not any(line.startswith("created:") for line in serial.outlines), serial.outlines[:8]
    (sample_project.path / "tests" / "test_own.py").write_text("def test_own():\n    pass\n")
    own = run(sample_project, "tests")
    own.assert_outcomes(passed=1)
    own.stdout.fnmatch_lines(["created: * workers"])


def marking(marker: Path, program: str) -> str:
    """A program that leaves `marker` behind if it ever runs inside a pytest process."""
    return ("import sys\n"
            "if '_pytest' in sys.modules:\n"
            f"    open({str(marker)!r}, 'w').write('candidate code ran in the pytest process')\n" + program)


def test_a_pasted_candidate_node_id_runs_fenced_without_any_apps_option(sample_project: pytest.Pytester) -> None:
    """`pytest 'solutions/<id>.py::test_1'`, as the README and the summary give it, with no --apps* option and no
    ini `apps = true`: the path lies in the candidates source, so the plugin runs that case (never pytest's
    Python collector, which would import the candidate)."""
    sample_project.makeini("[pytest]\napps_dataset = sample\n")
    marker = sample_project.path / "ran-inside-pytest"
    program = "a, b = map(int, input().split())\nprint(a + b)\n"
    (sample_project.path / "solutions" / "900001.py").write_text(marking(marker, program))
    result = run(sample_project, "solutions/900001.py::test_1", "-v")
    assert not marker.exists()
    result.stdout.fnmatch_lines(["solutions/900001.py::test_1 PASSED*", "*APPS summary*"])
    result.assert_outcomes(passed=1)
    # the whole file, and a candidates folder named in the ini, likewise
    (sample_project.path / "elsewhere").mkdir()
    shutil.move(sample_project.path / "solutions" / "900001.py", sample_project.path / "elsewhere" / "900001.py")
    sample_project.makeini("[pytest]\napps_dataset = sample\napps_candidates = elsewhere\n")
    result = run(sample_project, "elsewhere/900001.py")
    assert not marker.exists()
    result.assert_outcomes(passed=5)


def test_a_candidates_folder_is_never_imported_by_pythons_collector(sample_project: pytest.Pytester) -> None:
    """A `test_*.py` among the candidates is candidate code: pytest's Python collector never imports it, with
    the plugin dormant (a plain run walking the project) or active (walking, or the file named)."""
    marker = sample_project.path / "ran-inside-pytest"
    (sample_project.path / "solutions" / "test_x.py").write_text(marking(marker, "def test_x():\n    pass\n"))
    (sample_project.path / "solutions" / "sub").mkdir()
    (sample_project.path / "solutions" / "sub" / "test_y.py").write_text(marking(marker, "def test_y():\n    pass\n"))
    sample_project.makepyfile(test_plain="def test_plain():\n    pass\n")
    dormant = run(sample_project)
    assert not marker.exists()
    dormant.assert_outcomes(passed=1)
    assert "APPS summary" not in dormant.stdout.str()
    active = run(sample_project, "--apps-dataset=sample", "--apps-max-tests=1")
    assert not marker.exists()
    active.assert_outcomes(passed=6)
    named = run(sample_project, "--apps-dataset=sample", "solutions/test_x.py", "solutions/sub")
    assert not marker.exists()
    assert named.ret != 0 and "passed" not in named.parseoutcomes()


def test_the_id_pasted_from_a_generations_file_run_reruns_that_case(pytester: pytest.Pytester) -> None:
    from test_candidates_run import write_gens

    write_gens(pytester.path / "gens.jsonl")
    pytester.makeini("[pytest]\napps_dataset = sample\napps_candidates = gens.jsonl\napps_only = 900001,900003\n")
    first = run(pytester, "--apps")
    lines = first.stdout.lines
    pasted = lines[lines.index("first failing case of failing problems (paste to rerun):") + 1].strip()
    assert pasted == "gens.jsonl::900001::sample_1::test_0"
    again = run(pytester, pasted, "-v")  # as pasted: no --apps* option
    again.stdout.fnmatch_lines([f"{pasted} FAILED*", "*APPS summary*"])
    again.assert_outcomes(failed=1)


def test_a_path_option_written_with_a_space_keeps_the_projects_rootdir_and_ini(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`--apps-dataset /data/rows.jsonl` (a value of its own) and `--apps-dataset=/data/rows.jsonl` give one
    rootdir, ini file, settings and node ids, though pytest decides its rootdir before it knows our options."""
    data = tmp_path_factory.mktemp("data")
    shutil.copy(SAMPLE_ROWS, data / "rows.jsonl")
    shutil.copytree(REPO / "solutions", data / "cands")
    (pytester.path / "pytest.ini").write_text(
        "[pytest]\napps_limit = 2\napps_max_tests = 1\naddopts = -v\npythonpath = lib\n")
    (pytester.path / "lib").mkdir()
    (pytester.path / "lib" / "project_helper.py").write_text("")
    (pytester.path / "conftest.py").write_text("import project_helper  # on sys.path by the ini's pythonpath\n")
    rows, cands = str(data / "rows.jsonl"), str(data / "cands")
    runs = {
        "spaced": run(pytester, "--apps-dataset", rows, "--apps-candidates", cands, "-n", "0"),
        "joined": run(pytester, f"--apps-dataset={rows}", f"--apps-candidates={cands}", "-n", "0"),
        "spaced, two workers": run(pytester, "--apps-dataset", rows, "--apps-candidates", cands, "-n", "2"),
    }
    for name, result in runs.items():
        result.stdout.fnmatch_lines([f"rootdir: {pytester.path}", "configfile: pytest.ini",
                                     "apps: 2 problems (limit 2), first 1 test per problem*"])
        passed = sorted(line.split()[-1] if line.startswith("[gw") else line.split()[0]
                        for line in result.stdout.lines if "PASSED" in line)  # -v: from the ini's addopts
        outside = Path(os.path.relpath(data / "cands", pytester.path)).as_posix()  # named from the rootdir
        assert passed == [f"{outside}/900001.py::test_0", f"{outside}/900002.py::test_0"], (name, passed)
        assert "PytestConfigWarning" not in result.stdout.str(), name
    assert not (data / ".pytest_cache").exists() and (pytester.path / ".pytest_cache").is_dir()


def test_the_line_for_a_rootdir_taken_from_an_option_value_says_how_to_write_it() -> None:
    from pytest_apps.plugin.early import misplaced_line, spaced_values

    args = ["-v", "--apps-dataset", "/data/rows.jsonl", "--apps-limit=5", "--apps-fail-fast", "tests",
            "--apps-candidates", "/data/gen.jsonl", "--", "--apps-html", "x"]
    spaced = spaced_values(args)
    assert spaced == [("--apps-dataset", "/data/rows.jsonl"), ("--apps-candidates", "/data/gen.jsonl")]
    line = misplaced_line(spaced, Path("/data"), None)
    assert line == ("apps: pytest took the value of --apps-dataset /data/rows.jsonl for a test path, so its rootdir "
                    "is /data and its ini file none; write --apps-dataset=/data/rows.jsonl (an '=' between option "
                    "and value); likewise --apps-candidates=/data/gen.jsonl")


def test_the_candidates_source_and_what_lies_in_it(tmp_path: Path) -> None:
    from pytest_apps.plugin.options import candidate_sources, is_active, lies_in

    options: dict = {}
    ini: dict = {}

    def sources() -> list[Path]:
        return candidate_sources(options.get, lambda name: ini.get(name, ""), str(tmp_path))

    def active(*args: str) -> bool:
        return is_active(options.get, lambda name: ini.get(name, ""), args, sources(), tmp_path)

    assert set(sources()) == {tmp_path / "solutions", tmp_path / "apps-generations"}
    assert active("solutions/7.py::test_3") and active(str(tmp_path / "solutions")) and active("apps-generations/x")
    assert not active("tests/test_x.py") and not active("solutions2/7.py") and not active()
    assert lies_in(tmp_path / "solutions" / "sub" / "test_y.py", sources())
    ini["apps_candidates"] = "gens.jsonl"
    assert tmp_path / "gens.jsonl" in sources() and tmp_path / "solutions" not in sources()
    assert active("gens.jsonl::7::sample_1::test_3")
    options["apps_candidates"] = "."  # the project itself: no path turns the plugin on, none is fenced
    assert set(sources()) == {tmp_path / "apps-generations"}
    ini["apps_limit"] = "x"  # a bad setting: the defaults (the run says what is wrong when it is active)
    del options["apps_candidates"]
    assert set(sources()) == {tmp_path / "solutions", tmp_path / "apps-generations"}


def rerun_lines(result: pytest.RunResult) -> tuple[str, list[str]]:
    """A run's first `rerun:` command and the lines listed under "paste to rerun"."""
    lines = result.stdout.lines
    rerun = next(line.split("rerun: ", 1)[1] for line in lines if line.startswith("rerun: "))
    start = lines.index("first failing case of failing problems (paste to rerun):") + 1
    pasted = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        pasted.append(line.strip())
    return rerun, pasted


def test_what_a_selected_run_prints_to_paste_reruns_its_selection_and_merges_into_its_report(
    pytester: pytest.Pytester,
) -> None:
    """Without an ini: the failure's `rerun:` command and the lines under "paste to rerun" carry the run's
    selection and report options, so that, pasted as printed, they rerun the case and merge it into the report
    of that same selection (every other problem left as it was), not into a report over the whole dataset."""
    import json
    import shlex

    shutil.copy(SAMPLE_ROWS, pytester.path / "rows.jsonl")
    (pytester.path / "r").mkdir()
    (pytester.path / "r" / "900001.py").write_text("print('wrong')\n")
    shutil.copy(REPO / "solutions" / "900003.py", pytester.path / "r" / "900003.py")
    first = run(pytester, "--apps-dataset=rows.jsonl", "--apps-candidates=r", "--apps-only=900001,900003",
                "--apps-max-tests=2", "--apps-report=out/report.json", "-n", "0")
    first.assert_outcomes(failed=2, passed=2)
    report = pytester.path / "out" / "report.json"
    before = json.loads(report.read_text())
    assert [p["id"] for p in before["problems"]] == ["900001", "900003"]
    rerun, pasted = rerun_lines(first)
    assert "--apps-only=900001,900003" in rerun and "--apps-report=out/report.json" in rerun, rerun
    assert pasted and all(line.startswith("pytest ") for line in pasted), pasted
    for command in (rerun, pasted[0]):
        again = run(pytester, *shlex.split(command)[1:], "-n", "0")
        again.assert_outcomes(failed=1)
        after = json.loads(report.read_text())
        assert after["run"]["complete"] and after["run"]["selected"] == 1, after["run"]
        assert [p["id"] for p in after["problems"]] == ["900001", "900003"]
        assert after["problems"][1] == before["problems"][1]  # the other problem as it was
    assert not (pytester.path / "reports" / "apps-report.json").exists()


def test_ini_paths_are_relative_to_the_ini_file_and_command_line_paths_to_where_pytest_started(
    pytester: pytest.Pytester,
) -> None:
    """As pytest's own path settings: `apps_candidates = gens.jsonl` (and the dataset, report and records) in
    pytest.ini mean the files beside pytest.ini, also in a run started in a subfolder, where a path given on
    the command line is that folder's."""
    import json

    from conftest import run_in
    from test_candidates_run import write_gens

    shutil.copy(SAMPLE_ROWS, pytester.path / "rows.jsonl")
    write_gens(pytester.path / "gens.jsonl")
    pytester.makeini("[pytest]\napps = true\napps_dataset = rows.jsonl\napps_candidates = gens.jsonl\n"
                     "apps_only = 900001\napps_max_tests = 1\napps_report = out/report.json\napps_records = recs\n")
    sub = pytester.path / "sub"
    sub.mkdir()
    result = run_in(sub, "--apps-markdown=summary.md", "-n", "0")
    assert "APPS summary" in result.stdout, result.stdout + result.stderr
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert [p["id"] for p in report["problems"]] == ["900001"]
    assert (pytester.path / "recs").is_dir() and (sub / "summary.md").is_file()
    assert not (sub / "out").exists() and not (sub / "recs").exists() and not (pytester.path / "summary.md").exists()


def test_a_run_from_a_subfolder_reads_and_writes_the_projects_files(sample_project: pytest.Pytester) -> None:
    """With an ini file, the path options left at their defaults (the candidates, the report, the records) lie in
    the project's folder, wherever in it the run starts; a value given on the command line is still taken
    from where the run started."""
    from conftest import run_in

    sample_project.makeini("[pytest]\napps = true\napps_dataset = sample\n")
    sub = sample_project.path / "sub" / "deeper"
    sub.mkdir(parents=True)
    done = run_in(sub, "-q", "--apps-only=900001")
    assert done.returncode == 0, done.stdout[-2000:]
    assert (sample_project.path / "reports" / "apps-report.json").is_file()
    assert (sample_project.path / ".apps-records").is_dir()
    assert not (sub / "reports").exists() and not (sub / ".apps-records").exists()
    given = run_in(sub, "-q", "--apps-only=900001", "--apps-report=mine.json")
    assert given.returncode == 0 and (sub / "mine.json").is_file()


def test_collect_only_prints_no_run_summary_and_writes_no_report(sample_project: pytest.Pytester) -> None:
    result = run(sample_project, "--apps-dataset=sample", "--collect-only", "-q", "--apps-markdown=r.md")
    assert result.ret == 0
    out = result.stdout.str()
    assert "solutions/900001.py::test_0" in out
    assert "APPS summary" not in out and "never ran" not in out and "without a verdict" not in out
    assert "no report written" not in out  # (it selects every case: no line says it selects none)
    written = [p for p in sample_project.path.rglob("*") if p.is_file() and p.parent.name == "reports"]
    assert written == [] and not (sample_project.path / "r.md").exists()
