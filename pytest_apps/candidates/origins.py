"""Which candidates a run evaluates, from wherever its settings say they come from: a folder or generations
file, the dataset's reference solutions, or an agent that writes a generations folder first; and before any of
them, a provider (the plugin's `pytest_apps_candidates` hook) for the problems it answers."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.settings import OPTIONS, Settings
from ..dataset.loading import ignored_split
from ..dataset.problems import Problem
from .generation import generate_for, stats_text
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
    notes: list[str] | None = None,
    warnings: list[str] | None = None,
) -> dict[str, list[Candidate]]:
    """The candidates of each selected problem, from wherever `settings` says they come from; a line saying
    what the agent step did (how many generations were reused) is appended to `notes`, and one for records of
    a generations file that name no selected problem to `warnings`.

    `settings.candidates_path` is the folder or file they are read from (an agent's generations folder,
    the reference folder), which is also what collection walks. On the controller only: an agent runs
    here, before any xdist worker starts. `provide` answers first; the problems it leaves (None) come from
    the settings' source.
    """
    provided = provided_candidates(provide, problems, provided_folder(settings), settings.select) if provide else {}
    rest = [p for p in problems if p.id not in provided]
    if provided and not rest:
        return provided
    found = settings_candidates(settings, rest, solutions, progress, notes, warnings)
    return {p.id: provided.get(p.id) or found[p.id] for p in problems if p.id in provided or p.id in found}


def settings_candidates(
    settings: Settings,
    problems: Sequence[Problem],
    solutions: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    notes: list[str] | None = None,
    warnings: list[str] | None = None,
) -> dict[str, list[Candidate]]:
    folder = settings.candidates_path
    if settings.agent:
        stats = generate_for(settings, problems, folder, progress=progress)
        if notes is not None:
            notes.append(f"generations: {stats_text(stats)}")
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
    unused: list[str] = []
    found = load_candidates(folder, problems, settings.select, unused)
    line = unused_ids_line(settings, folder, problems, unused)
    if line and warnings is not None:
        warnings.append(line)
    return found


AGENT_ONLY = ("model", "base-url", "api-key", "temperature", "regenerate", "concurrency", "agent-timeout")
NARROWING = ("only", "difficulty", "tag", "offset", "limit")


def option_warnings(settings: Settings, source: Mapping[str, Any]) -> list[str]:
    """One line for each option given that does nothing in this run, naming it and what to do: the agent's
    options without an agent, `--apps-samples` when the programs come from a folder or a generations file
    (which give every sample they hold), `--apps-split` on a single file."""
    lines = []
    split = ignored_split(str(source.get("dataset")), str(source.get("split")), settings.split)
    if split:
        lines.append(split)
    if not settings.agent:
        for opt in OPTIONS:
            if opt.name in AGENT_ONLY and getattr(settings, opt.dest[len("apps_"):]) not in (None, opt.default):
                lines.append(f"{opt.flag} does not apply: there is no agent (--apps-agent) to generate programs; "
                             f"drop it, or give --apps-agent=MODULE:CALLABLE")
    if settings.samples is not None and not settings.agent and settings.candidates != REFERENCE:
        lines.append(f"--apps-samples={settings.samples} does not apply: {settings.candidates} gives every sample "
                     "it holds and all of them are scored; drop it, or keep only the samples to score there")
    return lines


def unused_ids_line(settings: Settings, path: Path, problems: Sequence[Problem], unused: Sequence[str]) -> str:
    """One line counting a generations file's records that name no selected problem: all of them when the
    selection is the whole dataset, else those whose id cannot be one of the dataset's (not a number where
    its ids are numbers); "" when there are none."""
    narrowed = any(getattr(settings, name) not in (None, (), 0) for name in NARROWING)
    numeric = bool(problems) and all(p.id.isdigit() for p in problems)
    absent = [pid for pid in unused if not narrowed or (numeric and not pid.isdigit())]
    if not absent:
        return ""
    shown = ", ".join(repr(pid) for pid in absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
    many = len(absent) != 1
    return (f"{path.name}: {len(absent)} record{'s' if many else ''} name{'' if many else 's'} no problem of the "
            f"data ({shown}) and {'are' if many else 'is'} not scored; check {'their' if many else 'its'} "
            "problem ids against the dataset's")


def provided_folder(settings: Settings) -> Path:
    """Where a provider's programs are written (and their node ids start): `<--apps-generations>/hook`."""
    return settings.generations_path / PROVIDED


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
