"""How fast this machine runs Python: the CPU time of a fixed pure-Python workload, so that two teams can state
and compare the machines their numbers came from (and scale the time limit with `--apps-timeout-scale`).

CPU time, not wall time, and the best of a few runs: the figure moves far less than wall time when the machine is
busy. About a hundredth of a second on a current machine. Standard library only: the server runs it.
"""

from __future__ import annotations

import time

REPEATS = 3


def workload() -> int:
    """Integer arithmetic, a dict, a list and strings: what competitive programs spend their time on."""
    total = 0
    seen: dict[int, int] = {}
    for i in range(100_000):
        total = (total + i * i) % 1_000_003
        seen[i & 4095] = total
    items = sorted(seen.values(), reverse=True)
    text = " ".join(str(x) for x in items)
    return total + len(text.split())


def speed() -> float:
    """Seconds of CPU time the workload takes here (the best of a few runs; lower is faster)."""
    best = float("inf")
    for _ in range(REPEATS):
        started = time.process_time()
        workload()
        best = min(best, time.process_time() - started)
    return round(best, 4)


def timing_figures(timeout: float, band: float, backstop: float, cpus: int, workers: int,
                   speed: float | None) -> dict:
    """What a run's timing rests on, as the reports give it (the JSON report's `machine` section)."""
    return {
        "cpus": cpus,
        "workers": workers,
        "children_at_once": max(1, min(workers, cpus)),  # one execution slot per CPU (slots.py)
        "speed": speed,
        "time_limit": timeout,
        "borderline_band": band,
        "wall_backstop": timeout * backstop,
    }
