"""docs/scaling.md: every measured figure, from the committed result files (some of them also
rendered for docs/benchmarks.md by other modules; these are scaling.md's own).

The endpoint tables recompute calls and tokens per question from each run's ``metrics.json``
(``benchmarks/results/real_llm/RUN/``) with ``bench_llm_sizing.py``'s own count, for the runs
``llm_sizing.json`` names, and for CLAIMS on BioASQ (which it lacks) the loop-stop run; the
rates are those ``llm_sizing.json`` and ``llm_sizing_h200_8b.json`` measured.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from figures import FigureError, dig, figure, result, table
from figures.sizing import scaled

PUBMED = 36_000_000  # PubMed's abstracts: a count given, not measured
NODES, CPUS_PER_NODE, GPUS = 100, 16, 100  # the cluster the plan supposes
VECTOR_BYTES = 384 * 4  # a MiniLM vector in float32
SIZING = "llm_sizing.json"
SIZING_GPU = "llm_sizing_h200_8b.json"
GPU_RATES = "llm_gpu_rates_h200.json"
DATASETS = ["pubmedqa", "bioasq"]
METHODS = [
    "closed-book",
    "retrieve-read",
    "rewrite",
    "hyde",
    "raptor",
    "crag",
    "selfrag",
    "iprar",
    "vectorgraphrag",
    "claims",
    "claim",
]
LABELS = {"claims": "claims (batched)"}
#: the run of a (dataset, method) that llm_sizing.json lacks: CLAIMS' loop-stop runs
LATER_RUNS = {f"bioasq/{m}": "bioasq_auto_loopstop_n50" for m in ("claims", "claim")}
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


# -- LLM endpoints -------------------------------------------------------------------------------


def per_q(key: str) -> dict[str, Any]:
    """Calls and tokens per question of ``dataset/method`` from its run's metrics.json."""
    run = result(SIZING)["questions"].get(key, {}).get("run") or LATER_RUNS.get(key)
    if run is None:
        raise FigureError(f"{SIZING} names no run for {key} (nor does LATER_RUNS)")
    path = f"real_llm/{run}/metrics.json"
    e = dig(result(path), ["methods", key.split("/")[1]], path)
    n = e["n"] - e.get("errors", 0) - e.get("missing", 0)
    return {"run": run, **scaled(dig(e, "accounting_total/stages", path), n)}


def rates(path: str) -> dict[str, float]:
    data: dict[str, float] = dig(result(path), "endpoint/sizing_rates", path)
    return data


def secs(q: dict[str, Any], r: dict[str, float]) -> float:
    return float(
        q["prompt_tokens_per_q"] / r["prompt_per_s"]
        + q["completion_tokens_per_q"] / r["predicted_per_s"]
    )


def endpoint_s(key: str, path: str = SIZING) -> float:
    """Endpoint-seconds per question, rounded as bench_llm_sizing.py rounds them."""
    return round(secs(per_q(key), rates(path)), 2)


@value("endpoint-per-request")
def endpoint_per_request() -> str:
    ep = result(SIZING)["endpoint"]
    return (
        f"{ep['prefill']['prompt_per_s_per_request'] * ep['slots']:.0f} and "
        f"{ep['decode']['predicted_per_s_per_request'] * ep['slots']:.0f}/s"
    )


@value("sizing-questions")
def sizing_questions() -> str:
    ns = [per_q(f"{d}/{m}")["questions"] for d in DATASETS for m in METHODS]
    return span(ns, "d", " to ")


@figure("scaling-sizing")
def sizing() -> str:
    rows = []
    for m in METHODS:
        cells = [LABELS.get(m, m)]
        for d in DATASETS:
            q = per_q(f"{d}/{m}")
            s = f"{endpoint_s(f'{d}/{m}'):.2f}"
            if q.get("stages_all_cached"):
                cached = len(q["stages_all_cached"])
                s += f" (a lower bound: {cached} of its stages were all cache hits)"
            cells += [
                f"{q['calls_per_q']:g}",
                f"{q['prompt_tokens_per_q']:,} + {q['completion_tokens_per_q']:,}",
                s,
            ]
        rows.append(cells)
    cols = ["calls / q", "prompt + completion tokens / q", "endpoint-s / q"]
    head = ["method", f"PubMedQA {cols[0]}", *cols[1:], f"BioASQ {cols[0]}", *cols[1:]]
    listed = result(SIZING)["questions"]
    partial = [
        f"{k} ({listed[k]['questions']} of {per_q(k)['questions']})"
        for d in DATASETS
        for m in METHODS
        if (k := f"{d}/{m}") in listed and listed[k]["questions"] != per_q(k)["questions"]
    ]
    note = (
        "Calls and tokens from each run's `metrics.json` (`benchmarks/results/real_llm/RUN/`), "
        "counted as `bench_llm_sizing.py` counts them, for the runs `llm_sizing.json` names and "
        f"for {' and '.join(LATER_RUNS)}, which it lacks, "
        f"{' and '.join(sorted({f'`{r}`' for r in LATER_RUNS.values()}))}; "
        f"the rates are `llm_sizing.json`'s (commit {result(SIZING).get('commit')})."
    )
    if partial:
        note += f" `llm_sizing.json` counted {', '.join(partial)} questions: not finished then."
    return table(head, rows) + "\n\n" + note + "\n"


