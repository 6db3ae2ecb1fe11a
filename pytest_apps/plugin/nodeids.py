"""How the controller's pytest names candidate files, and which of them its command line selects.

A worker on another machine cannot see the candidate files, so it collects from the plan (`remote.py`); its
items must still carry the node ids a local run gives them, since xdist, `-k`, `--lf`, `--deselect`, JUnit and
the rerun commands all go by node id. The controller works them out here, with pytest's rules
(`_pytest.nodes.FSCollector`, `_pytest.main.Session.collect`):

- a file's node id is its path relative to the rootdir; outside the rootdir, where pytest would name it
  relative to the command-line argument it was found under ("" when it is that argument: `::7::test_0`, which
  cannot be pasted), the plugin names it relative to the rootdir all the same, `..` included
  (`../gens.jsonl::7::test_0`), as report locations do: pasted where the run started from the rootdir, it
  selects that item (`outside_nodeid`);
- `-k` matches, besides the file's name, the names of the folders between the top folder of the collection
  (which is left out) and the file: the folders of that same relative path;
- a report's location names the file relative to the rootdir (`..` included);
- a rerun command names it relative to where pytest was started.

`tests/test_remote.py` checks these against the node ids of real local runs. Plain functions, no pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FileIds:
    """A candidate file as the controller's pytest names it."""

    nodeid: str  # the file's node id
    name: str  # the file node's name
    folders: tuple[str, ...]  # names of the folder nodes above it that -k matches
    location: str  # the file in report locations: relative to the rootdir
    shown: str  # the file relative to where pytest was started (rerun commands)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileIds:
        return cls(**{**data, "folders": tuple(data["folders"])})


@dataclass(frozen=True)
class Argument:
    """A command-line argument: a path (absolute, as pytest makes it) and the names after its `::`."""

    path: Path
    names: tuple[str, ...]


def arguments(args: Iterable[str], invocation_dir: Path) -> list[Argument]:
    """The path arguments of the command line, as pytest resolves them (`absolutepath`, no symlinks resolved)."""
    out = []
    for arg in args:
        path, *names = str(arg).split("::")
        out.append(Argument(Path(os.path.abspath(invocation_dir / path)), tuple(names)))
    return out


def file_ids(file: str, rootdir: Path, invocation_dir: Path, initial: Sequence[Path]) -> FileIds | None:
    """How pytest names `file` when collected from the `initial` paths; None when it would not be collected
    (outside the rootdir and under no initial path)."""
    path = Path(os.path.abspath(file))
    rootdir = Path(os.path.abspath(rootdir))
    try:
        under: str | None = path.relative_to(rootdir).as_posix()
    except ValueError:
        under = _relative_to_initial(path, set(initial))
    if under is None:
        return None
    return FileIds(
        nodeid=outside_nodeid(path, rootdir) or under,
        name=path.name,
        folders=tuple(under.split("/")[:-1]),
        location=Path(os.path.relpath(path, rootdir)).as_posix(),
        shown=os.path.relpath(path, invocation_dir),
    )


def outside_nodeid(path: str | os.PathLike[str], rootdir: str | os.PathLike[str]) -> str | None:
    """The node id the plugin gives a candidate file or folder outside the rootdir: its path relative to the
    rootdir (`../gens/g.jsonl`); None for one inside the rootdir, which pytest names itself."""
    path, rootdir = Path(os.path.abspath(path)), Path(os.path.abspath(rootdir))
    if path == rootdir or rootdir in path.parents:
        return None
    return Path(os.path.relpath(path, rootdir)).as_posix()


def _relative_to_initial(path: Path, initial: set[Path]) -> str | None:
    if path in initial:
        return ""
    for parent in path.parents:
        if parent in initial:
            return path.relative_to(parent).as_posix()
    return None


def selection(args: Sequence[Argument], files: Iterable[str]) -> dict[str, list[tuple[str, ...]]]:
    """For each file some argument reaches (the file itself, or a folder above it): the names below the
    file that the arguments ask for; `()` asks for all of it. Files no argument reaches are absent."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for file in files:
        path = Path(os.path.abspath(file))
        for arg in args:
            if arg.path == path or (not arg.names and arg.path in path.parents):
                out.setdefault(file, []).append(arg.names)
    return out


def order(files: Iterable[str], args: Sequence[Argument]) -> list[str]:
    """The files in the order pytest's walk reaches them: by argument, then folder by folder, each folder's
    entries by name (so that local and remote workers of one run list the same collection)."""

    def key(file: str) -> tuple[int, tuple[str, ...]]:
        path = Path(os.path.abspath(file))
        for i, arg in enumerate(args):
            if arg.path == path or arg.path in path.parents:
                return i, path.relative_to(arg.path).parts
        return len(args), path.parts

    return sorted(files, key=key)


def wanted(names: Sequence[str], selectors: Sequence[Sequence[str]]) -> bool:
    """Whether a node, named by the names below its file, is asked for by one of the selectors."""
    return any(tuple(names[: len(s)]) == tuple(s) for s in selectors)


def folder_arguments(args: Sequence[str], folder: str, invocation_dir: Path) -> tuple[list[str], list[Argument]]:
    """pytest refuses `folder::names` on its command line, and the node ids of problems without a program
    start with the candidates' folder (`solutions::7::no_code`). The arguments with such a folder's names
    taken off (pytest then collects the whole folder), and, when there were any, every argument as given, for
    `reaches` to narrow the collection to; no such argument: the arguments unchanged and []."""
    given = arguments(args, invocation_dir)
    home = Path(os.path.abspath(folder)) if folder else None
    if home is None or not any(a.names and a.path == home and home.is_dir() for a in given):
        return list(args), []
    return [str(arg).split("::", 1)[0] if a.path == home else str(arg) for arg, a in zip(args, given)], given


def reaches(args: Sequence[Argument], path: Path, names: Sequence[str]) -> bool:
    """Whether one of the arguments asks for the node at `path` (a file or folder) named `names` below it."""
    path = Path(os.path.abspath(path))
    for arg in args:
        if arg.path == path and tuple(names[: len(arg.names)]) == arg.names:
            return True
        if not arg.names and arg.path in path.parents:
            return True
    return False
