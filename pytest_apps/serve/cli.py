"""`python -m pytest_apps serve`: the options, the bind check, and the uvicorn server.

A bind address other than a loopback one is refused unless a token is set (``--token`` or
``$PYTEST_APPS_SERVE_TOKEN``; the variable keeps it out of the process list): the endpoints run any program they
are sent. The listening socket is bound before the server starts, so ``--port 0`` takes a free port, and the first
line printed names the address. SIGTERM (or Ctrl-C) stops taking connections, lets the requests in flight finish
for up to ``--drain`` seconds, then stops the executors (and whatever still runs in them).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import Any

from ..core.settings import DEFAULT_TIMEOUT, OptionError, parse_size
from ..core.wording import counted
from ..judge import profiles

TOKEN_VARIABLE = "PYTEST_APPS_SERVE_TOKEN"
MIN_TOKEN = 16  # characters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other needs a token)")
    add("--port", type=int, default=8080, help="port to listen on (default 8080; 0 takes a free one)")
    add("--workers", type=int, default=None, help="requests run at once, each on a warm executor of its own "
        "(default: one per core)")
    add("--token", default=None, help=f"the token every request but the health checks must give (default "
        f"${TOKEN_VARIABLE}); at least {MIN_TOKEN} characters")
    add("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds of a program's own time per test when a "
        f"judged request gives none (default {DEFAULT_TIMEOUT:g})")
    add("--max-timeout", type=float, default=60.0, help="the longest time limit a request may ask (default 60)")
    add("--memory", default=None, help="address-space limit per test when a request gives none: bytes or a size "
        "such as 4G (default $APPS_CALL_BASED_MEMORY_BYTES, else 4G; 0 = none)")
    add("--judge", default=profiles.DEFAULT_JUDGE, choices=profiles.names(),
        help="judge profile of a judged request that names none")
    add("--queue", type=int, default=1024, help="requests that may wait for a worker (default 1024; more get 504)")
    add("--queue-timeout", type=float, default=10.0, help="seconds a request may wait for a worker before it is "
        "answered 504, which clients retry (default 10)")
    add("--max-body", default="32M", help="largest request body (default 32M; larger get 413)")
    add("--max-tests", type=int, default=1000, help="most tests in one judged request (default 1000; more get 413)")
    add("--drain", type=float, default=10.0, help="seconds the requests in flight get to finish after SIGTERM")
    add("--ray", nargs="?", const="auto", default=None, metavar="ADDRESS", help="serve from replicas on the Ray "
        "cluster at ADDRESS (default: the one this machine belongs to) through Ray Serve, one per node, every node "
        "answering on --host:--port (needs ray[serve])")


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (an unresolvable name is not)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)


def checked(args: argparse.Namespace) -> str:
    """Why these options cannot serve ("" when they can), in one line naming the option."""
    if args.token is not None and len(args.token) < MIN_TOKEN:
        return f"--token: give at least {MIN_TOKEN} characters"
    if not args.token and not is_loopback(args.host):
        return (f"--host {args.host}: not a loopback address, and no token is set; anyone who reaches it could run "
                f"programs here: set --token (or ${TOKEN_VARIABLE}), or serve on 127.0.0.1")
    for name in ("workers", "queue", "max_tests"):
        value = getattr(args, name)
        if value is not None and value < 1:
            return f"--{name.replace('_', '-')}: {value}; give 1 or more"
    for name in ("timeout", "max_timeout", "queue_timeout"):
        if not getattr(args, name) > 0:
            return f"--{name.replace('_', '-')}: give a number of seconds above 0"
    return ""


def listening(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def settings_of(args: argparse.Namespace) -> dict[str, Any] | str:
    """The server's settings as plain values (what a replica elsewhere rebuilds the server from), or why these
    options cannot serve, in one line naming the option."""
    if args.token is None:
        args.token = os.environ.get(TOKEN_VARIABLE) or None
    why = checked(args)
    if why:
        return why
    from ..executor import default_memory

    try:
        memory = default_memory() if args.memory is None else parse_size(args.memory)
        max_body = parse_size(args.max_body)
    except (ValueError, OptionError) as exc:
        return f"--memory/--max-body: {exc}"
    return {"workers": args.workers, "timeout": args.timeout, "memory": memory, "max_timeout": args.max_timeout,
            "max_tests": args.max_tests, "judge": args.judge, "queue": args.queue, "queue_timeout": args.queue_timeout,
            "token": args.token, "max_body": max_body, "drain": args.drain}


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or Ctrl-C; 2 for options that cannot serve."""
    settings = settings_of(args)
    if isinstance(settings, str):
        print(f"error: {settings}", file=sys.stderr)
        return 2
    if args.ray:
        from .replicas import serve_on_ray

        return serve_on_ray(settings, args.host, args.port, args.ray)
    import uvicorn

    from .app import application, server_of

    server = server_of(settings)
    try:
        sock = listening(args.host, args.port)
    except OSError as exc:
        print(f"error: --host {args.host} --port {args.port}: cannot listen there ({exc.strerror or exc})",
              file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serving on http://{shown}:{port} ({counted(server.pool.workers, 'worker')})", flush=True)
    config = uvicorn.Config(application(server), log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=args.drain, timeout_keep_alive=30)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
