"""A live Bolt/openCypher server for the Neo4j tests (the ``neo4j_live`` fixture).

``BIORAG_NEO4J_URI`` set: that server is used (user ``BIORAG_NEO4J_USER``, default ``neo4j``;
password in ``BIORAG_NEO4J_PASSWORD``); the tests DELETE what they write there, so point it at
a throwaway database. Unset: ArcadeDB embedded (PyPI ``arcadedb-embedded``, installed by
``make test``) is started on free loopback ports by ``scripts/arcadedb_bolt.py`` for the test
session and stopped after it. Neither available: the live tests skip and say why; ArcadeDB
installed but not starting is a failure.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from devkit.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 180.0


PASSWORD_ENV = "BIORAG_TEST_NEO4J_PASSWORD"  # the started server's; never the user's variable


@dataclass(frozen=True)
class LiveNeo4j:
    uri: str
    user: str
    password_env: str  # the NAME of the variable holding the password
    kind: str  # "external" | "arcadedb"

    @property
    def kw(self) -> dict[str, str]:
        """The store's keyword arguments: ``open_store(live.uri, "neo4j", **live.kw)``."""
        return {"user": self.user, "password_env": self.password_env}


def _missing() -> str | None:
    for module, package in (("neo4j", "neo4j"), ("arcadedb_embedded", "arcadedb-embedded")):
        try:
            __import__(module)
        except ImportError:
            return f"{package} is not installed (make graph-server)"
    return None


def start_arcadedb(root: Path, password: str) -> tuple[subprocess.Popen, str]:
    """Start scripts/arcadedb_bolt.py; the process and its Bolt URI (a test failure with the
    server's log when it does not come up)."""
    bolt, http = free_port(), free_port()
    log = root / "arcadedb.log"
    cmd = [sys.executable, str(ROOT / "scripts" / "arcadedb_bolt.py"), "--root", str(root)]
    cmd += ["--bolt-port", str(bolt), "--http-port", str(http), "--until-stdin-closes"]
    env = {**os.environ, "BIORAG_NEO4J_PASSWORD": password}
    with log.open("ab") as err:
        proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
        )
    ready: list[str] = []
    reader = threading.Thread(target=lambda: ready.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    line = ready[0].strip() if ready else ""
    if not line.startswith("ready "):  # installed but broken: a failure, not a skip
        proc.kill()
        tail = log.read_text(errors="replace")[-2000:]
        pytest.fail(f"ArcadeDB's Bolt server did not start in {START_TIMEOUT:.0f} s: {tail}")
    return proc, line.split(" ", 1)[1]


def live_neo4j(tmp_root: Path) -> Iterator[LiveNeo4j]:
    """The server of the module docstring, for the length of the test session."""
    uri = os.environ.get("BIORAG_NEO4J_URI")
    if uri:
        user = os.environ.get("BIORAG_NEO4J_USER", "neo4j")
        yield LiveNeo4j(uri, user, "BIORAG_NEO4J_PASSWORD", "external")
        return
    why = _missing()
    if why:
        pytest.skip(f"no Neo4j server to test against: BIORAG_NEO4J_URI is not set and {why}")
    password = secrets.token_hex(12)
    proc, uri = start_arcadedb(tmp_root, password)
    os.environ[PASSWORD_ENV] = password
    try:
        yield LiveNeo4j(uri, "root", PASSWORD_ENV, "arcadedb")
    finally:
        os.environ.pop(PASSWORD_ENV, None)
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
