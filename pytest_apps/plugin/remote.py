"""Workers that share no filesystem with the controller: ssh (or other execnet) gateways, and popen gateways
given a `chdir`. The plan and each problem's test data reach them through execnet, never through paths of
the controller's machine.

- The plan travels in `workerinput` as one JSON string, without program text or questions: problems,
  candidates (file, sample, label), and for each candidate file how the controller's pytest names it
  (`nodeids.py`) and what its command line selects in it. The worker collects from that
  (`collect.PlanRoot`), so its node ids are those of a local run.
- A problem's test data and programs come when its first case runs there: the worker asks over a channel of
  its own to the controller (made before the worker starts and passed in `workerinput`), and the
  controller's `Feeder` answers with the problem's test file as it is on disk (the plan folder's or the
  index cache's) and the problem's programs. The worker keeps them in memory only, as a local worker keeps
  the plan's (the last two problems): nothing reaches its disk, so nothing is left when it ends, and its
  candidates' children (which cannot read their worker's memory) see no more than on the controller's machine.
- A failing case's input and expected output, which a local worker writes under the report's folder, are
  sent back and written there by the controller, where the failure text says they are.
- The options that select items (`-k`, `-m`, `--deselect`) are taken as the controller parsed them, and with
  `--lf`/`--ff` the controller's last failures replace the worker's own (empty) cache's.
- A checker folder of the user's (`--apps-checkers PATH`) travels in the plan and is written to a private
  temporary folder on the worker (checkers are trusted code that the worker runs, like a conftest), removed
  when it ends; the folder shipped in the package is the worker's own.

The controller answers in the receiver thread of that worker's gateway (each gateway has its own): a file
read and one send, never an exception. A worker has at most one request in flight.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..candidates.sources import Candidate
from ..core import jsontext
from ..core.errors import HarnessError
from ..core.settings import Settings
from ..dataset.index import parse_cases
from ..dataset.problems import Cases, Problem
from ..engine.failtext import case_file_texts, write_texts
from ..engine.result import CaseResult
from ..judge.checkers import BUILTIN, Checkers
from . import nodeids
from .nodeids import Argument, FileIds
from .options import REMOTE_KEY
from .plan import Plan, plan_data, plan_from_data

CHANNEL_KEY = "apps_channel"  # workerinput: that worker's channel to the controller's Feeder
OPTIONS_KEY = "apps_remote_options"  # workerinput: what it takes from the controller's options

CASES = "cases"  # request: a problem's test data and programs; (CASES, problem id, question number)
FILES = "case_files"  # message: a failing case's files, for the controller to write (no answer)
OK, ERROR = "ok", "error"

ANSWER_TIMEOUT = 600.0  # seconds a worker waits for a problem's data before its case is a harness error


@dataclass(frozen=True)
class RemoteFile:
    """A candidate file as a remote worker collects it."""

    file: str  # its path on the controller (the plan's key; never opened on the worker)
    ids: FileIds
    selectors: tuple[tuple[str, ...], ...]  # names below the file the command line asks for; () is all


def remote_files(plan: Plan, args: Sequence[Argument], rootdir: Path, invocation_dir: Path) -> list[RemoteFile]:
    """The plan's candidate files that the controller's command line selects, in the order its pytest would
    collect them, with their node ids."""
    chosen = nodeids.selection(args, plan.by_file())
    initial = [a.path for a in args]
    out = []
    for file in nodeids.order(chosen, args):
        ids = nodeids.file_ids(file, rootdir, invocation_dir, initial)
        if ids is not None:
            out.append(RemoteFile(file, ids, tuple(chosen[file])))
    return out


def plan_text(plan: Plan, files: Sequence[RemoteFile], checkers: dict[str, str] | None = None) -> str:
    """What a remote worker receives in `workerinput`: the plan without programs (nor questions), its
    candidate files, and the checker folder's files when it has one of its own."""
    data = plan_data(plan, full=False)
    data["remote_files"] = [
        {"file": f.file, "ids": f.ids.to_dict(), "selectors": [list(s) for s in f.selectors]} for f in files
    ]
    data["checker_files"] = checkers
    return jsontext.dumps(data)


def read_plan_text(text: str) -> tuple[Plan, list[RemoteFile], dict[str, str] | None]:
    data = jsontext.loads(text)
    files = [
        RemoteFile(f["file"], FileIds.from_dict(f["ids"]), tuple(tuple(s) for s in f["selectors"]))
        for f in data.pop("remote_files")
    ]
    checkers = data.pop("checker_files", None)
    return plan_from_data(Path(data["settings"].get("rootdir") or "."), data), files, checkers


