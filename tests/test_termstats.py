"""pytest's terminal keeps our cases' quiet setup and teardown reports out of the list it scans once per
failure at the end (quadratic at the size of the split); everything it prints stays the same. An xdist
worker's terminal, which nobody sees, keeps none of our cases' reports."""

from __future__ import annotations

import pytest
from conftest import run

from pytest_apps.plugin.termstats import forget_on_worker, forget_quiet_phase

pytestmark = pytest.mark.interfaces  # (noxfile.py runs these against the oldest releases too)


def report(when: str = "teardown", outcome: str = "passed", sections=(), location=None) -> pytest.TestReport:
    return pytest.TestReport(nodeid="solutions/7.py::test_3",
                             location=location or ("solutions/7.py", 0, "APPS problem 7 test 3"),
                             keywords={}, outcome=outcome, longrepr=None if outcome == "passed" else "boom",
                             when=when, sections=list(sections))


@pytest.mark.parametrize("when", ["setup", "teardown"])
def test_a_quiet_phase_of_a_case_leaves_the_list(when):
    rep = report(when)
    stats = {"": [report("setup"), rep], "failed": []}
    assert forget_quiet_phase(stats, rep)
    assert len(stats[""]) == 1 and stats[""][0] is not rep


@pytest.mark.parametrize("rep", [
    report("call"),
    report("teardown", outcome="failed"),
    report("setup", outcome="skipped"),
    report("teardown", sections=[("Captured stdout teardown", "bye\n")]),
    report("teardown", location=("tests/test_x.py", 3, "test_x")),
], ids=["call", "failed", "skipped", "with-sections", "not-a-case"])
def test_what_the_terminal_may_print_stays(rep):
    stats = {"": [rep]}
    assert not forget_quiet_phase(stats, rep)
    assert stats[""] == [rep]


def test_only_the_report_just_filed_is_taken():
    rep, last = report("teardown"), report("setup")
    stats = {"": [rep, last]}
    assert not forget_quiet_phase(stats, rep)
    assert stats[""] == [rep, last]
    assert not forget_quiet_phase({}, rep)


@pytest.mark.parametrize("rep", [report("setup"), report("call", outcome="failed"), report("teardown", outcome="failed",
                                 sections=[("Captured stdout teardown", "bye\n")])], ids=["setup", "call", "teardown"])
def test_a_worker_keeps_none_of_our_reports(rep):
    other = report("call", location=("tests/test_x.py", 3, "test_x"))
    stats = {"": [report("setup")], "failed": [other, rep]}
    assert forget_on_worker(stats, rep)
    assert stats["failed"] == [other] and len(stats[""]) == 1
    assert not forget_on_worker(stats, other)  # not one of our cases
    assert not forget_on_worker(stats, rep)  # no longer filed
    assert stats["failed"] == [other]


COUNT_QUIET = '''
import json
def pytest_terminal_summary(terminalreporter, config):
    who = getattr(config, "workerinput", {}).get("workerid", "main")
    quiet = terminalreporter.stats.get("", [])
    with open(f"quiet-{who}.json", "w") as fh:
        json.dump({"quiet": [r.nodeid for r in quiet], "failed": len(terminalreporter.stats.get("failed", [])),
                   "kept": sum(len(v) for v in terminalreporter.stats.values())}, fh)
'''


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_run_with_failures_files_no_quiet_case_reports(sample_project: pytest.Pytester, workers):
    import json

    (sample_project.path / "solutions" / "900001.py").write_text("print('wrong')\n")
    sample_project.makeconftest(COUNT_QUIET)
    result = run(sample_project, "--apps-dataset", "sample", "-n", workers, "-rf")
    seen = {p.stem: json.loads(p.read_text()) for p in sample_project.path.glob("quiet-*.json")}
    # the controller only: an xdist worker of a run has no terminal reporter (its output goes nowhere), so it keeps
    # no reports at all and asks no plugin for a summary
    assert set(seen) == {"quiet-main"}
    assert all(s["quiet"] == [] for s in seen.values())
    assert all(s["kept"] == 0 for who, s in seen.items() if who != "quiet-main")
    got = seen["quiet-main"]
    assert got["failed"] > 0
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == got["failed"] and outcomes["passed"] > 0
    # the failures are printed as before: their sections and the short summary
    result.stdout.fnmatch_lines(["*= FAILURES =*", "*900001*", "*short test summary info*", "FAILED *900001*"])
