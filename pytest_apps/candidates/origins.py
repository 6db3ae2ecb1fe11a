"""Which candidates a run evaluates, from wherever its settings say they come from: a folder or generations
file, the dataset's reference solutions, or an agent that writes a generations folder first; and before any of
them, a provider (the plugin's `pytest_apps_candidates` hook) for the problems it answers."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.settings import Settings
from ..dataset.problems import Problem
from .generation import generate_for
from .extract import looks_like_markdown
from .sources import (FOLDER_SUFFIXES, REFERENCE, Candidate, CandidateError, load_candidates, parse_solutions,
                      read_folder, reference_folder)

PROVIDED = "hook"  # the origin of a provider's candidates, and their folder under --apps-generations

Provider = Callable[[Problem], Any]  # a problem -> its program text(s), or None for "not mine"


def candidates_for(
    settings: Settings,
    problems: Sequence[Problem],
    solutions: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    provide: Provider | None = None,
) -> dict[str, list[Candidate]]:
    """The candidates of each selected problem, from wherever `settings` says they come from.

    `settings.candidates_path` is the folder or file they are read from (an agent's generations folder,
    the reference folder), which is also what collection walks. On the controller only: an agent runs
    here, before any xdist worker starts. `provide` answers first; the problems it leaves (None) come from
    the settings' source.
    """
    provided = provided_candidates(provide, problems, provided_folder(settings), settings.select) if provide else {}
    rest = [p for p in problems if p.id not in provided]
    if provided and not rest:
        return provided
    found = settings_candidates(settings, rest, solutions, progress)
    return {p.id: provided.get(p.id) or found[p.id] for p in problems if p.id in provided or p.id in found}


def settings_candidates(
    settings: Settings,
    problems: Sequence[Problem],
    solutions: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[Candidate]]:
    folder = settings.candidates_path
    if settings.agent:
        generate_for(settings, problems, folder, progress=progress)
        return read_folder(folder, problems, origin="agent", select=settings.select)
    if settings.candidates == REFERENCE:
        solutions = solutions or {}
        if problems and not any(parse_solutions(solutions.get(p.id)) for p in problems):
            ids = ", ".join(p.id for p in problems[:10]) + (f" and {len(problems) - 10} more" if len(problems) > 10
                                                           else "")
            raise CandidateError(
                f"--apps-candidates=reference: the rows of {settings.dataset} hold no solutions for the selected "
                f"problems ({ids}); give the programs to test (--apps-candidates=PATH: a folder or a generations "
                "file), or rows that have solutions")
        reference_folder(folder, problems, solutions, settings.samples)
        return read_folder(folder, problems, origin=REFERENCE, select=settings.select)
    return load_candidates(folder, problems, settings.select)


def provided_folder(settings: Settings) -> Path:
    """Where a provider's programs are written (and their node ids start): `<--apps-generations>/hook`."""
    return settings.path(settings.generations) / PROVIDED


def provided_candidates(
    provide: Provider, problems: Sequence[Problem], folder: Path, select: str = "all"
) -> dict[str, list[Candidate]]:
    """The candidates `provide` gives, written to `folder` (`<id>.py`, or `<id>/sample_<k>.py` for samples;
    `.md` for model text, whose code is extracted) and read back from there, so that node ids name a file and
    a rerun tests the very same text. A broken problem runs nothing and is not asked."""
    answered = []
    for problem in problems:
        if problem.broken:
            continue
        answer = provide(problem)
        if answer is None:
            continue
        texts = [answer] if isinstance(answer, str) else answer
        if not isinstance(texts, (list, tuple)) or not texts or not all(isinstance(t, str) for t in texts):
            raise CandidateError(
                f"pytest_apps_candidates: for problem {problem.id} an implementation returned "
                f"{type(answer).__name__}; return a program's text, a non-empty list of them, or None"
            )
        write_provided(folder, problem.id, list(texts))
        answered.append(problem.id)
    return read_folder(folder, answered, origin=PROVIDED, select=select) if answered else {}


def write_provided(folder: Path, pid: str, texts: Sequence[str]) -> None:
    """Replace what `folder` holds for the problem with `texts` (one program, or several samples)."""
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in FOLDER_SUFFIXES:
        (folder / f"{pid}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(folder / pid, ignore_errors=True)

    def suffix(text: str) -> str:
        return ".md" if looks_like_markdown(text) else ".py"

    if len(texts) == 1:
        (folder / f"{pid}{suffix(texts[0])}").write_text(texts[0], encoding="utf-8")
        return
    (folder / pid).mkdir()
    for k, text in enumerate(texts):
        (folder / pid / f"sample_{k}{suffix(text)}").write_text(text, encoding="utf-8")
