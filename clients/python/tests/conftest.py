"""Fixtures: a real jetgate (the binary built from this repository) with its
embedded NATS server, on free ports, with its own data dir and token key."""

from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python"))

import jetgate  # noqa: E402

STREAM = "ORDERS"

# Each test has a consumer of its own on ORDERS, filtered to its own subject
# orders.<name>: fast ones (ack_wait 30s) and short ones (ack_wait 1s or 2s)
# for the expiry tests.
CONSUMERS = {
    "slow": "2s", "lease": "2s", "expired": "2s", "extendtok": "2s", "retry": "30s",
    "flow": "30s", "drain": "30s", "naks": "30s", "restart": "5s", "final": "30s",
    "basic": "30s", "aio": "30s", "explicit": "30s", "bench": "30s", "trace": "30s",
    "bytes": "30s", "merge": "2s", "restartx": "6s", "slowflow": "2s",
    "keep": "1s", "giveback": "30s", "keepsub": "2s", "givebacksub": "30s",
    "admin": "30s", "batchpub": "30s", "leases": "30s", "dlq": "30s", "pinned": "30s", "logs": "30s",
    "logdrop": "2s", "waits": "30s", "aioadmin": "30s",
    "seek": "30s", "seektime": "30s", "seekfloor": "30s",
    "pinsub": "30s", "pinagain": "30s", "groups": "30s",
    "cancelled": "30s", "exits": "30s", "drainacks": "30s", "drainextend": "1s",
    "closeinside": "30s", "aiocloseinside": "30s", "asynchandler": "30s", "closeonerror": "30s", "blip": "30s", "aioblip": "30s", "toolarge": "30s",
}

# Fields beyond ack_wait, max_ack_pending and the filter, by consumer.
EXTRA = {
    "dlq": "dead_letter: {subject: dead.dlq, on_term: true}",
    "pinned": "priority_groups: [main], priority_policy: pinned_client, priority_timeout: 2m",
    "pinsub": "priority_groups: [main], priority_policy: pinned_client, priority_timeout: 2m",
    "pinagain": "priority_groups: [main], priority_policy: pinned_client, priority_timeout: 2m",
    "groups": "priority_groups: [a, b], priority_policy: overflow",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout: float, what: str, every: float = 0.02):
    """Polls cond until it returns a true value (returned), or fails after timeout."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def config_yaml(data_dir: str, key_file: str, grpc_addr: str, http_addr: str, more: str = "", nats: str = "") -> str:
    """The gateway's file: ORDERS and DEAD, the consumers above, and more
    (top-level YAML) at the end. nats: the NATS it uses (nats://…), else the
    TCP listener of its embedded one, if any (for another replica)."""
    lines = [
        f'nats: {{url: "{nats}"}}' if nats.startswith("nats:") else f'embedded: {{data_dir: "{data_dir}", listen: "{nats}"}}',
        f'listen: {{grpc: "{grpc_addr}", http: "{http_addr}"}}',
        f'tokens: {{key_files: ["{key_file}"]}}',
        "streams:",
        '  - {name: ORDERS, subjects: ["orders.>"], allow_msg_ttl: true, allow_atomic: true}',
        '  - {name: DEAD, subjects: ["dead.>"]}',
        "consumers:",
    ]
    for name, wait in CONSUMERS.items():
        extra = f", {EXTRA[name]}" if name in EXTRA else ""
        lines.append(
            f'  - {{stream: ORDERS, name: {name}, ack_wait: {wait}, max_ack_pending: 20000, filter_subjects: ["orders.{name}"]{extra}}}'
        )
    return "\n".join(lines) + "\n" + more


class Gateway:
    """One jetgate process; restart() starts it again on the same ports, data
    dir and token key."""

    def __init__(self, binary: str, workdir: str, more: str = "", nats: str = "", key: str = "") -> None:
        self.binary = binary
        self.dir = workdir
        self.grpc = f"127.0.0.1:{free_port()}"
        self.http = f"127.0.0.1:{free_port()}"
        self.key = key or os.path.join(workdir, "token.key")
        if not key:
            with open(self.key, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
        self.config = os.path.join(workdir, "jetgate.yaml")
        with open(self.config, "w") as f:
            f.write(config_yaml(os.path.join(workdir, "data"), self.key, self.grpc, self.http, more, nats))
        self.proc: subprocess.Popen | None = None
        self.log = open(os.path.join(workdir, "jetgate.log"), "ab")

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--config", self.config, "--log-level", "warn"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        wait_for(self.ready, 30, f"jetgate /readyz on {self.http}", every=0.05)

    def ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"jetgate exited with {self.proc.returncode}; log in {self.log.name}")
        try:
            with urllib.request.urlopen(f"http://{self.http}/readyz", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def binary(tmp_path_factory):
    """The jetgate binary: $JETGATE_BIN, or built from the repository."""
    given = os.environ.get("JETGATE_BIN")
    if given:
        return given
    out = tmp_path_factory.mktemp("bin") / "jetgate"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/jetgate"], cwd=ROOT, check=True)
    return str(out)


def _gateway(binary, more: str = ""):
    d = tempfile.mkdtemp(prefix="jetgate-py-")
    gw = Gateway(binary, d, more)
    gw.start()
    return gw, d


@pytest.fixture(scope="session")
def gateway(binary):
    """A jetgate shared by the tests that do not stop it."""
    gw, d = _gateway(binary)
    yield gw
    gw.stop()
    shutil.rmtree(d, ignore_errors=True)


# Consumers through the API (test_seek.py): every stream and name, within
# bounds the tests stay inside.
ADMIN = 'admin: {streams: ["*"], consumers: ["*"]}\n'


@pytest.fixture
def replicas(binary):
    """Two jetgates on one NATS, the first's embedded one, sharing a token
    key and an admin block: a deployment's replicas. The second may be
    killed and restarted while NATS, and what it holds, stays."""
    d = tempfile.mkdtemp(prefix="jetgate-py-")
    os.mkdir(os.path.join(d, "second"))
    listen = f"127.0.0.1:{free_port()}"
    first = Gateway(binary, d, ADMIN, nats=listen)
    first.start()
    second = Gateway(binary, os.path.join(d, "second"), ADMIN, nats=f"nats://{listen}", key=first.key)
    second.start()
    yield first, second
    second.stop()
    first.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def own_gateway(binary):
    """A jetgate of the test's own, which it may kill and restart."""
    gw, d = _gateway(binary)
    yield gw
    gw.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def admin_gateway(binary):
    """A jetgate of the module's own whose admin block lets callers create,
    update and delete consumers: the shared one keeps exactly CONSUMERS."""
    gw, d = _gateway(binary, ADMIN)
    yield gw
    gw.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def client(gateway):
    c = jetgate.Client(gateway.grpc)
    yield c
    c.close()
