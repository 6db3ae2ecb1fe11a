"""The OpenAI-compatible chat agent, against a small chat-completions server on 127.0.0.1 that the test
starts itself (a thread, stopped at the end, every socket with a timeout)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import UNUSED_PLUGINS, make_problem, read_report, run

from pytest_apps.candidates.generation import PythonExec, agent_problem
from pytest_apps.candidates.openai_chat import ChatError, openai_chat
from pytest_apps.dataset.problems import Problem

F = "```"
PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"


class FakeChat:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.fail_first = 0  # answer 503 to this many requests first (retries)
        self.retry_after: str | None = "0"  # the 503's Retry-After header (None: none, the client backs off)
        self.hang = threading.Event()  # set: a prompt without "two integers" waits until `release` is set
        self.release = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.timeout = 5
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 5

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                if fake.fail_first:
                    fake.fail_first -= 1
                    self.send_response(503)
                    if fake.retry_after is not None:
                        self.send_header("Retry-After", fake.retry_after)
                    self.end_headers()
                    return
                prompt = body["messages"][0]["content"]
                if fake.hang.is_set() and "two integers" not in prompt:
                    fake.release.wait(60)  # a slow endpoint: the answer comes after the client gave up
                text = (f"Here is my solution.\n{F}python\n{PROGRAM}{F}" if "two integers" in prompt
                        else "I am not sure.")
                data = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        return Handler

    def __enter__(self) -> FakeChat:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def chat() -> Iterator[FakeChat]:
    with FakeChat() as fake:
        yield fake


def problem() -> Problem:
    return make_problem("1", "introductory", index=0, question="You are given two integers.")


def test_openai_chat_sends_the_prompt_and_returns_the_text(chat: FakeChat, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    tool = PythonExec()
    opts = {"model": "m1", "base_url": chat.url, "api_key": "sk-test", "temperature": 0.2, "samples": 2}
    texts = openai_chat(agent_problem(problem(), tool, opts))
    tool.close()
    assert isinstance(texts, list) and len(texts) == 2 and PROGRAM in texts[0]
    req = chat.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["model"] == "m1" and req["temperature"] == 0.2
    assert req["messages"][0]["content"].startswith("QUESTION:\nYou are given two integers.")


def test_openai_chat_reads_the_environment_and_retries(chat: FakeChat, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", chat.url)
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    chat.fail_first = 1
    text = openai_chat(agent_problem(problem(), PythonExec(), {}))
    assert PROGRAM in text and len(chat.requests) == 2
    assert chat.requests[1]["model"] == "env-model" and chat.requests[1]["auth"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_MODEL")
    with pytest.raises(ChatError, match="no model"):
        openai_chat(agent_problem(problem(), PythonExec(), {}))


def test_pytest_run_with_the_chat_agent(pytester: pytest.Pytester, chat: FakeChat):
    args = ("--apps-dataset", "sample", "--apps-only", "900001,900003", "--apps-agent",
            "pytest_apps.agents:openai_chat", "--apps-model", "m1", "--apps-base-url", chat.url,
            "--apps-api-key", "sk-secret", "-p", "no:cacheprovider")
    run(pytester, *args)
    report = read_report(pytester)
    assert [p["verdict"] for p in report["problems"]] == ["pass", "no_code"]
    assert report["problems"][1]["raw"] == "I am not sure."
    assert "sk-secret" not in json.dumps(report)
    folder = pytester.path / "apps-generations" / "pytest_apps.agents_openai_chat-m1"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == ["900001.md", "900003.md"]
    assert len(chat.requests) == 2
    run(pytester, *args, "-n", "2")
    assert len(chat.requests) == 2  # the generations were reused


def test_generate_as_its_own_step(tmp_path: Path, chat: FakeChat):
    cmd = [sys.executable, "-m", "pytest_apps", "generate", "--rootdir", str(tmp_path), "--apps-dataset", "sample",
           "--apps-limit", "2", "--apps-agent", "pytest_apps.agents:openai_chat", "--apps-model", "m1",
           "--apps-base-url", chat.url, "--apps-concurrency", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "2 generated (0 failed), 0 reused" in done.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "0 generated (0 failed), 2 reused" in again.stdout and len(chat.requests) == 2
    bad = subprocess.run(cmd[:4] + ["--apps-dataset", "sample"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "give --apps-agent" in bad.stderr


def closed_port() -> int:
    """A local port nothing listens on (bound, then closed): a connection to it is refused at once."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_endpoint_is_named_in_the_terminal_and_asked_again(pytester: pytest.Pytester):
    """The chat agent against a closed local port: the reason (connection refused) in one line for the problem
    and counted in the summary, the problem without code, and the next run asks the endpoint again."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    args = ("--apps-dataset=sample", "--apps-only=900001", "--apps-agent=pytest_apps.agents:openai_chat",
            "--apps-model=m1", f"--apps-base-url={url}")
    first = run(pytester, *args)
    assert first.ret == 1
    first.stdout.fnmatch_lines([
        "apps: candidates * (0 with code);*",
        "APPS problem 900001: no code (*900001.md: generation failed: ChatError: "
        f"{url}/chat/completions: [[]Errno 111[]] Connection refused; its 5 tests did not run)",
        "generation failed for 1 problem (scored no code; the next run asks the agent again):",
        f"  900001: ChatError: {url}/chat/completions: [[]Errno 111[]] Connection refused",
    ])
    assert read_report(pytester)["summary"]["problems_with_code"] == 0
    with FakeChat() as chat:  # the endpoint is up now, at another address
        second = run(pytester, *args[:-1], f"--apps-base-url={chat.url}")
        assert len(chat.requests) == 1, second.stdout.str()[-2000:]


def test_a_missing_model_is_one_line_before_anything_runs(pytester: pytest.Pytester, chat: FakeChat, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    result = run(pytester, "--apps-dataset=sample", "--apps-agent=pytest_apps.agents:openai_chat",
                 f"--apps-base-url={chat.url}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --apps-agent=pytest_apps.agents:openai_chat: no model: give "
                                 "--apps-model=NAME or set OPENAI_MODEL"])
    assert chat.requests == [] and "no code" not in result.stdout.str()


BACKOFF = 1 + 2 + 4  # seconds one request waits between its four attempts (no Retry-After)


@pytest.mark.parametrize("down", ["refused", "503"])
def test_an_endpoint_that_is_down_stops_the_step_after_a_few_identical_failures(pytester: pytest.Pytester, down):
    """Six problems, one at a time, against a closed port or a server answering 503 without Retry-After: the
    first problem's request goes through its retries with backoff, the next two fail at their one attempt, and
    the step stops with one line naming the endpoint (not three or six problems' backoffs); the failures it saw
    are kept to be asked again."""
    with FakeChat() as chat:
        chat.fail_first, chat.retry_after = 10**6, None
        url = chat.url if down == "503" else f"http://127.0.0.1:{closed_port()}/v1"
        why = "HTTP 503: Service Unavailable" if down == "503" else "[[]Errno 111[]] Connection refused"
        started = time.monotonic()
        result = run(pytester, "--apps-dataset=sample", "--apps-agent=pytest_apps.agents:openai_chat",
                     "--apps-model=m1", f"--apps-base-url={url}", "--apps-concurrency=1")
        took = time.monotonic() - started
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --apps-agent: generation stopped: the agent failed the same way for 3 problems in a row (ChatError: "
        f"{url}/chat/completions: {why}); 3 problems were not asked. Fix the cause*"])
    assert len(chat.requests) == (4 + 1 + 1 if down == "503" else 0)
    assert took < 2 * BACKOFF, took  # the first problem's backoff and the run around it, not one per problem
    folder = pytester.path / "apps-generations" / "pytest_apps.agents_openai_chat-m1"
    assert len(list(folder.glob("*.md"))) == 3


def chat_run(chat: FakeChat) -> list[str]:
    """A pytest command generating the sample's six problems with the chat agent, three calls at once (with
    `chat.hang`, 900001's answer comes at once and the others' never)."""
    return [sys.executable, "-m", "pytest", *UNUSED_PLUGINS, "-p", "no:cacheprovider", "--apps-dataset=sample",
            "--apps-agent=pytest_apps.agents:openai_chat", "--apps-model=m1", f"--apps-base-url={chat.url}",
            "--apps-concurrency=3"]


SYS_TGKILL = 234  # x86-64


def signal_another_thread(pid: int, sig: int) -> None:
    """`sig` to one of the process's threads other than its main one (tgkill), as the kernel may deliver a signal
    sent to the whole process: there, Python's handler waits until the main thread runs."""
    import ctypes

    tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
    assert tids, "no thread besides the main one"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_TGKILL, pid, tids[-1], sig) != 0:
        raise OSError(ctypes.get_errno(), "tgkill")


def ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a job in the background


@pytest.mark.parametrize("to", ["process", "another-thread", "process-ignoring-sigint"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_during_generation_ends_at_once_and_keeps_what_came(tmp_path: Path, chat: FakeChat, sig, to):
    """Ctrl-C (SIGINT) or SIGTERM while requests hang (the agent's timeout is 600 s): the run ends within
    seconds, says what was generated, and keeps it (the next run asks only for the rest). Also when the signal
    reaches a thread of an agent call rather than the main one (the kernel picks the thread; CI saw a run that
    did not end), and when the run came with SIGINT ignored, as a job a shell starts in the background does (a CI
    runner's): the run takes SIGINT as its test loop does."""
    if to == "another-thread" and os.uname().machine != "x86_64":
        pytest.skip("tgkill's number is x86-64's here")
    chat.hang.set()
    proc = subprocess.Popen(chat_run(chat), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            preexec_fn=ignoring_sigint if to == "process-ignoring-sigint" else None)
    try:
        answer = tmp_path / "apps-generations" / "pytest_apps.agents_openai_chat-m1" / "900001.md"
        deadline = time.monotonic() + 60
        while not (answer.is_file() and len(chat.requests) >= 3) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert answer.is_file() and len(chat.requests) >= 3
        signalled = time.monotonic()
        if to != "another-thread":
            proc.send_signal(sig)
        else:
            signal_another_thread(proc.pid, sig)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # pytest's faulthandler prints where every thread is
            out, _ = proc.communicate(timeout=30)
            pytest.fail(f"the run did not end within 30 s of {sig.name}; its threads:\n{out[-6000:]}")
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert took < 10, (took, out[-2000:])
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-2000:]
    assert (f"apps: generation interrupted by {sig.name}: 0 reused, 1 generated, 5 not answered; what was generated "
            "is kept in") in out
    chat.hang.clear()
    chat.requests.clear()
    again = subprocess.run(chat_run(chat), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "apps: generations: 1 reused, 5 generated" in again.stdout, again.stdout[-2000:]
    assert len(chat.requests) == 5


def test_sigterm_to_the_generate_step_ends_it_at_once_with_what_it_kept(tmp_path: Path, chat: FakeChat):
    chat.hang.set()
    cmd = [sys.executable, "-m", "pytest_apps", "generate", "--rootdir", str(tmp_path), "--apps-dataset=sample",
           "--apps-agent=pytest_apps.agents:openai_chat", "--apps-model=m1", f"--apps-base-url={chat.url}",
           "--apps-concurrency=2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        answer = tmp_path / "apps-generations" / "pytest_apps.agents_openai_chat-m1" / "900001.md"
        deadline = time.monotonic() + 60
        while not (answer.is_file() and len(chat.requests) >= 2) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "generation interrupted by SIGTERM: 0 reused, 1 generated, 5 not answered" in err
    assert answer.is_file()
