"""Run one untrusted program on one input, in a fenced child of a warm fork server.

The pytest process (an xdist worker, which has threads) never forks and never runs candidate code: its client
(`client.py`) talks over two pipes to a separate single-threaded server process (`server.py`, started lazily with
`python -P -s serve.py`), which compiles each program once (`compiler.py`) and runs each test in a child forked
ahead of time by its zygote (`zygote.py`), in a free slot of the machine (`slots.py`). The child fences itself in
(process group, rlimits, clean environment, fresh working directory from `workdirs.py`, no capabilities, a uid of
its own under a root harness from `users.py`, Landlock, no network, a syscall filter from `seccomp.py`; `child.py`,
`fence.py`, the optional layers probed in `isolation.py`) and runs the program (as the original APPS harness does
under the apps profile: `appsstyle.py`); the server watches it from outside (wall
clock, output bytes; its own time from `clock.py`), kills its whole process group and every leftover descendant
(`reaper.py`; where the machine allows, a cgroup of its own per test, made ahead of time by `cgroups.py`, counts the
CPU of the whole tree and kills it at once), and sends back plain data (framed by `protocol.py`; how the run ended, `ending.py`) that becomes an
`Outcome`. A running test can be parked by its client: frozen, its own time stopped (`parking.py`, for a server
with more long runs than CPUs). `machine.py` measures how fast this machine runs Python (for the reports and the
time scale); `speed.py`, a calibrated probe of its current speed, so the time limit means seconds on this machine
when quiet.

This package imports only `core` (the `Outcome` it returns). The server's modules import nothing beyond the
standard library and each other: `serve.py` loads them as a private package, so that nothing named
`pytest_apps` is importable in a child.
"""

from .client import APPS_STYLE_PRELOAD, MAX_FILES, Executor, Limits, Program, check_path, default_memory, files_request
from .protocol import STYLE_APPS_HARNESS, STYLE_REAL
from .slots import Slot

__all__ = ["APPS_STYLE_PRELOAD", "MAX_FILES", "STYLE_APPS_HARNESS", "STYLE_REAL", "Executor", "Limits", "Program", "Slot",
           "check_path", "default_memory", "files_request"]
