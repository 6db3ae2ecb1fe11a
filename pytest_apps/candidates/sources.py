"""Candidate sources: where each selected problem's program(s) come from.

A source maps problem ids to `Candidate`s, each remembering the file it came from, since node ids start
with that file (`solutions/7.py::test_3`, `gens.jsonl::7::sample_2::test_3`). Programs are read when the
run is planned, so every xdist worker evaluates the very same text.

Sources (`--apps-candidates PATH`):

- a folder: `<id>.py` (one program), `<id>.md` / `<id>.txt` (model text, the code is extracted), or a
  folder `<id>/` whose `.py` / `.md` / `.txt` files are the problem's samples (in natural name order);
- a JSONL or JSON file of records naming a problem (`problem_id`, `id` or `task_id`) and its program(s)
  (`code`, `completion`, `solution`, `predicted_code`, `raw` or `response`; a list of them is samples;
  records repeating a problem add samples), a JSON object mapping ids to programs, or a list of lists (one
  list of samples per problem, position = the row's index in the dataset);
- `reference`: the dataset's own human solutions (see `reference_folder`);
- an agent (`--apps-agent`), which writes a generations folder that is then read as a folder (generation.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .decoding import SourceRefused, read_source, utf8_text
from .extract import extract_code, looks_like_markdown, missing_code

if TYPE_CHECKING:
    from ..dataset.problems import Problem

ID_FIELDS = ("problem_id", "id", "task_id")
# Fields holding a program; if the text is model output (a fence or a think block) the code is extracted.
CODE_FIELDS = ("code", "predicted_code", "solution", "completion")
# Fields holding model text: the code is always extracted from them.
TEXT_FIELDS = ("raw", "response")
PROGRAM_FIELDS = ("code", "completion", "solution", "predicted_code", "raw", "response")
FOLDER_SUFFIXES = (".py", ".md", ".txt")
SELECT_MODES = ("all", "most-common")
REFERENCE = "reference"


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
    origin: str = "folder"  # folder | jsonl | json | reference | agent | hook
    shared: bool = False  # the file holds several problems' programs: node ids name the problem
    refused: str = ""  # why python would not read the file (its own message): a compile error, nothing runs
    no_code: str = ""  # without a program: what was looked for where (the file is named by the item)

    @property
    def has_code(self) -> bool:
        """Whether there is a program to run (a refused one counts: it is a program python refuses). Decided by
        `no_code`, which travels to a worker on another machine without the program itself."""
        return not self.no_code

    @property
    def sample_name(self) -> str:
        """How a failure names the sample: its label in a file of several, else its file's name in a problem's
        folder of samples (`<id>/solution_3.py`: solution_3), else "" (the one program of its problem)."""
        if self.label:
            return self.label
        path = Path(self.file)
        return path.stem if path.parent.name == self.problem_id else ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(**data)


def load_candidates(
    path: Path, problems: Sequence[Problem | str], select: str = "all", unused: list[str] | None = None
) -> dict[str, list[Candidate]]:
    """The candidates for the given problems (in dataset order); a problem with none is absent. The ids of a
    generations file's records that name none of the problems are appended to `unused` (once each, in the
    file's order), for the run to count and say.

    `problems` may be plain ids, except for a list-of-lists file, whose positions need the rows' indices.
    """
    path = Path(path)
    if path.is_dir():
        found = _from_folder(path, _ids(problems))
    elif not path.exists():
        raise CandidateError(
            f"--apps-candidates: {path} does not exist; give a folder of <problem_id>.py programs, "
            "a .jsonl/.json generations file, or 'reference'"
        )
    elif path.suffix.lower() in (".jsonl", ".json"):
        found = _from_records_file(path, problems, unused)
    else:
        raise CandidateError(
            f"--apps-candidates: {path} is neither a folder nor a .jsonl/.json file; give a folder of "
            "<problem_id>.py programs or a generations file"
        )
    return select_samples(found, select)


# -- folders ----------------------------------------------------------------------------------------


def read_folder(folder: Path, problems: Sequence[Problem | str], origin: str = "folder",
                select: str = "all") -> dict[str, list[Candidate]]:
    """The candidates a folder holds for the given problems (`origin` says who wrote it: "folder", "agent",
    "reference")."""
    return select_samples(_from_folder(Path(folder), _ids(problems), origin), select)


def _from_folder(folder: Path, problem_ids: list[str], origin: str = "folder") -> dict[str, list[Candidate]]:
    found: dict[str, list[Candidate]] = {}
    for pid in problem_ids:
        files = [f for f in (folder / f"{pid}{s}" for s in FOLDER_SUFFIXES) if f.is_file()][:1]
        sub = folder / pid
        if sub.is_dir():
            files += sorted(
                (f for f in sub.iterdir() if f.is_file() and f.suffix in FOLDER_SUFFIXES),
                key=lambda f: _natural(f.name),
            )
        cands = [_from_file(pid, f, i, origin) for i, f in enumerate(files)]
        if cands:
            found[pid] = cands
    return found


def _from_file(pid: str, file: Path, sample: int, origin: str) -> Candidate:
    where = str(file.resolve())
    text, refused = read_source(file)
    if refused:
        return Candidate(pid, where, text, sample=sample, origin=origin, refused=refused)
    if file.suffix == ".py":
        why = "" if text.strip() else "an empty program file"
        return Candidate(pid, where, text, sample=sample, origin=origin, no_code=why)
    code = extract_code(text)
    return Candidate(pid, where, code, sample=sample, raw=text, origin=origin,
                     no_code="" if code is not None else missing_code(text))


def _natural(name: str) -> list[Any]:
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def _read(file: Path) -> str:
    """A generations file's text: UTF-8, a BOM allowed; a byte that is not UTF-8 is an error naming its line."""
    try:
        return utf8_text(file.read_bytes(), str(file))
    except SourceRefused as exc:
        raise CandidateError(f"{exc} (a generations file is JSON text, which is UTF-8)") from None


