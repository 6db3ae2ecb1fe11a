"""What a run is is decided once (engine/spec.py): `run_spec` builds the judging, the limits (a problem's own too),
the preload, the memory floor and the judge key of a record from resolved settings, and every front end (the
plugin's processes, the API's Evaluator, Ray's node actors) uses the spec it gives."""

from __future__ import annotations

import json
from dataclasses import replace

from conftest import make_problem

from pytest_apps.api import Evaluator
from pytest_apps.core.settings import Settings
from pytest_apps.judge.profiles import MIN_MEMORY, MIN_MEMORY_APPS
from pytest_apps.dataset.problems import Selection
from pytest_apps.engine.limits import problem_limits
from pytest_apps.engine.records import judge_key
from pytest_apps.engine.spec import RunSpec, run_spec, selection_of
from pytest_apps.executor import APPS_STYLE_PRELOAD, Limits
from pytest_apps.judge.profiles import Judging


def test_the_spec_holds_the_profiles_preload_and_floor_and_a_reference_run_audits() -> None:
    seed = run_spec(Settings())
    assert seed.judging == Judging() and seed.preload == () and seed.memory_floor == MIN_MEMORY
    assert seed.limits == Limits(timeout=4.0)
    for judge in ("apps", "taco"):
        spec = run_spec(Settings(judge=judge))
        assert spec.preload == APPS_STYLE_PRELOAD and spec.memory_floor == MIN_MEMORY_APPS
    audit = run_spec(Settings(candidates="reference"))
    assert audit.judging.audit and audit.preload == APPS_STYLE_PRELOAD  # the audit runs the references the apps way
    assert not run_spec(Settings(candidates="reference", agent="m:f")).judging.audit


def test_a_problems_limits_are_decided_once_for_the_run_the_report_and_the_record_key() -> None:
    spec = run_spec(Settings(timeout=2.0, timeout_scale=1.5, memory=1 << 30, limits="row"))
    assert spec.limits == Limits(timeout=3.0, memory=1 << 30)  # the run's own limit, scaled once
    own, plain = make_problem("1", time_limit=2.0, memory_limit=64 << 20), make_problem("2")
    ran = problem_limits(spec.limits, own, spec.judging.row_limits, spec.judging.time_scale)  # as the engine runs it
    assert ran.timeout == spec.limit_of(own)["time"] == spec.judge_key(own).limits["timeout"] == 3.0
    assert spec.limit_of(plain)["time"] == 3.0 and spec.judge_key(plain).limits["timeout"] == 3.0
    assert spec.judge_key(own) == judge_key(spec.judging, spec.limits, own)
    fixed = run_spec(Settings(timeout=2.0, timeout_scale=1.5))
    assert fixed.limit_of(own)["mode"] == "fixed" and fixed.judge_key(own).limits["timeout"] == 3.0


def test_the_evaluators_report_names_the_limits_its_problems_ran_under() -> None:
    """With per-problem limits (`limits="row"`) a row's own time limit is the one its problem runs under, and the
    summary says so (the spec's `limit_of`, as the plugin's report), not the fixed limit."""
    from pytest_apps.api import problem_from_row

    row = {"question": "Print the number.", "input_output": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}),
           "difficulty": "EASY", "time_limit": "1 second", "memory_limit": "256 megabytes", "skill_types": "[]",
           "tags": "[]", "solutions": "[]", "starter_code": "", "source": "codeforces"}
    problem = problem_from_row(row)
    assert problem.time_limit == 1.0
    for limits, mode, seconds in (("row", "row", 1.0), ("fixed", "fixed", 4.0)):
        with Evaluator(workers=1, limits=limits) as ev:
            result = ev.score(problem, "print(input())")
            summary = ev.summary([result], [problem])
        assert result.passed
        assert (summary.problems[0].limits["mode"], summary.problems[0].limits["time"]) == (mode, seconds)
        assert summary.figures["limits"]["mode"] == mode


def test_the_selection_is_the_settings() -> None:
    settings = Settings(difficulty=("interview",), only=("3",), offset=1, limit=2, tag=("greedy",))
    assert selection_of(settings) == Selection(("interview",), ("3",), 1, 2, ("greedy",))
    assert selection_of(Settings()) == Selection()


def test_the_evaluator_and_a_ray_actor_judge_by_the_spec_of_the_same_settings() -> None:
    from pytest_apps.engine.cluster import NodeRunner, Setup

    with Evaluator(workers=1, timeout=2.5, memory="512M", judge="taco") as ev:
        settings = Settings(timeout=2.5, memory=512 << 20, judge="taco")
        assert isinstance(ev.spec, RunSpec) and ev.spec == run_spec(settings)
        assert (ev.judging, ev.limits) == (ev.spec.judging, ev.spec.limits)
        executor = ev.spec.executor()
        assert (executor.limits, executor.preload) == (ev.spec.limits, APPS_STYLE_PRELOAD)
        executor.close()
    runner = NodeRunner(Setup(replace(settings, judge="apps"), 1))
    try:
        assert runner.spec == run_spec(replace(settings, judge="apps")) and runner.judging == runner.spec.judging
    finally:
        runner.close()


def test_python_m_pytest_apps_generate_selects_through_the_problem_index_as_the_plugin_does(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from pytest_apps import __main__ as cli
    from pytest_apps.candidates import generation
    from pytest_apps.dataset import index

    loads, given = [], []
    real = index.load

    def spy(*args, **kwargs):
        loads.append(args[3])
        return real(*args, **kwargs)

    def generate_for(settings, problems, folder, progress=None):
        given.append([p.id for p in problems])
        return SimpleNamespace(generated=0, failed=0, reused=len(problems), seconds=0.0)

    monkeypatch.setattr(index, "load", spy)
    monkeypatch.setattr(generation, "generate_for", generate_for)
    status = cli.main(["generate", "--rootdir", str(tmp_path), "--apps-dataset", "sample", "--apps-agent", "m:f",
                       "--apps-limit", "2", "--apps-offset", "1"])
    assert status == 0
    assert loads == [Selection(offset=1, limit=2)] and len(given[0]) == 2
