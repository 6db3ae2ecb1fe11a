"""The controller's case records, as they arrive from the workers, kept lean.

A failing case's record carries its detail (input, expected and got, cut short) for the report, which shows
it only for the first failing case of each problem and sample. On the full split most cases can fail, so a
detail is kept only while its case is the lowest failing one of its (problem, sample) seen so far; a later
record with a lower case takes it over, in whatever order the workers report. (A case reported again, as
a rerun plugin does, replaces its record; if it passes the second time, the detail of the next failing case
may already be gone: that problem's report then names its first failure without the detail.)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from ..core.record import CaseRecord


class CaseRecords:
    def __init__(self) -> None:
        self._by_node: dict[str, CaseRecord] = {}
        self._first: dict[tuple[str, int], str] = {}  # (problem, sample) -> node id of the record holding a detail

    def add(self, record: CaseRecord) -> None:
        old = self._by_node.pop(record.nodeid, None)
        key = (record.problem, record.sample)
        holder = self._first.get(key)
        if old is not None and holder == record.nodeid:  # the same case again: it gives its place up first
            del self._first[key]
            holder = None
        if record.detail:
            if holder is None:
                self._first[key] = record.nodeid
            elif self._by_node[holder].case <= record.case:
                record = replace(record, detail={})
            else:
                self._by_node[holder] = replace(self._by_node[holder], detail={})
                self._first[key] = record.nodeid
        self._by_node[record.nodeid] = record

    def get(self, nodeid: str) -> CaseRecord | None:
        return self._by_node.get(nodeid)

    def __contains__(self, nodeid: object) -> bool:
        return nodeid in self._by_node

    def __len__(self) -> int:
        return len(self._by_node)

    def __iter__(self) -> Iterator[CaseRecord]:
        return iter(self._by_node.values())
