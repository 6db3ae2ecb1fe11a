"""Workers that cannot read the controller's files (plugin/remote.py, nodeids.py, gateways.py).

A popen gateway with a `chdir` takes the same path as an ssh one (xdist rewrites its command line, pytest-apps
sends it the plan and the test data through execnet and it collects from the plan), without an ssh server:
these tests check that path against local workers, node id by node id. tests/test_ssh.py runs it over a
real ssh server whose sessions cannot see the controller's files.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import execnet
import pytest
from xdist import workermanage
from xdist.dsession import DSession
from xdist.scheduler import LoadScopeScheduling

from conftest import BROKEN, junit_outcomes, make_problem, read_report, run, verdict_outline
from pytest_apps.plugin import gateways, nodeids, remote
from pytest_apps.plugin.nodeids import Argument, FileIds


def comparable(report: dict) -> dict:
    """test_plugin's comparison, less the count of verdicts near the time limit: a measurement, which two
    runs of a program that loops until it is stopped need not agree on."""
    out = verdict_outline(report)
    out["summary"].pop("borderline", None)
    return out


def remote_tx(tmp_path_factory: pytest.TempPathFactory, workers: int = 2) -> str:
    return f"{workers}*popen//chdir={tmp_path_factory.mktemp('remote-cwd')}"


# -- node ids, as pytest gives them ---------------------------------------------------------------------------

@pytest.mark.interfaces
def test_file_ids_follow_pytests_rules(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "project", tmp_path / "gens"
    inside = nodeids.file_ids(str(root / "solutions" / "7.py"), root, root, [root / "solutions"])
    assert inside == FileIds("solutions/7.py", "7.py", ("solutions",), "solutions/7.py", "solutions/7.py")
    # outside the rootdir: named relative to the rootdir all the same (pytest's own name, relative to the argument
    # it is found under, is "" for the argument itself: `::7::test_0`, which cannot be pasted); -k still matches
    # the folders below the argument
    under = nodeids.file_ids(str(elsewhere / "a" / "7.py"), root, root, [elsewhere])
    assert under == FileIds("../gens/a/7.py", "7.py", ("a",), "../gens/a/7.py", "../gens/a/7.py")
    assert nodeids.file_ids(str(elsewhere / "g.jsonl"), root, root / "solutions", [elsewhere / "g.jsonl"]) == (
        FileIds("../gens/g.jsonl", "g.jsonl", (), "../gens/g.jsonl", "../../gens/g.jsonl"))
    assert nodeids.file_ids(str(elsewhere / "g.jsonl"), root, root, [root]) is None


@pytest.mark.interfaces
def test_selection_and_order_of_files(tmp_path: Path) -> None:
    files = [str(tmp_path / p) for p in ("s/b.py", "s/a/z.py", "s/a.py", "t.jsonl")]
    args = nodeids.arguments(["s", "t.jsonl::7::sample_1"], tmp_path)
    assert args == [Argument(tmp_path / "s", ()), Argument(tmp_path / "t.jsonl", ("7", "sample_1"))]
    assert nodeids.selection(args, files) == {files[0]: [()], files[1]: [()], files[2]: [()],
                                              files[3]: [("7", "sample_1")]}
    # pytest walks each folder's entries by name: "a" (the folder) before "a.py" before "b.py"
    assert nodeids.order(files, args) == [files[1], files[2], files[0], files[3]]
    assert nodeids.wanted(("7", "sample_1", "test_3"), [("7", "sample_1")])
    assert not nodeids.wanted(("7", "sample_2", "test_3"), [("7", "sample_1")])
    assert nodeids.wanted(("test_3",), [()])


# -- what pytest-apps relies on in pytest-xdist ---------------------------------------------------------------

@pytest.mark.interfaces
def test_names_after_the_candidates_folder_are_taken_off_and_narrow_the_collection(tmp_path: Path) -> None:
    """pytest refuses `folder::names`; a no-code item's node id starts with the candidates' folder."""
    folder = tmp_path / "solutions"
    folder.mkdir()
    args = ["solutions::7::no_code", "solutions/3.py::test_1", "other"]
    new, given = nodeids.folder_arguments(args, str(folder), tmp_path)
    assert new == ["solutions", "solutions/3.py::test_1", "other"]
    assert nodeids.reaches(given, folder, ["7", "no_code"]) and not nodeids.reaches(given, folder, ["8", "no_code"])
    assert nodeids.reaches(given, folder / "3.py", ["test_1"]) and not nodeids.reaches(given, folder / "3.py", ["test_2"])
    assert nodeids.reaches(given, tmp_path / "other" / "x.py", ["test_0"])
    assert nodeids.folder_arguments(["solutions/3.py::test_1"], str(folder), tmp_path) == (["solutions/3.py::test_1"], [])


@pytest.mark.interfaces
def test_xdist_passes_tokens_through_the_identity_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """xdist rewrites the command line for remote gateways with make_reltoroot(roots, args); with
    identity_roots every token that is an existing path comes back unchanged (a bare name gains "/.")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "7.py").write_text("")
    (tmp_path / "rows.jsonl").write_text("")
    tokens = ["--apps", "--apps-dataset", str(tmp_path / "rows.jsonl"), "solutions/7.py::test_3",
              "--deselect", "solutions/7.py::test_1", "-k", "not 9", "--tx", "2*ssh=h//python=p", "rows.jsonl",
              "solutions"]
    roots = gateways.identity_roots(tokens)
    out = workermanage.make_reltoroot(roots, tokens)
    assert out[:-2] == tokens[:-2]
    assert out[-2:] == ["rows.jsonl/.", "solutions/."]
    with pytest.raises(ValueError, match="not relative to an rsync root"):
        workermanage.make_reltoroot([], tokens)  # what xdist does without them


