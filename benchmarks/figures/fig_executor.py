"""docs/benchmarks.md, "The batch executor on Ray" and "The other jobs on Ray": rendered from
``executor.json`` (embedding) and ``executor_jobs.json`` (kg, strata, eval)."""

from __future__ import annotations

import re
from typing import Any

from figures import dig, figure, result, table
from figures.fig_retrieval import dec, fmt, sig, span

EMBED = "executor.json"
JOBS = "executor_jobs.json"
JOB_LABELS = {"kg": "kg", "strata": "strata", "eval": "eval (claims)"}


def _ray(runs: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for name, r in runs.items() if name.startswith("ray")]


def rate(x: Any) -> str:
    """Units a second: 0.89 below 10, else whole and thousands separated (4,386)."""
    return fmt(x, ".2f" if x < 10 else ",.0f")


@figure("executor-embed")
def embed() -> str:
    rows = []
    for name, r in dig(result(EMBED), "runs", EMBED).items():
        workers = "; ".join(f"{w['chunks']:,}, {fmt(w['busy_chunks_per_s'], '')}"
                            for w in r["workers"].values())  # fmt: skip
        rows.append([name, fmt(r["wall_s"], ""), fmt(r["chunks_per_s"], ""), workers,
                     fmt(r["overhead_s"], ""), fmt(r.get("ray_start_s", ""), ""),
                     f"{r['max_abs_diff']:.1e}"])  # fmt: skip
    return table(["run", "wall s", "chunks/s", "per worker: chunks, chunks/s busy", "overhead s",
                  "Ray start s", "max abs diff to local"], rows)  # fmt: skip


def _embed_runs() -> dict[str, Any]:
    return dig(result(EMBED), "runs", EMBED)


@figure("executor-embed-overhead")
def embed_overhead() -> str:
    """The mean overhead of the Ray runs (the busiest actor's work excluded)."""
    ray = _ray(_embed_runs())
    return fmt(sum(dec(r["overhead_s"]) for r in ray) / len(ray), ".1f")


@figure("executor-embed-ray-start")
def embed_ray_start() -> str:
    ray = _ray(_embed_runs())
    return fmt(sum(dec(r["ray_start_s"]) for r in ray) / len(ray), ".0f")


@figure("executor-embed-two-less")
def embed_two_less() -> str:
    """How much less two Ray actors embed than one local process of two threads."""
    runs = _embed_runs()
    ray, local = runs["ray, 2 actor(s) of 1 CPU"], runs["local, 2 thread(s)"]
    return fmt(1 - dec(ray["chunks_per_s"]) / dec(local["chunks_per_s"]), ".0%")


@figure("executor-embed-busy")
def embed_busy() -> str:
    w = _embed_runs()["ray, 2 actor(s) of 1 CPU"]["workers"].values()
    return span([x["busy_chunks_per_s"] for x in w], "")


@figure("executor-embed-diff")
def embed_diff() -> str:
    return f"{max(r['max_abs_diff'] for r in _embed_runs().values()):.1e}"


def _run_label(name: str) -> str:
    """'local, 1 thread(s)' -> 'local, 1 thread'; 'ray, 2 actor(s) of 1 CPU' -> 'ray, 2 actors'."""
    m = re.match(r"(\w+), (\d+) (thread|actor)\(s\)", name)
    if not m:
        return name
    kind, n, unit = m.groups()
    return f"{kind}, {n} {unit}{'' if n == '1' else 's'}"


def _jobs() -> dict[str, Any]:
    return dig(result(JOBS), "jobs", JOBS)


@figure("executor-jobs")
def jobs() -> str:
    rows = []
    for key, job in _jobs().items():
        for name, r in job["runs"].items():
            workers = "; ".join(f"{w['units']:,}, {rate(w['busy_units_per_s'])}"
                                for w in r["workers"].values())  # fmt: skip
            rows.append([JOB_LABELS.get(key, key), _run_label(name), fmt(r["wall_s"], ""),
                         rate(r["units_per_s"]), workers, fmt(r["overhead_s"], ""),
                         fmt(r.get("ray_start_s", ""), "")])  # fmt: skip
    return table(["job", "run", "wall s", "units/s", "per worker: units, units/s busy",
                  "overhead s", "Ray start s"], rows)  # fmt: skip


def _all_ray() -> list[dict[str, Any]]:
    return [r for job in _jobs().values() for r in _ray(job["runs"])]


@figure("executor-jobs-overhead")
def jobs_overhead() -> str:
    return span([r["overhead_s"] for r in _all_ray()], ".0f")


@figure("executor-jobs-ray-start")
def jobs_ray_start() -> str:
    return span([r["ray_start_s"] for r in _all_ray()], ".1f")


def _one_core(job: str) -> Any:
    return _jobs()[job]["runs"]["local, 1 thread(s)"]["units_per_s"]


@figure("executor-jobs-kg-rate")
def kg_rate() -> str:
    return sig(_one_core("kg"))


@figure("executor-jobs-strata-rate")
def strata_rate() -> str:
    return sig(_one_core("strata"))


@figure("executor-jobs-eval-rate")
def eval_rate() -> str:
    return fmt(_one_core("eval"), ".1f")
