"""The plugin's options: declared once, resolved into a plain `Settings` (command line > ini > default)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

DEFAULT_DATASET = "codeparrot/apps"
DEFAULT_REPORT = "reports/apps-report.json"


class OptionError(Exception):
    """A bad option value; the message is one line naming the option and what to do."""


@dataclass(frozen=True)
class Option:
    name: str  # without the --apps- prefix; the ini name is apps_<name with _>
    help: str
    kind: str = "str"  # str | int | float | bool | list
    default: Any = None
    metavar: str | None = None
    selects: bool = True  # giving it on the command line implies --apps

    @property
    def flag(self) -> str:
        return f"--apps-{self.name}"

    @property
    def dest(self) -> str:
        return "apps_" + self.name.replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("dataset", "APPS rows: a hub id, 'sample' (bundled), a .jsonl/.json/.parquet file or a folder "
           f"holding <split>.jsonl/.parquet (default {DEFAULT_DATASET}).", default=DEFAULT_DATASET,
           metavar="NAME|PATH"),
    Option("split", "Dataset split (default test).", default="test"),
    Option("revision", "Hub revision (branch, tag or commit) to load.", metavar="REV"),
    Option("limit", "Evaluate at most N problems (after filters and offset).", kind="int", metavar="N"),
    Option("offset", "Skip the first K problems (after filters).", kind="int", default=0, metavar="K"),
    Option("only", "Only these problem ids (repeatable, or comma-separated).", kind="list", default=(),
           metavar="ID"),
    Option("difficulty", "Only this tier: introductory, interview or competition (repeatable).",
           kind="list", default=(), metavar="TIER"),
    Option("max-tests", "Keep the first N tests of each problem (default 20; 0 or less keeps all).",
           kind="int", default=20, metavar="N"),
    Option("candidates", "Folder of candidate programs, <problem_id>.py (default solutions).",
           default="solutions", metavar="PATH"),
    Option("timeout", "Wall-clock limit per test in seconds (default 4).", kind="float", default=4.0,
           metavar="SECONDS", selects=False),
    Option("memory", "Address-space limit per test in bytes (default $APPS_CALL_BASED_MEMORY_BYTES, "
           "else 4 GiB; 0 for none).", kind="int", metavar="BYTES", selects=False),
    Option("report", f"Where to write the JSON report (default {DEFAULT_REPORT}).",
           default=DEFAULT_REPORT, metavar="PATH", selects=False),
)


@dataclass(frozen=True)
class Settings:
    dataset: str = DEFAULT_DATASET
    split: str = "test"
    revision: str | None = None
    limit: int | None = None
    offset: int = 0
    only: tuple[str, ...] = ()
    difficulty: tuple[str, ...] = ()
    max_tests: int = 20
    candidates: str = "solutions"
    timeout: float = 4.0
    memory: int | None = None
    report: str = DEFAULT_REPORT
    rootdir: str = "."
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def path(self, value: str) -> Path:
        """A path option, relative to the rootdir (so workers and the controller agree)."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else Path(self.rootdir) / p

    @property
    def candidates_path(self) -> Path:
        return self.path(self.candidates)

    @property
    def report_path(self) -> Path:
        return self.path(self.report)

    def dataset_ref(self) -> str:
        """The dataset as the loader wants it: a local path resolved against rootdir, else the name."""
        value = self.dataset
        local = self.path(value)
        if value != "sample" and (
            value.startswith((".", "/", "~")) or value.endswith((".jsonl", ".json", ".parquet"))
            or local.exists()
        ):
            return str(local)
        return value


def add_options(parser: Any) -> None:
    group = parser.getgroup("apps", "APPS benchmark (pytest-apps)")
    group.addoption("--apps", action="store_true", dest="apps", default=None,
                    help="Collect and run the APPS benchmark (implied by any selection option).")
    parser.addini("apps", "Enable the APPS benchmark collection.", type="bool", default=False)
    for opt in OPTIONS:
        kwargs: dict[str, Any] = {"dest": opt.dest, "default": None, "help": opt.help}
        if opt.metavar:
            kwargs["metavar"] = opt.metavar
        if opt.kind == "list":
            kwargs["action"] = "append"
        group.addoption(opt.flag, **kwargs)
        parser.addini(opt.dest, opt.help, type="linelist" if opt.kind == "list" else "string")


def is_active(getoption: Callable[[str], Any], getini: Callable[[str], Any]) -> bool:
    if getoption("apps"):
        return True
    if any(getoption(opt.dest) is not None for opt in OPTIONS if opt.selects):
        return True
    return bool(getini("apps"))


def resolve(getoption: Callable[[str], Any], getini: Callable[[str], Any], rootdir: str) -> Settings:
    """Command line wins over ini, ini over the default; every value is checked here, once."""
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        raw = getoption(opt.dest)
        source = opt.flag
        if raw is None or raw == []:
            ini = getini(opt.dest)
            if ini not in (None, "", []):
                raw, source = ini, f"ini option {opt.dest}"
        values[opt.dest[len("apps_"):]] = opt.default if raw in (None, []) else _convert(opt, raw, source)
    if values["memory"] is None:
        values["memory"] = _memory_from_env()
    settings = Settings(**values, rootdir=rootdir)
    _check(settings)
    return settings


def _convert(opt: Option, raw: Any, source: str) -> Any:
    try:
        if opt.kind == "int":
            return int(raw)
        if opt.kind == "float":
            return float(raw)
        if opt.kind == "list":
            items = raw if isinstance(raw, list) else [raw]
            return tuple(str(x) for x in items)
        return str(raw)
    except ValueError:
        raise OptionError(f"{source}: {raw!r} is not a valid {opt.kind}; {opt.help}") from None


def _memory_from_env() -> int | None:
    raw = os.environ.get("APPS_CALL_BASED_MEMORY_BYTES")
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise OptionError(
            f"APPS_CALL_BASED_MEMORY_BYTES={raw!r} is not a whole number of bytes; fix or unset it"
        ) from None


def _check(s: Settings) -> None:
    from .dataset import TIERS

    if s.limit is not None and s.limit < 0:
        raise OptionError(f"--apps-limit: {s.limit} is negative; give 0 or more problems")
    if s.offset < 0:
        raise OptionError(f"--apps-offset: {s.offset} is negative; give 0 or more")
    if s.timeout <= 0:
        raise OptionError(f"--apps-timeout: {s.timeout} must be more than 0 seconds")
    if s.memory is not None and s.memory < 0:
        raise OptionError(f"--apps-memory: {s.memory} is negative; give bytes, or 0 for no limit")
    for tier in s.difficulty:
        if tier.strip().lower() not in TIERS:
            raise OptionError(f"--apps-difficulty: unknown tier {tier!r}; use one of {', '.join(TIERS)}")