@pytest.mark.interfaces
def test_the_xdist_internals_used_are_there() -> None:
    """gateways.py's docstring names what it uses; an xdist release that changes it fails here first."""
    assert "pytest_xdist_setupnodes" in workermanage.NodeManager.setup_nodes.__code__.co_names
    init = workermanage.NodeManager.__init__.__code__.co_names
    assert "roots" in init and "rsyncoptions" in init
    assert callable(workermanage.NodeManager.rsync_roots) and callable(workermanage.NodeManager.rsync)
    assert "make_reltoroot" in workermanage.WorkerController.setup.__code__.co_names
    assert "nodemanager" in DSession.pytest_sessionstart.__code__.co_names
    errordown = DSession.worker_errordown.__code__.co_names
    assert errordown.index("pytest_testnodedown") < errordown.index("remove_node")
    assert "assigned_work" in LoadScopeScheduling.__init__.__code__.co_names
    spec = execnet.XSpec("ssh=user@host//python=python3")
    assert gateways.is_remote(spec) and gateways.machine_of(spec) == "user@host"
    assert not gateways.is_remote(execnet.XSpec("popen"))
    assert gateways.is_remote(execnet.XSpec("popen//chdir=/x"))


def test_machine_places_count_each_machines_workers_apart() -> None:
    specs = [execnet.XSpec(s) for s in ("popen", "popen", "ssh=a", "ssh=a", "ssh=a", "ssh=b")]
    assert [gateways.machine_place(s, specs) for s in specs] == [(0, 2), (1, 2), (0, 3), (1, 3), (2, 3), (0, 1)]


def test_the_report_claims_only_the_isolation_every_machine_had() -> None:
    from pytest_apps.plugin.writers import down_line, isolation_fields

    here = ["fork-server", "netns", "landlock-abi7"]
    assert isolation_fields(here, {}) == {"isolation": here}
    assert isolation_fields(here, {"h1": list(here)}) == {"isolation": here}
    assert isolation_fields(here, {"h1": list(here), "h2": ["fork-server", "landlock-abi7"]}) == {
        "isolation": ["fork-server", "landlock-abi7"],
        "isolation_by_machine": {"localhost": here, "h1": here, "h2": ["fork-server", "landlock-abi7"]},
    }
    line = down_line({"worker": "gw1", "machine": "h2", "error": "Not properly terminated", "unfinished": 7,
                      "crashed": "gens.jsonl::7::test_3"})
    assert line == ("worker gw1 on h2 went down (Not properly terminated), running gens.jsonl::7::test_3: 7 cases "
                    "it had been given had not finished there")


# -- the data channel, over a real execnet gateway ------------------------------------------------------------

