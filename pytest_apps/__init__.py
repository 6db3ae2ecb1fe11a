"""pytest-apps: the APPS coding benchmark as pytest tests.

The public names load on first use (a module `__getattr__`): the `pytest11` entry point lives in this package,
and a pytest run that does not turn the plugin on must not pay for the API, the judges and numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import DatasetError, Evaluator, ProblemList, load_problems
    from .dataset.problems import Problem
    from .report.rollup import ProblemResult, Summary

# public name -> the module that defines it
_HOMES = {
    "DatasetError": ".api",
    "Evaluator": ".api",
    "ProblemList": ".api",
    "load_problems": ".api",
    "Problem": ".dataset.problems",
    "ProblemResult": ".report.rollup",
    "Summary": ".report.rollup",
}

__all__ = ["DatasetError", "Evaluator", "Problem", "ProblemList", "ProblemResult", "Summary", "load_problems"]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # once: later look-ups do not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
