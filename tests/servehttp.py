"""A real `python -m pytest_apps serve` process on 127.0.0.1 and a plain HTTP client (urllib) for the server tests."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the server needs the serve extra: pip install 'pytest-apps[serve]'")
pytest.importorskip("uvicorn", reason="the server needs the serve extra: pip install 'pytest-apps[serve]'")


class Server:
    """`python -m pytest_apps serve --port 0 ARGS` started, its address read from its first line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "pytest_apps", "serve", "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else ""
        found = re.search(r"http://\S+", line)
        if not found:
            self.proc.kill()
            raise AssertionError(f"the server did not start: {line!r} {self.proc.stderr.read()}")
        self.url = found.group(0)

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                raw: bytes | None = None, timeout: float = 120) -> tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, text = resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def post(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return self.request("POST", path, body, **kw)

    def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return self.request("GET", path, **kw)

    def run_code(self, code: str, stdin: str | None = None, **more: Any) -> dict[str, Any]:
        status, answer = self.post("/run_code", {"code": code, "language": "python", "stdin": stdin, **more})
        assert status == 200, answer
        return answer

    def stop(self, wait: float = 30) -> float:
        """SIGTERM, then the seconds it took to exit."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return time.monotonic() - started


def descendants(pid: int) -> list[int]:
    """Every living process below `pid`."""
    out, todo = [], [pid]
    while todo:
        here = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{here}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{here}/task/{tid}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                kids = []
            out += kids
            todo += kids
    return out
