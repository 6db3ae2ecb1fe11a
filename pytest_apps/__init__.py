"""pytest-apps: the APPS coding benchmark as pytest tests."""

from .api import DatasetError, Evaluator, ProblemList, load_problems
from .dataset.problems import Problem
from .report.rollup import ProblemResult, Summary

__all__ = ["DatasetError", "Evaluator", "Problem", "ProblemList", "ProblemResult", "Summary", "load_problems"]

__version__ = "0.1.0"
