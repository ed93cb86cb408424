"""A local Ray cluster on loopback for the executor tests (the ``ray_cluster`` fixture): a head
that offers no CPU and two worker nodes of one CPU each, every node a ``ray start --block``
process of this virtual environment's ``ray`` (``make test`` installs ``ray[data]``), each with
its own ports; stopped by terminating those processes (``ray stop`` would stop every Ray on the
machine). No Ray installed: the tests skip and say why; Ray installed but not starting is a
failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from devkit.servers import die_with_parent

START_TIMEOUT = 240.0  # a loaded 2-core machine: each `ray status` alone takes seconds
STORE_BYTES = 200 * 1024 * 1024


def _port_below_ephemeral() -> int:
    """A free port in 26000-31999: below Linux's ephemeral range (32768-60999), where Ray's
    own processes bind the ports nobody names, so a port chosen here is not taken by them."""
    import random
    import socket

    for _ in range(200):
        port = random.randint(26000, 31999)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 26000-31999")


def ray_command() -> tuple[str | None, str]:
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.data") is None:
        return None, "ray[data] is not installed (make test installs it: pip install 'ray[data]')"
    exe = Path(sys.executable).parent / "ray"
    found = str(exe) if exe.is_file() else shutil.which("ray")
    return (found, "") if found else (None, "no ray command beside this Python")


class RayCluster:
    """The head and ``workers`` one-CPU nodes; ``address`` is the head's GCS."""

    def __init__(self, ray: str, tmp: Path, workers: int = 2) -> None:
        import random

        self._worker_ranges = random.sample(range(20000, 26000, 1000), workers + 1)
        self.port = _port_below_ephemeral()
        self.address = f"127.0.0.1:{self.port}"
        self.log_path = tmp / "ray-nodes.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
               "RAY_AUTH_MODE": "disabled"}  # fmt: skip
        common = ["--node-ip-address=127.0.0.1", "--block", "--disable-usage-stats",
                  f"--object-store-memory={STORE_BYTES}"]  # fmt: skip
        head = [ray, "start", "--head", f"--port={self.port}", "--num-cpus=0",
                "--include-dashboard=false", f"--temp-dir={tmp / 'ray'}",
                f"--ray-client-server-port={_port_below_ephemeral()}", *self._ports(0),
                *common]  # fmt: skip
        self.procs = [self._start(head, env)]
        self.wait_ready(nodes=1)
        for w in range(1, workers + 1):  # one at a time: each binds its ports before the next
            node = [ray, "start", f"--address={self.address}", "--num-cpus=1", *self._ports(w),
                    *common]  # fmt: skip
            self.procs.append(self._start(node, env))
            self.wait_ready(nodes=1 + w)
        self.wait_ready(nodes=1 + workers)

    def _ports(self, node: int) -> list[str]:
        """Every port a node binds, its own: nodes on one host (and another test session's
        cluster beside this one) must not share any."""
        names = ("node-manager", "object-manager", "metrics-export", "dashboard-agent-grpc",
                 "dashboard-agent-listen", "runtime-env-agent")  # fmt: skip
        low = self._worker_ranges[node]
        return [f"--{n}-port={_port_below_ephemeral()}" for n in names] + [
            f"--min-worker-port={low}",
            f"--max-worker-port={low + 999}",
        ]

    def _start(self, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        return subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            preexec_fn=die_with_parent,
        )  # fmt: skip

    def wait_ready(self, nodes: int) -> None:
        """Until ``ray status`` at the head lists ``nodes`` live nodes."""
        deadline = time.monotonic() + START_TIMEOUT
        ray = Path(sys.executable).parent / "ray"
        while True:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"a Ray node exited with {p.returncode} ({self.log_path})")
            r = subprocess.run(
                [str(ray), "status", f"--address={self.address}"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            if r.returncode == 0 and r.stdout.count("node_") >= nodes:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"Ray cluster not ready: {r.stdout[-500:]} {r.stderr[-500:]}")
            time.sleep(1.0)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        self._log.close()


def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    ray, why = ray_command()
    if ray is None:
        print(f"\nRay tests skipped: {why}", file=sys.stderr)
        pytest.skip(why)
    # Ray 2.5x turns token authentication on for a head started where ~/.ray/auth_token exists
    # (any earlier local Ray writes one), and its clients then need the token: this loopback
    # test cluster, its driver and the CLI it runs opt out.
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    cluster = RayCluster(ray, tmp_path_factory.mktemp("ray"))
    try:
        yield cluster
    finally:
        cluster.stop()
        if before is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = before
