"""Bulk load into a Bolt/openCypher server: ``kg push`` throughput by batch size.

Builds a local KG of ``--triplets`` synthetic triplets (entity names drawn from a Zipf law over
``--entities`` names, 20 predicates, so entities repeat as in an extracted KG), starts ArcadeDB
embedded on loopback (scripts/arcadedb_bolt.py; or ``--uri`` for a server of yours, whose
``Entity`` nodes are DELETED) and, for each ``--batch-sizes``, empties the server and pushes the
whole KG (:func:`biorag.kg.push.push_kg`), then pushes it again with ``restart`` (every triplet a
duplicate: the MERGE path when nothing is new) and once more without (the checkpoint: nothing
to send)::

    python benchmarks/bench_neo4j_push.py --triplets 100000 --batch-sizes 500,2000,5000

``--compare-merge N`` also loads the first N triplets the way the store wrote before: one
``MERGE`` of the relation pattern per row, whose cost grows with the degree of its end nodes on
this server, against today's key lookup and ``CREATE`` (same batches, same server, one run).

Results: benchmarks/results/neo4j_push.json; the table is in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devkit.servers import free_port  # noqa: E402

from biorag.kg import Triplet, open_store  # noqa: E402
from biorag.kg.push import push_kg  # noqa: E402

PREDICATES = [f"relation {i}" for i in range(20)]
PASSWORD_ENV = "BENCH_NEO4J_PASSWORD"


def build_local(path: Path, n: int, n_entities: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    s = rng.zipf(1.3, n) % n_entities
    o = rng.zipf(1.3, n) % n_entities
    p = rng.integers(0, len(PREDICATES), n)
    t0 = time.perf_counter()
    with open_store(path) as store:
        for start in range(0, n, 50_000):
            store.add_triplets(
                Triplet(
                    subject=f"entity {s[i]}",
                    predicate=PREDICATES[p[i]],
                    object=f"entity {o[i]}",
                    source_id=f"doc{i // 10}",
                )
                for i in range(start, min(n, start + 50_000))
            )
        stored = store.count_triplets()
    took = time.perf_counter() - t0
    print(f"local KG: {stored} unique triplets in {took:.1f} s", file=sys.stderr)
    return stored


def start_arcadedb(root: Path, heap: str) -> tuple[subprocess.Popen, str]:
    bolt, http = free_port(), free_port()
    cmd = [sys.executable, str(ROOT / "scripts" / "arcadedb_bolt.py"), "--root", str(root)]
    cmd += ["--bolt-port", str(bolt), "--http-port", str(http), "--heap", heap]
    cmd += ["--password-env", PASSWORD_ENV, "--until-stdin-closes"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("ready "):
        proc.kill()
        raise SystemExit(f"ArcadeDB did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


OLD_MERGE_RELATIONS = """
UNWIND $rows AS row
MATCH (s:Entity {key: row.s}), (o:Entity {key: row.o})
MERGE (s)-[r:RELATION {predicate_key: row.pk}]->(o)
ON CREATE SET r.predicate = row.p, r.source_id = row.src, r.model = row.model, r.seq = row.seq
"""


def compare_merge(kg: Path, n: int, uri: str, kw: dict, batch_size: int) -> dict:
    """Seconds to load the first ``n`` triplets by the old pattern MERGE and by the store."""
    from itertools import islice

    from biorag.kg.models import normalize_key
    from biorag.kg.stores.flat_neo4j import MERGE_ENTITIES, Neo4jKGStore

    with open_store(kg) as local:
        triplets = list(islice(local.iter_triplets(), n))
    out = {"triplets": len(triplets), "batch_size": batch_size}
    with Neo4jKGStore(uri, **kw) as s:
        s.clear()
        t0 = time.perf_counter()
        for b in range(0, len(triplets), batch_size):
            batch = triplets[b : b + batch_size]
            ents = {normalize_key(x): x for t in batch for x in (t.subject, t.object)}
            rows = [{"key": k, "name": v, "seq": i} for i, (k, v) in enumerate(ents.items())]
            s._run(MERGE_ENTITIES, rows=rows)
            rels = [
                {"s": normalize_key(t.subject), "o": normalize_key(t.object), "seq": b + i,
                 "pk": normalize_key(t.predicate), "p": t.predicate, "src": "", "model": ""}
                for i, t in enumerate(batch)
            ]  # fmt: skip
            s._run(OLD_MERGE_RELATIONS, rows=rels)
        out["pattern_merge_seconds"] = round(time.perf_counter() - t0, 3)
        out["pattern_merge_stored"] = s.count_triplets()
        s.clear()
    with Neo4jKGStore(uri, batch_size=batch_size, **kw) as s:
        t0 = time.perf_counter()
        s.add_triplets(triplets)
        out["key_lookup_seconds"] = round(time.perf_counter() - t0, 3)
        out["key_lookup_stored"] = s.count_triplets()
    print(json.dumps(out), file=sys.stderr)
    return out


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triplets", type=int, default=100_000)
    ap.add_argument("--entities", type=int, default=None, help="default: triplets / 4")
    ap.add_argument("--batch-sizes", default="500,2000,5000")
    ap.add_argument("--uri", default=None, help="a server of yours (user --user)")
    ap.add_argument("--user", default="neo4j")
    ap.add_argument("--heap", default="2g", help="ArcadeDB's JVM heap")
    ap.add_argument("--compare-merge", type=int, default=0, metavar="N")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/neo4j_push.json")
    a = ap.parse_args()
    sizes = [int(x) for x in a.batch_sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-push-") as tmp:
        kg = Path(tmp) / "kg"
        local = build_local(kg, a.triplets, a.entities or max(1, a.triplets // 4))
        proc = None
        if a.uri:
            uri, user, pw_env = a.uri, a.user, "BIORAG_NEO4J_PASSWORD"
        else:
            os.environ[PASSWORD_ENV] = secrets.token_hex(12)
            proc, uri = start_arcadedb(Path(tmp) / "arcadedb", a.heap)
            user, pw_env = "root", PASSWORD_ENV
        rows = []
        compared = None
        try:
            from biorag.kg.stores.flat_neo4j import Neo4jKGStore

            if a.compare_merge:
                creds = {"user": user, "password_env": pw_env}
                compared = compare_merge(kg, a.compare_merge, uri, creds, sizes[0])

            for bs in sizes:
                with Neo4jKGStore(uri, user=user, password_env=pw_env) as s:
                    s.clear()
                kw = {"user": user, "password_env": pw_env, "batch_size": bs}
                first = push_kg(kg, uri, restart=True, **kw)
                dup = push_kg(kg, uri, restart=True, **kw)
                resumed = push_kg(kg, uri, **kw)
                row = {
                    "batch_size": bs,
                    "triplets": first.pushed,
                    "entities": first.server_entities,
                    "seconds": first.seconds,
                    "triplets_per_s": round(first.triplets_per_s),
                    "all_duplicates_seconds": dup.seconds,
                    "all_duplicates_per_s": round(dup.triplets_per_s),
                    "duplicates_stored": dup.added,
                    "resume_seconds": resumed.seconds,
                    "resume_pushed": resumed.pushed,
                    "server_triplets": first.server_triplets,
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
        finally:
            server_rss = peak_rss_mb(proc.pid) if proc else None
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()
                proc.wait(timeout=120)
    result = {
        "command": "python benchmarks/bench_neo4j_push.py " + " ".join(sys.argv[1:]),
        "server": "external " + uri if a.uri else f"ArcadeDB embedded (heap {a.heap})",
        "local_triplets": local,
        "server_peak_rss_mb": server_rss,
        "rows": rows,
        "compare_merge": compared,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