WORKER_SIDE = """
from pytest_apps.plugin.remote import ControllerTestData
from pytest_apps.dataset.problems import Problem
from pytest_apps.candidates.sources import Candidate
from pytest_apps.core.errors import HarnessError
data, problems = channel.receive()
store = ControllerTestData(data, timeout=30)
for fields in problems:
    problem = Problem.from_dict(fields)
    try:
        cases = store.get(problem)
        again = store.get(problem)
        program = store.program(problem, Candidate(problem.id, "f.py", None, sample=1, label="b"))
        channel.send(("ok", cases.inputs, cases.outputs, again is cases, program.code))
    except HarnessError as exc:
        channel.send(("harness error", str(exc)))
"""


def test_a_remote_store_fetches_a_problems_data_once_and_errors_are_harness_errors(tmp_path: Path) -> None:
    from pytest_apps.candidates.sources import Candidate
    from pytest_apps.plugin.plan import Plan
    from pytest_apps.plugin.remote import Feeder

    problem = make_problem("7", index=0, n=2, total=3)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "0.json").write_text(json.dumps({"inputs": ["1\n", "2\n", "3\n"],
                                                           "outputs": ["a", "b", "c"]}))
    plan = Plan(tmp_path, {}, {}, [problem], [], [], {"7": [Candidate("7", "f.py", "print(1)", 0, "a"),
                                                            Candidate("7", "f.py", "print(2)", 1, "b")]})
    unknown = make_problem("8", index=1)
    feeder = Feeder(plan, tmp_path / "reports")
    gateway = execnet.makegateway(f"popen//python={sys.executable}")
    try:
        data = gateway.newchannel()
        feeder.attach(data)
        worker = gateway.remote_exec(WORKER_SIDE)
        worker.send((data, [problem.to_dict(), unknown.to_dict()]))
        assert worker.receive(timeout=30) == ("ok", ["1\n", "2\n"], ["a", "b"], True, "print(2)")
        kind, text = worker.receive(timeout=30)
        assert kind == "harness error" and "problem 8" in text and "KeyError" in text
    finally:
        gateway.exit()
    # a failing case's files, sent back, are written by the controller; no path leaves its folder
    assert feeder.answer(("case_files", [["7/0.in", "1\n"], ["7/0.expected", "a"]])) is None
    assert (tmp_path / "reports" / "7" / "0.expected").read_text() == "a"
    with pytest.raises(ValueError):
        feeder.answer(("case_files", [["../x", "1"]]))


@pytest.mark.interfaces
def test_an_answer_to_an_abandoned_question_is_never_taken_for_the_next_one() -> None:
    """A worker that stopped waiting (pytest-timeout's signal) may find that late answer queued first."""
    from pytest_apps.plugin.remote import ControllerTestData

    class Channel:  # the controller's side, answering late
        def __init__(self) -> None:
            self.queue: list[tuple] = [("ok", 0, b'{"inputs": ["stale"], "outputs": ["stale"]}', "{}")]

        def send(self, message: tuple) -> None:
            kind, pid, ask = message
            self.queue.append(("ok", ask, json.dumps({"inputs": [pid], "outputs": [pid]}).encode(), "{}"))

        def receive(self, timeout: float) -> tuple:
            return self.queue.pop(0)

    store = ControllerTestData(Channel())
    assert store.get(make_problem("9", index=0)).inputs == ["9"]


# -- end to end, through popen gateways with a chdir ----------------------------------------------------------

def test_workers_that_cannot_see_the_files_report_what_local_workers_report(
    broken_project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
) -> None:
    base = ("--apps-dataset", "sample", "--apps-timeout", "0.5")
    run(broken_project, *base, "-n", "2", "--apps-report", "reports/local.json", "--junitxml", "local.xml")
    local_files = {p.name: p.read_bytes() for p in (broken_project.path / "reports" / "cases").rglob("*.*")}
    shutil.rmtree(broken_project.path / "reports" / "cases")
    remote = run(broken_project, *base, "--tx", remote_tx(tmp_path_factory), "--dist", "loadscope",
                 "--apps-report", "reports/remote.json", "--junitxml", "remote.xml")
    assert "not relative to an rsync root" not in remote.stdout.str() + remote.stderr.str()
    local, far = read_report(broken_project, "reports/local.json"), read_report(broken_project, "reports/remote.json")
    assert comparable(far) == comparable(local)
    assert [p["first_failure"] for p in far["problems"]] == [p["first_failure"] for p in local["problems"]]
    assert junit_outcomes(broken_project.path / "remote.xml") == junit_outcomes(broken_project.path / "local.xml")
    assert {p.name: p.read_bytes() for p in (broken_project.path / "reports" / "cases").rglob("*.*")} == local_files
    remote.stdout.fnmatch_lines(["*input written to reports/cases/900001/0.in*"])


