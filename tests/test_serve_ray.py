"""`python -m pytest_apps serve --ray`: replicas through Ray Serve on a real two-node local Ray cluster
(`ray.cluster_utils.Cluster`), one replica per node, called over HTTP: each node's replica answers, with the
verdicts of a single server."""

from __future__ import annotations

import argparse
import json
import os
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'pytest-apps[ray]')")
pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install 'ray[serve]')")
pytest.importorskip("starlette", reason="the server needs the serve extra: pip install 'pytest-apps[serve]'")
from ray import serve  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from pytest_apps.serve.cli import add_arguments, settings_of  # noqa: E402
from pytest_apps.serve.replicas import deploy  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")

STORE = 80 * 1024 * 1024


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # the proxy spreads requests over both replicas (by default it prefers its own node's, the point of a proxy per
    # node; here the one proxy is the head node's, and each replica must be seen answering)
    os.environ["RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING"] = "0"
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": STORE,
                                                       "include_dashboard": False})
    c.add_node(num_cpus=1, object_store_memory=STORE)
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    try:
        yield c
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
            c.shutdown()
            os.environ.pop("RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING", None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def test_one_replica_per_node_each_answering(cluster: Cluster) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    settings = settings_of(parser.parse_args(["--workers", "1"]))
    port = free_port()
    assert deploy(settings, "127.0.0.1", port, proxies="HeadOnly") == 2
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                if json.loads(resp.read())["status"] == "ok":
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "the replicas did not answer"
        time.sleep(0.5)
    answers: list[dict[str, Any]] = []

    def call(i: int) -> None:
        answers.append(post(url + "/run_code", {"code": f"import time\ntime.sleep(0.2)\nprint({i} * 2)",
                                                "language": "python"}))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(int(a["run_result"]["stdout"]) for a in answers) == [2 * i for i in range(16)]
    assert all(a["status"] == "Success" for a in answers)
    nodes = {a["executor_pod_name"] for a in answers}
    assert len(nodes) == 2, nodes  # both nodes' replicas answered
    judged = post(url + "/judge", {"code": "print(int(input()) * 2)",
                                   "tests": {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "5\n"]}})
    assert [t["verdict"] for t in judged["tests"]] == ["pass", "wrong_answer"] and judged["executor_pod_name"] in nodes
