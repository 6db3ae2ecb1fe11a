"""The run's settings: every `--apps-*` option declared once, as a field of the plain, frozen `Settings` (`OPTIONS`
is read from those fields), resolved (command line > ini > default) and checked here once. No pytest: the plugin
declares these options on pytest's parser (`plugin/options.py`), `python -m pytest_apps` on its own argparse
parser.

Other packages' vocabulary (judge profiles, tiers, memory floors) lives with their tables: a front end passes the
check of a layer above (`resolve`'s and `settings_from`'s `check`), which completes and checks what names them."""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

DEFAULT_DATASET = "codeparrot/apps"
DEFAULT_TIMEOUT = 4.0  # seconds of a program's own time per test (--apps-timeout)
DEFAULT_MEMORY = 4 << 30  # address-space bytes per test when neither --apps-memory nor the variable says
DEFAULT_REPORT = "reports/apps-report.json"
DEFAULT_RECORDS = ".apps-records"
PINNING_MODES = ("auto", "off")  # --apps-cpu-pinning (see plugin/cpus.py)
STEALING_MODES = ("on", "off")  # --apps-work-stealing (see plugin/scheduling.py)
LIMIT_MODES = ("fixed", "row")  # --apps-limits
NEEDS_CHECKER_MODES = ("score", "exclude")  # --apps-needs-checker


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: Any) -> int:
    """Bytes from `text`: a whole number of bytes, or a number with a unit K, M, G or T (powers of 1024, written
    alone or with B or iB, any case: 512M, 4G, 4GiB, 1.5gb). ValueError for anything else."""
    import re

    if isinstance(text, bool):
        raise ValueError(text)
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmgt])(i?b)?|(b))?\s*", str(text), re.IGNORECASE)
        if not m:
            raise ValueError(text)
        unit = (m.group(2) or "").lower()
        if not unit and "." in m.group(1):
            raise ValueError(text)  # a fraction of a byte
        value = int(float(m.group(1)) * _UNITS[unit])
    if value < 0:
        raise ValueError(text)
    return value


def size_text(n: int) -> str:
    """512M, 4G, 1.5G, 1000 (bytes): how a size is written back in messages."""
    for unit, factor in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= factor and (n * 10) % factor == 0:
            return f"{n / factor:g}{unit}"
    return str(n)


class OptionError(Exception):
    """A bad option value; the message is one line naming the option and what to do."""


@dataclass(frozen=True)
class Option:
    name: str  # without the --apps- prefix; the ini name is apps_<name with _>
    help: str
    kind: str = "str"  # str | int | float | bool | list | bytes (a size: parse_size)
    default: Any = None
    metavar: str | None = None
    selects: bool = True  # giving it on the command line implies --apps
    commas: bool = False  # a list option whose values may also be comma-separated

    @property
    def flag(self) -> str:
        return f"--apps-{self.name}"

    @property
    def dest(self) -> str:
        return "apps_" + self.name.replace("-", "_")


def option(default: Any, help: str, kind: str = "str", metavar: str | None = None, selects: bool = True,
           commas: bool = False) -> Any:
    """A `Settings` field that is an `--apps-*` option: its default, and in its metadata the rest of its `Option`
    (its name is the field's, with - for _). `OPTIONS` is read from these fields."""
    return field(default=default, metadata={"option": {"help": help, "kind": kind, "metavar": metavar,
                                                       "selects": selects, "commas": commas}})


