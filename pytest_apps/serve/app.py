"""The HTTP application (Starlette, on uvicorn): the endpoints, the token check, and the body limits.

Endpoints: ``POST /run_code`` and ``POST /submit`` (SandboxFusion's, schema.py and judged.py), ``POST /judge`` (one
program, all its tests), ``GET /health`` (also SandboxFusion's ``GET /v1/ping``) and ``GET /metrics`` (Prometheus
text). Answers: 200 with the endpoint's JSON; 422 for a body that does not follow the schema, 400 for one that asks
what cannot be served (an unknown judge profile, a time limit over the server's longest), 413 for a body or a
test count over the limits, 401 without the token, 504 when no worker could start the request before its deadline
(what trainers' clients retry), 503 while the server stops.

With a token set, every endpoint but the health checks wants it, as ``Authorization: Bearer <token>`` or as the
first two parts of the path (``/token/<token>/run_code``: a client that can only be given a URL, as verl's is). It
is compared in constant time (digests of both compared with `hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.record import CaseRecord
from ..judge.profiles import DEFAULT_JUDGE
from ..executor import Limits
from .jobs import Judged, Served, files_refused, judged_job, limits_for, run_code_job, spec_of
from .judged import harness_failure, judge_answer, read_judge, read_submit, submit_answer
from .metrics import Metrics
from .pool import Busy, Closing, Pool, cores
from .schema import RequestError, read_run_code, run_code_response, sandbox_error, unsupported

OPEN_PATHS = ("/health", "/v1/ping")  # answered without the token: they tell only that the server is up
TOKEN_PREFIX = "/token/"


@dataclass
class Server:
    """What the application serves with: its limits, its executors, its figures, its token and body limit."""

    served: Served
    pool: Pool
    metrics: Metrics
    token: str | None = None
    max_body: int = 32 << 20
    grace: float = 5.0
    name: str | None = None  # what answers give as executor_pod_name (a replica's node)


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class Guard:
    """ASGI middleware: takes a token given in the path out of it, and refuses (401) a request without the token."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = None if token is None else digest(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = None
        if scope["path"].startswith(TOKEN_PREFIX):
            given, _, rest = scope["path"][len(TOKEN_PREFIX):].partition("/")
            scope = dict(scope, path="/" + rest, raw_path=("/" + rest).encode())
        if self.token is not None and scope["path"] not in OPEN_PATHS:
            if given is None:
                header = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
                given = header[len("Bearer "):] if header.startswith("Bearer ") else ""
            if not hmac.compare_digest(digest(given), self.token):
                await JSONResponse({"detail": "a token is required: Authorization: Bearer <token>, or the URL "
                                              "/token/<token>/..."}, 401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def read_json(request: Request, limit: int) -> Any:
    """The request's JSON body; RequestError 413 past `limit` bytes (before reading when its length says so), 422
    for a body that is not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(f"the body ({int(declared)} bytes) is over this server's {limit} (its --max-body)", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(f"the body is over this server's {limit} bytes (its --max-body)", 413)
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except ValueError as exc:
        raise RequestError(f"the body is not JSON ({exc})") from None


Handler = Callable[[Request, Server], Awaitable[Response]]


def endpoint(server: Server, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """`handler` with the answers every endpoint shares (errors, busy, stopping) and its figures counted."""

    async def answer(request: Request) -> Response:
        started = time.perf_counter()
        try:
            response = await handler(request, server)
        except RequestError as exc:
            response = JSONResponse({"detail": str(exc)}, exc.status)
        except Busy as exc:
            response = JSONResponse({"detail": f"busy: {exc}; try again"}, 504)
        except Closing as exc:
            response = JSONResponse({"detail": str(exc)}, 503)
        server.metrics.request(request.url.path, response.status_code, time.perf_counter() - started)
        return response

    return answer


async def run_code(request: Request, server: Server) -> Response:
    body = read_run_code(await read_json(request, server.max_body))
    why = unsupported(body)
    if why:
        return JSONResponse(sandbox_error(why))
    spec = spec_of(DEFAULT_JUDGE, server.served)  # /run_code: a program as a real program, judged by the client
    try:
        limits = limits_for(spec, server.served, body.run_timeout, body.memory_limit_mb)
    except RequestError as exc:
        return JSONResponse(sandbox_error(str(exc)))
    files = dict(body.files)
    why = files_refused(files, body.fetch_files, limits)
    if why:
        return JSONResponse(sandbox_error(why))
    outcome = await server.pool.run(run_code_job(body.code, body.stdin, limits, files, body.fetch_files),
                                    spec.preload, step_aside=True)
    server.metrics.ending(outcome.status)
    return JSONResponse({**run_code_response(outcome), "executor_pod_name": server.name})


async def judged(server: Server, work: Judged) -> list[CaseRecord]:
    """The records of `work`; Closing when the server stopped it before its tests were done."""
    records = await server.pool.run(judged_job(work, server.pool.stopping.is_set), work.spec.preload)
    if records is None:
        raise Closing("the server is stopping: the request's tests were not all run")
    server.metrics.tests(r.kind for r in records)
    return records


async def submit(request: Request, server: Server) -> Response:
    work, echo = read_submit(await read_json(request, server.max_body), server.served)
    records = await judged(server, work)
    failed = harness_failure(records)
    if failed:
        return JSONResponse({"detail": f"the sandbox failed (not the program): {failed}"}, 500)
    return JSONResponse(submit_answer(work, records, echo))


async def judge(request: Request, server: Server) -> Response:
    work = read_judge(await read_json(request, server.max_body), server.served)
    records = await judged(server, work)
    answer = {**judge_answer(work, records), "executor_pod_name": server.name}
    failed = harness_failure(records)
    if failed:
        answer.update(status="SandboxError", message=f"the sandbox failed (not the program): {failed}")
    return JSONResponse(answer)


async def health(request: Request, server: Server) -> Response:
    pool = server.pool
    state = {"status": "stopping" if pool.stopping.is_set() else "ok", "workers": pool.workers,
             "running": pool.running, "aside": pool.aside, "held": pool.held(),
             "parked": pool.parked(), "queue": pool.waiting,
             "executors": pool.executors()}
    if request.url.path == "/v1/ping":
        return PlainTextResponse("pong", 503 if pool.stopping.is_set() else 200)
    return JSONResponse(state, 503 if pool.stopping.is_set() else 200)


async def metrics(request: Request, server: Server) -> Response:
    pool = server.pool
    text = server.metrics.text(pool.waiting, pool.running, pool.workers, pool.faults,
                               aside=pool.aside, held=pool.held(), stepped=pool.stepped,
                               parked=pool.parked(), parks=pool.parks,
                               starts=(pool.cold_starts, pool.standby_starts),
                               beyond=(pool.beyond(), pool.went_beyond))
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


def application(server: Server) -> ASGIApp:
    """The ASGI application serving with `server`; its executors stop when the application shuts down."""

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        yield
        server.pool.close(server.grace)

    routes = [Route("/run_code", endpoint(server, run_code), methods=["POST"]),
              Route("/submit", endpoint(server, submit), methods=["POST"]),
              Route("/judge", endpoint(server, judge), methods=["POST"]),
              Route("/health", endpoint(server, health), methods=["GET"]),
              Route("/v1/ping", endpoint(server, health), methods=["GET"]),
              Route("/metrics", endpoint(server, metrics), methods=["GET"])]
    return Guard(Starlette(routes=routes, lifespan=lifespan), server.token)


def server_of(settings: dict[str, Any], name: str | None = None) -> Server:
    """The `Server` of `settings` (`cli.settings_of`'s), its executors not started; `name` is what its answers
    give as ``executor_pod_name``."""
    s = settings
    workers = s["workers"] or cores()
    served = Served(timeout=s["timeout"], memory=s["memory"], max_timeout=s["max_timeout"], max_tests=s["max_tests"],
                    judge=s["judge"])
    pool = Pool(workers, s["queue"], s["queue_timeout"], Limits(timeout=s["timeout"], memory=s["memory"]))
    return Server(served, pool, Metrics(), token=s["token"], max_body=s["max_body"], grace=min(s["drain"], 5.0),
                  name=name)