@pytest.mark.interfaces
@pytest.mark.parametrize("selection", [
    ("solutions/900001.py::test_2", "solutions/900006.py"),
    ("-k", "900002 or solutions and 900003"),
    ("--deselect", "solutions/900001.py::test_1", "--apps-fail-fast"),
], ids=["node-ids", "-k", "deselect-fail-fast"])
def test_the_command_lines_selection_is_the_same_on_remote_workers(
    broken_project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, selection: tuple[str, ...]  # noqa: F811
) -> None:
    base = ("--apps-dataset", "sample", "--apps-timeout", "0.5", *selection)
    # (one worker each: the selection is what differs, not the scheduling)
    local = run(broken_project, *base, "-n", "1", "--apps-report", "reports/local.json", "-rA")
    far = run(broken_project, *base, "--tx", remote_tx(tmp_path_factory, 1), "--dist", "loadscope",
              "--apps-report", "reports/remote.json", "-rA")
    assert far.parseoutcomes() == local.parseoutcomes()
    # (the time a timed-out program used is measured afresh in each run: its figure is not compared)
    summary = lambda r: sorted(re.sub(r"\(own time [0-9.]+ s\)", "(own time)", x)  # noqa: E731
                               for x in r.stdout.lines if x.startswith(("PASSED ", "FAILED ", "SKIPPED ")))
    assert summary(far) == summary(local) and summary(far)
    a, b = read_report(broken_project, "reports/local.json"), read_report(broken_project, "reports/remote.json")
    assert comparable(b) == comparable(a)


@pytest.mark.interfaces
def test_last_failed_reruns_the_controllers_failures_on_remote_workers(
    broken_project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
) -> None:
    # a wrong answer, a runtime error and a compile error (the looping program would spend the run's time on
    # timeouts, which fail and rerun as any failure does)
    base = ("--apps-dataset", "sample", "--apps-only", "900001,900002,900003,900006")
    far = ("--tx", remote_tx(tmp_path_factory, 1), "--dist", "loadscope")
    first = run(broken_project, *base, *far)
    again = run(broken_project, *base, *far, "--lf", "-rA")
    local = run(broken_project, *base, "-n", "1", "--lf", "-rA")  # the cache holds the same failures
    assert again.parseoutcomes() == local.parseoutcomes()
    assert again.parseoutcomes()["failed"] == first.parseoutcomes()["failed"]
    assert "passed" not in again.parseoutcomes()


class NodeIdLike:
    """A last failure's key as pytest >= 9.2 holds it: an object of its own whose text is the node id."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __hash__(self) -> int:
        return hash(self.text)


@pytest.mark.interfaces
def test_the_last_failures_reach_remote_workers_as_plain_text() -> None:
    """execnet serialises only plain data: the controller's last failures go as node id text."""
    failures = {NodeIdLike("solutions/900001.py::test_0"): True, "solutions/900002.py::test_1": True}
    lfplugin = SimpleNamespace(active=True, lastfailed=failures)
    config = SimpleNamespace(getoption=lambda name, default=None: default,
                             pluginmanager=SimpleNamespace(get_plugin=lambda name: lfplugin))
    options = remote.controller_options(config)
    assert options["lastfailed"] == {"solutions/900001.py::test_0": True, "solutions/900002.py::test_1": True}
    assert execnet.loads(execnet.dumps(options)) == options


@pytest.mark.interfaces
def test_a_remote_worker_keys_the_last_failures_as_its_pytest_reads_them(pytester: pytest.Pytester) -> None:
    nodeid = "solutions/900001.py::test_0"
    pytester.makeini("[pytest]\n")
    config = pytester.parseconfigure()
    config.cache.set("cache/lastfailed", {nodeid: True})
    own = type(config.pluginmanager.get_plugin("lfplugin"))(config).lastfailed  # as pytest reads its cache
    assert own
    keyed = remote.lastfailed_keyed({nodeid: True})
    assert keyed == own and [type(k) for k in keyed] == [type(k) for k in own]


