"""The record of one case: what a (problem, sample, test) item produced, as plain data.

It travels from where the case ran (an xdist worker, an API thread) to where the run is rolled up, so it
holds only str, int, float and plain dicts, and crosses as one JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .outcome import NOT_MEASURED, SPEED_FIELDS, SpeedCredit

NO_CASE = -1  # the case index of a no-code item's record: it stands for the program's tests, none of which ran


@dataclass(frozen=True)
class CaseRecord:
    """What one (problem, sample, test) item produced, as sent from a worker to the controller."""

    problem: str
    case: int
    kind: str  # PASS or a failure kind, or "harness_error"
    sample: int = 0
    step: str = ""
    reason: str = ""
    time: float = 0.0  # seconds of the program's own time, what the time limit counts (CPU plus blocked)
    memory: int = 0
    nodeid: str = ""  # as pytest names the case (relative to the rootdir)
    detail: dict[str, Any] = field(default_factory=dict)  # failures only: input, expected, got (cut short)
    rerun_id: str = ""  # failures only: the node id to paste, spelled from where the run was started
    cpu_time: float = 0.0  # seconds on a CPU, all threads and processes of the program
    wall_time: float = 0.0  # seconds of wall-clock time (waiting for a CPU included)
    borderline: bool = False  # its own time is within the borderline band of the limit: a fragile verdict
    # reference runs only: "digest" of the output (when it ended normally) and, for a failing test, "other": its
    # verdict kind under the other judge profile (see engine.run.reference_audit and report.audit)
    audit: dict[str, str] = field(default_factory=dict)
    speed: SpeedCredit = NOT_MEASURED  # the machine's slowdown measured around it, and the credit its time got
    undercredited: bool = False  # over the limit, within it at the mean slowdown measured (engine/limits.py)
    starved: bool = False  # stopped by the wall-clock backstop under its own time limit (engine/limits.py)
    confirmed: str = ""  # run again when the machine was quiet (engine/confirm.py): the first run's verdict kind

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (the speed credit as its flat fields), made without a deep copy (the record
        store writes one per case): its `detail` and `audit` are the record's own, to read, never to change."""
        data = {name: getattr(self, name) for name in _PLAIN_FIELDS}
        data.update(self.speed.to_dict())
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseRecord:
        plain = {k: v for k, v in data.items() if k not in SPEED_FIELDS}
        return cls(**plain, speed=SpeedCredit.from_dict(data))

    def to_json(self) -> str:
        """The record as one JSON string: how it travels from an xdist worker to the controller (execnet
        serialises a string in one step, a dict field by field in Python, once per report)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> CaseRecord:
        return cls.from_dict(json.loads(text))


_PLAIN_FIELDS = tuple(name for name in CaseRecord.__dataclass_fields__ if name != "speed")
