"""A dataset repository served on 127.0.0.1 the way the Hugging Face hub serves it, for offline tests.

The endpoints are the ones ``huggingface_hub`` (and ``datasets``, through it) call for a dataset repository:

* ``GET /api/datasets/<repo>[/revision/<rev>]``: repository info (commit ``sha``, file list ``siblings``);
* ``GET /api/datasets/<repo>/tree/<rev>[/<path>]``: a folder listing (``recursive`` honoured);
* ``POST /api/datasets/<repo>/paths-info/<rev>``: information on given paths;
* ``HEAD``/``GET /datasets/<repo>/resolve/<rev>/<path>``: a file, with ``X-Repo-Commit``, ``ETag`` and
  HTTP range requests (``206 Partial Content``), which is what streaming relies on.

Errors carry the hub's ``X-Error-Code`` header (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``), so
the client raises the same exceptions as against the real hub. Every request is recorded with the number of
body bytes sent, so a test can count what a run read.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Request:
    method: str
    path: str  # unquoted, without the query
    range: str | None
    sent: int  # body bytes


@dataclass
class Repo:
    refs: dict[str, str] = field(default_factory=dict)  # branch or ref name -> commit sha
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> {path: content}

    def resolve(self, rev: str) -> str | None:
        if rev in self.commits:
            return rev
        return self.refs.get(rev)


class FakeHub:
    """Use as a context manager; ``endpoint`` is the value for ``HF_ENDPOINT``."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None

    def add(self, repo_id: str, sha: str, files: dict[str, bytes], refs: tuple[str, ...] = ("main",)) -> None:
        repo = self.repos.setdefault(repo_id, Repo())
        repo.commits[sha] = dict(files)
        for ref in refs:
            repo.refs[ref] = sha

    # -- accounting -------------------------------------------------------------------------------------
    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    def file_requests(self) -> list[Request]:
        return [r for r in self.requests if "/resolve/" in r.path and r.method == "GET"]

    def bytes_sent(self, suffix: str = "") -> int:
        return sum(r.sent for r in self.file_requests() if r.path.endswith(suffix))

    # -- server -----------------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                hub._handle(self, "GET")

            def do_HEAD(self) -> None:  # noqa: N802
                hub._handle(self, "HEAD")

            def do_POST(self) -> None:  # noqa: N802
                hub._handle(self, "POST")

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    # -- routing ----------------------------------------------------------------------------------------
    def _handle(self, h: http.server.BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(h.path)
        path = url.path
        query = parse_qs(url.query)
        body = b""
        if method == "POST":
            body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        status, headers, payload = self._route(method, path, query, body, h.headers.get("Range"))
        send = payload if method != "HEAD" else b""
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        if "Content-Length" not in headers:
            h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        if send:
            h.wfile.write(send)
        with self._lock:
            self.requests.append(Request(method, unquote(path), h.headers.get("Range"), len(send)))

    def _route(self, method, path, query, body, range_header):
        m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(?:/revision/(.+))?", path)
        if m and method == "GET":
            return self._info(m.group(1), unquote(m.group(2) or "main"))
        m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
        if m and method == "GET":
            recursive = query.get("recursive", ["False"])[0].lower() == "true"
            return self._tree(m.group(1), unquote(m.group(2)), unquote(m.group(3) or ""), recursive)
        m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/paths-info/(.+)", path)
        if m and method == "POST":
            paths = parse_qs(body.decode()).get("paths", [])
            return self._paths_info(m.group(1), unquote(m.group(2)), paths)
        m = re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m and method in ("GET", "HEAD"):
            return self._file(m.group(1), unquote(m.group(2)), unquote(m.group(3)), range_header)
        return _error(404, "RepoNotFound", f"no route {method} {path}")

    def _commit(self, repo_id: str, rev: str):
        repo = self.repos.get(repo_id)
        if repo is None:
            return None, _error(404, "RepoNotFound", f"Repository {repo_id} not found")
        sha = repo.resolve(rev)
        if sha is None:
            return None, _error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return (sha, repo.commits[sha]), None

    def _info(self, repo_id: str, rev: str):
        found, err = self._commit(repo_id, rev)
        if err:
            return err
        sha, files = found
        doc = {
            "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
            "id": repo_id,
            "author": repo_id.split("/")[0],
            "sha": sha,
            "private": False,
            "gated": False,
            "disabled": False,
            "tags": [],
            "siblings": [{"rfilename": name} for name in sorted(files)],
        }
        return _json(doc)

    def _tree(self, repo_id: str, rev: str, folder: str, recursive: bool):
        found, err = self._commit(repo_id, rev)
        if err:
            return err
        _, files = found
        prefix = f"{folder.strip('/')}/" if folder.strip("/") else ""
        entries: dict[str, dict] = {}
        for name in sorted(files):
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix):].split("/")
            for depth in range(1, len(rest)):
                sub = prefix + "/".join(rest[:depth])
                if recursive or depth == 1:
                    entries.setdefault(sub, {"type": "directory", "oid": _oid(sub.encode()), "path": sub})
            if recursive or len(rest) == 1:
                entries[name] = _file_entry(name, files[name])
        if prefix and not entries:
            return _error(404, "EntryNotFound", f"{folder} does not exist")
        return _json(list(entries.values()))

    def _paths_info(self, repo_id: str, rev: str, paths: list[str]):
        found, err = self._commit(repo_id, rev)
        if err:
            return err
        _, files = found
        out = []
        for p in paths:
            p = p.strip("/")
            if p in files:
                out.append(_file_entry(p, files[p]))
            elif any(name.startswith(p + "/") for name in files):
                out.append({"type": "directory", "oid": _oid(p.encode()), "path": p})
        return _json(out)

    def _file(self, repo_id: str, rev: str, name: str, range_header: str | None):
        found, err = self._commit(repo_id, rev)
        if err:
            return err
        sha, files = found
        if name not in files:
            return _error(404, "EntryNotFound", f"{name} does not exist at {rev}", commit=sha)
        data = files[name]
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if range_header:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header.strip())
            if m:
                if m.group(1):
                    start = int(m.group(1))
                    end = min(int(m.group(2)), len(data) - 1) if m.group(2) else len(data) - 1
                else:  # suffix range: the last N bytes
                    start, end = max(0, len(data) - int(m.group(2))), len(data) - 1
                if start >= len(data):
                    headers["Content-Range"] = f"bytes */{len(data)}"
                    return 416, headers, b""
                headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                return 206, headers, data[start : end + 1]
        return 200, headers, data


