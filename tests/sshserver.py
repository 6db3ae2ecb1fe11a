"""A throw-away OpenSSH server on 127.0.0.1 for the tests, whose sessions share no temporary files with the
test process: it runs in a mount namespace of its own, with an empty tmpfs on /tmp (and on xdist's default
remote folder, ~/pyexecnetcache), while the controller keeps its /tmp. A remote worker therefore cannot
read anything the controller keeps under /tmp (its pytester folder, the dataset copy, the candidates, the
plan folder, the index cache), as on another machine.

Made for each test module that needs it: a host key and a client key of its own, a free high port, an
ssh_config with the alias `testhost`, and `SetEnv PYTHONPATH` so that the sessions' Python imports the
pytest-apps under test (a machine "with pytest-apps installed"). Its files live under /var/tmp, since the
server reads them after its /tmp is replaced. Needs root (a mount namespace and a tmpfs), `unshare` and
OpenSSH (`.ci/run` installs it); `start()` raises `Unavailable` with the reason where any of that is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest_apps
from conftest import descendants_of

SSHD = "/usr/sbin/sshd"
ALIAS = "testhost"
# In the server's own mount namespace: a fresh /tmp and ~/pyexecnetcache (xdist's default remote folder),
# then the server itself (sshd re-executes itself by absolute path). "$1" is the folder of the pytest-apps under
# test when it lies under /tmp (a clone made with mktemp): it stays visible at its own path, as an installed
# package would be, through a bind mount held in "$2" while the fresh /tmp is mounted; empty otherwise.
NAMESPACE_SCRIPT = (
    'keep="$1"; hold="$2"; shift 2; '
    'if [ -n "$keep" ]; then mount --bind "$keep" "$hold" || exit 1; fi; '
    'mount -t tmpfs -o mode=1777 tmpfs /tmp || exit 1; '
    'if [ -n "$keep" ]; then mkdir -p "$keep" && mount --bind "$hold" "$keep" || exit 1; fi; '
    'mkdir -p "$HOME/pyexecnetcache" && mount -t tmpfs -o mode=700 tmpfs "$HOME/pyexecnetcache" && exec "$@"'
)


class Unavailable(Exception):
    """The machine cannot run the test server; the message says why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SshServer:
    def __init__(self) -> None:
        self.dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def config(self) -> Path:
        assert self.dir is not None
        return self.dir / "ssh_config"

    def start(self, timeout: float = 20.0) -> SshServer:
        missing = [tool for tool in (SSHD, "ssh", "ssh-keygen", "unshare") if shutil.which(tool) is None]
        if missing:
            raise Unavailable(f"{', '.join(missing)} not found: OpenSSH and util-linux are needed (.ci/run installs "
                              "openssh-server and openssh-client)")
        if os.geteuid() != 0:
            raise Unavailable("the test sshd runs in a private mount namespace with its own /tmp, which needs root")
        self.dir = Path(tempfile.mkdtemp(prefix="pytest-apps-sshd-", dir="/var/tmp"))
        self.port = free_port()
        self._write_files()
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        check = subprocess.run([SSHD, "-t", "-f", str(self.dir / "sshd_config")], capture_output=True, text=True,
                               check=False)
        if check.returncode != 0:
            raise Unavailable(f"sshd rejects the test configuration: {check.stderr.strip()}")
        with open(self.dir / "sshd.log", "wb") as log:
            self.process = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SCRIPT, "sh",
                 str(_package_parent()) if _under_tmp(_package_parent()) else "", str(self.dir / "package"),
                 SSHD, "-D", "-e", "-f", str(self.dir / "sshd_config")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                text = self.log()
                self.stop()
                if "unshare" in text or "mount" in text:
                    raise Unavailable(f"cannot give the test sshd a private /tmp: {text.strip()[-300:]}")
                raise RuntimeError(f"the test sshd exited at once: {text.strip()[-500:]}")
            if self.ssh("true", timeout=5).returncode == 0:
                return self
            time.sleep(0.1)
        text = self.log()
        self.stop()
        raise RuntimeError(f"the test sshd did not accept a login in {timeout:g} s: {text.strip()[-500:]}")

    def _write_files(self) -> None:
        assert self.dir is not None
        d = self.dir
        os.chmod(d, 0o700)
        (d / "package").mkdir()  # where the namespace holds the package under test while /tmp is replaced
        for key, comment in (("host_key", "pytest-apps-test-host"), ("client_key", "pytest-apps-test-client")):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(d / key)],
                           check=True, capture_output=True)
        shutil.copy(d / "client_key.pub", d / "authorized_keys")
        host_key = (d / "host_key.pub").read_text().split()[:2]
        (d / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {' '.join(host_key)}\n")
        user = _user()
        # the pytest-apps under test, as the remote side's installed one
        package_parent = _package_parent()
        (d / "sshd_config").write_text(
            f"ListenAddress 127.0.0.1\nPort {self.port}\nHostKey {d / 'host_key'}\n"
            f"PidFile {d / 'sshd.pid'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
            "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            f"PermitRootLogin prohibit-password\nAllowUsers {user}\nUsePAM no\nStrictModes no\n"
            "PermitUserEnvironment no\nX11Forwarding no\nPrintMotd no\nPrintLastLog no\nUseDNS no\n"
            "MaxStartups 100:30:200\nMaxSessions 100\nLogLevel INFO\n"
            f"SetEnv PYTHONPATH={package_parent}\n"
        )
        (d / "ssh_config").write_text(
            f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {self.port}\n  User {user}\n"
            f"  IdentityFile {d / 'client_key'}\n  IdentitiesOnly yes\n  UserKnownHostsFile {d / 'known_hosts'}\n"
            "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n"
            "  ControlMaster no\n  ConnectTimeout 10\n  ServerAliveInterval 15\n"
        )
        os.chmod(d / "ssh_config", 0o600)

    def ssh(self, command: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run a shell command on the test host."""
        return subprocess.run(["ssh", "-F", str(self.config), ALIAS, command], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)

    def not_the_package(self, entries: list[str]) -> list[str]:
        """`find` entries relative to /tmp, less the pytest-apps under test kept visible there (when it lies under
        /tmp): it is the host's installed package, not something a run left."""
        package = _package_parent()
        if not _under_tmp(package):
            return entries
        top = "./" + package.relative_to("/tmp").parts[0]
        return [e for e in entries if e != top and not e.startswith(top + "/")]

    def sessions(self) -> list[int]:
        """Every process the server started (its sessions and what they run), by pid."""
        if self.process is None:
            return []
        return sorted(descendants_of(self.process.pid))

    def log(self) -> str:
        try:
            return (self.dir / "sshd.log").read_text(errors="replace") if self.dir else ""
        except OSError:
            return ""

    def stop(self) -> None:
        """End the server and everything it started (by pid), and remove its files."""
        if self.process is not None:
            pids = [self.process.pid, *descendants_of(self.process.pid)]
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in pids:
                    _signal(pid, sig)
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            self.process = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def _package_parent() -> Path:
    """The folder that holds the pytest-apps under test."""
    return Path(pytest_apps.__file__).resolve().parent.parent


def _under_tmp(path: Path) -> bool:
    return path == Path("/tmp") or Path("/tmp") in path.parents


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass

