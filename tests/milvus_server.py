"""A live Milvus server for the Milvus tests (the ``milvus_live`` fixture).

``BIORAG_TEST_MILVUS_URI`` set: that server is used (the tests drop the collections they make).
Unset: milvus-lite (installed by ``make test`` through ``scripts/install-milvus-lite.sh`` into
its own cached environment) is started in server mode on a free loopback port with a data
directory of the test session, and stopped after it. Neither available, or no pymilvus client:
the tests skip and say why; milvus-lite installed but not starting is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.real_llm.servers import die_with_parent, free_port

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install-milvus-lite.sh"
START_TIMEOUT = 60.0


def milvus_lite_command() -> tuple[str | None, str]:
    """``(path, "")`` of the installed ``milvus-lite`` command, or ``(None, why not)``."""
    explicit = os.environ.get("BIORAG_MILVUS_LITE")
    if explicit:
        return (explicit, "") if Path(explicit).is_file() else (None, f"no file {explicit}")
    r = subprocess.run(["bash", str(SCRIPT), "--check"], capture_output=True, text=True)
    if r.returncode == 0 and r.stdout.strip():
        return r.stdout.strip().splitlines()[-1], ""
    return None, (r.stderr.strip() or "milvus-lite is not installed") + " (make test installs it)"


class MilvusLite:
    """``milvus-lite server`` on 127.0.0.1 and a free port (``uri`` is its address)."""

    def __init__(self, command: str, data_dir: Path) -> None:
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir.parent / "milvus-lite.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [command, "server", "--host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", str(data_dir)],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent,
        )  # fmt: skip

    def wait_ready(self) -> None:
        from pymilvus import MilvusClient

        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"milvus-lite exited with {self.proc.returncode} (log {self.log_path})"
                )
            try:
                MilvusClient(uri=self.uri, timeout=5).list_collections()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its write-ahead log keeps what it had
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._log.close()


def milvus_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The body of the ``milvus_live`` fixture: a Milvus server's URI for the session."""
    if importlib.util.find_spec("pymilvus") is None:
        pytest.skip("pymilvus is not installed (pip install 'biorag[milvus]'; make test does)")
    external = os.environ.get("BIORAG_TEST_MILVUS_URI")
    if external:
        yield external
        return
    command, why = milvus_lite_command()
    if command is None:
        pytest.skip(why)
    server = MilvusLite(command, tmp_path_factory.mktemp("milvus") / "data")
    try:
        server.wait_ready()
        yield server.uri
    finally:
        server.stop()
