"""docs/scaling.md: every measured figure, from the committed result files (some of them also
rendered for docs/benchmarks.md by other modules; these are scaling.md's own). The LLM
endpoint and sizing figures are in fig_scaling_endpoints.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from figures import dig, figure, find_row, result, table

PUBMED = 36_000_000  # PubMed's abstracts: a count given, not measured
NODES, CPUS_PER_NODE, GPUS = 100, 16, 100  # the cluster the plan supposes
VECTOR_BYTES = 384 * 4  # a MiniLM vector in float32
RAY_1, RAY_2 = "ray, 1 actor(s) of 1 CPU", "ray, 2 actor(s) of 1 CPU"


def value(name: str) -> Callable[[Callable[[], str]], Callable[[], str]]:
    return figure(f"scaling-{name}")


def span(values: Iterable[float], fmt: str | Callable[[float], str], sep: str = "-") -> str:
    """``lo-hi`` of ``values`` in ``fmt`` (a format spec or a function; one value where both
    read the same)."""
    vals = list(values)
    show = fmt if callable(fmt) else (lambda x: format(x, fmt))
    lo, hi = show(min(vals)), show(max(vals))
    return lo if lo == hi else f"{lo}{sep}{hi}"


def sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures (whole numbers from there on, thousands
    separated)."""
    return f"{x:,.0f}" if abs(x) >= 10**digits else f"{x:.{digits}g}"


def short(n: int) -> str:
    """100000 -> 100k, 1000000 -> 1M."""
    return f"{n // 10**6}M" if n % 10**6 == 0 else f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"


def sources(*paths: str) -> str:
    bits = []
    for p in paths:
        commit = result(p).get("commit") if isinstance(result(p), dict) else None
        bits.append(f"`{p}`" + (f" (commit {commit})" if commit else ""))
    return "Results in `benchmarks/results/`: " + ", ".join(bits) + "."


# -- incremental indexes ------------------------------------------------------------------------


@figure("scaling-segments")
def segments() -> str:
    files = ["incremental_index_100k.json", "incremental_index_1m.json"]
    runs = [result(f) for f in files]

    def s(keys: str) -> list[str]:
        return [sig(dig(r, keys, f)) for r, f in zip(runs, files, strict=True)]

    def pair(a: str, b: str, unit: str) -> list[str]:
        return [f"{x} / {y} {unit}" for x, y in zip(s(a), s(b), strict=True)]

    rows = [
        [
            "add 1,000 documents (total, of which indexing)",
            *(f"{t} s ({i} s)" for t, i in zip(s("add/total_s"), s("add/index"), strict=True)),
        ],
        ["the rebuild each add cost before", *(f"{x} s" for x in s("full_rebuild/total_s"))],
        ["remove 1,000 documents", *(f"{x} s" for x in s("remove/total_s"))],
        [
            "hybrid p50: segments / one index",
            *pair("search/segments/hybrid/p50_ms", "search/one_piece/hybrid/p50_ms", "ms"),
        ],
        [
            "BM25 p50: segments / bm25s",
            *pair("search/segments/bm25/p50_ms", "search/one_piece/bm25/p50_ms", "ms"),
        ],
    ]
    head = ["", *(f"{short(r['n'])} chunks" for r in runs)]
    return table(head, rows) + "\n\n" + sources(*files) + "\n"


@value("bm25-tied")
def bm25_tied() -> str:
    r = result("bm25_segments_equal.json")
    return f"{r['questions'] - r['same_top10_ids_in_order']:,}"


@value("checkpoint")
def checkpoint() -> str:
    """Kills and resumes of the checkpointed kg and strata builds (reliability_checkpoint.json)."""
    kr = dig(result("reliability_checkpoint.json"), "kill_resume")
    kg, st = kr["kg build"], kr["strata build"]
    return (
        f"{kg['killed']} of {kg['trials']} trials (kg build) and {st['killed']} of "
        f"{st['trials']} (strata build), the resumed builds gave the reference graph in "
        f"{kg['same_result']} of {kg['trials']} and {st['same_result']} of {st['trials']}"
    )


# -- the executor --------------------------------------------------------------------------------


def ray_runs(*files: str) -> list[dict[str, Any]]:
    out = []
    for f in files:
        data = result(f)
        groups = [data["runs"]] if "runs" in data else [j["runs"] for j in data["jobs"].values()]
        out += [r for g in groups for k, r in g.items() if k.startswith("ray")]
    return out


