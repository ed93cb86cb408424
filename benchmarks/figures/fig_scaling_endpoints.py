"""docs/scaling.md's LLM endpoint figures: calls, tokens and endpoint-seconds per question, the
8B model's rates on one GPU, and what the kg build would cost at PubMed's size.

The endpoint tables recompute calls and tokens per question from each run's ``metrics.json``
(``benchmarks/results/real_llm/RUN/``) with ``bench_llm_sizing.py``'s own count
(:func:`figures.sizing.scaled`), for the runs ``llm_sizing.json`` names, and for CLAIMS on
BioASQ (which it lacks) the loop-stop run; the rates are those ``llm_sizing.json`` and
``llm_sizing_h200_8b.json`` measured.
"""

from __future__ import annotations

from typing import Any

from figures import FigureError, dig, figure, result, table
from figures.fig_scaling import GPUS, PUBMED, sig, sources, span, value
from figures.sizing import scaled

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