def checker_files(settings: Settings) -> dict[str, str] | None:
    """The files of the run's checker folder (`--apps-checkers`), which a worker on another machine cannot
    read where they are; None without one, or for the folder shipped in the package (every host with
    pytest-apps has it)."""
    if not settings.checkers or settings.checkers == BUILTIN:
        return None
    checkers = Checkers.from_setting(settings.checkers, settings.rootdir)
    return {path.name: path.read_text(encoding="utf-8") for path in checkers.files.values()}


def put_checkers(files: dict[str, str]) -> str:
    """A remote worker's copy of the controller's checker folder: a private temporary folder (trusted code,
    like the controller's; out of its candidates' reach), removed when the worker ends."""
    folder = tempfile.mkdtemp(prefix="pytest-apps-checkers-")
    write_texts(folder, sorted(files.items()))
    return folder


# Options that select items on a worker, taken as the controller parsed them: xdist may have rewritten a
# value that names an existing path on the controller (a bare name X arrives as "X/.").
SELECTING_OPTIONS = ("keyword", "markexpr", "deselect")


class RemoteWorkers:
    """The controller's side, for all its remote workers: what each one receives in `workerinput`, made once
    (so that a worker replacing a crashed one collects what the others did), and the feeder."""

    def __init__(self, config: Any, plan: Plan, cases_folder: Path | None, settings: Settings) -> None:
        params = config.invocation_params
        args = nodeids.arguments(config.args, params.dir)
        files = remote_files(plan, args, config.rootpath, params.dir)
        self.plan_text = plan_text(plan, files, checker_files(settings))
        self.options = controller_options(config)
        self.feeder = Feeder(plan, cases_folder)

    def inputs(self, gateway: Any) -> dict[str, Any]:
        channel = gateway.newchannel()
        self.feeder.attach(channel)
        return {REMOTE_KEY: self.plan_text, OPTIONS_KEY: self.options, CHANNEL_KEY: channel}


def controller_options(config: Any) -> dict[str, Any]:
    """What a remote worker cannot read from its own command line or cache: the selecting options as parsed
    here, and with --lf/--ff the last failures in this machine's cache when the run started."""
    options: dict[str, Any] = {name: config.getoption(name, None) for name in SELECTING_OPTIONS}
    lfplugin = config.pluginmanager.get_plugin("lfplugin")
    active = lfplugin is not None and getattr(lfplugin, "active", False)
    options["lastfailed"] = plain_lastfailed(lfplugin.lastfailed) if active else None
    return options


def plain_lastfailed(lastfailed: dict[Any, Any]) -> dict[str, bool]:
    """The last failures as execnet can send them: node id text to True. (pytest >= 9.2 keys them by a
    node id object of its own, which execnet refuses to serialise.)"""
    return {str(nodeid): bool(value) for nodeid, value in lastfailed.items()}


def lastfailed_keyed(lastfailed: dict[str, bool]) -> dict[Any, bool]:
    """The controller's last failures keyed as this pytest keys them when it reads its cache: node id text,
    or from pytest 9.2 on its `NodeId`, which the `--lf` collection looks items up by."""
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2; no public name for it
    except ImportError:
        return dict(lastfailed)
    return {NodeId.parse(nodeid): value for nodeid, value in lastfailed.items()}


def worker_setup(config: Any,
                 workerinput: dict[str, Any]) -> tuple[Plan, Settings, list[RemoteFile], ControllerTestData]:
    """A remote worker's plan, settings (the controller's, with its checker folder copied here), candidate
    files and test data (from the controller), with the controller's selecting options (and last failures)
    put in place of its own."""
    plan, files, checkers = read_plan_text(workerinput[REMOTE_KEY])
    settings = Settings.from_dict(plan.settings)
    if checkers is not None:
        settings = dataclasses.replace(settings, checkers=put_checkers(checkers))
    options = workerinput.get(OPTIONS_KEY) or {}
    for name in SELECTING_OPTIONS:
        if name in options:
            setattr(config.option, name, options[name])
    lfplugin = config.pluginmanager.get_plugin("lfplugin")
    if options.get("lastfailed") is not None and lfplugin is not None:
        # LFPlugin's public attribute, read at collection
        lfplugin.lastfailed = lastfailed_keyed(options["lastfailed"])
    return plan, settings, files, ControllerTestData(workerinput[CHANNEL_KEY])