@dataclass(frozen=True)
class Settings:
    """The resolved settings of a run. Every field up to `resume` is an option, declared here once (`option`);
    the last five say where the run started, the project's folder (pytest's rootdir, where a path option left
    at its default lies, so that a run started in a subfolder reads and writes the same files), which options
    the ini file gave, which a layer's table gave their default, and what plugins added."""

    dataset: str = option(DEFAULT_DATASET,
        "APPS rows: a hub id (owner/name, or owner/name/<folder> for one folder of the repository, "
        "e.g. a config of refs/convert/parquet), 'sample' (bundled), a .jsonl/.json/.parquet file or a folder "
        f"holding <split>.jsonl/.parquet (default {DEFAULT_DATASET}).", metavar="NAME|PATH")
    split: str = option("test",
        "Dataset split (default test).")
    revision: str | None = option(None,
        "Hub revision (branch, tag, ref such as refs/convert/parquet, or commit) to load.", metavar="REV")
    limit: int | None = option(None,
        "Evaluate at most N problems (after filters and offset).", kind="int", metavar="N")
    offset: int = option(0,
        "Skip the first K problems (after filters).", kind="int", metavar="K")
    only: tuple[str, ...] = option((),
        "Only these problem ids (repeatable, or comma-separated).", kind="list", metavar="ID", commas=True)
    difficulty: tuple[str, ...] = option((),
        "Only this tier, as the dataset names its tiers (any case; each dataset's page lists them) "
        "(repeatable).", kind="list", metavar="TIER")
    tag: tuple[str, ...] = option((),
        "Only problems with this tag or skill type (TACO's tags / skill_types, any case; repeatable, or "
        "comma-separated).", kind="list", metavar="NAME", commas=True)
    release: str | None = option(None,
        "Which release of a dataset that has releases (LiveCodeBench: release_v1 .. release_v6, "
        "release_latest, vN, vI_vJ): the files of a folder or hub repository it reads (default: the latest, "
        "for a repository by name).", metavar="NAME")
    since: str | None = option(None,
        "Only problems whose contest date is on or after this day (YYYY-MM-DD; datasets with contest "
        "dates, such as LiveCodeBench).", metavar="DATE")
    until: str | None = option(None,
        "Only problems whose contest date is at or before this day's midnight (YYYY-MM-DD), as "
        "LiveCodeBench's --end_date.", metavar="DATE")
    test_sets: tuple[str, ...] = option((),
        "Which of a problem's test sets count, for datasets whose rows hold several (CodeContests: public, "
        "private, generated; comma-separated) (default: the dataset's own choice).", kind="list", metavar="SET",
        commas=True)
    max_tests: int = option(20,
        "Keep the first N tests of each problem (default 20; 0 or less keeps all).", kind="int", metavar="N")
    candidates: str = option("solutions",
        "Where the programs come from: a folder (<id>.py, <id>.md/.txt model text, "
        "<id>/<sample>.py), a .jsonl/.json generations file, or 'reference' for the dataset's own "
        "solutions (default solutions).", metavar="PATH|reference")
    select: str = option("all",
        "Several samples per problem: 'all' evaluates each (pass@k), 'most-common' only the "
        "most common program (default all).", metavar="all|most-common")
    agent: str | None = option(None,
        "Generate the programs with this callable (module:callable) before the run; e.g. "
        "pytest_apps.agents:openai_chat.", metavar="MODULE:CALLABLE")
    generations: str = option("apps-generations",
        "Folder where generated programs (agent runs, reference solutions) are kept "
        "and reused (default apps-generations).", metavar="PATH")
    regenerate: bool = option(False,
        "Call the agent again even for problems already in the generations folder.", kind="bool")
    concurrency: int = option(4,
        "Agent calls in flight at once (default 4).", kind="int", metavar="N")
    agent_timeout: float = option(600.0,
        "Seconds one problem's generation may take before it is recorded as no "
        "code (default 600).", kind="float", metavar="SECONDS")
    samples: int | None = option(None,
        "Samples to ask the agent for per problem (default 1); with 'reference', at most "
        "this many solutions per problem (default all).", kind="int", metavar="N")
    model: str | None = option(None,
        "Model name for the chat agent (default $OPENAI_MODEL).", metavar="NAME")
    base_url: str | None = option(None,
        "OpenAI-compatible endpoint for the chat agent (default $OPENAI_BASE_URL, else "
        "https://api.openai.com/v1).", metavar="URL")
    api_key: str | None = option(None,
        "API key for the chat agent (default $OPENAI_API_KEY; never written to reports).", metavar="KEY")
    temperature: float | None = option(None,
        "Sampling temperature for the chat agent (default: the server's).", kind="float", metavar="T")
    timeout: float = option(DEFAULT_TIMEOUT,
        "Time limit per test in seconds of the program's own time: its CPU time plus the time it "
        "is blocked, not the time it waits for a CPU that other work holds (default 4).",
        kind="float", metavar="SECONDS", selects=False)
    timeout_scale: float = option(1.0,
        "Multiply every time limit by F (e.g. on a machine slower than the one a result was "
        "measured on; compare the reports' machine speed figures) (default 1).",
        kind="float", metavar="F", selects=False)
    memory: int | None = option(None,
        "Address-space limit per test, for every format: bytes or a size such as 512M, 4G or 4GiB "
        "(K, M, G, T are powers of 1024); at least what the judge profile's programs start in (docs/judges.md); "
        "default "
        "$APPS_CALL_BASED_MEMORY_BYTES, else 4G; 0 for none.", kind="bytes", metavar="SIZE", selects=False)
    limits: str = option("fixed",
        "fixed: every problem runs under --apps-timeout / --apps-memory (default, as published "
        "numbers are); row: a problem whose row gives a time_limit / memory_limit (TACO) runs under its own "
        "(the time scaled by --apps-timeout-scale; memory as peak resident size), the others under the fixed "
        "ones.", metavar="fixed|row", selects=False)
    special_judge: str | None = option(None,
        "TACO's list of problems that need a special judge (output_spj.jsonl of "
        "FlagOpen/TACO, keyed by test-split index): case-insensitive and floating-point problems are decided "
        "by built-in checkers, problems with several right outputs are reported as needing a checker.",
        metavar="PATH", selects=False)
    needs_checker: str = option("score",
        "Problems the --apps-special-judge list marks as having several right outputs and "
        "that have no --apps-checkers checker: 'score' runs and scores them, counted apart in the summary "
        "(default); 'exclude' leaves them out of the score (reported as skipped rows).",
        metavar="score|exclude", selects=False)
    cpu_pinning: str = option("auto",
        "auto: when there are at least as many xdist workers as CPUs, keep each "
        "worker's executor (the candidates included) on a CPU of its own, which saves the CPU time the "
        "scheduler leaves idle between processes; off: never (default auto).",
        metavar="auto|off", selects=False)
    work_stealing: str = option("on",
        "on: with xdist, a worker that would otherwise go idle takes unstarted cases "
        "from the worker with the most work left (a slow candidate's cases are then split); off: all "
        "cases of a candidate run on one worker, as --dist loadscope does (default on).",
        metavar="on|off", selects=False)
    fail_fast: bool = option(False,
        "Stop a candidate at its first failing test: its remaining tests are skipped "
        "(strict accuracy is unchanged; the test-case average becomes partial).", kind="bool", selects=False)
    fail_under: float | None = option(None,
        "Exit non-zero when strict accuracy is below PCT percent, and zero when it is "
        "at or above it even though cases failed (a CI gate on the number).",
        kind="float", metavar="PCT", selects=False)
    baseline: str | None = option(None,
        "Compare with an earlier run's JSON report: strict accuracy then and now with the "
        "difference's 95% interval, an exact McNemar test, and the problems newly failing and newly passing.",
        metavar="PATH", selects=False)
    baseline_any: bool = option(False,
        "Compare with the --apps-baseline report even when its dataset, split, revision, "
        "judge, tests per problem or limits differ from this run's (the differences are printed).",
        kind="bool", selects=False)
    fail_on_regression: bool = option(False,
        "Exit non-zero when a problem that passed in the --apps-baseline report "
        "does not pass now, and zero otherwise even though cases failed (combines with --apps-fail-under: "
        "either failing fails the run).", kind="bool", selects=False)
    markdown: str | None = option(None,
        "Also write the summary as Markdown to PATH (for a pull request comment); appended to "
        "$GITHUB_STEP_SUMMARY too when that is set.", metavar="PATH", selects=False)
    junit_properties: bool = option(False,
        "Add per-case properties (outcome kind, cascade step, time, memory) to "
        "--junitxml test cases (they break strict xunit2 validation).", kind="bool", selects=False)
    html: str | None = option(None,
        "Also write a self-contained HTML report to PATH.", metavar="PATH", selects=False)
    predictions: str | None = option(None,
        "Also write one predictions.jsonl record per problem to PATH.", metavar="PATH", selects=False)
    report: str = option(DEFAULT_REPORT,
        f"Where to write the JSON report (default {DEFAULT_REPORT}).", metavar="PATH", selects=False)
    judge: str = option("",
        "Whose verdicts: the name of a judge profile (docs/judges.md lists them, with whose harness each "
        "reproduces; a conftest adds more, docs/extending.md); default: the seed runner's strict cascade, with "
        "programs run as real programs.", metavar="NAME", selects=False)
    checkers: str | None = option(None,
        "A folder of <problem_id>.py checkers, each defining check(input, expected, got) -> bool "
        "or (bool, message), that decide the tests of problems with several right answers; 'builtin' for "
        "the checkers shipped with pytest-apps.", metavar="PATH|builtin", selects=False)
    records: str = option(DEFAULT_RECORDS,
        "Folder of the record store, where every case record is kept keyed by what decides it "
        f"(default {DEFAULT_RECORDS}); 'off' keeps none.", metavar="PATH|off", selects=False)
    resume: bool = option(False,
        "Execute only the cases that have no record in the store (an interrupted run, or "
        "programs that changed); the others are reported from their records. A borderline record always "
        "runs again.", kind="bool")
    rootdir: str = "."
    project: str = ""  # pytest's rootdir: the folder of the path options' defaults ("": `rootdir`)
    from_ini: tuple[str, ...] = ()  # the options (names without --apps-) whose value the ini file gave
    defaulted: tuple[str, ...] = ()  # the options whose value is the default a layer's table gives (`resolve`'s check)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data.get("api_key"):
            data["api_key"] = "***"  # the plan and the report are files: no secret goes into them
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Settings from `to_dict`'s data (after a trip through JSON: lists become tuples again)."""
        known = {f.name: f for f in fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        return cls(**values)

    def path(self, value: str) -> Path:
        """A path option, relative to the rootdir (so workers and the controller agree)."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else Path(self.rootdir) / p

    def option_path(self, name: str) -> Path:
        """Path option `name`'s path: a value given, from where the run started (`path`); the default, in the
        project's folder (`project`), wherever in the project the run started."""
        value = getattr(self, name.replace("-", "_"))
        default = next(opt.default for opt in OPTIONS if opt.name == name)
        if value == default and self.project and name not in self.from_ini:
            return Path(self.project) / value
        return self.path(value)

    @property
    def generations_path(self) -> Path:
        return self.option_path("generations")

    @property
    def candidates_path(self) -> Path:
        """Where candidates are read from (and collection starts): an agent's generations folder, the
        reference folder, or the --apps-candidates path."""
        if self.agent:
            return self.generations_path / _slug(self.agent + (f"-{self.model}" if self.model else ""))
        if self.candidates == "reference":
            return self.generations_path / "reference"
        return self.option_path("candidates")

    @property
    def time_limit(self) -> float:
        """Seconds of own time per test: --apps-timeout scaled by --apps-timeout-scale."""
        return self.timeout * self.timeout_scale

    @property
    def report_path(self) -> Path:
        return self.option_path("report")

    @property
    def records_path(self) -> Path | None:
        """The record store's folder; None with `--apps-records off`."""
        return None if self.records == "off" else self.option_path("records")

    def dataset_ref(self) -> str:
        """The dataset as the loader wants it: a local path resolved against rootdir, else the name."""
        value = self.dataset
        local = self.path(value)
        if value != "sample" and (
            value.startswith((".", "/", "~")) or value.endswith((".jsonl", ".json", ".parquet", ".arrow"))
            or local.exists()
        ):
            return str(local)
        return value


# every --apps-* option, in the order `--help` lists them: read from the `Settings` fields that are options
OPTIONS: tuple[Option, ...] = tuple(
    Option(f.name.replace("_", "-"), default=f.default, **f.metadata["option"])
    for f in fields(Settings) if "option" in f.metadata)


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "agent"


def one_of(names: Sequence[str]) -> str:
    """`a, b or c`: the choices an error message offers."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def argparse_kwargs(opt: Option) -> dict[str, Any]:
    """How an option is declared on a command line (pytest's or `python -m pytest_apps`'s): unset
    values stay None, so the ini option and then the default can apply. (argparse formats a help text with
    `%`: a percent sign in one is written `%%` there.)"""
    kwargs: dict[str, Any] = {"dest": opt.dest, "default": None, "help": opt.help.replace("%", "%%")}
    if opt.metavar:
        kwargs["metavar"] = opt.metavar
    if opt.kind == "list":
        kwargs["action"] = "append"
    if opt.kind == "bool":
        kwargs["action"] = "store_true"
    return kwargs


# Options whose value is a path (besides the words each takes: `--apps-candidates=reference`, ...). Given on the
# command line, a relative path is taken from where the run started (the `rootdir` of `resolve`); in the ini
# file, from the ini file's folder, as pytest takes its own path settings.
PATH_OPTIONS = ("dataset", "candidates", "generations", "special-judge", "checkers", "records", "report", "html",
                "markdown", "predictions", "baseline")
OUTPUT_OPTIONS = ("report", "html", "markdown", "predictions")  # the files a run writes
PATH_WORDS = {"dataset": ("sample",), "candidates": ("reference",), "checkers": ("builtin",), "records": ("off",)}


def ini_path(name: str, value: str, ini_dir: str | os.PathLike[str], started_in: str | os.PathLike[str]) -> str:
    """An ini file's value of option `name` as a path from where the run started: a relative path joined to
    the ini file's folder (an absolute path when that folder is not where the run started). Words and, for
    the dataset, a hub id (`owner/name`, no such file or folder beside the ini file) are kept as they are."""
    if name not in PATH_OPTIONS or value in PATH_WORDS.get(name, ()):
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return value
    folder = Path(os.path.abspath(ini_dir))
    if name == "dataset" and not (
            value.startswith(".") or value.endswith((".jsonl", ".json", ".parquet", ".arrow"))
            or (folder / path).exists()):
        return value
    if folder == Path(os.path.abspath(started_in)):
        return value
    return os.path.normpath(folder / path)


# A layer's check of the settings (judge/profiles.py's `checked`): the settings completed (a default its table
# gives) and checked against its table, or an OptionError naming the option by the function it is given.
Check = Callable[["Settings", Callable[[str], str]], "Settings"]


def resolve(getoption: Callable[[str], Any], getini: Callable[[str], Any], rootdir: str,
            ini_dir: str | os.PathLike[str] | None = None, project: str | os.PathLike[str] = "",
            check: Check | None = None) -> Settings:
    """Command line wins over ini, ini over the default; every value is checked here, once, and then by `check`
    (what another layer's table decides: a front end passes judge/profiles.py's). A relative path the ini file
    (in `ini_dir`) gives is taken from that folder (`ini_path`); a path option's default lies in `project`
    (pytest's rootdir), when given."""
    values: dict[str, Any] = {}
    from_ini: list[str] = []
    for opt in OPTIONS:
        raw = getoption(opt.dest)
        source = opt.flag
        if raw is None or raw == []:
            try:
                ini = getini(opt.dest)
            except ValueError as exc:  # pytest's reading of a switch: "invalid truth value 'maybe'"
                raise OptionError(f"ini option {opt.dest}: {exc}; give true or false") from None
            if ini not in (None, "", []):
                raw, source = ini, f"ini option {opt.dest}"
                from_ini.append(opt.name)
                if ini_dir is not None and isinstance(raw, str):
                    raw = ini_path(opt.name, raw, ini_dir, rootdir)
        values[opt.dest[len("apps_"):]] = opt.default if raw in (None, []) else _convert(opt, raw, source)
    given_in_ini = frozenset(from_ini)

    def named(name: str) -> str:  # a value the ini file gave is named by its ini key, as the user wrote it
        return f"ini option apps_{name.replace('-', '_')}" if name in given_in_ini else flag_of(name)

    return _checked(values, named, check, rootdir=rootdir, from_ini=tuple(from_ini), project=str(project or ""))


def flag_of(name: str) -> str:
    """How the command line names option `name` in a message: its flag."""
    return f"--apps-{name}"


def settings_from(given: Mapping[str, Any], named: Callable[[str], str] = flag_of, rootdir: str = ".",
                  check: Check | None = None) -> Settings:
    """Settings from values given by field name (a Python caller's arguments), converted and checked as the
    command line's are (`resolve`), so that every front end gets the same options the same way; a value left out
    or None keeps the option's default, and a message names a value by `named(option name)` (the API names its
    parameters); `check` as `resolve`'s. A field that is no option is a TypeError, as an unknown keyword is."""
    by_field = {opt.dest[len("apps_"):]: opt for opt in OPTIONS}
    unknown = sorted(set(given) - set(by_field))
    if unknown:
        raise TypeError(f"unknown option(s): {', '.join(unknown)}")
    values = {field: _convert(by_field[field], raw, named(by_field[field].name))
              for field, raw in given.items() if raw is not None}
    return _checked(values, named, check, rootdir=rootdir)


def _checked(values: dict[str, Any], named: Callable[[str], str], check: Check | None, **more: Any) -> Settings:
    """The settings of converted `values` (a memory limit not given is the environment's), checked here, then by
    `check`."""
    if values.get("memory") is None:
        values["memory"] = memory_from_env()
    settings = Settings(**values, **more)
    _check(settings, named)
    return settings if check is None else check(settings, named)


def _convert(opt: Option, raw: Any, source: str) -> Any:
    if opt.name in PATH_OPTIONS and isinstance(raw, str) and not raw.strip():
        # (not the folder the run started in, which is what an empty path would join to)
        words = " or ".join(PATH_WORDS.get(opt.name, ()))
        what = "a folder path" if opt.name in ("records", "generations", "checkers") else "a file path"
        raise OptionError(f"{source}: an empty path; give {what}" + (f", or {words}" if words else ""))
    if opt.name in OUTPUT_OPTIONS and raw == "-":
        raise OptionError(f"{source}: '-' is not taken for standard output (the terminal shows the summary); give a "
                          "file path (/dev/stdout writes there)")
    if opt.kind == "bytes":
        try:
            return parse_size(raw)
        except ValueError:
            raise OptionError(f"{source}: {raw!r} is not a size; give bytes or a size such as 512M, 4G or 4GiB "
                              "(0 for no limit)") from None
    try:
        if opt.kind == "int":
            return int(raw)
        if opt.kind == "float":
            value = float(raw)
            if not math.isfinite(value):
                raise OptionError(f"{source}: {raw!r} is not a finite number; {opt.help}")
            return value
        if opt.kind == "bool":
            return raw if isinstance(raw, bool) else str(raw).strip().lower() in ("1", "true", "yes", "on")
        if opt.kind == "list":
            items = list(raw) if isinstance(raw, (list, tuple)) else [raw]
            if opt.commas:  # "7,15,16" is three values, on the command line and in the ini file alike
                return tuple(parse_only(items))
            return tuple(str(x) for x in items)
        return str(raw)
    except ValueError:
        raise OptionError(f"{source}: {raw!r} is not a valid {opt.kind}; {opt.help}") from None


def memory_from_env() -> int | None:
    """`$APPS_CALL_BASED_MEMORY_BYTES` as bytes, None when unset; a value that is not a size is an OptionError
    (every front end reads the variable here)."""
    raw = os.environ.get("APPS_CALL_BASED_MEMORY_BYTES")
    if not raw:
        return None
    try:
        return parse_size(raw)
    except ValueError:
        raise OptionError(
            f"APPS_CALL_BASED_MEMORY_BYTES={raw!r} is not a size (bytes, or e.g. 512M, 4G); fix or unset it"
        ) from None


def _check(s: Settings, named: Callable[[str], str] = flag_of) -> None:
    """Every value's check, once for every front end; a message names the value by `named(option name)`."""
    if s.limit is not None and s.limit < 0:
        raise OptionError(f"{named('limit')}: {s.limit} is negative; give 0 or more problems")
    if s.offset < 0:
        raise OptionError(f"{named('offset')}: {s.offset} is negative; give 0 or more")
    if s.timeout <= 0:
        raise OptionError(f"{named('timeout')}: {s.timeout} must be more than 0 seconds")
    if s.timeout_scale <= 0:
        raise OptionError(f"{named('timeout-scale')}: {s.timeout_scale} must be more than 0 (1 keeps the limits)")
    for name, seconds in (("timeout", s.timeout), ("timeout-scale", s.time_limit),
                          ("agent-timeout", s.agent_timeout)):
        if seconds > MOST_SECONDS:  # (a timer, a deadline or a marker past what the clock can hold)
            raise OptionError(f"{named(name)}: {seconds:g} seconds is more than a day; give at most "
                              f"{MOST_SECONDS} seconds")
    if s.memory is not None and s.memory < 0:
        raise OptionError(f"{named('memory')}: {s.memory} is negative; give bytes, or 0 for no limit")
    if s.select not in ("all", "most-common"):
        raise OptionError(f"{named('select')}: unknown mode {s.select!r}; use all or most-common")
    if s.cpu_pinning not in PINNING_MODES:
        raise OptionError(f"{named('cpu-pinning')}: unknown mode {s.cpu_pinning!r}; "
                          f"use {' or '.join(PINNING_MODES)}")
    if s.work_stealing not in STEALING_MODES:
        raise OptionError(f"{named('work-stealing')}: unknown mode {s.work_stealing!r}; use on or off")
    if s.concurrency < 1:
        raise OptionError(f"{named('concurrency')}: {s.concurrency}; give 1 or more calls at once")
    if s.agent_timeout <= 0:
        raise OptionError(f"{named('agent-timeout')}: {s.agent_timeout} must be more than 0 seconds")
    if s.samples is not None and s.samples < 1:
        raise OptionError(f"{named('samples')}: {s.samples}; give 1 or more")
    if s.agent and ":" not in s.agent:
        raise OptionError(f"{named('agent')}: {s.agent!r} is not module:callable "
                          "(e.g. pytest_apps.agents:openai_chat)")
    if s.fail_under is not None and not 0 <= s.fail_under <= 100:
        raise OptionError(f"{named('fail-under')}: {s.fail_under} is not a percentage from 0 to 100")
    if s.fail_on_regression and not s.baseline:
        raise OptionError(f"{named('fail-on-regression')}: give {named('baseline')}=PATH, the JSON report to "
                          "compare with")
    _check_window(s, named)
    if s.limits not in LIMIT_MODES:
        raise OptionError(f"{named('limits')}: unknown mode {s.limits!r}; use {' or '.join(LIMIT_MODES)}")
    if s.needs_checker not in NEEDS_CHECKER_MODES:
        raise OptionError(f"{named('needs-checker')}: unknown mode {s.needs_checker!r}; use score or exclude")
    if s.special_judge and not s.path(s.special_judge).is_file():
        raise OptionError(f"{named('special-judge')}: {s.path(s.special_judge)} is not a file; give TACO's "
                          "output_spj.jsonl (from github.com/FlagOpen/TACO)")
    if s.checkers and s.checkers != "builtin" and not s.path(s.checkers).is_dir():
        raise OptionError(f"{named('checkers')}: {s.path(s.checkers)} is not a folder; give a folder of "
                          "<problem_id>.py checkers, or 'builtin'")


def _check_window(s: Settings, named: Callable[[str], str]) -> None:
    """The contest-date window: days, the first not after the last."""
    for name in ("since", "until"):
        value = getattr(s, name)
        if value is not None and not _is_day(value):
            raise OptionError(f"{named(name)}: {value!r} is not a day; give YYYY-MM-DD")
    if s.since and s.until and s.since > s.until:
        raise OptionError(f"{named('since')}={s.since} is after {named('until')}={s.until}: the window is empty")


def _is_day(text: str) -> bool:
    import re
    from datetime import date

    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


MOST_SECONDS = 86400  # the longest time limit or agent timeout taken: a day


def parse_only(values: Iterable[str]) -> list[str]:
    """`--apps-only` values: repeatable and comma-separated."""
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in str(value).split(",") if part.strip())
    return out



# What a command rerunning one case repeats (the node id does the selecting): what decides how a case runs,
# which candidates and problems the run has (so that the rerun merges into the report of that same selection),
# and where its records and reports go.
RERUN_OPTIONS = ("dataset", "split", "revision", "release", "test-sets", "since", "until", "only", "difficulty",
                 "tag", "offset", "limit", "max-tests",
                 "candidates", "select", "agent", "model", "base-url", "samples", "generations",
                 "timeout", "timeout-scale", "memory", "limits", "judge", "checkers", "special-judge",
                 "needs-checker", "records", "report", "html", "markdown", "predictions")


def rerun_args(settings: Settings) -> list[str]:
    """The options, beyond the node id, that a command rerunning one case needs, each `--opt=value` (pytest
    takes an option's value that is an argument of its own and names an existing path for a test path when
    it places its rootdir, before it knows a plugin's options). A value the ini file gave is left to the ini
    (read again by the rerun, from the same folder); none is needed when the ini holds them all."""
    by_name = {opt.name: opt for opt in OPTIONS}
    args: list[str] = []
    for name in RERUN_OPTIONS:
        opt = by_name[name]
        if name in settings.from_ini or name in settings.defaulted:
            continue
        value = getattr(settings, opt.dest[len("apps_"):], None)
        if value is None or value == opt.default or value == () or (
                name == "memory" and value == memory_from_env()):
            continue
        if isinstance(value, tuple):
            values = [",".join(value)] if opt.commas else list(value)
        else:
            values = [f"{value:g}" if isinstance(value, float) else str(value)]
        args.extend(f"{opt.flag}={v}" for v in values)
    return args


def rerun_command(args: Sequence[str], nodeid: str) -> str:
    """The command that reruns a case of a run whose rerun options (`rerun_args`) are `args`: every printed rerun
    line is made here, so that each pastes the same way (with the run's options, so the candidates are never
    collected as the project's own tests)."""
    return shlex.join(["pytest", *args, nodeid])


def paste_line(args: Sequence[str], nodeid: str) -> str:
    """A node id listed for pasting: the command that reruns it (`rerun_command`), or the node id alone when the
    run needs no option beyond it (pasted alone, it reruns the same)."""
    return rerun_command(args, nodeid) if args else nodeid
