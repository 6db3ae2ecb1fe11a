"""How a role that runs cases collects them, as two mixins of its class: `CollectsHere` (the only process of a run
without xdist, and each xdist worker on the controller's machine) collects this machine's candidate files and
folders as the plan names them; `CollectsFromPlan` (a worker on another machine) collects from the plan alone
(collect.PlanRoot). An xdist controller, which runs no case, has neither.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from . import nodeids
from .collect import CandidateDir, CandidateFile, PlanRoot, home_of, remote_selected
from .remote import RemoteFile
from .state import RunState


def narrowed(item: pytest.Item, args: list[nodeids.Argument]) -> bool:
    """Whether the command line as given asks for `item` (see nodeids.folder_arguments)."""
    node, names = home_of(item)
    if node is None:
        return nodeids.reaches(args, item.path, item.nodeid.split("::")[1:])
    return nodeids.reaches(args, node.path, names)


class CollectsHere:
    """Collection where the candidate files lie: only our collector takes them, and the command line narrows
    what it asked for below the candidates' folder."""

    config: pytest.Config
    state: RunState

    @functools.cached_property
    def candidate_files(self) -> dict[str, Any]:
        """The plan's candidate files and folders by resolved path, with their problems and candidates."""
        return {str(Path(f).resolve()): entries for f, entries in self.state.plan.by_file().items()}

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        collected = yield
        entries = self.candidate_files.get(str(file_path.resolve()))
        if entries is None:
            return collected
        # Only our collector may take a candidate file: pytest's python plugin would import a
        # candidate `.py` named on the command line, running candidate code inside pytest.
        outside = nodeids.outside_nodeid(file_path, self.config.rootpath)  # pytest would name it `::7::test_0`
        named = {} if outside is None else {"nodeid": outside}
        return [CandidateFile.from_parent(parent, path=file_path, entries=entries, **named)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> Any:
        entries = self.candidate_files.get(str(path.resolve()))  # the candidates' folder: its problems without code
        if entries is None:
            return None
        return CandidateDir.from_parent(parent, path=path, entries=entries,
                                        nodeid=nodeids.outside_nodeid(path, self.config.rootpath))

    @pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_narrow(self, items: list[pytest.Item]) -> None:
        """What the arguments asked for below the candidates' folder (nodeids.folder_arguments). (Its own name:
        the controller's class has a `pytest_collection_modifyitems` of its own; `specname` names the hook.)"""
        if self.state.narrow:
            items[:] = [item for item in items if narrowed(item, self.state.narrow)]


class CollectsFromPlan:
    """On a worker that cannot see the controller's files: the items come from the plan (at the rootdir), and
    the controller's command line narrows them."""

    config: pytest.Config
    remote_files: list[RemoteFile]  # the candidate files the controller named (the worker's, remote.worker_setup)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> Any:
        if path != self.config.rootpath:
            return None
        return PlanRoot.from_parent(parent, path=path, files=self.remote_files)

    @pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_narrow(self, items: list[pytest.Item]) -> None:
        """What the controller's command line named (`file::names`), as pytest's own collection narrows it where
        the files are (silently: those items were never collected there)."""
        items[:] = [item for item in items if remote_selected(item)]
