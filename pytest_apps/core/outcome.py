"""Plain-data results: what the executor saw (`Outcome`) and what the judge decided (`Verdict`).

Both cross process boundaries (executor child -> parent, xdist worker -> controller), so they hold only
str, int, float, bool and None (an outcome's `SpeedCredit` is four floats), and convert to and from dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# How a run of one program on one input ended, as seen from outside the child.
RUN_EXITED = "exited"  # the program ended by itself (any exit status)
RUN_SIGNALED = "signaled"  # killed by a signal it raised or received (segfault, abort, ...)
RUN_TIMEOUT = "timeout"  # the time limit (the program's own time), the CPU limit or the wall-clock backstop
RUN_MEMORY = "memory"  # address-space limit reached (MemoryError or allocation failure)
RUN_OUTPUT_LIMIT = "output_limit"  # wrote more than the output limit
RUN_COMPILE_ERROR = "compile_error"  # the program does not compile; it was not run
RUN_HARNESS_ERROR = "harness_error"  # the executor itself failed; not the candidate's fault

# The time limit's edges, as multiples of the limit. A test whose own time is within BORDERLINE_BAND of the limit,
# either side, has a fragile verdict; any run is stopped after BACKSTOP times the limit of wall-clock time.
BORDERLINE_BAND = 0.15
BACKSTOP = 10.0

# Verdict kinds, one per way a test can end. "pass" is the only success.
PASS = "pass"
WRONG_ANSWER = "wrong_answer"
RUNTIME_ERROR = "runtime_error"
TIMEOUT = "timeout"
MEMORY_LIMIT = "memory_limit"
OUTPUT_LIMIT = "output_limit"
COMPILE_ERROR = "compile_error"
NO_CODE = "no_code"
FAILURE_KINDS = (
    WRONG_ANSWER,
    RUNTIME_ERROR,
    TIMEOUT,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    COMPILE_ERROR,
    NO_CODE,
)
ALL_KINDS = (PASS, *FAILURE_KINDS)
# How a no-code reason begins when the program is missing because its generation failed (an agent's error or
# timeout): "<file>: generation failed: <why>". Such a problem is asked for again on the next run.
GENERATION_FAILED = "generation failed"

# The step of a test that a problem's checker decided (passed or not); other steps name a cascade's step.
CHECKER_STEP = "checker"


@dataclass(frozen=True)
class SpeedCredit:
    """The machine's speed around one run, and what the time limit made of it: `factor` is what the CPU part of the
    program's own time was divided by (the slowdown credited; 1.0: none); `low`, `high` and `mean` are the smallest,
    largest and mean slowdown the probes measured around the run (0.0: not measured). One value from the executor's
    answer to the outcome and the case record; as plain data (the server's answer, a record's dict and JSON) it is
    four flat fields, `SPEED_FIELDS`."""

    factor: float = 1.0
    low: float = 0.0
    high: float = 0.0
    mean: float = 0.0

    @property
    def measured(self) -> bool:
        """Whether the probes measured the machine's speed around the run."""
        return self.high > 0

    def to_dict(self) -> dict[str, float]:
        return {"speed_factor": self.factor, "speed_low": self.low, "speed_high": self.high, "speed_mean": self.mean}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpeedCredit:
        """The credit in plain data's flat fields (absent or None: not measured)."""
        return cls(float(data.get("speed_factor", 1.0)), float(data.get("speed_low") or 0.0),
                   float(data.get("speed_high") or 0.0), float(data.get("speed_mean") or 0.0))


SPEED_FIELDS = tuple(SpeedCredit().to_dict())
NOT_MEASURED = SpeedCredit()


@dataclass(frozen=True)
class Outcome:
    """What one execution produced. Decided nothing: the judge turns it into a `Verdict`."""

    status: str
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""  # standard-input programs: what they printed (decoded, errors replaced)
    value_json: str | None = None  # call-based programs: the return value, serialised in the child
    error: str = ""  # last line of the exception, or why the run was stopped
    stderr_tail: str = ""
    wall_time: float = 0.0  # seconds from the test's start to the program's end
    cpu_time: float = 0.0  # seconds on a CPU, of all its threads and processes
    own_time: float = 0.0  # what the time limit counts: CPU plus blocked time, not time spent waiting for a CPU,
    # charged at the machine's quiet speed (its CPU part divided by speed.factor)
    speed: SpeedCredit = NOT_MEASURED  # the machine's slowdown measured around the run, and the credit it gave
    peak_memory: int = 0  # bytes (max resident set size of the child)
    files: dict[str, str] = field(default_factory=dict)  # files fetched from its folder after it: path -> base64

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "speed"}
        return {**data, **self.speed.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        plain = {k: v for k, v in data.items() if k not in SPEED_FIELDS}
        return cls(**plain, speed=SpeedCredit.from_dict(data))


@dataclass(frozen=True)
class Verdict:
    """The judge's decision for one test: `kind` is PASS or a failure kind.

    `step` names the cascade step that accepted a pass (e.g. "exact", "lines", "numeric");
    `reason` says in one line why a failure failed.
    """

    kind: str
    step: str = ""
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.kind == PASS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(**data)
