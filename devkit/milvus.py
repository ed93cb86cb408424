"""milvus-lite in server mode on a free loopback port, for tests and benchmarks.

``milvus_lite_command()`` finds the ``milvus-lite`` command installed by
``scripts/install-milvus-lite.sh`` (or named by ``BIORAG_MILVUS_LITE``); :class:`MilvusLite`
runs it with a data directory, waits until a client can list collections and stops it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from devkit.servers import die_with_parent, free_port

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
