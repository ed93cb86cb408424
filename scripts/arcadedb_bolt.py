"""A local Bolt/openCypher server for biorag's Neo4j code: ArcadeDB embedded, loopback only.

    python scripts/arcadedb_bolt.py --root /tmp/arcadedb --bolt-port 7687

needs ``pip install arcadedb-embedded neo4j`` (``make graph-server``; ArcadeDB brings its own
Java runtime). The root password is read from the variable named by ``--password-env``
(``BIORAG_NEO4J_PASSWORD`` by default), so the same variable serves the server and biorag; the
user is ``root``. The database ``neo4j`` is created when missing, so the Neo4j drivers' default
database works. Prints ``ready bolt://127.0.0.1:PORT`` on stdout once the Bolt port accepts
connections, then serves until SIGTERM/SIGINT or until stdin closes (``--until-stdin-closes``,
which the test fixture uses so the server never outlives the tests).

It is a test and development server, not a deployment: a real Neo4j 5 (or ArcadeDB server) is.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="folder of the server's databases")
    ap.add_argument("--bolt-port", type=int, default=7687)
    ap.add_argument("--http-port", type=int, default=2480)
    ap.add_argument("--database", default="neo4j", help="created when missing")
    ap.add_argument("--password-env", default="BIORAG_NEO4J_PASSWORD")
    ap.add_argument("--heap", default="1g", help="the JVM's heap")
    ap.add_argument("--until-stdin-closes", action="store_true")
    a = ap.parse_args()
    password = os.environ.get(a.password_env)
    if not password or len(password) < 8:
        print(f"set {a.password_env} to the root password (8 characters at least)", file=sys.stderr)
        return 2
    try:
        import arcadedb_embedded as arcade
    except ImportError:
        print("arcadedb-embedded is not installed: pip install arcadedb-embedded", file=sys.stderr)
        return 2
    for port in (a.bolt_port, a.http_port):
        if _listening(port):
            print(f"port {port} on 127.0.0.1 is already taken: choose another", file=sys.stderr)
            return 2
    root = os.path.abspath(a.root)
    os.makedirs(root, exist_ok=True)
    os.chdir(root)  # ArcadeDB writes its log/ folder into the working directory
    server = arcade.ArcadeDBServer(
        root,
        root_password=password,
        config={
            "host": "127.0.0.1",
            "http_port": a.http_port,
            "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            "bolt_port": a.bolt_port,
        },
        jvm_kwargs={"heap_size": a.heap},
    )
    server.start()
    try:
        server.get_database(a.database)
    except arcade.ArcadeDBError:
        server.create_database(a.database)
    deadline = time.monotonic() + 60
    while not _listening(a.bolt_port):
        if time.monotonic() > deadline:
            print(f"the Bolt port {a.bolt_port} never opened", file=sys.stderr)
            server.stop()
            return 1
        time.sleep(0.2)
    print(f"ready bolt://127.0.0.1:{a.bolt_port}", flush=True)

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    if a.until_stdin_closes:
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    while not done.wait(0.5):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
