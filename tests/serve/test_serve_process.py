"""``biorag serve`` as a process: the real embedder, a real index, HTTP on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("uvicorn")

BIORAG = [sys.executable, "-m", "biorag.cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_serve_answers_over_http_and_stops_cleanly(tmp_path):
    env = {**os.environ, "BIORAG_HOME": str(tmp_path / "home"), "BIORAG_PROGRESS": "0"}
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(d) + "\n"
            for d in [
                {"id": "31", "text": "Metformin lowers blood glucose in type 2 diabetes."},
                {"id": "32", "text": "Statins lower LDL cholesterol and heart attacks."},
            ]
        )
    )
    build = [*BIORAG, "index", "build", "--corpus", str(corpus), "--out", str(tmp_path / "idx")]
    subprocess.run(build, env=env, check=True, capture_output=True, timeout=600)
    exposed = [*BIORAG, "serve", "--index", str(tmp_path / "idx"), "--host", "0.0.0.0"]
    refused = subprocess.run(exposed, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "anyone on the network" in refused.stderr
    assert "(option --host)" in refused.stderr

    port = free_port()
    cmd = [*BIORAG, "serve", "--index", str(tmp_path / "idx"), "--port", str(port)]
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, Path(log.name).read_text()
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.5)
        r = httpx.post(f"{base}/v1/ask", json={"question": "What lowers blood glucose?"},
                       timeout=120)  # fmt: skip
        assert r.status_code == 200, r.text
        ans = r.json()
        assert ans["evidence"][0]["source_id"] == "31" and ans["sentences"]
        assert httpx.get(f"{base}/ready", timeout=10).json()["ready"] is True
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        log.close()
    assert code == 0 and "biorag serve stopped" in Path(log.name).read_text()
