"""The record store: every case record a run produced, kept on disk and keyed by what decides it.

A case record is a pure function of its key: the program's text, the test's input and expected output (and
the problem's format and function name), the judge profile and the problem's checker, the limits, and the
harness version. `case_key` hashes those; the store maps keys to records.

Layout: a folder of segment files, one per run that wrote records (`<ns-time>-<pid>.rec`), each line one
record::

    <16 hex: blake2b-64 of the JSON text> <JSON text: {"k": key, "v": harness version, "r": record}>\\n

A line is written with one `write` on a file opened for appending, so a killed process (SIGKILL) leaves every
line it wrote whole, except perhaps the last; a line whose checksum does not match, or that lacks its
newline (a torn write), is dropped when the store is read, and counted. Lines are flushed to the kernel as
they are written and synced to the disk every `SYNC_EVERY` seconds and at close: after a power loss the
records of the last seconds may be missing or torn, never wrong.

A run holds an exclusive lock on its own segment while it writes it. Several runs may share one folder; a
segment is merged by `compact` only when no run holds it. Later segments (by name: the time they were
started) take precedence for a key written twice. No pytest here.
"""

from __future__ import annotations

import ast
import fcntl
import functools
import hashlib
import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.record import CaseRecord
from ..dataset.index import cache_root
from ..dataset.problems import Problem
from ..executor import Limits
from ..judge.profiles import Judging
from .limits import problem_limits

SUFFIX = ".rec"
SYNC_EVERY = 2.0  # seconds between fsyncs of a segment being written
COMPACT_AT = 8  # segments in the folder from which a finished run merges the unlocked ones into one
_PACKAGE = Path(__file__).resolve().parent.parent
# the packages whose code decides a case's record (the plugin and the reports only carry it)
DECIDING = ("core", "dataset", "executor", "judge", "engine")


