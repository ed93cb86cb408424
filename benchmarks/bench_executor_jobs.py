"""The batch executor on the other jobs: kg build extraction, strata build extraction and eval
answering, locally and on Ray, side by side (no LLM: the floor's CPU work is what is spread).

Each job's units go through its worker class, the one the CLI uses, on each executor:

- ``kg``: MedMCQA dev QA pairs -> ``TripletWorker`` (rule-based triplets), 64 units a batch;
- ``strata``: PubMedQA PQA-L abstracts as papers -> ``PaperWorker`` (typed triplets and
  document facts by the floor, no vocabulary), 16 a batch;
- ``eval``: PubMedQA PQA-L questions with their abstracts (reasoning-required) -> ``AnswerWorker``
  with ``claims`` (no-LLM floor: claims, graph, summaries, MiniLM), 2 a batch.

Runs: local with torch on 1 and 2 threads (one worker in this process), and Ray with 1 and 2
actors of one CPU on a local Ray started in this process (the wall time includes starting the
actors, each loading what its worker needs; a local run's first batch loads its models). No
embedding cache, so no run reuses another's vectors. Per run: wall seconds, units/s, per worker
its units and units/s while busy; "overhead" is the wall time minus the busiest worker's busy
time. Every run's results are checked equal to the first local run's.

    python benchmarks/bench_executor_jobs.py --jobs kg,strata,eval --out \\
        benchmarks/results/executor_jobs.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from _bench import provenance
from bench_executor import run_row
from biorag.config import ExecutorSettings, Settings
from biorag.executor import LocalExecutor, settings_for_workers
from biorag.util.files import write_json_atomic

DEV = Path("/work/shared/data/mirage/rawdata/medmcqa/data/dev.json")
PQAL = Path("/work/shared/data/pubmedqa/ori_pqal.json")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def kg_job(n: int, settings: dict[str, Any]) -> tuple[type, tuple, list[str], int]:
    from biorag.kg.extract_units import TripletWorker, units_of
    from biorag.kg.sources import read_sources

    src = read_sources(DEV, "medmcqa", limit=n)
    units = [json.dumps(u) for u in units_of(src.pairs, src.texts)]
    return TripletWorker, (settings, 1, True), units, 64


def strata_job(n: int, settings: dict[str, Any]) -> tuple[type, tuple, list[str], int]:
    from biorag.strata.extract_papers import PaperWorker, paper_units
    from biorag.strata.vocab import Vocabulary

    data = json.loads(PQAL.read_text())
    papers = [
        {"pid": pid, "title": "", "abstract": " ".join(r["CONTEXTS"])}
        for pid, r in list(data.items())[:n]
    ]
    units = [json.dumps(u) for u in paper_units(papers)]
    return PaperWorker, (settings, Vocabulary()), units, 16


def eval_job(n: int, settings: dict[str, Any]) -> tuple[type, tuple, list[str], int]:
    from biorag.corpus.datasets import load_dataset
    from biorag.eval.run.on_executor import AnswerWorker

    items = load_dataset("pubmedqa", PQAL, setting="reasoning-required", limit=n).items
    units = [json.dumps({"method": "claims", "item": it.model_dump(mode="json")}) for it in items]
    return AnswerWorker, (settings, [], {}, 1), units, 2


JOBS = {"kg": kg_job, "strata": strata_job, "eval": eval_job}
# what must be equal across runs (eval records also hold timings)
SAME = ("prediction", "correct", "evidence", "context", "error")


def comparable(job: str, text: str) -> Any:
    rec = json.loads(text)
    if job == "eval":
        return {k: rec[k] for k in SAME}
    rec.pop("accounting", None)
    rec.pop("stats", None)  # the batch's counters ride on its first unit; batches differ
    return rec


def run(executor: Any, job: str, worker: type, args: tuple, units: list[str], batch: int) -> tuple:
    out: list[Any] = [None] * len(units)
    t = time.perf_counter()
    for idx, results in executor.map_batches(worker, args, units, batch):
        for i, r in zip(idx, results, strict=True):
            out[i] = comparable(job, str(r))
    row = run_row(executor, len(units), time.perf_counter() - t, "units", digits=2)
    return row, out


def bench_job(job: str, n: int, settings: dict[str, Any]) -> dict[str, Any]:
    import torch

    worker, args, units, batch = JOBS[job](n, settings)
    res: dict[str, Any] = {"units": len(units), "batch": batch, "runs": {}}
    ref = None
    for threads in (1, 2):
        torch.set_num_threads(threads)
        row, out = run(LocalExecutor(), job, worker, args, units, batch)
        ref = out if ref is None else ref
        row["equal_to_local"] = out == ref
        res["runs"][f"local, {threads} thread(s)"] = row
        log(f"{job} local {threads} threads: {row}")
    from biorag.executor.ray_executor import RayExecutor

    for actors in (1, 2):
        t = time.perf_counter()
        ex = RayExecutor(ExecutorSettings(kind="ray", ray_workers=actors))
        start = time.perf_counter() - t
        try:
            row, out = run(ex, job, worker, args, units, batch)
        finally:
            ex.close()
        row["ray_start_s"] = round(start, 2)
        row["equal_to_local"] = out == ref
        res["runs"][f"ray, {actors} actor(s) of 1 CPU"] = row
        log(f"{job} ray {actors} actors: {row}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", default="kg,strata,eval")
    ap.add_argument("--kg-n", type=int, default=4000)
    ap.add_argument("--strata-n", type=int, default=1000)
    ap.add_argument("--eval-n", type=int, default=60)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    # no embedding cache: every run embeds what it needs (a cache would favour later runs)
    settings = settings_for_workers(
        Settings(home=str(Path(".biorag").resolve()), embed={"cache": False})
    )
    result: dict[str, Any] = {**provenance(), "jobs": {}}
    sizes = {"kg": args.kg_n, "strata": args.strata_n, "eval": args.eval_n}
    for job in [j.strip() for j in args.jobs.split(",") if j.strip()]:
        result["jobs"][job] = bench_job(job, sizes[job], settings)
        write_json_atomic(args.out, result)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
