"""Candidate sources: where each selected problem's program(s) come from.

A source maps problem ids to `Candidate`s, each remembering the file it came from, since node ids start
with that file (`solutions/7.py::test_3`). Programs are read when the run is planned, so every xdist
worker evaluates the very same text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


class CandidateError(Exception):
    """A candidate source that cannot be read; the message is one line naming it and what to do."""


@dataclass(frozen=True)
class Candidate:
    problem_id: str
    file: str  # absolute path of the file it came from: the root of its node ids
    code: str | None  # the program; None means "no code"
    sample: int = 0
    label: str = ""  # names the sample in node ids when a file holds several ("" for one program per file)
    raw: str | None = None  # the model text the code was extracted from, when there was one
    origin: str = "folder"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(**data)


def load_candidates(path: Path, problem_ids: list[str]) -> dict[str, list[Candidate]]:
    """The candidates for the given problems; a problem with none is absent from the result."""
    if path.is_dir():
        return _from_folder(path, problem_ids)
    if not path.exists():
        raise CandidateError(
            f"--apps-candidates: {path} does not exist; give a folder of <problem_id>.py programs"
        )
    raise CandidateError(
        f"--apps-candidates: {path} is not a folder; give a folder of <problem_id>.py programs"
    )


def _from_folder(folder: Path, problem_ids: list[str]) -> dict[str, list[Candidate]]:
    found: dict[str, list[Candidate]] = {}
    for pid in problem_ids:
        file = folder / f"{pid}.py"
        if file.is_file():
            found[pid] = [Candidate(pid, str(file.resolve()), _read(file))]
    return found


def _read(file: Path) -> str:
    data = file.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Still the candidate's program: let it fail as Python would (a compile error), not the run.
        return data.decode("utf-8", errors="replace")
