"""Each process of a run registers the plugin objects of its role and no other, as pytest-xdist registers its
DSession on the controller and a WorkerInteractor on each worker: the controller's hooks (xdist's scheduling and
workers, the terminal summary, the reports) are on no worker, a worker's collection is not on an xdist
controller, no class holds hooks of both, and a run without xdist registers the controller's plugin and the
case-running one together. Found in real runs: each process lists the objects registered in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run

# hooks only the controller's plugins implement (xdist's, for its workers, among them), and only the case-running
# side's
XDIST_HOOKS = {"pytest_xdist_make_scheduler", "pytest_xdist_setupnodes", "pytest_configure_node",
               "pytest_testnodedown", "pytest_handlecrashitem"}
CONTROLLER_HOOKS = XDIST_HOOKS | {"pytest_terminal_summary", "pytest_sessionstart"}
CASE_HOOKS = {"pytest_collect_file", "pytest_collect_directory"}

# A plugin of the run under test: in every process (xdist passes `-p` on to its workers), the classes of
# pytest-apps' plugin objects registered there and the hooks each implements, one file per process.
PROBE = """
import json, os

def pytest_sessionfinish(session):
    manager = session.config.pluginmanager
    role = getattr(session.config, "workerinput", {}).get("workerid", "controller")
    seen = {}
    for plugin in manager.get_plugins():
        kind = type(plugin)
        if kind.__module__.startswith("pytest_apps."):
            hooks = {caller.name for caller in manager.get_hookcallers(plugin) or ()}
            seen[kind.__module__ + "." + kind.__qualname__] = sorted(hooks)
    with open(os.path.join(os.environ["ROLE_PROBE"], role + ".json"), "w") as fh:
        json.dump(seen, fh)
"""


def registered(project: pytest.Pytester, folder: Path, monkeypatch: pytest.MonkeyPatch,
               *args: str) -> dict[str, dict[str, set[str]]]:
    """Process ("controller", "gw0", ...) -> the class of each of our plugin objects there -> its hooks."""
    folder.mkdir()
    monkeypatch.setenv("ROLE_PROBE", str(folder))
    monkeypatch.setenv("PYTHONPATH", str(project.path), prepend=":")
    result = run(project, "--apps-dataset", "sample", "-p", "role_probe", "-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str()
    return {path.stem: {name: set(hooks) for name, hooks in json.loads(path.read_text()).items()}
            for path in folder.glob("*.json")}


def holding(plugins: dict[str, set[str]], hooks: set[str]) -> set[str]:
    return {name for name, implemented in plugins.items() if implemented & hooks}


def test_each_process_registers_only_its_roles_plugins(sample_project: pytest.Pytester, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    sample_project.makepyfile(role_probe=PROBE)
    xdist = registered(sample_project, tmp_path / "xdist", monkeypatch, "-n", "2")
    assert sorted(xdist) == ["controller", "gw0", "gw1"]
    controller = xdist.pop("controller")
    assert holding(controller, CASE_HOOKS) == set(), controller  # an xdist controller runs no case
    assert xdist["gw0"] == xdist["gw1"]
    worker = xdist["gw0"]
    assert holding(worker, CONTROLLER_HOOKS) == set(), worker
    assert set(controller).isdisjoint(worker)  # no class plays both roles
    (case_plugin,) = holding(worker, CASE_HOOKS)

    # without xdist: the controller's plugin and the case-running one, the same classes, registered together
    # (and not xdist's wiring)
    alone = registered(sample_project, tmp_path / "alone", monkeypatch, "-p", "no:xdist")["controller"]
    assert case_plugin in alone and alone[case_plugin] == worker[case_plugin]
    assert set(alone) - {case_plugin} < set(controller)
    assert holding(alone, CONTROLLER_HOOKS) and holding(alone, XDIST_HOOKS) == set()
    for plugins in (controller, worker, alone):
        both = holding(plugins, CONTROLLER_HOOKS) & holding(plugins, CASE_HOOKS)
        assert both == set(), f"{both} hold hooks of the controller and of the case-running side"


def test_a_remote_worker_registers_the_workers_plugins_with_its_own_collection(
        sample_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    sample_project.makepyfile(role_probe=PROBE)
    far = tmp_path_factory.mktemp("remote-cwd")
    mixed = registered(sample_project, tmp_path / "mixed", monkeypatch, "--tx", "popen",
                       "--tx", f"popen//chdir={far}", "--dist", "loadscope")
    local, remote = mixed["gw0"], mixed["gw1"]
    assert holding(remote, CONTROLLER_HOOKS) == set(), remote
    assert set(mixed["controller"]).isdisjoint(remote)
    (local_cases,) = holding(local, CASE_HOOKS)
    (remote_cases,) = holding(remote, CASE_HOOKS)
    assert remote_cases != local_cases  # it collects from the plan, not from this machine's files
    assert set(remote) - {remote_cases} == set(local) - {local_cases}  # the rest: the worker's own plugin


@pytest.mark.parametrize("first", ["xdist", "apps"])
def test_the_controller_registers_xdists_wiring_whichever_plugin_pytest_loads_first(
        first: str, sample_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both plugins turn on in a last `pytest_configure`, and the order of plugins loaded from entry points
    differs between environments (`-p NAME` loads one before the others, as an environment may): the xdist
    controller's wiring (our scheduler, a lost worker's case run again) must not depend on which came first."""
    sample_project.makepyfile(role_probe=PROBE)
    controller = registered(sample_project, tmp_path / first, monkeypatch, "-p", first, "-n", "2")["controller"]
    assert holding(controller, XDIST_HOOKS), controller
    assert holding(controller, CASE_HOOKS) == set(), controller
