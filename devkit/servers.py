"""Starting real local servers (llama.cpp's llama-server, llama-cpp-python's server) for tests
and benchmarks.

``llama_server_binary()`` finds the binary built by ``scripts/build-llama-server.sh`` (or named
by ``BIORAG_LLAMA_SERVER``); :class:`LlamaServer` runs one on 127.0.0.1 with a free port, waits
for ``/health`` and stops it (also on kill, for failover tests).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = REPO / "scripts" / "build-llama-server.sh"


def wait_for_builds(timeout_s: float = 3600.0) -> None:
    """Under ``make test`` the servers are built in the background while the first tests run
    (scripts/test.sh); a test that needs one waits here until the builds are over (built or
    failed: the lookups below then say which). The wait is reported with the setup steps."""
    done = os.environ.get("BIORAG_TEST_BUILDS_DONE")
    if not done or Path(done).exists():
        return
    start = time.monotonic()
    print(f"\nwaiting for the background builds of scripts/test.sh ({done})", flush=True)
    while not Path(done).exists():
        if time.monotonic() - start > timeout_s:
            return  # the lookups then say what is missing
        time.sleep(2)
    waited = time.monotonic() - start
    times = os.environ.get("BIORAG_TEST_SETUP_TIMES")
    if times:
        with open(times, "a", encoding="utf-8") as f:
            f.write(json.dumps({"step": "tests waited for the builds", "seconds": round(waited, 1),
                                "rc": 0}) + "\n")  # fmt: skip


def llama_server_binary() -> tuple[Path | None, str]:
    """``(path, "")`` of a built llama-server, or ``(None, why not)``."""
    wait_for_builds()
    explicit = os.environ.get("BIORAG_LLAMA_SERVER")
    if explicit:
        p = Path(explicit)
        return (p, "") if p.is_file() else (None, f"BIORAG_LLAMA_SERVER={explicit} is no file")
    r = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    if r.returncode == 0 and r.stdout.strip():
        return Path(r.stdout.strip().splitlines()[-1]), ""
    return None, (r.stderr.strip() or "llama-server is not built") + (
        " (make test builds it; see docs/llm-servers.md)"
    )


def running(server: LlamaServer) -> Iterator[LlamaServer]:
    """A server fixture's body: wait until ``server`` is ready, yield it, stop it (also when
    the tests fail)."""
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def die_with_parent() -> None:
    """``preexec_fn`` of a test server: it gets SIGTERM when the process that started it dies
    (a killed pytest or benchmark leaves no server behind). Linux only; elsewhere a no-op."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """One llama-server process on 127.0.0.1 (``url`` is its ``/v1`` base URL)."""

    def __init__(
        self,
        binary: Path,
        model: Path,
        *,
        ctx: int = 4096,
        parallel: int = 2,
        embeddings: bool = False,
        extra: list[str] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.root = f"http://127.0.0.1:{self.port}"
        cmd = [
            str(binary),
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-c",
            str(ctx),
            "-np",
            str(parallel),
            "-t",
            "2",
            "--metrics",
            "--no-webui",
        ]
        if embeddings:
            # A whole chunk must fit one physical batch (the default 512 is below biorag's
            # 1,000-token chunks).
            cmd += ["--embeddings", "--pooling", "mean", "-b", str(ctx), "-ub", str(ctx)]
        cmd += extra or []
        self._start(cmd, log_path)

    #: what the errors call this server, and where it says it is ready
    label = "llama-server"

    def health_url(self) -> str:
        return self.root + "/health"

    def _start(self, cmd: list[str], log_path: Path | None) -> None:
        self.cmd = cmd
        self.log_path = log_path
        self._log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.label} exited with {self.proc.returncode}: {' '.join(self.cmd)}"
                    + (f" (log {self.log_path})" if self.log_path else "")
                )
            try:
                if httpx.get(self.health_url(), timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{self.label} not ready after {timeout_s}s")

    def metrics(self) -> dict[str, float]:
        """The Prometheus counters of ``/metrics`` (``llamacpp:`` prefix dropped)."""
        text = httpx.get(self.root + "/metrics", timeout=10).text
        out: dict[str, float] = {}
        for line in text.splitlines():
            m = re.match(r"llamacpp:(\w+)\s+([0-9.eE+-]+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out

    def settled_metrics(self, timeout_s: float = 15.0) -> dict[str, float]:
        """:meth:`metrics` once the server has nothing in flight and its counters stop moving:
        a stream closed early is counted when the server notices and releases the slot, which
        can come after the client has its answer."""
        deadline = time.monotonic() + timeout_s
        last = self.metrics()
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.metrics()
            if now.get("requests_processing", 0) == 0 and now == last:
                return now
            last = now
        return last

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._log is not subprocess.DEVNULL:
            self._log.close()


LCP_VERSION = "0.3.36"
LCP_BUILD_SCRIPT = REPO / "scripts" / "build-llama-cpp-python.sh"


def llama_cpp_python() -> tuple[Path | None, str]:
    """``(python, "")`` of the virtual environment that holds llama-cpp-python's server (built by
    ``scripts/build-llama-cpp-python.sh``, or named by ``BIORAG_LLAMA_CPP_PYTHON``), or
    ``(None, why not)``."""
    wait_for_builds()
    explicit = os.environ.get("BIORAG_LLAMA_CPP_PYTHON")
    if explicit:
        p = Path(explicit)
        return (p, "") if p.is_file() else (None, f"BIORAG_LLAMA_CPP_PYTHON={explicit} is no file")
    r = subprocess.run(
        ["bash", str(LCP_BUILD_SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    if r.returncode == 0 and r.stdout.strip():
        return Path(r.stdout.strip().splitlines()[-1]), ""
    return None, (r.stderr.strip() or "llama-cpp-python's server is not built") + (
        " (run scripts/build-llama-cpp-python.sh: under a minute over llama-server's libraries;"
        " see docs/llm-servers.md)"
    )


class LlamaCppPythonServer(LlamaServer):
    """llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) on 127.0.0.1:
    another server, with its own answers to structured output, than llama.cpp's own."""

    def __init__(
        self,
        python: Path,
        model: Path,
        *,
        ctx: int = 4096,
        log_path: Path | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.root = f"http://127.0.0.1:{self.port}"
        cmd = [
            str(python), "-m", "llama_cpp.server", "--model", str(model),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(ctx),
            "--n_threads", "2",
        ]  # fmt: skip
        self._start(cmd, log_path)

    label = "llama-cpp-python's server"

    def health_url(self) -> str:
        return self.url + "/models"

    def metrics(self) -> dict[str, float]:
        raise NotImplementedError("llama-cpp-python's server has no /metrics")