@value("ray-busy")
def ray_busy() -> str:
    workers = dig(result("executor.json"), ["runs", RAY_2, "workers"], "executor.json")
    return span((w["busy_chunks_per_s"] for w in workers.values()), ".1f")


def ray_span(files: tuple[str, ...], key: str) -> str:
    return span((r[key] for r in ray_runs(*files)), ".1f")


for _name, _files, _key in [
    ("ray-overhead", ("executor.json",), "overhead_s"),
    ("ray-start", ("executor.json",), "ray_start_s"),
    ("jobs-overhead", ("executor_jobs.json",), "overhead_s"),
    ("jobs-start", ("executor_jobs.json",), "ray_start_s"),
]:
    value(_name)(functools.partial(ray_span, _files, _key))


@value("ray-diff")
def ray_diff() -> str:
    return f"{max(r['max_abs_diff'] for r in ray_runs('executor.json')):.1e}"


@value("ray-cost")
def ray_cost() -> str:
    both = ("executor.json", "executor_jobs.json")
    return f"{ray_span(both, 'overhead_s')} s, plus {ray_span(both, 'ray_start_s')} s to start"


# -- toward PubMed -------------------------------------------------------------------------------


def chunks_per_abstract() -> float:
    idx = dig(result("retrieval_quality.json"), "results/0", "retrieval_quality.json")
    return float(idx["chunks"] / idx["documents"])


def pubmed_chunks() -> float:
    return PUBMED * chunks_per_abstract()


@value("pubmed-chunks")
def pubmed_chunks_m() -> str:
    return f"{pubmed_chunks() / 1e6:.0f}M"


@value("pubmed-vectors")
def pubmed_vectors() -> str:
    return f"{pubmed_chunks() * VECTOR_BYTES / 1e9:.0f} GB"


@value("milvus-query")
def milvus_query() -> str:
    s = dig(result("milvus_scale_1m.json"), "scale", "milvus_scale_1m.json")
    return span((s[f"milvus_{k}"]["p50_ms"] / 1000 for k in ("bm25", "dense", "hybrid")), ".1f")


def actor_rate() -> float:
    return float(dig(result("executor.json"), ["runs", RAY_1, "chunks_per_s"], "executor.json"))


@value("embed-cpu-hours")
def embed_cpu_hours() -> str:
    return (
        f"{sig(PUBMED / actor_rate() / 3600)} CPU-hours, {pubmed_chunks_m()} about "
        f"{sig(pubmed_chunks() / actor_rate() / 3600)}"
    )


@value("embed-gpu-hours")
def embed_gpu_hours() -> str:
    return f"{pubmed_chunks() / gpu_embed_rate() / 3600:.1f}"


def gpu_embed_rate() -> float:
    row = find_row("embed_gpu.json", "rows", mode="pipelined", batch_size=256)
    return float(row["texts_per_s"])


@value("embed-gpu-rate")
def embed_gpu_rate() -> str:
    return f"{gpu_embed_rate():,.0f}"


@value("cluster")
def cluster() -> str:
    hours = pubmed_chunks() / actor_rate() / 3600
    return f"{sig(hours)} CPU-hours take about {hours / (NODES * CPUS_PER_NODE) * 60:.0f} minutes"


@value("store-minutes")
def store_minutes() -> str:
    store = dig(result("incremental_index_1m.json"), "build/store", "incremental_index_1m.json")
    return (
        f"{store:.1f} s per 1M chunks for the store step of the 1M build, about "
        f"{store * pubmed_chunks() / 1e6 / 60:.0f} minutes at {pubmed_chunks_m()}"
    )


def triplets_per_abstract() -> list[float]:
    kg = dig(result("real_llm_summary_vgrag_n50.json"), "kg_builds")
    return [b["added"] / b["units"] for b in kg.values()]


@value("triplets")
def triplets() -> str:
    per = triplets_per_abstract()
    push = result("neo4j_push.json")["rows"][0]["triplets_per_s"]
    return (
        f"{span(per, '.2f')} usable triplets per abstract, so 36M abstracts would be "
        f"{span((PUBMED * x / 1e6 for x in per), '.0f')}M triplets, about "
        f"{PUBMED * max(per) / push / 60:.0f} minutes of bulk load"
    )
