"""The case-running side's collection, as plugin objects: registered in every process that collects and runs
cases (the only process of a run without xdist, beside the controller's plugin; each xdist worker, beside the
worker's). `CasePlugin` collects this machine's candidate files and folders as the plan names them;
`RemoteCasePlugin`, on a worker on another machine, collects from the plan alone (collect.PlanRoot).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from . import nodeids
from .collect import CandidateDir, CandidateFile, PlanRoot, home_of, remote_selected
from .state import RemoteWorkerState, RunState


def narrowed(item: pytest.Item, args: list[nodeids.Argument]) -> bool:
    """Whether the command line as given asks for `item` (see nodeids.folder_arguments)."""
    node, names = home_of(item)
    if node is None:
        return nodeids.reaches(args, item.path, item.nodeid.split("::")[1:])
    return nodeids.reaches(args, node.path, names)


class CasePlugin:
    """Collection where the candidate files lie: only our collector takes them, and the command line narrows
    what it asked for below the candidates' folder."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = RunState.of(config)
        self.files = {str(Path(f).resolve()): entries for f, entries in self.state.plan.by_file().items()}

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        collected = yield
        entries = self.files.get(str(file_path.resolve()))
        if entries is None:
            return collected
        # Only our collector may take a candidate file: pytest's python plugin would import a
        # candidate `.py` named on the command line, running candidate code inside pytest.
        outside = nodeids.outside_nodeid(file_path, self.config.rootpath)  # pytest would name it `::7::test_0`
        named = {} if outside is None else {"nodeid": outside}
        return [CandidateFile.from_parent(parent, path=file_path, entries=entries, **named)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> Any:
        entries = self.files.get(str(path.resolve()))  # the candidates' folder: its problems without code
        if entries is None:
            return None
        return CandidateDir.from_parent(parent, path=path, entries=entries,
                                        nodeid=nodeids.outside_nodeid(path, self.config.rootpath))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self.state.narrow:  # what the arguments asked for below the candidates' folder (folder_arguments)
            items[:] = [item for item in items if narrowed(item, self.state.narrow)]


class RemoteCasePlugin(CasePlugin):
    """On a worker that cannot see the controller's files: the items come from the plan (at the rootdir), and
    the controller's command line narrows them."""

    state: RemoteWorkerState

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> Any:
        if path != self.config.rootpath:
            return None
        return PlanRoot.from_parent(parent, path=path, files=self.state.remote_files)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """What the controller's command line named (`file::names`), as pytest's own collection narrows it where
        the files are (silently: those items were never collected there)."""
        items[:] = [item for item in items if remote_selected(item)]
