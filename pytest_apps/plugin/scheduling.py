"""xdist scheduling for APPS runs: every case of a candidate on one worker, at any scale.

pytest-xdist's `loadscope` keeps the right grouping (a scope is a node id's parent: one candidate's
cases) but recounts every pending test on each finished test and finds each test's position by a list
scan, which grows quadratically: minutes of controller time on the full test split. This subclass keeps
the same decisions with a pending counter per worker and a position table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdist.scheduler import LoadScopeScheduling


class ProblemScheduling(LoadScopeScheduling):
    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._positions: dict[Any, dict[str, int]] = {}
        self._pending: dict[int, int] = {}  # id(assigned_work[node]) -> its tests not yet done

    def add_node(self, node: Any) -> None:
        super().add_node(node)
        self._pending[id(self.assigned_work[node])] = 0

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        super().add_node_collection(node, collection)
        if node in self.registered_collections:
            self._positions[node] = {nodeid: i for i, nodeid in enumerate(self.registered_collections[node])}

    def _assign_work_unit(self, node: Any) -> None:
        scope, work_unit = self.workqueue.popitem(last=False)
        workload = self.assigned_work.setdefault(node, {})
        workload[scope] = work_unit
        positions = self._positions[node]
        indexes = [positions[nodeid] for nodeid, done in work_unit.items() if not done]
        self._pending[id(workload)] = self._pending.get(id(workload), 0) + len(indexes)
        node.send_runtest_some(indexes)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        workload = self.assigned_work[node]
        unit = workload[self._split_scope(nodeid)]
        if not unit[nodeid]:
            unit[nodeid] = True
            self._pending[id(workload)] -= 1
        self._reschedule(node)

    def _pending_of(self, workload: dict[str, dict[str, bool]]) -> int:
        return self._pending.get(id(workload), 0)
