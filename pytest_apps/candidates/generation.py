"""The agent hook: prompt framing, the `python_exec` tool, and the generation cache.

`--apps-agent module:callable` names a callable that receives an `AgentProblem` and returns model text
(or a list of texts, one per sample). Generation runs once, on the controller before any xdist worker
starts (or as its own step, `python -m pytest_apps generate`), with a bounded number of calls in flight.
Each problem's answer is written to a generations folder, which the run then reads like any candidate
folder: `<id>.md` for one answer, `<id>/sample_<k>.md` for several. Beside them, `.keys/<id>.json` holds the
generation's key: everything that made it (the agent; the dataset, split and revision; a digest of the
problem's content and of the framed prompt; the model, endpoint, temperature and sample count) and, per
sample, a digest of that key with the sample's index. An answer is reused only when its key is the one the
run would ask with, so a rerun (by node id, or the whole run) tests the very same program, and a run with
another dataset, problem text, model or sampling option asks the agent again (an answer without a key, or
with another, is a new generation); `--apps-regenerate` always asks again.

A failed generation (an exception, a timeout, something that is not text) is written too, as an answer
holding no code, so the problem scores "no code", the run goes on, and the failure reads in the terminal and
the report; the next run asks the agent again for that problem (and reuses the answers that succeeded).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import queue
import signal
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.outcome import GENERATION_FAILED
from ..core.wording import counted
from ..dataset.problems import CALL
from .extract import FAILED_MARK
from .sources import CandidateError

if TYPE_CHECKING:
    from ..core.settings import Settings
    from ..dataset.problems import Problem

PYTHON_EXEC_TIMEOUT = 10.0

Agent = Callable[["AgentProblem"], Any]


def frame_prompt(question: str, starter_code: str = "", call_based: bool = False) -> str:
    """The prompt as APPS harnesses frame it, parts joined by a blank line."""
    parts = ["QUESTION:\n" + question.strip()]
    if call_based or starter_code.strip():
        if starter_code.strip():
            parts.append("```python\n" + starter_code.strip("\n") + "\n```")
    parts.append("Use Call-Based format." if call_based else "Use Standard Input format.")
    parts.append("Enclose your final solution in a ```python``` code block.")
    parts.append("ANSWER:")
    return "\n\n".join(parts)


@dataclass
class AgentProblem:
    """What an agent gets for one problem."""

    id: str
    prompt: str  # framed as APPS harnesses frame it
    question: str
    starter_code: str
    fn_name: str | None  # set for call-based problems
    difficulty: str
    fields: dict[str, Any]  # the raw fields (problem_id, question, starter_code, difficulty, fn_name)
    python_exec: Callable[..., dict[str, Any]]  # python_exec(code, stdin="") -> stdout, stderr, exit_code
    options: dict[str, Any] = field(default_factory=dict)  # agent options: model, base_url, api_key, ...

    @property
    def call_based(self) -> bool:
        return self.fn_name is not None


def agent_problem(problem: Problem, python_exec: Callable[..., dict[str, Any]],
                  options: Mapping[str, Any] | None = None) -> AgentProblem:
    call_based = problem.fmt == CALL
    return AgentProblem(
        id=problem.id,
        prompt=frame_prompt(problem.question, problem.starter_code, call_based),
        question=problem.question,
        starter_code=problem.starter_code,
        fn_name=problem.fn_name,
        difficulty=problem.difficulty,
        fields={
            "problem_id": problem.id,
            "question": problem.question,
            "starter_code": problem.starter_code,
            "difficulty": problem.difficulty,
            "fn_name": problem.fn_name,
        },
        python_exec=python_exec,
        options=dict(options or {}),
    )


class PythonExec:
    """`python_exec(code, stdin="")`: run a snippet in a fresh sandboxed Python (a forked child of the
    project's executor, never this process) with a 10 s limit. Safe to call from several threads: each
    call borrows an idle fork server or starts one."""

    def __init__(self, timeout: float = PYTHON_EXEC_TIMEOUT) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._all: list[Any] = []
        self._closed = False

    def __call__(self, code: str, stdin: str = "") -> dict[str, Any]:
        from ..executor import Executor, Limits, Program

        with self._lock:
            if self._closed:
                raise RuntimeError("python_exec is closed: generation has finished")
            executor = self._idle.pop() if self._idle else None
            if executor is None:
                executor = Executor(Limits(timeout=self.timeout))
                self._all.append(executor)
        try:
            outcome = executor.run_stdin(Program(str(code), "<python_exec>"), stdin or "")
        finally:
            with self._lock:
                self._idle.append(executor)
        stderr = outcome.stderr_tail
        if outcome.error and outcome.error not in stderr:
            stderr = (stderr + ("\n" if stderr else "") + outcome.error).strip("\n")
        return {
            "stdout": outcome.stdout,
            "stderr": stderr,
            "exit_code": outcome.exit_code,
            "status": outcome.status,  # exited, timeout, memory, compile_error, ...
        }

    def close(self) -> None:
        with self._lock:
            self._closed = True
            executors, self._all, self._idle = self._all, [], []
        for executor in executors:
            executor.close()


def load_agent(spec: str, rootdir: str | None = None, project: str = "") -> Agent:
    """The callable named by `module:callable` (the part after the colon may be dotted); a module not on the
    path is looked for in `rootdir` (where the run started), then in the project's folder."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CandidateError(f"--apps-agent: {spec!r} is not module:callable")
    folders = [f for f in dict.fromkeys([rootdir, project or None]) if f is not None]
    try:
        module = _import_beside(module_name, folders)
    except ImportError as exc:
        raise CandidateError(f"--apps-agent: cannot import {module_name!r} ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import: say so in one line
        raise CandidateError(f"--apps-agent: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise CandidateError(f"--apps-agent: {module_name!r} has no {attr!r}")
    if not callable(target):
        raise CandidateError(f"--apps-agent: {spec} is a {type(target).__name__}, not a callable")
    return target


def _import_beside(module_name: str, folders: Sequence[str]) -> Any:
    """Import a module, else from each of `folders` in turn (as `python -m pytest` started there finds it)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.split(".")[0] or not folders:
            raise
        missing = exc
    for folder in folders:
        sys.path.insert(0, folder)
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name.split(".")[0]:
                raise
        finally:
            sys.path.remove(folder)
    raise missing


# -- the generations folder -------------------------------------------------------------------------


KEYS = ".keys"  # the generations folder's sub-folder of keys, `<id>.json` each


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def generation_key(problem: AgentProblem, made_by: Mapping[str, Any]) -> dict[str, Any]:
    """Everything that made a problem's generation: `made_by` (the agent, the dataset's identity, the model and
    sampling options) and the problem's content and prompt, as digests."""
    content = json.dumps(problem.fields, sort_keys=True, ensure_ascii=False, default=str)
    return {**made_by, "problem_id": problem.id, "problem": text_digest(content),
            "prompt": text_digest(problem.prompt)}


def sample_digests(key: Mapping[str, Any], samples: int) -> list[str]:
    """One digest per sample: the key with the sample's index."""
    return [text_digest(json.dumps({**key, "sample": k}, sort_keys=True, default=str)) for k in range(samples)]


def _key_file(folder: Path, pid: str) -> Path:
    return folder / KEYS / f"{pid}.json"


def write_key(folder: Path, pid: str, key: Mapping[str, Any], digests: Sequence[str]) -> None:
    """The key of the answer(s) just written, replacing the old one in one rename."""
    target = _key_file(folder, pid)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps({"key": dict(key), "samples": list(digests)}, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, target)


def _stored_digests(folder: Path, pid: str) -> list[str] | None:
    try:
        data = json.loads(_key_file(folder, pid).read_text(encoding="utf-8"))
        return [str(d) for d in data["samples"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no key (or an unreadable one): a new generation


def is_generated(folder: Path, pid: str, digests: Sequence[str] | None = None) -> bool:
    """Whether the folder holds the problem's answer(s), none of them a failed generation (which the next run
    asks the agent for again; successful answers are reused), made with the key whose sample `digests` are
    given (None: whatever made them)."""
    if digests is not None and _stored_digests(folder, pid) != list(digests):
        return False
    single, sub = folder / f"{pid}.md", folder / pid
    if single.is_file():
        return not _records_failure(single)
    files = sorted(sub.glob("*.md")) if sub.is_dir() else []
    return bool(files) and not any(_records_failure(f) for f in files)


def _records_failure(file: Path) -> bool:
    mark = FAILED_MARK.encode()
    try:
        with open(file, "rb") as fh:
            return fh.read(len(mark)) == mark
    except OSError:
        return True  # unreadable: ask again


def write_generation(folder: Path, pid: str, texts: Sequence[str]) -> None:
    """Replace the problem's answer(s): `<id>.md` for one, `<id>/sample_<k>.md` for several."""
    folder.mkdir(parents=True, exist_ok=True)
    single, sub = folder / f"{pid}.md", folder / pid
    if len(texts) == 1:
        tmp = folder / f".{pid}.md.tmp"
        tmp.write_text(texts[0], encoding="utf-8")
        if sub.is_dir():
            shutil.rmtree(sub)
        os.replace(tmp, single)
        return
    staging = Path(tempfile.mkdtemp(prefix=f".{pid}.", dir=folder))
    for k, text in enumerate(texts):
        (staging / f"sample_{k}.md").write_text(text, encoding="utf-8")
    if sub.is_dir():
        shutil.rmtree(sub)
    single.unlink(missing_ok=True)
    os.replace(staging, sub)


def failed_generation_text(why: str) -> str:
    """What a generation that failed is written as, in place of the model's text: the mark and why."""
    return f"{FAILED_MARK}\n{GENERATION_FAILED}: {why}\n"


def _as_texts(answer: Any) -> list[str]:
    if isinstance(answer, str):
        return [answer]
    if isinstance(answer, (list, tuple)) and answer and all(isinstance(a, str) for a in answer):
        return list(answer)
    if isinstance(answer, (list, tuple)) and not answer:
        return [failed_generation_text("the agent returned an empty list")]
    return [failed_generation_text(f"the agent returned a {type(answer).__name__}, not text or a list of texts")]


def _answer_texts(box: Mapping[str, Any]) -> list[str]:
    """What one agent call gave, as texts: its answer, or its exception as a failed generation."""
    if "error" in box:
        exc = box["error"]
        return [failed_generation_text(f"{type(exc).__name__}: {exc}".strip())]
    return _as_texts(box.get("answer"))


def _start_call(agent: Agent, problem: AgentProblem, done: queue.Queue[tuple[str, dict[str, Any]]]) -> None:
    """Call the agent in a daemon thread, which puts (problem id, {"answer" or "error"}) on `done`. A daemon
    thread never holds the process up: an interrupt, or a call that overruns its time (a thread cannot be
    killed), abandons it."""

    def target() -> None:
        box: dict[str, Any] = {}
        try:
            box["answer"] = agent(problem)
        except BaseException as exc:  # noqa: BLE001 - one problem's failure must not stop the run
            box["error"] = exc
        done.put((problem.id, box))

    threading.Thread(target=target, name=f"apps-agent-{problem.id}", daemon=True).start()


@dataclass
class GenerationStats:
    generated: int = 0
    reused: int = 0
    failed: int = 0
    seconds: float = 0.0


def stats_text(stats: GenerationStats) -> str:
    """`3 reused, 2 generated (1 failed)`: what a generation step did."""
    failed = f" ({stats.failed} failed)" if stats.failed else ""
    return f"{stats.reused} reused, {stats.generated} generated{failed}"


def progress_bar(done: int, total: int, failed: int = 0, width: int = 30) -> str:
    filled = width * done // total if total else width
    tail = f", {failed} failed" if failed else ""
    return f"apps: generating [{'#' * filled}{'.' * (width - filled)}] {done}/{total}{tail}"


def generate(
    problems: Sequence[Problem],
    agent: Agent,
    folder: Path,
    *,
    concurrency: int = 4,
    timeout: float = 600.0,
    regenerate: bool = False,
    options: Mapping[str, Any] | None = None,
    made_by: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> GenerationStats:
    """Ask the agent for every problem whose answer `folder` does not hold under the same key (all of them with
    `regenerate`). `made_by` is the key's part that is not the problem's (`generation_made_by`)."""
    started = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    tool = PythonExec()
    asked = [agent_problem(p, tool, options) for p in problems]
    samples = int((options or {}).get("samples") or 1)
    keys = {a.id: generation_key(a, made_by or {}) for a in asked}
    digests = {pid: sample_digests(key, samples) for pid, key in keys.items()}
    todo = [a for a in asked if regenerate or not is_generated(folder, a.id, digests[a.id])]
    stats = GenerationStats(reused=len(problems) - len(todo))
    if not todo:
        tool.close()
        return stats
    say = progress or (lambda _line: None)
    say(progress_bar(0, len(todo)))

    def written(problem: AgentProblem, texts: list[str]) -> None:
        write_generation(folder, problem.id, texts)
        write_key(folder, problem.id, keys[problem.id], digests[problem.id])
        stats.generated += 1
        if any(t.startswith(FAILED_MARK) for t in texts):
            stats.failed += 1
        say(progress_bar(stats.generated, len(todo), stats.failed))

    try:
        with signals_interrupt():
            ask_all(agent, todo, concurrency, timeout, written)
    except KeyboardInterrupt as exc:
        stats.seconds = time.monotonic() - started
        raise GenerationInterrupted(str(exc.args[0]) if exc.args else "SIGINT", stats, len(todo), folder) from None
    finally:
        tool.close()
    stats.seconds = time.monotonic() - started
    return stats


STOP_AFTER = 3  # identical failures in a row, with no answer between, that stop the generation step
# The longest the main thread waits for an answer at once. The kernel may give a signal sent to the process to any
# of its threads (an agent call's among them), and Python runs its handler only once the main thread runs again: a
# Ctrl-C or SIGTERM is acted on within this time, not when a hung call's 600 s are up.
WAKE = 0.25


class GenerationStopped(CandidateError):
    """The agent failed the same way for several problems in a row (an endpoint that is down, a wrong key): the
    step stops instead of asking for every problem; the message is one line."""


class GenerationInterrupted(CandidateError):
    """SIGINT or SIGTERM during the generation step: what was generated is kept (each answer is written as it
    arrives); the message says what and where."""

    def __init__(self, signame: str, stats: GenerationStats, asked: int, folder: Path) -> None:
        self.signame, self.stats = signame, stats
        super().__init__(
            f"generation interrupted by {signame}: {stats_text(stats)}, {asked - stats.generated} not answered; "
            f"what was generated is kept in {folder} and the next run asks only for the rest")


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt(<its name>) while the block runs (as Ctrl-C raises
    KeyboardInterrupt), so that an interrupted generation step says what it kept: also where the process came with
    SIGINT ignored (a job a shell started in the background), as the run's own handlers take it after this step
    (plugin/base.py). In the main thread only (elsewhere, as it was)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    before = {sig: signal.signal(sig, raise_interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def ask_all(agent: Agent, todo: Sequence[AgentProblem], concurrency: int, timeout: float,
            written: Callable[[AgentProblem, list[str]], None]) -> None:
    """Ask the agent for each problem, at most `concurrency` calls in flight, each allowed `timeout` seconds (one
    that overruns is recorded as a failure and abandoned); `written(problem, texts)` as each answer arrives, in
    this thread. Stops with GenerationStopped after STOP_AFTER identical failures in a row."""
    done: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
    waiting, running = list(reversed(todo)), {}  # id -> (problem, deadline)
    streak: list[str] = []
    while waiting or running:
        while waiting and len(running) < concurrency:
            problem = waiting.pop()
            running[problem.id] = (problem, time.monotonic() + timeout)
            _start_call(agent, problem, done)
        deadline = min(d for _, d in running.values())
        try:
            pid, box = done.get(timeout=min(WAKE, max(0.0, deadline - time.monotonic())))
            texts = _answer_texts(box)
        except queue.Empty:
            if time.monotonic() < deadline:
                continue
            pid = min(running, key=lambda k: running[k][1])
            texts = [failed_generation_text(f"timed out after {timeout:g} s")]
        if pid not in running:
            continue  # an answer after its time ran out: already recorded as a timeout
        problem, _ = running.pop(pid)
        written(problem, texts)
        streak = _streak(streak, texts)
        if len(streak) >= STOP_AFTER:
            left = len(waiting) + len(running)
            raise GenerationStopped(
                f"--apps-agent: generation stopped: the agent failed the same way for "
                f"{counted(len(streak), 'problem')} in a row ({streak[0]}); {counted(left, 'problem')} "
                f"{'was' if left == 1 else 'were'} not asked. Fix the cause (an endpoint that is down, a wrong key or "
                "model), then run again: the answers received are kept")


def _streak(streak: list[str], texts: list[str]) -> list[str]:
    """The run of identical failures so far, with this answer's: a failure like the others extends it, any
    other answer starts it again."""
    why = texts[0].split("\n", 1)[1].strip() if len(texts) == 1 and texts[0].startswith(FAILED_MARK) else ""
    why = why.split(": ", 1)[1] if why.startswith(f"{GENERATION_FAILED}: ") else why
    if not why:
        return []
    return streak + [why] if not streak or streak[-1] == why else [why]


def agent_options(settings: Settings) -> dict[str, Any]:
    return {
        "model": settings.model,
        "base_url": settings.base_url,
        "api_key": settings.api_key,
        "samples": settings.samples or 1,
        "temperature": settings.temperature,
        "timeout": settings.agent_timeout,
    }


def generation_made_by(settings: Settings) -> dict[str, Any]:
    """The part of a generation's key that is the run's, not the problem's: the agent, the dataset's identity,
    the model and the sampling options (the model and endpoint as the chat agent takes them from the
    environment when the options leave them out). The API key and the time allowed are not part of it."""
    return {
        "agent": settings.agent,
        "dataset": settings.dataset_ref(),
        "split": settings.split,
        "revision": settings.revision,
        "model": settings.model or os.environ.get("OPENAI_MODEL"),
        "base_url": settings.base_url or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE"),
        "temperature": settings.temperature,
        "samples": settings.samples or 1,
    }


def generate_for(
    settings: Settings, problems: Sequence[Problem], folder: Path,
    progress: Callable[[str], None] | None = None,
) -> GenerationStats:
    """The plan's entry point: generate what is missing in `folder` for the selected problems."""
    assert settings.agent
    agent = load_agent(settings.agent, settings.rootdir, settings.project)
    check = getattr(agent, "check_options", None)  # an agent's own check of its options, before anything runs
    if callable(check):
        try:
            check(agent_options(settings))
        except Exception as exc:  # noqa: BLE001 - the agent's refusal, said in one line
            raise CandidateError(f"--apps-agent={settings.agent}: {exc}") from None
    live = [p for p in problems if not p.broken]  # a broken problem runs nothing: don't pay for it
    return generate(
        live,
        agent,
        folder,
        concurrency=settings.concurrency,
        timeout=settings.agent_timeout,
        regenerate=settings.regenerate,
        options=agent_options(settings),
        made_by=generation_made_by(settings),
        progress=progress,
    )