# -- JSONL / JSON generation files ------------------------------------------------------------------


def _from_records_file(path: Path, problems: Sequence[Problem | str],
                       unused: list[str] | None = None) -> dict[str, list[Candidate]]:
    wanted = _ids(problems)
    where = str(path.resolve())
    origin = "jsonl" if path.suffix.lower() == ".jsonl" else "json"
    text = _read(path)
    programs: dict[str, list[tuple[str | None, str | None]]] = {}  # pid -> [(code, raw)]

    def add(pid: str, items: list[tuple[str | None, str | None]]) -> None:
        if pid in wanted_set:
            programs.setdefault(pid, []).extend(items)
        elif unused is not None and pid not in unused_set:
            unused_set.add(pid)
            unused.append(pid)

    wanted_set, unused_set = set(wanted), set(unused or ())
    if origin == "jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise CandidateError(f"{path}:{lineno}: not a JSON line ({exc})") from None
            if not isinstance(record, dict):
                raise CandidateError(
                    f"{path}:{lineno}: a {type(record).__name__}, not an object with a problem id "
                    f"({', '.join(ID_FIELDS)}) and a program ({', '.join(PROGRAM_FIELDS)})"
                )
            pid, items = _record(record, f"{path}:{lineno}", wanted_set)
            add(pid, items)
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CandidateError(f"{path}: not JSON ({exc})") from None
        for pid, items in _json_document(data, path, problems, wanted_set):
            add(pid, items)
    found: dict[str, list[Candidate]] = {}
    for pid in wanted:
        items = programs.get(pid)
        if not items:
            continue
        many = len(items) > 1
        found[pid] = [
            Candidate(pid, where, code, sample=i, label=f"sample_{i}" if many else "", raw=raw,
                      origin=origin, shared=True, no_code=_no_code(code, raw))
            for i, (code, raw) in enumerate(items)
        ]
    return found


def _no_code(code: str | None, raw: str | None) -> str:
    """Why a record's program is none ("" when it has one)."""
    if code is not None and code.strip():
        return ""
    return missing_code(raw) if raw is not None else "its record's program is empty"


def _json_document(
    data: Any, path: Path, problems: Sequence[Problem | str], wanted: set[str]
) -> Iterable[tuple[str, list[tuple[str | None, str | None]]]]:
    shape = (
        f"{path}: expected a list of records with a problem id ({', '.join(ID_FIELDS)}) and a program "
        f"({', '.join(PROGRAM_FIELDS)}), an object mapping problem ids to programs, or a list of lists "
        "of programs (one per problem, in dataset order)"
    )
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}: item {key!r}"
            if isinstance(value, dict):
                pid, items = _record({"problem_id": key, **value}, where, wanted)
            else:
                items = _programs(value, "code", where)
                pid = str(key)
            yield pid, items
        return
    if not isinstance(data, list):
        raise CandidateError(f"{shape}; got a {type(data).__name__}")
    if data and all(isinstance(x, list) for x in data):
        # list of lists: position i holds the samples of the dataset's row i
        by_index = {p.index: p.id for p in problems if not isinstance(p, str)}
        if not by_index and problems:
            raise CandidateError(f"{path}: a list-of-lists file needs the problems' dataset positions")
        for i, samples in enumerate(data):
            if i in by_index:
                yield by_index[i], _programs(samples, "code", f"{path}: item {i}")
        return
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise CandidateError(f"{shape}; item {i} is a {type(item).__name__}")
        yield _record(item, f"{path}: item {i}", wanted)


