"""``biorag serve`` as a process for a test: started on a free loopback port and waited for,
then stopped by a signal."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from devkit.servers import free_port

BIORAG = [sys.executable, "-m", "biorag.cli.main"]


def start_serve(
    args: list[str], env: dict[str, str], log_path: Path, timeout: float = 120
) -> tuple[subprocess.Popen, str]:
    """Start ``biorag serve ARGS`` (its output appended to ``log_path``) and wait until it
    answers ``/health``; the process and its base URL. Fails with the log if it exits first."""
    port = free_port()
    cmd = [*BIORAG, "serve", *args, "--port", str(port)]
    with log_path.open("a") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        assert proc.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline, "the server did not come up"
        time.sleep(0.5)


def stop_serve(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
    """Send ``sig`` and wait for the exit code."""
    proc.send_signal(sig)
    return proc.wait(timeout=timeout)
