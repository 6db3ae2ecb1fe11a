"""Which CPU an xdist worker's executor runs on (`--apps-cpu-pinning`), and which execution slot it takes.

A test is a chain of hand-offs between processes: the worker asks its executor server, the server wakes the
child, the child's result wakes the server, the server wakes the worker. When every CPU has a worker, each
chain spread over the CPUs leaves one idle at each hand-off while the other holds the runnable work (Linux
does not pull work to a CPU that is idle for only a moment; `benchmarks/bench_scale.py` measures how much).
Keeping each worker's executor (its server, zygote and every child) on a CPU of its own removes most of that.
With fewer workers than CPUs, nothing is pinned: the zygote's next fork and the xdist controller then run on the
CPUs no worker uses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable


def executor_cpu(mode: str, worker_id: str | None, worker_count: int | None, cpus: Iterable[int]) -> int | None:
    """The CPU for this worker's executor, or None to leave it free.

    `mode` is auto or off; `worker_id` and `worker_count` are xdist's (None outside xdist); `cpus` are the
    CPUs this process may run on. Workers gw0, gw1, ... take the CPUs in order, wrapping around when there
    are more workers than CPUs."""
    if worker_id is None:
        return None
    return place_cpu(mode, worker_index(worker_id), worker_count, cpus)


def place_cpu(mode: str, index: int | None, count: int | None, cpus: Iterable[int]) -> int | None:
    """The same for the worker at `index` of the `count` workers on this machine (with xdist on several
    machines, each machine's workers are counted apart)."""
    if mode == "off" or index is None or count is None:
        return None
    allowed = sorted(cpus)
    if not allowed or count < len(allowed):
        return None
    return allowed[index % len(allowed)]


def worker_index(worker_id: str) -> int | None:
    """The number in an xdist worker id (gw3 -> 3); None for a gateway named otherwise (`--tx id=name//...`)."""
    match = re.fullmatch(r"gw(\d+)", worker_id)
    return int(match.group(1)) if match else None


def available_cpus() -> set[int]:
    """The CPUs this process may run on (empty where the platform cannot tell: nothing is pinned there)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set()


def slot_of(worker_id: str | None, cpus: Iterable[int]) -> tuple[int, int]:
    """(slot index, slot count) of a worker in its machine's pool (see executor/slots.py): one slot per CPU this
    process may use, worker gwK on slot K mod the count, as pinning gives gwK the K-th CPU."""
    count = max(1, len(set(cpus)))
    index = worker_index(worker_id) if worker_id else None
    if index is None:  # a gateway named otherwise: a stable spread over the slots
        index = sum(map(ord, worker_id or ""))
    return index % count, count


def xdist_workers(dist: str | None, tx: Iterable[str] | None) -> int:
    """How many workers xdist starts for these `--dist` and `--tx` values (`-n N` becomes N `popen` specs); 1
    when tests run in this process."""
    specs = list(tx or ())
    if not specs or dist in (None, "no"):
        return 1
    count = 0
    for spec in specs:
        times, star, _ = spec.partition("*")
        count += int(times) if star and times.isdigit() else 1
    return max(1, count)
