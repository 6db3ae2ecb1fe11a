"""The plugin end to end, through real pytest runs (subprocesses, real xdist workers, real executor)."""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil

import pytest

from conftest import BROKEN, REPO, junit_outcomes, read_report, run, verdict_outline

SAMPLE_ROWS = REPO / "pytest_apps" / "data" / "sample.jsonl"

@pytest.mark.interfaces
def test_dormant_without_apps_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    shutil.copytree(__import__("conftest").SOLUTIONS, pytester.path / "solutions")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "APPS summary" not in result.stdout.str()
    assert not (pytester.path / "reports").exists()


@pytest.mark.interfaces
def test_sample_passes_and_collects_only_apps_items(sample_project: pytest.Pytester) -> None:
    sample_project.makepyfile(test_plain="def test_not_apps():\n    assert False\n")
    result = run(sample_project, "--apps-dataset", "sample")
    result.assert_outcomes(passed=27)
    result.stdout.fnmatch_lines(["*APPS summary*", "strict accuracy: 100.00% (6/6 problems), 95% CI 54.1-100.0%"])
    report = read_report(sample_project)
    assert report["summary"]["strict_accuracy"] == 1.0
    assert report["summary"]["per_tier"]["competition"] == {"problems": 2, "passed": 2, "strict_accuracy": 1.0}
    assert {p["format"] for p in report["problems"]} == {"stdin", "call"}
    # every case passed through a named cascade step
    assert all(t["step"] for p in report["problems"] for t in p["tests"])


@pytest.mark.interfaces
def test_serial_and_two_workers_give_identical_reports(broken_project: pytest.Pytester) -> None:
    args = ("--apps-dataset", "sample", "--apps-timeout", "0.5")
    serial = run(broken_project, *args, "-n", "0", "--apps-report", "reports/serial.json")
    parallel = run(broken_project, *args, "-n", "2", "--apps-report", "reports/parallel.json")
    assert serial.ret == parallel.ret == 1
    a = verdict_outline(read_report(broken_project, "reports/serial.json"))
    b = verdict_outline(read_report(broken_project, "reports/parallel.json"))
    assert a == b
    verdicts = {p["id"]: (p["verdict"], p["kinds"][:1]) for p in a["problems"]}
    assert verdicts == {
        "900001": ("fail", ["wrong_answer"]),
        "900002": ("fail", ["runtime_error"]),
        "900003": ("fail", ["compile_error"]),
        "900004": ("no_code", []),
        "900005": ("fail", ["timeout"]),
        "900006": ("pass", ["pass"]),
    }
    problems = {p["id"]: p for p in read_report(broken_project, "reports/serial.json")["problems"]}
    assert problems["900001"]["program"] == BROKEN["900001"]  # failing programs are kept for reading
    assert problems["900001"]["first_failure_detail"]["got"].strip() == "-1"
    assert problems["900006"]["program"] is None
    assert a["summary"]["strict_accuracy"] == round(1 / 6, 6)
    assert a["summary"]["strict_accuracy_with_code"] == 0.2
    assert a["summary"]["outcomes"]["no_code"] == 4


def test_failure_text_is_short_and_says_how_to_rerun(broken_project: pytest.Pytester) -> None:
    result = run(broken_project, "--apps-dataset", "sample", "--apps-only", "900001")
    out = result.stdout.str()
    assert "problem 900001 test 0: wrong answer" in out
    assert "expected:" in out and "got:" in out and "-1" in out
    assert "rerun: pytest --apps-dataset=sample --apps-only=900001 solutions/900001.py::test_0" in out
    result.stdout.fnmatch_lines(["*first failing case*",
                                 "  pytest --apps-dataset=sample --apps-only=900001 solutions/900001.py::test_0"])
    # the rerun command, pasted as printed, runs exactly that case
    line = next(x for x in result.stdout.lines if x.startswith("rerun: pytest ") and "test_3" in x)
    again = run(broken_project, *shlex.split(line[len("rerun: pytest "):]))
    again.assert_outcomes(failed=1)


