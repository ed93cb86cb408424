"""Load on ``biorag serve`` over loopback: N asks, C at a time, against a served index.

Starts ``biorag serve`` as a process on the demo index (built first if missing, from the bundled
PubMedQA sample), sends ``--asks`` POST /v1/ask requests with ``--concurrency`` in flight, and
reports errors, latency percentiles and throughput; then checks the index still answers the
same as before the load (its document and chunk counts, and the top hit of a probe query)::

    python benchmarks/bench_serve.py --asks 200 --concurrency 16 --method claims

With ``--add-docs N`` a job adds N generated documents through ``POST /v1/documents`` while
the asks run; afterwards the index must hold every document once, all embedded, the new ones
searchable, and the probe query's top hit unchanged.

The ask slots default to the concurrency; with ``--slots`` fewer, the server refuses the extra
asks with 503 and the client retries each after its ``Retry-After`` (latency includes the wait).
Results: benchmarks/results/serve_load.json; the table is in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
BIORAG = [sys.executable, "-m", "biorag.cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def demo_questions() -> list[dict]:
    path = ROOT / "src" / "biorag" / "demo" / "data" / "questions.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def generated_docs(n: int) -> bytes:
    return "".join(
        json.dumps({"id": f"bench-{i}", "text": f"Compound BX-{i} inhibits kinase K{i % 37} in "
                    f"cell line C{i % 11}; a dose of {i} mg reduced tumour growth in mice."}) + "\n"
        for i in range(n)
    ).encode()  # fmt: skip


async def add_job(client: httpx.AsyncClient, base: str, n: int) -> dict:
    """Upload ``n`` documents and follow their job to its end."""
    started = time.perf_counter()
    files = {"files": ("bench.jsonl", generated_docs(n))}
    r = await client.post(f"{base}/v1/documents", files=files)
    r.raise_for_status()
    job_id = r.json()["id"]
    while True:
        job = (await client.get(f"{base}/v1/jobs/{job_id}")).json()
        if job["status"] in ("done", "failed"):
            break
        await asyncio.sleep(0.5)
    report = job["report"] or {}
    kept = ("documents_new", "documents_total", "chunks_embedded")
    return {
        "documents": n,
        "status": job["status"],
        "error": job["error"],
        "seconds": round(time.perf_counter() - started, 2),
        "report": {k: report.get(k) for k in kept},
    }


async def load(base: str, asks: int, concurrency: int, method: str, add_docs: int = 0) -> dict:
    questions = demo_questions()
    latencies: list[float] = []
    codes: dict[int, int] = {}
    queue = iter(range(asks))

    async def worker(client: httpx.AsyncClient) -> None:
        for i in queue:
            q = questions[i % len(questions)]
            body = {"question": q["question"], "options": q["options"], "method": method}
            start = time.perf_counter()
            while True:  # a polite client: a 503 is retried after its Retry-After
                r = await client.post(f"{base}/v1/ask", json=body)
                codes[r.status_code] = codes.get(r.status_code, 0) + 1
                if r.status_code != 503:
                    break
                await asyncio.sleep(float(r.headers.get("retry-after", "1")))
            latencies.append(time.perf_counter() - start)

    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=600) as client:
        job = asyncio.create_task(add_job(client, base, add_docs)) if add_docs else None
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - started
        added = await job if job is not None else None
    latencies.sort()
    return {
        "asks": asks,
        "concurrency": concurrency,
        "method": method,
        "status_codes": {str(k): v for k, v in sorted(codes.items())},  # 503s were retried
        "errors": sum(v for k, v in codes.items() if k >= 500 and k != 503),
        "p50_s": round(statistics.median(latencies), 3),
        "p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 3),
        "max_s": round(latencies[-1], 3),
        "wall_s": round(wall, 2),
        "asks_per_s": round(asks / wall, 2),
        **({"add_job": added} if added is not None else {}),
    }


def probe(base: str) -> dict:
    r = httpx.post(f"{base}/v1/retrieve", json={"query": "statins mortality", "k": 1}, timeout=60)
    top = r.json()["passages"][0]
    listed = httpx.get(f"{base}/v1/documents", params={"limit": 1}, timeout=60).json()
    return {"top_chunk": top["chunk_id"], "ready": httpx.get(f"{base}/ready").json(),
            "documents": listed["total"], "states": listed["states"]}  # fmt: skip


def new_documents_found(base: str, n: int) -> bool:
    """Whether the last added document is the top hit for its own words."""
    q = {"query": f"Compound BX-{n - 1} kinase K{(n - 1) % 37}", "k": 1, "retriever": "bm25"}
    top = httpx.post(f"{base}/v1/retrieve", json=q, timeout=60).json()["passages"][0]
    return bool(top["source_id"] == f"bench-{n - 1}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--asks", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--slots", type=int, default=None, help="ask slots (default: concurrency)")
    ap.add_argument("--method", default="claims")
    ap.add_argument("--add-docs", type=int, default=0, help="documents a job adds meanwhile")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/serve_load.json")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    env = {**os.environ, "BIORAG_HOME": str(home), "BIORAG_PROGRESS": "0"}
    subprocess.run([*BIORAG, "demo", "--json", "--method", "closed-book"], env=env, check=True,
                   capture_output=True, timeout=1800)  # fmt: skip
    port = free_port()
    slots = str(args.slots or args.concurrency)
    cmd = [*BIORAG, "serve", "--index", str(home / "demo-index"), "--port", str(port),
           "--max-concurrent-asks", slots, "--rate-limit", "0"]  # fmt: skip
    log = (home / "serve.log").open("w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        before = probe(base)
        result = asyncio.run(load(base, args.asks, args.concurrency, args.method, args.add_docs))
        after = probe(base)
        found = new_documents_found(base, args.add_docs) if args.add_docs else None
    finally:
        proc.send_signal(signal.SIGTERM)
        stopped = proc.wait(timeout=120)
        log.close()
    expected = {**before, "documents": before["documents"] + args.add_docs,
                "states": {**before["states"], "embedded": before["states"]["embedded"]
                           + args.add_docs}}  # fmt: skip
    result.update(
        slots=int(slots),
        index_consistent=after == expected,
        new_documents_searchable=found,
        clean_stop=stopped == 0,
        command=" ".join(["python benchmarks/bench_serve.py", *sys.argv[1:]]),
        machine=f"{os.cpu_count()} cores",
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
