"""The trainers' own SandboxFusion clients, called unchanged against `python -m pytest_apps serve`, on the real APPS
rows' model programs, give the scores `pytest_apps.rewards` gives the same programs.

- the `sandbox-fusion` client package (`sandbox_fusion.submit`, `run_code`): its `accepted` is the strict reward;
- verl's `sandbox_fusion` reward code (`verl/utils/reward_score/sandbox_fusion`, loaded from an installed verl by
  file, so neither torch nor the rest of verl is imported): its score is the fraction reward wherever its own
  output comparison (the stdout, trailing newlines stripped, equal to the expected text) agrees with the judge's.
  Where it does not, the program printed what the judge's cascade accepts and verl's exact comparison does not
  (spaces at line ends, say): the test counts those tests and checks that this is the only difference.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from servehttp import Server

from pytest_apps.rewards import CodeReward

TESTS_PER_PROBLEM = 6
PROGRAMS_PER_PROBLEM = 2
TIMEOUT = 1


@pytest.fixture(scope="module")
def rows_and_programs():
    from conftest import shared_data_dir

    folder = shared_data_dir()
    if not (folder / "apps_test_rows.jsonl").is_file():
        pytest.skip(f"no shared APPS data at {folder} (set APPS_SHARED_DATA to the apps-data folder)")
    rows = {}
    for row in map(json.loads, (folder / "apps_test_rows.jsonl").read_text().splitlines()):
        io = json.loads(row["input_output"])
        rows[str(row["problem_id"])] = {"inputs": io["inputs"][:TESTS_PER_PROBLEM],
                                        "outputs": io["outputs"][:TESTS_PER_PROBLEM]}
    work: list[tuple[str, dict, str]] = []
    taken: dict[str, int] = {}
    for record in map(json.loads, (folder / "candidates.jsonl").read_text().splitlines()):
        pid = str(record["problem_id"])
        if pid in rows and taken.get(pid, 0) < PROGRAMS_PER_PROBLEM:
            taken[pid] = taken.get(pid, 0) + 1
            work.append((pid, rows[pid], f"```python\n{record['code'].rstrip()}\n```\n"))
    return work


@pytest.fixture(scope="module")
def server():
    srv = Server("--workers", "2", "--timeout", str(TIMEOUT))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def rewards(rows_and_programs):
    with CodeReward("fraction", max_tests=0, timeout=TIMEOUT, cache=0) as reward:
        texts = [text for _, _, text in rows_and_programs]
        problems = [reward.problem_of_row(io, pid) for pid, io, _ in rows_and_programs]
        return [d.reward for d in reward.score(texts, problems)]


def test_the_sandbox_fusion_client_package_gives_the_rewards_scores(server, rows_and_programs, rewards):
    sf = pytest.importorskip("sandbox_fusion", reason="SandboxFusion's client package: pip install sandbox-fusion")
    accepted = []
    for pid, io, text in rows_and_programs:
        request = sf.SubmitRequest(dataset="apps", id=pid, completion=text,
                                   config=sf.TestConfig(language="python", provided_data={"input_output": io},
                                                        extra={"run_all_cases": True}))
        result = sf.submit(request, endpoint=server.url, max_attempts=1)
        accepted.append(result.accepted)
        assert len(result.tests) == len(io["inputs"])
    assert accepted == [r == 1.0 for r in rewards]
    assert 0 < sum(accepted) < len(accepted)  # both passing and failing programs among them
    ran = sf.run_code(sf.RunCodeRequest(code="print(input()[::-1])", stdin="abc", language="python"),
                      endpoint=server.url, max_attempts=1)
    assert ran.status == sf.RunStatus.Success and ran.run_result.stdout == "cba\n"


def verl_sandbox_fusion():
    """verl's `sandbox_fusion` package, loaded from the installed verl's files under a name of its own."""
    try:
        init = Path(str(importlib.metadata.distribution("verl").locate_file(
            "verl/utils/reward_score/sandbox_fusion/__init__.py")))
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("verl is not installed (pip install --no-deps verl: only its sandbox_fusion code is used)")
    if not init.is_file():
        pytest.skip(f"this verl has no {init.parent.name} reward code")
    pytest.importorskip("requests", reason="verl's sandbox_fusion code posts with requests")
    spec = importlib.util.spec_from_file_location("verl_sandbox_fusion", init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["verl_sandbox_fusion"] = module
    spec.loader.exec_module(module)
    return module


def test_verls_sandbox_fusion_code_gives_the_rewards_scores(server, rows_and_programs, rewards):
    verl = verl_sandbox_fusion()
    judged = []
    for pid, io, text in rows_and_programs:
        status, answer = server.post("/judge", {"completion": text, "tests": io, "run_timeout": TIMEOUT})
        assert status == 200 and answer["status"] == "Success", answer
        judged.append(answer)
    same, lenient = 0, 0
    for (pid, io, text), reward, answer in zip(rows_and_programs, rewards, judged):
        score, metadata = verl.compute_score(server.url + "/run_code", None, 1024, text, io, timeout=TIMEOUT)
        verdicts = [t["verdict"] for t in answer["tests"]]
        assert answer["tests_passed"] / answer["tests_total"] == reward  # /judge is the rewards' engine
        differing = 0
        for meta, verdict, expected in zip(metadata, verdicts, io["outputs"]):
            if meta["status"] == "success":
                assert verdict == "pass", (pid, meta, verdict)
            elif meta["status"] == "wrong_answer":
                exact = (meta["stdout"] or "").rstrip("\n") == str(expected).rstrip("\n")
                assert verdict != "pass" or not exact, (pid, meta, verdict)
                differing += verdict == "pass"
            elif meta["status"] == "timeout":
                assert verdict == "timeout", (pid, meta, verdict)
            else:
                assert meta["status"] == "runtime_error" and verdict in ("runtime_error", "memory_limit"), \
                    (pid, meta, verdict)
        if differing == 0:
            assert score == pytest.approx(reward), (pid, score, reward)
            same += 1
        lenient += differing
    print(f"verl's scores equal the rewards' for {same} of {len(rewards)} programs; {lenient} tests passed by the "
          "judge's cascade and not by verl's exact comparison")
    assert same >= len(rewards) // 2
