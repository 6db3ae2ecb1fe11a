"""The machine's current speed: a calibrated probe, so that the time limit means seconds on this machine when quiet.

A program's own time (clock.py) holds against queueing, not against a slower CPU: a busy sibling hardware thread
or an oversubscribed host makes each CPU second do less work, and neither run-queue waits nor steal accounting show
it. So the server measures how much work a CPU second does, with a fixed reference loop:

- `rate()`: loops of the reference per second of this thread's CPU time, the fastest of a few short samples (a
  sample interrupted or slowed by anything is only ever slower; the fastest is the machine's speed then).
- `Speed.calibrate()` at the server's start: the machine's rate now, the median of several such probes, kept on
  disk per machine and interpreter with the figures of earlier starts (`KEPT` of them); the quiet rate is a high
  quantile of those (`QUIET_QUANTILE`), so that a server started on a busy machine still knows how fast the
  machine is when quiet. Not the fastest rate ever seen: a host's quiet speed itself varies by some 10% from one
  moment to the next, and against its fastest a quiet machine would read as slow most of the time.
- Around each test that ran long enough to matter (its own time past `PROBE_FROM` of the limit), the server
  samples the current rate while it runs and once after; the test's factor is quiet rate / the fastest current
  rate seen (the smallest slowdown: never more lenient than what was seen). The largest and the mean slowdown
  seen go with it: the range the report shows, and whether the machine was slower on average around the test,
  not for a moment (what asks for a confirmation, engine/confirm.py).
- `credit(factor)`: the factor the CPU part of the program's own time is divided by (`charged`: its blocked time,
  sleeping or waiting on a pipe, is not slowed by a slower CPU). 1.0 unless the slowdown is confidently above
  the probe's noise (`CONFIDENT`), and bounded by `MOST`: a quiet machine is never more lenient than the plain own
  time, and no measurement can more than halve a program's time.

`PYTEST_APPS_SPEED_FACTOR` (read by the client, handed to the server) sets the measured factor instead of the
probe: a testing seam, since slow spells cannot be made on demand (docs/isolation.md). One factor is read by every
probe; a comma-separated list is read in turn by the probes around each test, from its first, the last repeating
("1.4,1.0": a brief spike, then a quiet machine).

Standard library only: the server imports this as part of its private package.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

LOOPS = 4000  # the reference loop's length: a fraction of a millisecond of CPU on a current machine
SAMPLES = 3  # samples per probe (the fastest counts)
CALIBRATION_PROBES = 7  # probes when the server starts (their median is the rate then)
KEPT = 32  # the calibrations kept on disk (the most recent)
QUIET_QUANTILE = 0.75  # of the kept calibrations: the quiet rate
CONFIDENT = 1.15  # a slowdown below this is within the probe's noise: no credit
MOST = 2.0  # the largest factor ever credited
PROBE_FROM = 0.5  # a test is probed once its own time passes this share of its limit
PROBE_EVERY = 0.25  # seconds of wall time between probes of a running test
ENV = "PYTEST_APPS_SPEED_FACTOR"


def reference(n: int = LOOPS) -> int:
    """A fixed loop of integer arithmetic, a dict and a list: the work whose rate is the machine's speed."""
    total = 0
    seen: dict[int, int] = {}
    for i in range(n):
        total = (total + i * i) % 1_000_003
        seen[i & 255] = total
    return total + len(seen)


def rate(samples: int = SAMPLES) -> float:
    """Reference loops per CPU second of this thread now: the fastest of `samples` short runs."""
    best = 0.0
    for _ in range(samples):
        started = time.thread_time()
        reference()
        spent = time.thread_time() - started
        if spent > 0:
            best = max(best, LOOPS / spent)
    return best


def typical(probes: int = CALIBRATION_PROBES) -> float:
    """The machine's rate now: the median of `probes` probes (one sample slowed or sped by anything passing does
    not decide it)."""
    values = sorted(rate() for _ in range(probes))
    return values[len(values) // 2]


def quiet_of(kept: list[float]) -> float:
    """The quiet rate from the kept calibrations: their `QUIET_QUANTILE` (0.0 when there are none)."""
    if not kept:
        return 0.0
    values = sorted(kept)
    return values[min(len(values) - 1, int(QUIET_QUANTILE * len(values)))]


def credit(factor: float | None) -> float:
    """What the program's own time is divided by, for a measured slowdown `factor`."""
    if factor is None or not factor >= CONFIDENT:  # (NaN too)
        return 1.0
    return min(factor, MOST)


def charged(own: float, cpu: float, factor: float) -> float:
    """The own time at quiet-machine speed: only its CPU part goes faster on a quiet machine (a program's sleeps and
    waits on pipes take as long), so the CPU time is divided by `factor` and the blocked time kept."""
    cpu = min(cpu, own)
    return own - cpu + cpu / factor


def parse_pinned(raw: str | None) -> tuple[float, ...] | None:
    """The seam's factors from the environment's text (one, or a comma-separated list read in turn); None when
    unset; ValueError naming the variable if bad."""
    if raw is None or not raw.strip():
        return None
    values = []
    for part in raw.split(","):
        try:
            value = float(part)
        except ValueError:
            value = float("nan")
        if not value >= 1.0 or value == float("inf"):
            raise ValueError(f"{ENV}={raw!r}: expected a speed factor >= 1.0 (1.0 = the machine is as fast as when "
                             f"quiet), or several separated by commas, or unset it to measure")
        values.append(value)
    return tuple(values)


def cache_path() -> str:
    """Where the calibrations of this machine and interpreter are kept."""
    import hashlib  # (only the server calibrates: the children need none of this)

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        with open("/proc/cpuinfo", "rb") as f:
            model = next((line for line in f if line.startswith(b"model name")), b"")
    except OSError:
        model = b""
    key = hashlib.sha256(repr((platform.node(), model, sys.executable, sys.version, LOOPS, "calibrations")).encode())
    return os.path.join(base, "pytest-apps", f"speed-{key.hexdigest()[:16]}.json")


def load_kept(path: str) -> list[float]:
    """The calibrations kept at `path` (none when it is missing or unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            values = [float(v) for v in json.load(f)["rates"]]
        return [v for v in values if v > 0][-KEPT:]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def save_kept(path: str, values: list[float]) -> None:
    """Keep the most recent `KEPT` of `values` (a full disk or a read-only home only loses the cache)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"rates": values[-KEPT:]}, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


class Speed:
    """One server's view of the machine's speed: the quiet rate, and the range of factors seen since it started."""

    __slots__ = ("quiet", "pinned", "low", "high")

    def __init__(self, pinned: tuple[float, ...] | None = None) -> None:
        self.quiet = 0.0
        self.pinned = pinned  # the seam's factors: measurements read these instead
        self.low = self.high = None  # factors seen (before credit), for the report's range

    def calibrate(self, path: str | None = None) -> None:
        if self.pinned is not None:
            return
        path = path or cache_path()
        kept = load_kept(path) + [typical()]
        self.quiet = quiet_of(kept)
        save_kept(path, kept)

    def factor(self, nth: int = 0) -> float | None:
        """The current slowdown (>= 1.0): quiet rate / the rate now; None when nothing can be measured. `nth`: how
        many probes of the same test came before (only the seam's list reads it)."""
        if self.pinned is not None:
            value = self.pinned[min(nth, len(self.pinned) - 1)]
        else:
            now = rate()
            if self.quiet <= 0 or now <= 0:
                return None
            value = max(1.0, self.quiet / now)
        self.low = value if self.low is None else min(self.low, value)
        self.high = value if self.high is None else max(self.high, value)
        return value
