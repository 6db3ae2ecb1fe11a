"""Which candidates a run evaluates, from wherever its settings say they come from: a folder or generations
file, the dataset's reference solutions, or an agent that writes a generations folder first."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.settings import Settings
from ..dataset.problems import Problem
from .agent import generate_for
from .sources import REFERENCE, Candidate, load_candidates, read_folder, reference_folder


def candidates_for(
    settings: Settings,
    problems: Sequence[Problem],
    solutions: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[Candidate]]:
    """The candidates of each selected problem, from wherever `settings` says they come from.

    `settings.candidates_path` is the folder or file they are read from (an agent's generations folder,
    the reference folder), which is also what collection walks. On the controller only: an agent runs
    here, before any xdist worker starts.
    """
    folder = settings.candidates_path
    if settings.agent:
        generate_for(settings, problems, folder, progress=progress)
        return read_folder(folder, problems, origin="agent", select=settings.select)
    if settings.candidates == REFERENCE:
        reference_folder(folder, problems, solutions or {}, settings.samples)
        return read_folder(folder, problems, origin=REFERENCE, select=settings.select)
    return load_candidates(folder, problems, settings.select)