@value("endpoints-1qps")
def endpoints_1qps() -> str:
    c, i, v = (endpoint_s(f"pubmedqa/{m}") for m in ("claims", "iprar", "vectorgraphrag"))
    return (
        f"about {max(1, round(c))} of them, with IP-RAR {max(1, round(i))}, with "
        f"VectorGraphRAG {max(1, round(v))}"
    )


def builds(path: str) -> list[dict[str, Any]]:
    return list(dig(result(path), "builds", path).values())


@value("kg-build")
def kg_build() -> str:
    b = builds(SIZING)
    return (
        f"{span((x['calls_per_abstract'] for x in b), '.1f')} calls, "
        f"{span((x['prompt_tokens_per_q'] for x in b), ',')} prompt and "
        f"{span((x['completion_tokens_per_q'] for x in b), ',')} completion tokens"
    )


@value("kg-build-s")
def kg_build_s() -> str:
    return span((x["endpoint_s_per_q"] for x in builds(SIZING)), ".1f")


# -- an 8B model on one GPU ----------------------------------------------------------------------


@value("gpu-params")
def gpu_params() -> str:
    return f"{result(GPU_RATES)['parameters'] / 1e9:.2f}B"


@figure("scaling-gpu-rates")
def gpu_rates() -> str:
    rows = [
        [
            r["slots"],
            f"{r['prefill']['wall_prompt_per_s']:,.0f}",
            sig(r["decode"]["wall_predicted_per_s"]),
            f"{r['decode']['per_sequence_per_s']:.1f}",
            f"{r['peak_gpu_gb']:.1f}",
        ]
        for r in result(GPU_RATES)["rows"]
    ]
    head = "sequences at a time|prompt tokens/s|generated tokens/s (all)|per sequence|peak GPU GB"
    return table(head.split("|"), rows) + "\n\n" + sources(GPU_RATES) + "\n"


@value("gpu-tflops")
def gpu_tflops() -> str:
    data = result(GPU_RATES)
    full = [r["prefill"]["wall_prompt_per_s"] for r in data["rows"] if r["slots"] >= 8]
    return f"{2 * data['parameters'] * sum(full) / len(full) / 1e12:.0f}"


@value("gpu-step-ms")
def gpu_step_ms() -> str:
    rows = result(GPU_RATES)["rows"]
    return span((1000 / r["decode"]["per_sequence_per_s"] for r in rows), ".0f")


@figure("scaling-gpu-sizing")
def gpu_sizing() -> str:
    rows = [
        [
            LABELS.get(m, m),
            *(
                f"{endpoint_s(f'{d}/{m}'):.2f} -> {endpoint_s(f'{d}/{m}', SIZING_GPU):.2f}"
                for d in DATASETS
            ),
        ]
        for m in METHODS
    ]
    note = (
        "Rates: `llm_sizing.json` -> `llm_sizing_h200_8b.json` (commit "
        f"{result(SIZING_GPU).get('commit')}); calls and tokens as in the table above."
    )
    head = ["method", "PubMedQA endpoint-s / q", "BioASQ endpoint-s / q"]
    return f"{table(head, rows)}\n\n{note}\n"


@value("gpu-serves")
def gpu_serves() -> str:
    r = rates(SIZING_GPU)
    methods = ("claims", "iprar", "vectorgraphrag")
    per_s = {m: 1 / secs(per_q(f"pubmedqa/{m}"), r) for m in methods}
    return (
        f"{sig(per_s['claims'], 2)} CLAIMS questions/s, {sig(per_s['iprar'], 2)} IP-RAR "
        f"questions/s or {sig(per_s['vectorgraphrag'], 2)} VectorGraphRAG questions/s"
    )


@value("gpu-claims-wait")
def gpu_claims_wait() -> str:
    per_seq = dig(result(SIZING_GPU), "endpoint/decode/per_sequence_per_s", SIZING_GPU)
    tokens = per_q("pubmedqa/claims")["completion_tokens_per_q"]
    return (
        f"{per_seq:.1f} tokens/s a sequence, CLAIMS' {tokens:,} completion tokens are "
        f"{tokens / per_seq:.0f} s"
    )


@value("gpu-kg")
def gpu_kg() -> str:
    return span((x["endpoint_s_per_q"] for x in builds(SIZING_GPU)), ".2f")


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
    rows = result("embed_gpu.json")["rows"]
    row = next(r for r in rows if r["mode"] == "pipelined" and r["batch_size"] == 256)
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


@value("kg-pubmed")
def kg_pubmed() -> str:
    cpu = [PUBMED * x["endpoint_s_per_q"] / 3600 for x in builds(SIZING)]
    gpu = [PUBMED * x["endpoint_s_per_q"] / 3600 for x in builds(SIZING_GPU)]
    return (
        f"{span(cpu, sig)} endpoint-hours of that endpoint. On the 8B-on-H200 endpoint "
        f"({dig(result(SIZING_GPU), 'endpoint/slots')} sequences at a time) an abstract is "
        f"{gpu_kg()} GPU-seconds: "
        f"36M abstracts are about {span(gpu, lambda x: sig(x, 2))} GPU-hours, "
        f"{span((x / GPUS for x in gpu), '.0f')} hours on {GPUS} such GPUs"
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
