"""The batch executor: embedding chunks with MiniLM locally and on Ray, side by side.

The same texts (BioASQ gold snippets, the first ``--n``) are embedded by ``EmbedWorker``
(all-MiniLM-L6-v2, the bundled copy) through each executor:

- local, 1 thread and 2 threads (``LocalExecutor``: one worker in this process);
- Ray, 1 and 2 actors of one CPU each on a local Ray of as many CPUs (``RayExecutor``), started
  by Ray in this process; the wall time includes starting Ray and the actors (each loads the
  model) and moving texts and vectors through Ray's object store.

Per run: wall seconds, chunks/s over the wall time, and per worker the chunks it embedded and
its chunks/s while busy (Ray: per actor). "overhead" is the wall time minus the busiest
worker's busy time. Vectors are checked equal (within 1e-5) to the local 1-thread run.

    python benchmarks/bench_executor.py --n 4000 --out benchmarks/results/executor.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np

from _bench import provenance
from bench_retrieval_speed import load_bioasq
from biorag.config import EmbedSettings, ExecutorSettings
from biorag.embed.worker import EmbedWorker
from biorag.executor import LocalExecutor
from biorag.util.files import write_json_atomic

MODEL_ID = "sentence-transformers:all-MiniLM-L6-v2"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(executor: Any, texts: list[str], threads: int, batch: int) -> tuple[dict, np.ndarray]:
    out = np.zeros((len(texts), 384), np.float32)
    args = (EmbedSettings().model_dump(), MODEL_ID, threads)
    t = time.perf_counter()
    for idx, vecs in executor.map_batches(EmbedWorker, args, texts, batch):
        out[idx] = vecs
    return run_row(executor, len(texts), time.perf_counter() - t, "chunks"), out


def run_row(executor: Any, n: int, wall: float, unit: str, digits: int = 1) -> dict[str, Any]:
    """A run's wall time, ``unit``/s, per worker its items and rate while busy, and the
    overhead (the wall time minus the busiest worker's busy time)."""
    workers = {
        name: {
            unit: int(st["rows"]),
            "busy_s": round(st["s"], 2),
            f"busy_{unit}_per_s": round(st["rows"] / st["s"], digits) if st["s"] else None,
        }
        for name, st in executor.stats()["workers"].items()
    }
    busiest = max((w["busy_s"] for w in workers.values()), default=0.0)
    return {
        "wall_s": round(wall, 2),
        f"{unit}_per_s": round(n / wall, digits),
        "overhead_s": round(wall - busiest, 2),
        "workers": workers,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    snippets, _, _ = load_bioasq()
    texts = snippets[: args.n]
    result: dict[str, Any] = {
        "n": len(texts),
        "batch": args.batch,
        **provenance(),
        "runs": {},
    }
    ref: np.ndarray | None = None
    for threads in (1, 2):
        row, vecs = run(LocalExecutor(), texts, threads, args.batch)
        ref = vecs if ref is None else ref
        row["max_abs_diff"] = float(np.abs(vecs - ref).max())
        result["runs"][f"local, {threads} thread(s)"] = row
        log(f"local {threads} threads: {row}")
    from biorag.executor.ray_executor import RayExecutor

    for workers in (1, 2):
        t = time.perf_counter()
        ex = RayExecutor(ExecutorSettings(kind="ray", ray_workers=workers))
        start = time.perf_counter() - t
        try:
            row, vecs = run(ex, texts, 1, args.batch)
        finally:
            ex.close()
        row["ray_start_s"] = round(start, 2)
        row["max_abs_diff"] = float(np.abs(vecs - ref).max())  # type: ignore[operator]
        result["runs"][f"ray, {workers} actor(s) of 1 CPU"] = row
        log(f"ray {workers} actors: {row}")
    write_json_atomic(args.out, result)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
