"""`python -m pytest_apps serve --ray`: replicas through Ray Serve on a real two-node local Ray cluster, one replica
per node, called over HTTP: each node's replica answers, with the verdicts of a single server. As root, the second
node has a network namespace and an address of its own, so that each node runs a proxy of its own on the same port,
as on a real cluster; otherwise both nodes share this machine's address (`ray.cluster_utils.Cluster`) and the head's
proxy reaches both replicas."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
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


class Nodes:
    """A two-node Ray cluster to deploy on: the address to connect to, the host each node's proxy answers on (None:
    only the head's proxy answers, on 127.0.0.1), and how to take it down."""

    def __init__(self, address: str, hosts: list[str] | None, close) -> None:
        self.address, self.hosts, self.close = address, hosts, close


def in_network_namespace(tmp: Path) -> Nodes:
    """The head node on one end of a veth pair and the other node in a network namespace of its own at the other
    end: two machines as far as Ray Serve can tell, each with its own address, so each runs a proxy on the same port
    (what `--ray` does on a real cluster). Each node is a `ray start --block` process of its own session, with a
    token of this test's own."""
    tag = f"pa{os.getpid() % 100000}"
    net = f"10.213.{os.getpid() % 250}"
    head_ip, node_ip = f"{net}.1", f"{net}.2"
    # (a cluster on an address other than loopback asks for a token by default; these addresses are reachable from
    # this machine only, as loopback is, and this process's Ray, already imported, reads its mode no more)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    procs: list[subprocess.Popen] = []

    def close() -> None:
        for proc in reversed(procs):  # (the node first, while its head is there to see it go: it then ends at once)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        subprocess.run(["ip", "netns", "del", tag], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{tag}h"], capture_output=True)

    try:
        for cmd in (["ip", "netns", "add", tag],
                    ["ip", "link", "add", f"{tag}h", "type", "veth", "peer", "name", f"{tag}n", "netns", tag],
                    ["ip", "addr", "add", f"{head_ip}/30", "dev", f"{tag}h"], ["ip", "link", "set", f"{tag}h", "up"],
                    ["ip", "-n", tag, "addr", "add", f"{node_ip}/30", "dev", f"{tag}n"],
                    ["ip", "-n", tag, "link", "set", f"{tag}n", "up"], ["ip", "-n", tag, "link", "set", "lo", "up"]):
            subprocess.run(cmd, check=True, capture_output=True)
        # (every port a node would otherwise take at a fixed default is a free one: another cluster of this
        # machine, such as an earlier test's still going away, may hold the defaults)
        ray_cli = [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", "--num-cpus=1",
                   f"--object-store-memory={STORE}", "--disable-usage-stats",
                   f"--dashboard-agent-listen-port={free_port()}"]
        port = free_port()
        head = ray_cli + ["--head", f"--node-ip-address={head_ip}", f"--port={port}", "--include-dashboard=false",
                          f"--ray-client-server-port={free_port()}", f"--temp-dir={tmp / 'h'}"]
        node = ["ip", "netns", "exec", tag] + ray_cli + [f"--address={head_ip}:{port}", f"--node-ip-address={node_ip}",
                                                         f"--temp-dir={tmp / 'n'}"]
        for name, cmd in (("head", head), ("node", node)):
            with open(tmp / f"{name}.log", "wb") as log:
                procs.append(subprocess.Popen(cmd, env=env, start_new_session=True, stdout=log,
                                              stderr=subprocess.STDOUT))
            if name == "head":
                listening(procs[0], (head_ip, port), tmp / "head.log")
    except BaseException:
        close()
        raise
    return Nodes(f"{head_ip}:{port}", [head_ip, node_ip], close)


def listening(proc: subprocess.Popen, address: tuple[str, int], log: Path, wait: float = 120.0) -> None:
    """Wait until the head node takes connections at `address` (its GCS); fail with its output if it ends first."""
    deadline = time.monotonic() + wait
    while True:
        if proc.poll() is not None:
            raise HeadLost(f"the head node ended (status {proc.returncode}) before listening: "
                           f"{log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(address, timeout=1):
            return
        if time.monotonic() > deadline:
            raise HeadLost(f"the head node did not listen on {address} within {wait:g} s: "
                           f"{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)


class HeadLost(Exception):
    """The head node of the namespaced cluster did not come up (Ray's own start-up limits, on a busy machine)."""


def started_in_network_namespace() -> Nodes:
    """`in_network_namespace` in a short folder of its own (Ray's socket paths under it must fit in 107 bytes, which
    pytest's temporary folders under xdist do not leave room for), made once more if its head did not come up; the
    test fails with the head's output if it does not come up twice."""
    for attempt in (1, 2):
        tmp = Path(tempfile.mkdtemp(prefix="pa-ray-"))
        try:
            nodes = in_network_namespace(tmp)
        except HeadLost as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if attempt == 2:
                pytest.fail(str(exc))
            continue
        close = nodes.close
        nodes.close = lambda: (close(), shutil.rmtree(tmp, ignore_errors=True))
        return nodes
    raise AssertionError("unreachable")


def in_this_machine() -> Nodes:
    """Two nodes sharing this machine's address (`ray.cluster_utils.Cluster`): only one proxy can take the port, so
    the head's proxy spreads requests over both replicas (by default it prefers its own node's)."""
    os.environ["RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING"] = "0"
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": STORE,
                                                       "include_dashboard": False})
    c.add_node(num_cpus=1, object_store_memory=STORE)
    return Nodes(c.address, None, c.shutdown)


