"""Load on ``biorag serve`` over loopback: N asks, C at a time, against a served index.

Starts ``biorag serve`` as a process on the demo index (built first if missing, from the bundled
PubMedQA sample), sends ``--asks`` POST /v1/ask requests with ``--concurrency`` in flight, and
reports errors, latency percentiles and throughput, each ask's wait for a slot (the server's
``Server-Timing: queue``) apart from its answering; then checks the index still answers the
same as before the load (its document and chunk counts, and the top hit of a probe query)::

    python benchmarks/bench_serve.py --asks 200 --concurrency 16 --method claims

The client does not retry: asks beyond the server's slots wait in its admission queue, and a
503 counts as an error (``--retry``: the polite client of earlier runs, which retries each 503
after its ``Retry-After``). ``--slots`` sets the server's ask slots (default: its own default).

``--model-seconds S`` puts a scripted model behind the server that answers each ask after S
seconds (what a model server's latency does to the queue, without one); ``--abandon N`` then
opens N streamed asks whose model takes 60 s, drops each after its first event, and reports how
soon the server's in-flight count (``/metrics``) is back to 0 and whether the next ask is answered
at once.

With ``--add-docs N`` a job adds N generated documents through ``POST /v1/documents`` while
the asks run; afterwards the index must hold every document once, all embedded, the new ones
searchable, and the probe query's top hit unchanged.
Results: benchmarks/results/serve_load*.json; the tables are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from biorag.serve.app import ServerConfig  # its defaults are biorag serve's

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


async def load(
    base: str, asks: int, concurrency: int, method: str, add_docs: int = 0, retry: bool = False
) -> dict:
    questions = demo_questions()
    latencies: list[float] = []
    queued: list[float] = []  # seconds each answered ask waited for a slot (Server-Timing)
    service: list[float] = []  # and the rest of its latency, the same asks
    codes: dict[int, int] = {}
    queue = iter(range(asks))

    async def worker(client: httpx.AsyncClient) -> None:
        for i in queue:
            q = questions[i % len(questions)]
            body = {"question": q["question"], "options": q["options"], "method": method}
            start = time.perf_counter()
            while True:
                r = await client.post(f"{base}/v1/ask", json=body)
                codes[r.status_code] = codes.get(r.status_code, 0) + 1
                if r.status_code != 503 or not retry:
                    break
                await asyncio.sleep(float(r.headers.get("retry-after", "1")))
            latencies.append(time.perf_counter() - start)
            timing = dict(re.findall(r"(\w+);dur=([\d.]+)", r.headers.get("server-timing", "")))
            if "queue" in timing:  # an answered ask (a refusal carries no timing)
                queued.append(float(timing["queue"]) / 1000)
                service.append(latencies[-1] - queued[-1])

    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=600) as client:
        job = asyncio.create_task(add_job(client, base, add_docs)) if add_docs else None
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - started
        added = await job if job is not None else None
    failed = sum(v for k, v in codes.items() if k >= 500 and (k != 503 or not retry))
    p50 = statistics.median(latencies)
    p95 = percentile(latencies, 0.95)
    q95 = percentile(queued, 0.95) if queued else 0.0
    return {
        "asks": asks,
        "concurrency": concurrency,
        "method": method,
        "client": "retries each 503 after Retry-After" if retry else "no retry",
        "status_codes": {str(k): v for k, v in sorted(codes.items())},
        "errors": failed,
        "p50_s": round(p50, 3),
        "p95_s": round(p95, 3),
        "max_s": round(max(latencies), 3),
        "queue_p50_s": round(statistics.median(queued), 3) if queued else None,
        "queue_p95_s": round(q95, 3) if queued else None,
        "answer_p50_s": round(statistics.median(service), 3) if service else None,
        "answer_p95_s": round(percentile(service, 0.95), 3) if service else None,
        # the bar: p95 within 2x of p50, plus what the queue added
        "p95_within_2x_p50_plus_queue": bool(p95 <= 2 * p50 + q95),
        "wall_s": round(wall, 2),
        "asks_per_s": round(asks / wall, 2),
        **({"add_job": added} if added is not None else {}),
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def gauges(base: str) -> dict[str, float]:
    """The asks in flight and queued, and the slots taken, from ``/metrics``."""
    text = httpx.get(f"{base}/metrics", timeout=30).text
    found = dict(re.findall(r"^biorag_(asks_in_flight|asks_queued|ask_slots_busy) ([\d.e+-]+)$",
                            text, re.M))  # fmt: skip
    return {k: float(v) for k, v in found.items()}


async def abandon(base: str, n: int) -> dict:
    """Open ``n`` streamed asks at once whose model takes 60 s (those beyond the slots wait in
    the queue), hang all of them up, then time how soon nothing is in flight or queued, and ask
    once more (answered at once if nothing is held)."""
    body = {"question": "SLOW: does aspirin inhibit platelets?", "method": "retrieve-read",
            "stream": True}  # fmt: skip

    async def hold(client: httpx.AsyncClient) -> None:
        async with client.stream("POST", f"{base}/v1/ask", json=body) as r:
            async for _ in r.aiter_lines():
                pass  # until it is hung up

    clients = [httpx.AsyncClient(timeout=120) for _ in range(n)]
    tasks = [asyncio.create_task(hold(c)) for c in clients]
    deadline = time.perf_counter() + 30
    while True:  # every ask has reached the server: in flight or queued
        await asyncio.sleep(0.1)
        held = await asyncio.to_thread(gauges, base)
        if held["asks_in_flight"] + held["asks_queued"] >= n or time.perf_counter() > deadline:
            break
    for t in tasks:
        t.cancel()  # the client hangs up: its connection closes
    await asyncio.gather(*tasks, return_exceptions=True)
    for c in clients:
        await c.aclose()
    left = time.perf_counter()
    while sum((now := await asyncio.to_thread(gauges, base)).values()) > 0:
        if time.perf_counter() - left > 90:
            break
        await asyncio.sleep(0.05)
    freed = time.perf_counter() - left
    t0 = time.perf_counter()
    async with httpx.AsyncClient(timeout=120) as c:
        r = await c.post(f"{base}/v1/ask", json={"question": "Does aspirin inhibit platelets?",
                                                 "method": "retrieve-read"})  # fmt: skip
    return {
        "abandoned_streams": n,
        "held_before_hang_up": held,
        "left_after": now,
        "all_freed_within_s": round(freed, 3),
        "next_ask_status": r.status_code,
        "next_ask_s": round(time.perf_counter() - t0, 3),
    }


def mock_script(home: Path, seconds: float) -> Path:
    """A scripted model: a SLOW question's answer takes 60 s, every other answer ``seconds``."""
    answer = "Aspirin inhibits platelet aggregation [1]."
    rules = [{"match": "SLOW", "stage": "answer", "response": answer, "seconds": 60},
             {"stage": "answer", "response": answer, "seconds": seconds},
             {"response": answer}]  # fmt: skip
    path = home / "model-script.json"
    path.write_text(json.dumps(rules))
    return path


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
    ap.add_argument("--slots", type=int, default=None, help="ask slots (default: the server's)")
    ap.add_argument("--method", default="claims")
    ap.add_argument("--retry", action="store_true", help="retry each 503 after Retry-After")
    ap.add_argument("--model-seconds", type=float, default=None,
                    help="a scripted model answering after this long")  # fmt: skip
    ap.add_argument("--abandon", type=int, default=0, help="streams dropped mid-answer")
    ap.add_argument("--add-docs", type=int, default=0, help="documents a job adds meanwhile")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/serve_load.json")
    args = ap.parse_args()
    if args.abandon and args.model_seconds is None:
        ap.error("--abandon needs --model-seconds (the dropped asks need a model to wait on)")
    home = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    env = {**os.environ, "BIORAG_HOME": str(home), "BIORAG_PROGRESS": "0"}
    subprocess.run([*BIORAG, "demo", "--json", "--method", "closed-book"], env=env, check=True,
                   capture_output=True, timeout=1800)  # fmt: skip
    if args.model_seconds is not None:
        env.update(BIORAG_LLM_BACKEND="mock", BIORAG_LLM_CACHE="false",
                   BIORAG_LLM_MOCK_SCRIPT=str(mock_script(home, args.model_seconds)),
                   BIORAG_ANSWER_VERIFIER="rules")  # fmt: skip
    port = free_port()
    cmd = [*BIORAG, "serve", "--index", str(home / "demo-index"), "--port", str(port),
           "--rate-limit", "0"]  # fmt: skip
    if args.slots:
        cmd += ["--max-concurrent-asks", str(args.slots)]
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
        result = asyncio.run(
            load(base, args.asks, args.concurrency, args.method, args.add_docs, args.retry)
        )
        after = probe(base)
        found = new_documents_found(base, args.add_docs) if args.add_docs else None
        dropped = asyncio.run(abandon(base, args.abandon)) if args.abandon else None
    finally:
        proc.send_signal(signal.SIGTERM)
        stopped = proc.wait(timeout=120)
        log.close()
    expected = {**before, "documents": before["documents"] + args.add_docs,
                "states": {**before["states"], "embedded": before["states"]["embedded"]
                           + args.add_docs}}  # fmt: skip
    result.update(
        slots=args.slots or ServerConfig().max_concurrent_asks,
        model=f"scripted, {args.model_seconds:g} s an answer"
        if args.model_seconds is not None
        else "none (the no-LLM floor)",
        index_consistent=after == expected,
        new_documents_searchable=found,
        **({"abandon": dropped} if dropped is not None else {}),
        clean_stop=stopped == 0,
        command=" ".join(["python benchmarks/bench_serve.py", *sys.argv[1:]]),
        machine=f"{os.cpu_count()} cores",
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