def test_local_and_remote_workers_together_with_candidates_outside_the_rootdir(
    broken_project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
) -> None:
    """xdist stops a run whose workers collected different node ids: a local and a remote worker side by
    side, on a generations file of samples kept outside the rootdir, give the local run's report."""
    broken_project.makeini("[pytest]\n")
    gens = tmp_path_factory.mktemp("generations") / "gens.jsonl"
    records = [{"problem_id": pid, "code": code} for pid, code in BROKEN.items()]
    records += [{"problem_id": p.stem, "code": p.read_text()}
                for p in (broken_project.path / "solutions").glob("*.py")]
    gens.write_text("".join(json.dumps(r) + "\n" for r in records))
    base = ("--apps-dataset", "sample", "--apps-timeout", "0.5", "--apps-candidates", str(gens), "-v")
    local = run(broken_project, *base, "-n", "2", "--apps-report", "reports/local.json")
    mixed = run(broken_project, *base, "--tx", "popen", "--tx", remote_tx(tmp_path_factory, 1),
                "--dist", "loadscope", "--apps-report", "reports/mixed.json")
    assert "Different tests were collected" not in mixed.stdout.str() + mixed.stderr.str()
    assert mixed.parseoutcomes() == local.parseoutcomes()
    ids = lambda r: sorted(x.split()[-1] for x in r.stdout.lines if x.startswith("[gw"))  # noqa: E731
    assert ids(mixed) == ids(local) and any("::900001::sample_1::test_0" in x for x in ids(local))
    a, b = read_report(broken_project, "reports/local.json"), read_report(broken_project, "reports/mixed.json")
    assert comparable(b) == comparable(a)
    assert [p["first_failure"] for p in b["problems"]] == [p["first_failure"] for p in a["problems"]]


@pytest.mark.interfaces
def test_a_worker_lost_before_its_first_case_fails_the_run(sample_project: pytest.Pytester):
    """xdist with restarts off stops the run when a worker dies; one that dies before running anything leaves
    no crashed test to fail, so pytest alone would exit 0 with nothing run. The cases that never ran make
    the run incomplete: exit status 1, said in the summary and the JSON report."""
    sample_project.makeconftest(
        """
        import os
        import pytest

        @pytest.hookimpl(tryfirst=True)  # before the worker sends its collection: it is given no case
        def pytest_collection_finish(session):
            if os.environ.get("PYTEST_XDIST_WORKER") == "gw0":
                os._exit(3)  # the host is lost before the worker runs a case
        """
    )
    result = run(sample_project, "--apps-dataset", "sample", "--apps-limit", "4", "--apps-candidates", "solutions",
                 "-n", "2", "--max-worker-restart", "0")
    assert result.ret == 1, result.stdout.str()
    report = read_report(sample_project)
    [down] = report["workers_down"]
    assert down["worker"] == "gw0" and not down["crashed"]
    assert report["cases_not_run"] == report["summary"]["tests_total"] - report["summary"]["tests_run"] > 0
    assert report["summary"]["strict_accuracy"] < 1.0
    result.stdout.fnmatch_lines([f"*{report['cases_not_run']} selected cases never ran because a worker was lost*"])


@pytest.mark.interfaces
def test_a_worker_replaced_after_a_crash_finishes_the_run(sample_project: pytest.Pytester):
    """With xdist's restarts on, the lost worker's cases run on its replacement: nothing is missing, and the
    exit status is pytest's (0 when everything passed)."""
    sample_project.makeconftest(
        """
        import os
        import pytest

        @pytest.hookimpl(tryfirst=True)  # before the worker sends its collection: it is given no case
        def pytest_collection_finish(session):
            if os.environ.get("PYTEST_XDIST_WORKER") == "gw0" and not os.path.exists("lost-once"):
                open("lost-once", "w").close()
                os._exit(3)
        """
    )
    result = run(sample_project, "--apps-dataset", "sample", "--apps-limit", "4", "--apps-candidates", "solutions",
                 "-n", "2")
    report = read_report(sample_project)
    assert report["summary"]["tests_run"] == report["summary"]["tests_total"], result.stdout.str()
    assert report["cases_not_run"] == 0 and len(report["workers_down"]) == 1
    assert result.ret == 0, result.stdout.str()