def namespaces_refused() -> str:
    """Why this test cannot give the second node a network namespace ("" when it can)."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "no ip command (iproute2)"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    return "" if probe.returncode == 0 else f"unshare --net failed: {probe.stderr.strip()}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Nodes]:
    saved = os.environ.get("RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING")
    why = namespaces_refused()
    nodes = in_this_machine() if why else started_in_network_namespace()
    try:
        ray.init(address=nodes.address, log_to_driver=False)
        deadline = time.monotonic() + 120
        while sum(1 for n in ray.nodes() if n.get("Alive")) < 2:
            assert time.monotonic() < deadline, "the second node did not join"
            time.sleep(0.5)
        yield nodes
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
            nodes.close()
            if saved is None:
                os.environ.pop("RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING", None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict, token: str) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                if json.loads(resp.read())["status"] == "ok":
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer"
        time.sleep(0.5)


def answers_of(url: str, token: str, n: int) -> list[dict[str, Any]]:
    """`n` concurrent /run_code requests to `url`, each printing twice its number; checked, in order."""
    answers: dict[int, dict[str, Any]] = {}

    def call(i: int) -> None:
        answers[i] = post(url + "/run_code", {"code": f"import time\ntime.sleep(0.2)\nprint({i} * 2)",
                                              "language": "python"}, token)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [answers[i]["run_result"]["stdout"] for i in range(n)] == [f"{2 * i}\n" for i in range(n)]
    assert all(a["status"] == "Success" for a in answers.values())
    return list(answers.values())


def test_one_replica_per_node_each_answering(cluster: Nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a network namespace, each node's own proxy answers on its own address from its own node's replica;
    without, the head's proxy reaches both replicas. Either way the replicas judge as a single server does, and a
    first `serve.start` that fails after starting the controller (its proxy killed by the controller for starting
    slowly, as on a busy node) does not end the deployment."""
    real_start, starts = serve.start, []

    def start_and_lose_the_first_proxy(*args: Any, **kwargs: Any) -> None:
        starts.append(kwargs)
        real_start(*args, **kwargs)
        if len(starts) == 1:
            raise ray.exceptions.ActorDiedError()

    monkeypatch.setattr(serve, "start", start_and_lose_the_first_proxy)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    token = secrets.token_hex(16)
    settings = settings_of(parser.parse_args(["--workers", "1", "--token", token]))
    port = free_port()
    if cluster.hosts:
        assert deploy(settings, "0.0.0.0", port) == 2  # (a proxy on every node: the CLI's default)
        urls = [f"http://{host}:{port}" for host in cluster.hosts]
        names = set()
        for host, url in zip(cluster.hosts, urls):
            wait_healthy(url)
            answered = {a["executor_pod_name"] for a in answers_of(url, token, 8)}
            assert len(answered) == 1 and answered.pop().startswith(f"{host}/"), (host, answered)  # its own node's
            names.add(host)
        assert len(names) == 2
    else:
        assert deploy(settings, "127.0.0.1", port, proxies="HeadOnly") == 2
        urls = [f"http://127.0.0.1:{port}"]
        wait_healthy(urls[0])
        nodes = {a["executor_pod_name"] for a in answers_of(urls[0], token, 16)}
        assert len(nodes) == 2, nodes  # both nodes' replicas answered
    assert len(starts) == 2
    for url in urls:
        judged = post(url + "/judge", {"code": "print(int(input()) * 2)",
                                       "tests": {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "5\n"]}}, token)
        assert [t["verdict"] for t in judged["tests"]] == ["pass", "wrong_answer"]
        with pytest.raises(urllib.error.HTTPError, match="401"):
            post(url + "/run_code", {"code": "print(1)", "language": "python"}, "not-the-token")
