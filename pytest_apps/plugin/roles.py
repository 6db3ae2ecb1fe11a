"""The one place a process's role object is chosen and built, once the plugin is on (`hooks.py`, the `pytest11`
entry point, imports this module only then, so that a pytest run that does not use the plugin pays for none of
it). As pytest-xdist registers a DSession on its controller and a WorkerInteractor on each worker, each process
registers exactly one object, of its role's class, which builds its own state and holds every hook of its role:

- `controller.LoneController`: the only process of a run without xdist; it plans, collects, runs and reports;
- `distribution.XdistController`: xdist's controller; it plans, hands the cases to xdist's workers, and reports;
- `worker.LocalWorker`: an xdist worker on the controller's machine; it reads the controller's plan folder;
- `worker.RemoteWorker`: an xdist worker on another machine; the plan came in `workerinput` (remote.py).

Nothing else asks which role a process plays.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from .base import Role
from .baseline_file import BASELINE_KEY
from .options import REMOTE_KEY
from .worker import LocalWorker, RemoteWorker


def activate(config: pytest.Config, workerinput: dict[str, Any]) -> Role:
    """Turn the plugin on in this process: its role object, with its state built (for the caller to register)."""
    started = time.time()
    # APPS data holds integers longer than the default int/str conversion limit allows.
    sys.set_int_max_str_digits(0)
    config.stash[BASELINE_KEY] = None  # (the controller's, when it has one)
    role: Role
    if REMOTE_KEY in workerinput:
        role = RemoteWorker.start(config, workerinput)
    elif workerinput:
        role = LocalWorker.start(config, workerinput)
    else:
        # (the controller's modules, its report writers among them, are imported by the controller alone: a
        # worker's start goes without them)
        from .controller import LoneController
        from .distribution import XdistController

        role = (XdistController if xdist_controller(config) else LoneController).start(config, started)
    if getattr(config.option, "dist", "no") not in ("no", "loadscope"):
        # All cases of a candidate stay on one worker (loadscope groups by the node id's parent).
        config.option.dist = "loadscope"
    return role


def xdist_controller(config: pytest.Config) -> bool:
    """Whether this process is pytest-xdist's controller, handing the cases to workers. xdist registers its
    DSession in a last `pytest_configure`, as the plugin turns on in one, and pytest calls the two in the order
    their plugins were loaded, which differs between environments: so, while it is not registered yet, xdist's
    own condition on its options (which its `pytest_cmdline_main` settled before any `pytest_configure`)."""
    if config.pluginmanager.has_plugin("dsession"):
        return True
    option = config.option
    return (not getattr(config, "workerinput", None) and not option.collectonly
            and getattr(option, "dist", "no") != "no" and bool(getattr(option, "tx", None)))