def _code(tree: ast.AST) -> str:
    """A module's code as its syntax tree, without docstrings (comments and layout are not in the tree)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:]
    return ast.dump(tree)


def _modules(root: Path) -> list[tuple[str, bytes]]:
    return [(path.relative_to(root).as_posix(), path.read_bytes())
            for package in DECIDING for path in sorted((root / package).rglob("*.py"))]


def code_digest(root: Path = _PACKAGE) -> str:
    """A digest of the code of every module that decides a record, under `root` (the package folder): each module's
    path and syntax tree without docstrings, so a docstring, a comment or a layout change leaves it as it was and
    any change of what the code does (or a module added, moved or removed) makes it new."""
    digest = hashlib.blake2b(digest_size=8)
    for name, data in _modules(root):
        try:
            text = _code(ast.parse(data, filename=name)).encode()
        except (SyntaxError, ValueError):  # not code Python reads: its bytes then
            text = data
        digest.update(name.encode() + b"\0" + text + b"\0")
    return digest.hexdigest()


def _cached_code_digest() -> str:
    """`code_digest` of this installation, remembered in the cache folder by the digest of the modules' bytes
    (parsing them all takes a moment a run need not spend twice). Failing to read or write the cache only means
    working it out again."""
    raw = hashlib.blake2b(digest_size=16)
    for name, data in _modules(_PACKAGE):
        raw.update(name.encode() + b"\0" + hashlib.blake2b(data, digest_size=16).digest())
    root = cache_root()
    path = root / "harness" / raw.hexdigest() if root is not None else None
    try:
        if path is not None:
            known = path.read_text(encoding="ascii").strip()
            if len(known) == 16 and all(c in "0123456789abcdef" for c in known):
                return known
    except (OSError, UnicodeDecodeError):
        pass
    value = code_digest()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(value + "\n", encoding="ascii")
            os.replace(tmp, path)
        except OSError:
            pass
    return value


@functools.cache
def harness_version() -> str:
    """The harness version: the release, the code of every module that decides a record (`code_digest`), and the
    Python that runs the candidates. A change to any of them makes every key new (nothing recorded before is
    reused). Worked out once per process, when a key or the store first needs it."""
    try:
        from importlib.metadata import version

        release = version("pytest-apps")
    except Exception:  # noqa: BLE001 - not installed as a distribution (a source checkout)
        release = "0"
    return f"{release}+{_cached_code_digest()}-py{platform.python_version()}"


def case_digest(test_input: Any, expected: Any) -> str:
    """One test's input and expected output, as the key holds them."""
    text = json.dumps([test_input, expected], sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class JudgeKey:
    """What, beside the program, the test and the checker, decides a record: the profile, the audit, the limits
    the case runs under, and (TACO) the row's memory limit checked after the run and the special-judge kind."""

    profile: str
    audit: bool
    limits: dict[str, Any]  # the executor's limits for the case (time limit already scaled), as plain data
    row_memory: int | None = None  # with per-problem limits: the row's memory limit (bytes), else None
    special: int | None = None  # the special-judge kind TACO's list gives the problem, else None

    def text(self) -> str:
        """The key as JSON, made once per key: every case of a problem shares its judge key."""
        return self._text

    @functools.cached_property
    def _text(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def judge_key(judging: Judging, base: Limits, problem: Problem) -> JudgeKey:
    """The judge part of the key of `problem`'s cases under `judging`, with `base` the run's limits (a problem
    with limits of its own runs under those with per-problem limits on)."""
    limits = problem_limits(base, problem, judging.row_limits, judging.time_scale)
    return JudgeKey(judging.profile, judging.audit, asdict(limits),
                    row_memory=problem.memory_limit if judging.row_limits else None,
                    special=judging.special.kind(problem.id) if judging.special is not None else None)


def case_key(judge: JudgeKey, code: str | None, fmt: str, fn_name: str | None, test: str, checker: str = "",
             version: str | None = None) -> str:
    """The key of one case: a hash of everything that decides its record. `test` is `case_digest` of the test,
    `checker` the digest of the problem's checker (`Checkers.digest`: "" without one)."""
    h = hashlib.blake2b(digest_size=20)
    for part in (version or harness_version(), judge.text(), fmt, fn_name or "", checker, test):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    h.update(b"\1" if code is None else b"\2" + code.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _line(key: str, record: CaseRecord, version: str) -> bytes:
    text = json.dumps({"k": key, "v": version, "r": record.to_dict()}, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=8).hexdigest().encode() + b" " + text + b"\n"


@dataclass
class Segment:
    """What reading one segment gave: its entries (key, version, record) in order, and the lines dropped."""

    path: Path
    entries: list[tuple[str, str, CaseRecord]]
    dropped: int = 0  # lines whose checksum failed, or torn (no newline at the end of the file)


def read_segment(path: Path) -> Segment:
    data = path.read_bytes()
    out = Segment(path, [])
    lines = data.split(b"\n")
    torn = lines.pop()  # after the last newline: b"" when the file ends whole
    if torn:
        out.dropped += 1
    for line in lines:
        entry = _parse(line)
        if entry is None:
            out.dropped += 1
        else:
            out.entries.append(entry)
    return out


def _parse(line: bytes) -> tuple[str, str, CaseRecord] | None:
    checksum, _, text = line.partition(b" ")
    if hashlib.blake2b(text, digest_size=8).hexdigest().encode() != checksum:
        return None
    try:
        data = json.loads(text)
        return data["k"], data["v"], CaseRecord.from_dict(data["r"])
    except (ValueError, KeyError, TypeError):
        return None


class RecordStore:
    """A folder of segments: read at open (the latest record per key), appended to by this run."""

    def __init__(self, folder: str | Path, version: str | None = None) -> None:
        self.folder = Path(folder)
        self.version = version or harness_version()
        self.records: dict[str, CaseRecord] = {}
        self.dropped: list[tuple[str, int]] = []  # (segment file, lines dropped) where some were
        self.written = 0
        self._fd: int | None = None
        self._path: Path | None = None
        self._synced = time.monotonic()

    def load(self) -> RecordStore:
        """Read every segment (a missing folder is an empty store); records of another harness version are
        not kept (their keys cannot match)."""
        for path in self.segments():
            try:
                segment = read_segment(path)
            except OSError:
                continue
            if segment.dropped:
                self.dropped.append((str(path), segment.dropped))
            for key, version, record in segment.entries:
                if version == self.version:
                    self.records[key] = record
        return self

    def segments(self) -> list[Path]:
        try:
            return sorted(p for p in self.folder.iterdir() if p.suffix == SUFFIX and p.is_file())
        except OSError:
            return []

    def get(self, key: str) -> CaseRecord | None:
        return self.records.get(key)

    def append(self, key: str, record: CaseRecord) -> None:
        """Keep `record` under `key`: in memory and, with one write, at the end of this run's segment."""
        self.records[key] = record
        if self._fd is None:
            self._open()
        assert self._fd is not None
        os.write(self._fd, _line(key, record, self.version))
        self.written += 1
        now = time.monotonic()
        if now - self._synced >= SYNC_EVERY:
            os.fsync(self._fd)
            self._synced = now

    def _open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._path = self.folder / f"{time.time_ns():020d}-{os.getpid()}{SUFFIX}"
        self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def removed(self) -> bool:
        """Whether this run's segment is gone from the folder (the folder or the file removed while the run
        wrote it): what was written to it is then lost."""
        if self._fd is None:
            return False
        try:
            return os.fstat(self._fd).st_nlink == 0
        except OSError:
            return True

    def sync(self) -> None:
        """Sync this run's segment to the disk now (a full disk may say so only here)."""
        if self._fd is not None:
            os.fsync(self._fd)
            self._synced = time.monotonic()

    def abandon(self) -> None:
        """Stop writing: close this run's segment without a last sync (the store failed); the records read and
        appended stay in memory."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            finally:
                os.close(self._fd)  # the lock goes with it
                self._fd = None

    def compact(self, at: int = COMPACT_AT) -> int:
        """With `at` segments or more: merge those no run holds into one (the latest record per key of this
        harness version; other versions' records and dropped lines go). Returns the segments merged."""
        paths = self.segments()
        if len(paths) < at:
            return 0
        held: list[tuple[Path, int]] = []
        try:
            for path in paths:
                if path == self._path:
                    continue
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)  # a live run's segment
                    continue
                held.append((path, fd))
            if len(held) < 2:
                return 0
            merged: dict[str, CaseRecord] = {}
            for path, _ in held:
                for key, version, record in read_segment(path).entries:
                    if version == self.version:
                        merged[key] = record
            # named as the last merged one (so it keeps its place in the order), written beside and renamed
            target = held[-1][0]
            tmp = target.with_name(target.name + ".tmp")
            with open(tmp, "wb") as fh:
                for key, record in merged.items():
                    fh.write(_line(key, record, self.version))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
            for path, _ in held[:-1]:
                path.unlink(missing_ok=True)
            return len(held)
        finally:
            for _, fd in held:
                os.close(fd)
