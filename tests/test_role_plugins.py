"""Each process of a run registers exactly one object of ours, of its role's class, as pytest-xdist registers its
DSession on the controller and a WorkerInteractor on each worker: the controller's hooks (xdist's scheduling and
workers, the terminal summary, the reports) are on no worker, a worker's collection is not on an xdist
controller, and the only process of a run without xdist holds the controller's hooks and the collection's
(not xdist's). Found in real runs: each process lists the objects registered in it."""

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


def role_of(plugins: dict[str, set[str]]) -> tuple[str, set[str]]:
    """The process's one object of ours: its class and its hooks."""
    assert len(plugins) == 1, f"one object per process, not {sorted(plugins)}"
    ((name, hooks),) = plugins.items()
    return name, hooks


def test_each_process_registers_one_object_of_its_roles_class(sample_project: pytest.Pytester, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    sample_project.makepyfile(role_probe=PROBE)
    xdist = registered(sample_project, tmp_path / "xdist", monkeypatch, "-n", "2")
    assert sorted(xdist) == ["controller", "gw0", "gw1"]
    controller, controller_hooks = role_of(xdist["controller"])
    assert controller == "pytest_apps.plugin.distribution.XdistController"
    assert XDIST_HOOKS <= controller_hooks and not controller_hooks & CASE_HOOKS  # it runs no case
    assert xdist["gw0"] == xdist["gw1"]
    worker, worker_hooks = role_of(xdist["gw0"])
    assert worker == "pytest_apps.plugin.worker.LocalWorker"
    assert CASE_HOOKS <= worker_hooks and not worker_hooks & CONTROLLER_HOOKS

    # without xdist: one object, the controller that also collects its cases (and has none of xdist's hooks)
    alone, alone_hooks = role_of(registered(sample_project, tmp_path / "alone", monkeypatch,
                                            "-p", "no:xdist")["controller"])
    assert alone == "pytest_apps.plugin.controller.LoneController"
    assert (CONTROLLER_HOOKS - XDIST_HOOKS) | CASE_HOOKS <= alone_hooks and not alone_hooks & XDIST_HOOKS


def test_a_remote_worker_registers_its_own_role_which_collects_from_the_plan(
        sample_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    sample_project.makepyfile(role_probe=PROBE)
    far = tmp_path_factory.mktemp("remote-cwd")
    mixed = registered(sample_project, tmp_path / "mixed", monkeypatch, "--tx", "popen",
                       "--tx", f"popen//chdir={far}", "--dist", "loadscope")
    assert role_of(mixed["controller"])[0] == "pytest_apps.plugin.distribution.XdistController"
    assert role_of(mixed["gw0"])[0] == "pytest_apps.plugin.worker.LocalWorker"
    remote, remote_hooks = role_of(mixed["gw1"])
    assert remote == "pytest_apps.plugin.worker.RemoteWorker"  # it collects from the plan, not this machine's files
    assert "pytest_collect_directory" in remote_hooks and not remote_hooks & CONTROLLER_HOOKS


@pytest.mark.parametrize("first", ["xdist", "apps"])
def test_the_controller_registers_xdists_wiring_whichever_plugin_pytest_loads_first(
        first: str, sample_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both plugins turn on in a last `pytest_configure`, and the order of plugins loaded from entry points
    differs between environments (`-p NAME` loads one before the others, as an environment may): the xdist
    controller's wiring (our scheduler, a lost worker's case run again) must not depend on which came first."""
    sample_project.makepyfile(role_probe=PROBE)
    controller = registered(sample_project, tmp_path / first, monkeypatch, "-p", first, "-n", "2")["controller"]
    name, hooks = role_of(controller)
    assert name == "pytest_apps.plugin.distribution.XdistController"
    assert XDIST_HOOKS <= hooks and not hooks & CASE_HOOKS, controller