def _record(
    record: Mapping[str, Any], where: str, wanted: set[str]
) -> tuple[str, list[tuple[str | None, str | None]]]:
    pid = None
    for name in ID_FIELDS:
        if record.get(name) not in (None, ""):
            pid = _norm_id(record[name], wanted)
            break
    if pid is None:
        raise CandidateError(
            f"{where}: no problem id; looked for {', '.join(ID_FIELDS)} (found {_keys(record)})"
        )
    code_field = next((f for f in CODE_FIELDS if f in record), None)
    text_field = next((f for f in TEXT_FIELDS if f in record), None)
    if code_field is None and text_field is None:
        raise CandidateError(
            f"{where}: no program for problem {pid}; looked for {', '.join(PROGRAM_FIELDS)} "
            f"(found {_keys(record)})"
        )
    if code_field is None:
        assert text_field is not None
        return pid, _programs(record[text_field], text_field, where)
    items = _programs(record[code_field], code_field, where)
    if text_field is not None:
        # e.g. MAS-PromptBench predictions: the runner's own extraction, with the model text beside it
        raws = _texts(record[text_field], text_field, where)
        if len(raws) == len(items):
            items = [(code, raw_own or raw) for (code, raw_own), raw in zip(items, raws)]
    return pid, items


def _programs(value: Any, field: str, where: str) -> list[tuple[str | None, str | None]]:
    """(code, raw) for each program in a field (a string, or a list of them for samples)."""
    out = []
    for text in _texts(value, field, where):
        if text is None:
            out.append((None, None))
        elif field in TEXT_FIELDS or looks_like_markdown(text):
            out.append((extract_code(text), text))
        else:
            out.append((text, None))
    return out


def _texts(value: Any, field: str, where: str) -> list[str | None]:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if item is not None and not isinstance(item, str):
            raise CandidateError(
                f"{where}: field {field!r} holds a {type(item).__name__}; expected a program text or a "
                "list of them"
            )
    return list(items)


def _norm_id(value: Any, wanted: set[str]) -> str:
    pid = str(value).strip()
    if pid not in wanted and "/" in pid:
        tail = pid.rsplit("/", 1)[1]  # "APPS/7", "apps/test/7"
        if tail in wanted:
            return tail
    return pid


def _keys(record: Mapping[str, Any]) -> str:
    keys = list(record)[:8]
    return ", ".join(keys) + (", ..." if len(record) > 8 else "") if keys else "no fields"


def _ids(problems: Sequence[Problem | str]) -> list[str]:
    return [p if isinstance(p, str) else p.id for p in problems]


# -- several samples --------------------------------------------------------------------------------


def normal_form(code: str | None) -> str:
    """A program with its whitespace collapsed, for comparing samples."""
    return " ".join((code or "").split())


def most_common(cands: Sequence[Candidate]) -> Candidate:
    """The most common program, as multi-agent teams submit it: programs compared after collapsing
    whitespace, empty ones abstain, ties go to the lowest sample index, all abstaining picks sample 0."""
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, cand in enumerate(cands):
        key = normal_form(cand.code)
        if not key:
            continue
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, i)
    if not counts:
        return cands[0]
    best = min(counts, key=lambda k: (-counts[k], first[k]))
    return cands[first[best]]


def select_samples(found: dict[str, list[Candidate]], mode: str) -> dict[str, list[Candidate]]:
    if mode == "all":
        return found
    if mode == "most-common":
        return {pid: [most_common(cands)] for pid, cands in found.items()}
    raise CandidateError(f"--apps-select: unknown mode {mode!r}; use one of {', '.join(SELECT_MODES)}")


# -- the dataset's own solutions --------------------------------------------------------------------


def parse_solutions(raw: Any) -> list[str]:
    """A row's `solutions` field (a JSON-encoded list, or "" when unknown) as a list of programs."""
    if isinstance(raw, list):
        items = raw
    elif isinstance(raw, str) and raw.strip():
        try:
            items = json.loads(raw)
        except ValueError:
            return []
        if not isinstance(items, list):
            return []
    else:
        return []
    return [s for s in items if isinstance(s, str) and s.strip()]


def reference_folder(
    folder: Path, problems: Sequence[Problem], solutions: Mapping[str, Any], most: int | None = None
) -> None:
    """Write each problem's human solutions as `<folder>/<id>/solution_<k>.py` (at most `most` each).

    They are rewritten from the dataset on every run (a file is only touched when its text changed), so
    node ids are real files (`apps-generations/reference/7/solution_0.py::test_3`) and never stale.
    """
    for problem in problems:
        programs = parse_solutions(solutions.get(problem.id))
        if most is not None:
            programs = programs[:most]
        sub = folder / problem.id
        wanted = {f"solution_{k}.py": code for k, code in enumerate(programs)}
        if sub.is_dir():
            for old in sub.iterdir():
                if old.name not in wanted and old.is_file():
                    old.unlink()
        if not wanted:
            continue
        sub.mkdir(parents=True, exist_ok=True)
        for name, code in wanted.items():
            target = sub / name
            if not target.is_file() or target.read_bytes() != code.encode("utf-8", "surrogatepass"):
                target.write_text(code, encoding="utf-8")