def test_pasted_ids_rerun_when_the_candidates_are_outside_the_rootdir(
    broken_project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A generations folder elsewhere: every id printed for pasting works from where the run started."""
    broken_project.makeini("[pytest]\n")  # the rootdir is the project; the candidates are not under it
    elsewhere = tmp_path_factory.mktemp("generations") / "cands"
    shutil.copytree(broken_project.path / "solutions", elsewhere)
    base = ("--apps-dataset", "sample", "--apps-timeout", "0.5", "--apps-candidates", str(elsewhere))
    result = run(broken_project, *base, "--apps-html", "r.html")
    lines = result.stdout.lines
    at = lines.index("first failing case of failing problems (paste to rerun):")
    command = lines[at + 1].strip()  # the options the run was given, then the id
    pasted = command.split()[-1]
    assert pasted.endswith("900001.py::test_0")
    assert command == shlex.join(["pytest", "--apps-dataset=sample", f"--apps-candidates={elsewhere}",
                                  "--apps-timeout=0.5", "--apps-html=r.html", pasted])
    report = read_report(broken_project)
    first = next(p for p in report["problems"] if p["id"] == "900001")
    assert first["first_failure"] == pasted
    assert first["first_failure_nodeid"].endswith("900001.py::test_0")  # as pytest names it
    assert f"{command}</code>" in (broken_project.path / "r.html").read_text()
    again = run(broken_project, *shlex.split(command)[1:], "-v")
    again.assert_outcomes(failed=1)
    run_section = read_report(broken_project)["run"]  # the one case ran; the others' records are carried
    assert run_section["executed"] == 1 and run_section["carried"] == 22 and len(run_section["rerun"]) == 1


def test_node_ids_of_a_generations_file_outside_the_rootdir_name_it_and_paste(
    broken_project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """pytest names a file outside the rootdir relative to the argument it was found under: "" for the
    generations file itself, so `::900001::test_0` and a JUnit classname `.900001`. The plugin names it relative
    to the rootdir (`../<folder>/gens.jsonl::900001::test_0`), and such an id, pasted with the run's options
    from where the run started, reruns that item alone."""
    broken_project.makeini("[pytest]\n")
    gens = tmp_path_factory.mktemp("outside") / "gens.jsonl"
    gens.write_text(json.dumps({"problem_id": 900001, "code": BROKEN["900001"]}) + "\n")
    base = ("--apps-dataset=sample", "--apps-only=900001,900002", f"--apps-candidates={gens}")
    result = run(broken_project, *base, "-v", "--junitxml=j.xml")
    shown = f"{os.path.relpath(gens, broken_project.path)}"
    assert shown.startswith("../")
    result.stdout.fnmatch_lines([f"{shown}::900001::test_0 FAILED*", f"{shown}::900002::no_code FAILED*"])
    assert not [line for line in result.stdout.lines if line.startswith("::")]
    classes = {classname for classname, _ in junit_outcomes(broken_project.path / "j.xml")}
    assert classes == {shown.replace("/", ".") + ".900001", shown.replace("/", ".") + ".900002"}
    again = run(broken_project, *base, f"{shown}::900001::test_2", "-v")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*gens.jsonl::900001::test_2 FAILED*"])


@pytest.mark.interfaces
def test_rerun_one_case_by_node_id_runs_exactly_that_item(broken_project: pytest.Pytester) -> None:
    result = run(broken_project, "--apps-dataset", "sample", "solutions/900001.py::test_2", "-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["solutions/900001.py::test_2 FAILED*"])
    report = read_report(broken_project)
    ran = [(p["id"], t["case"]) for p in report["problems"] for t in p["tests"]]
    assert ran == [("900001", 2)]
    # the other problems did not run: incomplete, never passed
    assert report["summary"]["passed"] == 0
    assert "900006" in report["summary"]["incomplete_problems"]


@pytest.mark.interfaces
def test_k_x_lf_and_junitxml(broken_project: pytest.Pytester) -> None:
    base = ("--apps-dataset", "sample", "--apps-timeout", "0.5")
    result = run(broken_project, *base, "-k", "900006")
    result.assert_outcomes(passed=4, deselected=20)  # 900004's no-code item among them
    result = run(broken_project, *base, "-x")
    result.assert_outcomes(failed=1)  # the first item: 900004's no-code item (the folder's, before its files)
    assert "FAILED solutions::900004::no_code" in result.stdout.str()
    stopped = read_report(broken_project)  # with the records of the -k run's cases, and incomplete
    assert stopped["run"]["executed"] == 1 and stopped["summary"]["tests_run"] == 4
    assert stopped["run"]["incomplete"].startswith("interrupted (stopping after 1 failures)")
    first = run(broken_project, *base, "--junitxml", "reports/junit.xml")
    # 900001 prints a - b, which is right for "0 0"
    first.assert_outcomes(passed=5, failed=19)  # 18 cases and 900004's no-code item
    xml = (broken_project.path / "reports" / "junit.xml").read_text()
    assert 'classname="solutions.900001"' in xml and 'name="test_0"' in xml
    again = run(broken_project, *base, "--lf")
    outcomes = again.parseoutcomes()
    assert outcomes["failed"] == 19 and "passed" not in outcomes  # only the failures ran again


@pytest.mark.interfaces
def test_all_cases_of_a_problem_run_on_one_worker_without_stealing(sample_project: pytest.Pytester) -> None:
    # (with stealing, the default, a worker that runs dry may take a candidate's last cases: test_balance.py)
    result = run(sample_project, "--apps-dataset", "sample", "-n", "2", "-v", "--apps-work-stealing", "off")
    workers: dict[str, set[str]] = {}
    for line in result.stdout.lines:
        if "PASSED" in line and line.startswith("[gw"):
            worker, rest = line.split("]", 1)
            nodeid = rest.split()[-1]
            workers.setdefault(nodeid.split("::")[0], set()).add(worker)
    assert len(workers) == 6
    assert all(len(w) == 1 for w in workers.values()), workers


def test_missing_dataset_file_is_one_clear_line(sample_project: pytest.Pytester) -> None:
    result = run(sample_project, "--apps-dataset", "nowhere/rows.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "rows.jsonl" in errors[0]


@pytest.mark.interfaces
def test_a_bad_option_is_a_usage_error_in_one_line(sample_project: pytest.Pytester) -> None:
    """(Each option's checks and messages: test_settings.py.)"""
    result = run(sample_project, "--apps-dataset", "sample", "--apps-work-stealing", "yes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == ["ERROR: --apps-work-stealing: unknown mode 'yes'; use on or off"]


@pytest.mark.parametrize("ini, says", [
    ("apps = maybe\n", "ERROR: ini option apps: invalid truth value 'maybe'; give apps = true or apps = false"),
    ("apps = true\napps_regenerate = maybe\n",
     "ERROR: ini option apps_regenerate: invalid truth value 'maybe'; give true or false"),
    ("apps = true\napps_dataset = sample\napps_timeout = nan\n", "ERROR: ini option apps_timeout: 'nan' is not a "
     "finite number; *"),
])
def test_a_bad_ini_value_is_one_line_naming_its_key(pytester: pytest.Pytester, ini: str, says: str) -> None:
    pytester.makeini("[pytest]\n" + ini)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and fnmatch.fnmatch(errors[0], says), result.stderr.lines
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_ini_options_apply_and_command_line_wins(sample_project: pytest.Pytester) -> None:
    """(The order of command line, ini and defaults for every option: test_settings.py.)"""
    sample_project.makeini("[pytest]\napps = true\napps_dataset = sample\napps_limit = 2\n")
    result = run(sample_project, "--apps-offset=1")
    result.assert_outcomes(passed=9)  # problems 2 and 3: the ini's limit from the command line's offset
    assert [p["id"] for p in read_report(sample_project)["problems"]] == ["900002", "900003"]


def test_selection_options(sample_project: pytest.Pytester) -> None:
    result = run(sample_project, "--apps-dataset", "sample", "--apps-difficulty", "competition",
                 "--apps-max-tests", "2")
    result.assert_outcomes(passed=4)
    report = read_report(sample_project)
    assert [p["id"] for p in report["problems"]] == ["900005", "900006"]
    result = run(sample_project, "--apps-dataset", "sample", "--apps-only", "900002,900004",
                 "--apps-only", "900006", "--apps-offset", "1", "--apps-limit", "1", "--apps-html", "r.html")
    result.assert_outcomes(passed=4)
    report = read_report(sample_project)
    assert [p["id"] for p in report["problems"]] == ["900004"]
    # the option is resolved once into the ids it means, and every report shows them
    assert report["settings"]["only"] == ["900002", "900004", "900006"]
    assert "3 chosen ids" in (sample_project.path / "r.html").read_text()


def test_skipped_rows_are_counted_and_mismatched_rows_score_zero(sample_project: pytest.Pytester) -> None:
    rows = [json.loads(line) for line in open(__import__("conftest").REPO / "pytest_apps/data/sample.jsonl")]
    rows[1]["input_output"] = "not json"
    io = json.loads(rows[2]["input_output"])
    io["outputs"] = io["outputs"][:-1]
    rows[2]["input_output"] = json.dumps(io)
    rows[3]["question"] = ""
    path = sample_project.path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{truncated\n")
    result = run(sample_project, "--apps-dataset", "rows.jsonl", "--apps-split=train")
    report = read_report(sample_project)
    assert report["summary"]["skipped_rows"] == 3
    assert report["summary"]["skipped_reasons"] == {
        "input_output is not JSON": 1, "empty question": 1, "line not JSON": 1
    }
    assert report["summary"]["problems"] == 4
    broken = next(p for p in report["problems"] if p["id"] == "900003")
    assert broken["verdict"] == "broken" and "differ in length" in broken["reason"]
    result.stdout.fnmatch_lines(["skipped rows: 3 *"])
    # each bad input has its line in the terminal, naming where it is and what to do
    where = str(path)
    result.stdout.fnmatch_lines([f"apps: dataset {where} (one file: no splits)*"])
    result.stdout.fnmatch_lines([
        "*= APPS summary =*",
        f"--apps-split=train does not apply: {where} is one file and all of its rows were read; drop --apps-split*",
        f"skipped row 1 (problem 900002) of {where}: input_output is not JSON (*); fix that row*",
        f"skipped row 3 (problem 900004) of {where}: empty question; fix that row*",
        f"skipped {where} line 7: not JSON (*); fix or remove that line*",
        f"problem 900003 (row 2 of {where}) scores 0 and runs nothing: inputs (*) and outputs (*) differ in length;*",
    ], consecutive=False)
    assert "split train" not in result.stdout.str()


@pytest.mark.interfaces
def test_candidate_named_on_the_command_line_is_never_imported_by_pytest(sample_project: pytest.Pytester) -> None:
    marker = sample_project.path / "ran-inside-pytest"
    (sample_project.path / "solutions" / "900001.py").write_text(
        "import sys\n"
        "if '_pytest' in sys.modules:\n"
        f"    open({str(marker)!r}, 'w').write('candidate code ran in the pytest process')\n"
        "a, b = map(int, input().split())\nprint(a + b)\n"
    )
    for args in (("solutions/900001.py",), ("solutions/900001.py::test_1",), ("solutions",), ()):
        result = run(sample_project, "--apps-dataset", "sample", "--apps-only", "900001", *args)
        assert not marker.exists(), args
        result.assert_outcomes(passed=1 if "::" in "".join(args) else 5)


@pytest.mark.interfaces
def test_fail_fast_keeps_verdicts_and_skips_the_rest_with_a_reason(broken_project: pytest.Pytester) -> None:
    base = ("--apps-dataset", "sample", "--apps-timeout", "0.5")
    full = run(broken_project, *base, "--apps-report", "reports/full.json")
    # (without the record store, which would fill the skipped cases from the full run's records)
    fast = run(broken_project, *base, "--apps-fail-fast", "-n", "2", "--apps-report", "reports/fast.json", "-rs",
               "--apps-records=off")
    a, b = read_report(broken_project, "reports/full.json"), read_report(broken_project, "reports/fast.json")
    assert [(p["id"], p["verdict"]) for p in a["problems"]] == [(p["id"], p["verdict"]) for p in b["problems"]]
    assert a["summary"]["strict_accuracy"] == b["summary"]["strict_accuracy"]
    assert not a["summary"]["test_case_average_partial"] and b["summary"]["test_case_average_partial"]
    # each failing candidate ran exactly one case; the timeout problem cost one timeout, not five
    for p in b["problems"]:
        if p["verdict"] == "fail":
            assert p["tests_run"] == 1, p
    fast.assert_outcomes(passed=4, failed=5, skipped=15)  # 900004's no-code item among the failures
    fast.stdout.fnmatch_lines(["*problem already failed at solutions/900005.py::test_*"])
    fast.stdout.fnmatch_lines(["test-case average: partial, at least *"])
    full.stdout.no_fnmatch_line("*partial*")


def test_fail_fast_runs_cheap_cases_first_and_explicit_cases_always(broken_project: pytest.Pytester) -> None:
    result = run(broken_project, "--apps-dataset", "sample", "--apps-fail-fast", "--apps-only", "900001", "-v")
    order = [line.split()[0] for line in result.stdout.lines if line.startswith("solutions/900001.py::")]
    # inputs are "1 2\n"(4), "-5 5\n"(5), "1000000000 1000000000\n"(22), "7 -10\n"(6), "0 0\n"(4)
    assert order == [f"solutions/900001.py::test_{i}" for i in (0, 4, 1, 3, 2)]
    named = run(broken_project, "--apps-dataset", "sample", "--apps-fail-fast",
                "solutions/900001.py::test_0", "solutions/900001.py::test_3")
    named.assert_outcomes(failed=2)


@pytest.mark.interfaces
def test_every_selected_problem_has_an_item_and_one_without_code_fails_as_no_code(
    sample_project: pytest.Pytester,
) -> None:
    """A problem without a program is one failing item of kind no code (it runs nothing), in the terminal,
    JUnit and the report, rerunnable by the node id the summary prints; the gate decides the exit status."""
    (sample_project.path / "empty-folder").mkdir()
    base = ("--apps-dataset=sample", "--apps-limit=3", "-n", "2")
    result = run(sample_project, *base, "--apps-candidates=empty-folder", "--apps-fail-under=10",
                 "--junitxml=j.xml", "-rf")
    assert result.ret == 1, result.stdout.str()  # the README's promise for a gate below the mark (was 5)
    result.assert_outcomes(failed=3)
    ids = [f"empty-folder::{pid}::no_code" for pid in ("900001", "900002", "900003")]
    result.stdout.fnmatch_lines(["first failing case of failing problems (paste to rerun):",
                                 *(f"  pytest {' '.join(base[:2])} --apps-candidates=empty-folder {nodeid}"
                                   for nodeid in ids)])
    result.stdout.fnmatch_lines(["*APPS problem 900001: no code (empty-folder holds no program for it; its * tests "
                                 "did not run)", "write empty-folder/900001.py, then run: pytest *empty-folder/900001.py"])
    junit = junit_outcomes(sample_project.path / "j.xml")
    assert sorted(junit.values()) == ["failure"] * 3
    report = read_report(sample_project)
    figures = report["summary"]
    assert [p["verdict"] for p in report["problems"]] == ["no_code"] * 3
    assert figures["outcomes"]["no_code"] == figures["tests_total"] and figures["tests_run"] == 0
    assert [p["first_failure"] for p in report["problems"]] == ids
    # rerun by the pasted node id, with and without workers
    again = run(sample_project, *base, "--apps-candidates=empty-folder", ids[1])
    again.assert_outcomes(failed=1)
    single = run(sample_project, "--apps-dataset=sample", "--apps-limit=3", "-n", "0",
                 "--apps-candidates=empty-folder", ids[2], "-v")
    single.assert_outcomes(failed=1)
    single.stdout.fnmatch_lines([f"{ids[2]} FAILED*"])
    # beside programs (one process: the workers' side was shown above): a folder keeps its files' node ids; a
    # generations file names the problem it lacks
    base = ("--apps-dataset=sample", "--apps-limit=3", "-n", "0")
    mixed = run(sample_project, *base, "--apps-candidates=solutions", "--apps-only=900001,900002", "-v")
    mixed.assert_outcomes(passed=9)
    (sample_project.path / "solutions" / "900002.py").unlink()
    mixed = run(sample_project, *base, "--apps-candidates=solutions", "--apps-only=900001,900002", "-v")
    mixed.assert_outcomes(passed=5, failed=1)
    mixed.stdout.fnmatch_lines(["*solutions::900002::no_code*"])
    gens = sample_project.path / "g.jsonl"
    gens.write_text(json.dumps({"problem_id": 900001,
                                "code": (sample_project.path / "solutions" / "900001.py").read_text()}) + "\n")
    result = run(sample_project, *base, "--apps-candidates=g.jsonl", "--apps-only=900001,900002", "-rf")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["FAILED g.jsonl::900002::no_code*"])
    run(sample_project, *base, "--apps-candidates=g.jsonl", "g.jsonl::900002::no_code").assert_outcomes(failed=1)


def usage_error(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.lines
    return errors[0]


def test_a_source_the_rows_cannot_give_or_a_tier_they_lack_is_one_line_with_what_they_have(
    sample_project: pytest.Pytester,
) -> None:
    """`--apps-candidates=reference` on rows without solutions, and a tier name of the other dataset
    (`--apps-difficulty=hard` on APPS rows): one line naming the option, what the data has and what to do."""
    rows = [json.loads(line) for line in SAMPLE_ROWS.read_text().splitlines()]
    for row in rows:
        row["solutions"] = ""
    (sample_project.path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    line = usage_error(run(sample_project, "--apps-dataset=rows.jsonl", "--apps-candidates=reference",
                           "--apps-only=900001,900002"))
    assert line.startswith("ERROR: --apps-candidates=reference: the rows of rows.jsonl hold no solutions for the "
                           "selected problems (900001, 900002); give the programs to test"), line
    line = usage_error(run(sample_project, "--apps-dataset=sample", "--apps-difficulty=hard"))
    assert line == ("ERROR: --apps-difficulty=hard: no row of sample has that tier; its tiers are introductory, "
                    "interview, competition (APPS's names): give one of them")
    # a tier the data has selects as before
    run(sample_project, "--apps-dataset=sample", "--apps-difficulty=competition",
        "--apps-max-tests=1").assert_outcomes(passed=2)


def test_an_ini_with_apps_options_but_not_apps_true_says_how_to_turn_the_plugin_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    hint = ("apps: the benchmark is off although pytest.ini sets apps_dataset, apps_limit: add 'apps = true' there, "
            "or run pytest --apps")
    ini = pytester.path / "pytest.ini"
    ini.write_text("[pytest]\napps_dataset = sample\napps_limit = 2\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)  # still dormant: the project's own tests, as before
    assert result.stdout.lines.count(hint) == 1, result.stdout.lines[:8]
    quiet = run(pytester, "-q")  # the header is hidden: the line comes at the end
    quiet.assert_outcomes(passed=1)
    assert quiet.stdout.lines.count(hint) == 1, quiet.stdout.lines
    for text in ("[pytest]\n", "[pytest]\napps = true\napps_dataset = sample\napps_limit = 1\n"):
        ini.write_text(text)
        assert not any(line.startswith("apps: the benchmark is off") for line in run(pytester).stdout.lines)


def test_one_problem_is_not_problems(sample_project: pytest.Pytester) -> None:
    result = run(sample_project, "--apps-dataset=sample", "--apps-only=900001")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["apps: 1 problem (*), first 20 tests per problem, 0 rows skipped"])
    assert "1 problems" not in result.stdout.str()


@pytest.mark.interfaces
def test_under_xdist_the_controller_takes_the_machines_figures_from_its_workers(
    sample_project: pytest.Pytester,
) -> None:
    """The xdist controller runs no case: its report's isolation layers and machine speed come from the workers
    that ran them (in their workeroutput), and the controller starts no executor server of its own to ask."""
    sample_project.makeconftest(
        "from pytest_apps.executor import client\n"
        "ROLE = []\n"
        "def pytest_configure(config):\n"
        "    ROLE.append('worker' if hasattr(config, 'workerinput') else 'controller')\n"
        "_spawn = client.ServerProcess.spawn\n"
        "def spawn(self, limits):\n"
        "    with open(%r, 'a') as f:\n"
        "        f.write(ROLE[0] + '\\n')\n"
        "    return _spawn(self, limits)\n"
        "client.ServerProcess.spawn = spawn\n" % str(sample_project.path / "spawned.txt"))
    result = run(sample_project, "--apps-dataset", "sample", "--apps-limit=1", "-n", "2", "-q")
    result.assert_outcomes(passed=5)
    spawned = (sample_project.path / "spawned.txt").read_text().split()
    assert spawned and "controller" not in spawned, spawned
    report = read_report(sample_project)
    assert "fork-server" in report["isolation"]
    assert report["machine"]["speed"] > 0


def test_a_worker_asks_no_plugin_for_a_terminal_summary(sample_project: pytest.Pytester) -> None:
    """A worker's terminal output goes nowhere; its terminal reporter would still call every plugin's
    `pytest_terminal_summary` at the end (hypothesis's imports its whole package there: seconds at each stop
    under PYTHONDONTWRITEBYTECODE=1). Only the controller asks."""
    sample_project.makepyfile(summary_probe='''
import os


def pytest_terminal_summary(terminalreporter, config):
    who = config.workerinput["workerid"] if hasattr(config, "workerinput") else "controller"
    with open(os.path.join(str(config.rootpath), "asked-" + who), "w") as fh:
        fh.write("asked")
''')
    result = run(sample_project, "--apps-dataset=sample", "--apps-only=900001", "-n", "2", "-p", "summary_probe",
                 "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*APPS summary*"])
    assert sorted(p.name for p in sample_project.path.glob("asked-*")) == ["asked-controller"]