class Feeder:
    """The controller's side: answers its remote workers' requests from the plan."""

    def __init__(self, plan: Plan, cases_folder: Path | None) -> None:
        self.plan = plan
        self.cases_folder = cases_folder

    def attach(self, channel: Any) -> None:
        channel.setcallback(functools.partial(self._serve, channel), endmarker=_END)

    def answer(self, message: Any) -> tuple[Any, ...] | None:
        """The answer to one message (None: it wants none). Raises on a bad one."""
        kind = message[0]
        if kind == CASES:
            ask = message[2]
            try:
                problem = self.plan.problem(str(message[1]))
                programs = {str(c.sample): c.code for c in self.plan.candidates.get(problem.id, [])}
                return OK, ask, self.plan.cases_path(problem).read_bytes(), json.dumps(programs)
            except Exception as exc:  # noqa: BLE001 - the worker reports it as a harness error
                return ERROR, ask, f"{type(exc).__name__}: {exc}"
        if kind == FILES:
            if self.cases_folder is None:  # (the report goes to a device: no case files)
                return None
            write_texts(self.cases_folder, [(str(name), str(text)) for name, text in message[1]])
            return None
        raise ValueError(f"unknown request {kind!r}")

    def _serve(self, channel: Any, message: Any) -> None:
        # execnet's receiver thread: never raise, never wait on anything but the send
        if message is _END:
            return
        try:
            reply = self.answer(message)
        except Exception:  # noqa: BLE001 - a malformed message: nothing to answer it with
            reply = None
        if reply is not None:
            try:
                channel.send(reply)
            except Exception:  # noqa: BLE001 - the worker is gone; xdist reports that
                pass


_END = object()


class ControllerTestData:
    """A remote worker's test data: a problem's test data and programs, asked of the controller when its
    first case runs, kept in memory for the last `keep` problems (as `plan.PlanTestData` keeps them)."""

    def __init__(self, channel: Any, keep: int = 2, timeout: float = ANSWER_TIMEOUT) -> None:
        self._channel = channel
        self._keep = keep
        self._timeout = timeout
        self._lock = threading.Lock()
        self._asked = 0  # numbers each question, so that an answer is matched to its own
        self._cache: OrderedDict[str, tuple[Cases, dict[str, str | None]]] = OrderedDict()

    def get(self, problem: Problem) -> Cases:
        return self._entry(problem)[0]

    def program(self, problem: Problem, candidate: Candidate) -> Candidate:
        return dataclasses.replace(candidate, code=self._entry(problem)[1].get(str(candidate.sample)))

    def write_case_files(self, folder: Path, problem: Problem, index: int, result: CaseResult) -> Path:
        """A failing case's files go to the controller, which writes them into `folder` (its own)."""
        texts = case_file_texts(problem, index, result)
        try:
            self._channel.send((FILES, texts))
        except Exception as exc:  # noqa: BLE001
            raise HarnessError(f"could not send a failing case's files to the controller: {exc}") from None
        return Path(folder, texts[0][0])

    def _entry(self, problem: Problem) -> tuple[Cases, dict[str, str | None]]:
        entry = self._cache.get(problem.id)
        if entry is not None:
            self._cache.move_to_end(problem.id)
            return entry
        raw, programs = self._ask(problem)
        entry = (parse_cases(raw, problem.n_cases), json.loads(programs))
        self._cache[problem.id] = entry
        while len(self._cache) > self._keep:
            self._cache.popitem(last=False)
        return entry

    def _ask(self, problem: Problem) -> tuple[bytes, str]:
        with self._lock:
            self._asked += 1
            ask = self._asked
            try:
                self._channel.send((CASES, problem.id, ask))
                reply = self._channel.receive(timeout=self._timeout)
                # an answer to an earlier question that gave up waiting (a timeout, pytest-timeout's
                # signal) is dropped, never taken for this problem's
                while reply[1] != ask:
                    reply = self._channel.receive(timeout=self._timeout)
            except Exception as exc:  # noqa: BLE001 - closed channel, timeout, lost controller
                raise HarnessError(
                    f"no test data for problem {problem.id} from the controller: {type(exc).__name__}: {exc}"
                ) from None
        if reply[0] != OK:
            raise HarnessError(f"the controller could not send problem {problem.id}'s test data: {reply[2]}")
        return reply[2], reply[3]