def _oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _file_entry(name: str, data: bytes) -> dict:
    return {
        "type": "file",
        "oid": _oid(data),
        "size": len(data),
        "path": name,
        "lfs": {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134},
    }


def _json(doc) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()


def _error(status: int, code: str, message: str, commit: str | None = None) -> tuple[int, dict, bytes]:
    headers = {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message}
    if commit:
        headers["X-Repo-Commit"] = commit
    return status, headers, json.dumps({"error": message}).encode()


@contextmanager
def served(monkeypatch, home: Path, repo_id: str, sha: str, files: dict[str, bytes]) -> Iterator[FakeHub]:
    """`repo_id` at `sha` served on 127.0.0.1, and this process's hub client pointed at it with a cache of its own
    in `home` (for pytest runs started here, which inherit the environment)."""
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with FakeHub() as hub:
        hub.add(repo_id, sha, files)
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        yield hub


def run_isolated(home: Path, *args, offline: bool = True, endpoint: str | None = None, timeout: float = 60,
                 digest: bool = False):
    """open_rows(*args) in a fresh interpreter whose huggingface_hub sees only the cache in ``home``.

    With ``digest``, the rows come back as their ids and a digest of their JSON (see ``rows_digest``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_"))}
    env.update(HF_HOME=str(home), HF_HUB_CACHE=str(home / "hub"), HF_HUB_DISABLE_TELEMETRY="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    script = textwrap.dedent(
        """
        import hashlib, json, sys
        from pytest_apps.dataset.loading import open_rows, DatasetError
        dataset, split, revision, stop = json.loads(sys.argv[1])
        try:
            source, rows = open_rows(dataset, split, revision, stop=stop)
            rows = list(rows)
            if sys.argv[2] == "digest":
                text = json.dumps(rows, sort_keys=True).encode()
                out = {"ids": [r.get("problem_id") for r in rows], "digest": hashlib.sha256(text).hexdigest()}
            else:
                out = {"rows": rows}
            print(json.dumps({"source": source.to_dict(), **out}))
        except DatasetError as exc:
            print("DatasetError: " + str(exc))
        """
    )
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(list(args)), "digest" if digest else "rows"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out) if out.startswith("{") else out), elapsed
