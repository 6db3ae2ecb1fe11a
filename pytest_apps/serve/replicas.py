"""Replicas on a Ray cluster through Ray Serve: `python -m pytest_apps serve --ray`.

One replica per alive node (each the same application as a single server: its own executors, one per core of its
node, its queue, its deadline, its token check), and a Ray Serve HTTP proxy on every node, so that every node answers
on its own address at ``--host:--port``, as a trainer's per-node workers expect (verl's reward workers each call the
sandbox URL of their node). A request is served by a replica of the node whose proxy took it where there is one
(Ray Serve routes to the local replica first). Answers name the replica's node in ``executor_pod_name``.

SIGTERM or Ctrl-C deletes the application (each replica's executors stop with it) and stops Serve.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from ..core.wording import counted

APP_NAME = "pytest-apps-sandbox"
DEPLOYMENT = "sandbox"
PROXY_WAIT = 300.0  # seconds Serve's proxies get to start on a busy cluster


def node_name() -> str:
    """This process's node, as answers name it: its address and the start of its Ray node id."""
    import ray

    return f"{ray.util.get_node_ip_address()}/{ray.get_runtime_context().get_node_id()[:12]}"


def build_on_replica(settings: dict[str, Any]) -> Any:
    """The ASGI application of one replica, built where it runs (its executors on its node)."""
    from .app import application, server_of

    return application(server_of(settings, name=node_name()))


def application_on_ray(settings: dict[str, Any], replicas: int) -> Any:
    """The Ray Serve application: `replicas` replicas, at most one per node, each admitting as many requests as its
    own queue holds (its deadline answers 504, not Ray's backpressure)."""
    from ray import serve

    ingress = serve.ingress(lambda: build_on_replica(settings))()
    deployment = serve.deployment(name=DEPLOYMENT, num_replicas=replicas, max_replicas_per_node=1,
                                  max_ongoing_requests=settings["queue"] + (settings["workers"] or 256),
                                  ray_actor_options={"num_cpus": 0})(ingress)
    return deployment.bind()


def alive_nodes() -> int:
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))


def start_serve(host: str, port: int, proxies: str) -> None:
    """Start Serve's controller, with its proxies (`proxies`: ``EveryNode`` or ``HeadOnly``) on `host`:`port`.

    The controller gives a starting proxy a few seconds (5, then 5 more at each restart) before it kills and restarts
    it, and `serve.start` fails when the first proxy it waits for is killed: on a busy node that would end the
    command while the controller goes on. The start is then made once more (it finds the controller), and
    `wait_for_proxies` waits for the proxies."""
    import ray
    from ray import serve

    options = {"host": host, "port": port}
    try:
        serve.start(proxy_location=proxies, http_options=options)
    except (ray.exceptions.ActorDiedError, TimeoutError):
        serve.start(proxy_location=proxies, http_options=options)


def wait_for_proxies(count: int, wait: float = PROXY_WAIT) -> None:
    """Wait until `count` of Serve's proxies are healthy (Serve starts a node's proxy once a replica runs there, and
    may restart it while it starts), for up to `wait` seconds; TimeoutError saying which are not."""
    from ray import serve

    deadline = time.monotonic() + wait
    while True:
        status = {node: str(getattr(s, "value", s)) for node, s in serve.status().proxies.items()}
        if len(status) >= count and all(s == "HEALTHY" for s in status.values()):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{counted(count, 'proxy', 'proxies')} of Ray Serve were not healthy within {wait:g} "
                               f"s: {status or 'none started'}")
        time.sleep(0.5)


def deploy(settings: dict[str, Any], host: str, port: int, proxies: str = "EveryNode") -> int:
    """Start Serve's proxies (`proxies`: ``EveryNode`` or ``HeadOnly``) on `host`:`port` and run one replica per
    alive node on the Ray cluster this process is connected to, then wait for every proxy; returns the replicas."""
    from ray import serve

    replicas = alive_nodes()
    start_serve(host, port, proxies)
    serve.run(application_on_ray(settings, replicas), name=APP_NAME, route_prefix="/")
    wait_for_proxies(replicas if proxies == "EveryNode" else 1)
    return replicas


def serve_on_ray(settings: dict[str, Any], host: str, port: int, address: str) -> int:
    """`python -m pytest_apps serve --ray`: deploy, then wait for SIGTERM or Ctrl-C and take it all down."""
    import ray
    from ray import serve

    ray.init(address=address, log_to_driver=False)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        replicas = deploy(settings, host, port)
        print(f"serving on http://{host}:{port} of each of {counted(replicas, 'node')} (Ray Serve)", flush=True)
        stop.wait()
    finally:
        serve.delete(APP_NAME)
        serve.shutdown()
        ray.shutdown()
    return 0
