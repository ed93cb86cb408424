"""docs/benchmarks.md: IP-RAR (``iprar_recall.json``; the runner's run directories
``eval_bioasq11b_iprar_*``: ``metrics.json``, ``run.json``) and BioStrataKG (``strata.json``).

The eval figures read whatever the run directories hold: a re-run rewrites their files, and the
docs follow on the next render."""

from __future__ import annotations

from typing import Any

from figures import dig, figure, num, result, run_recorded, signed, table

RECALL = "iprar_recall.json"
FLOOR = "eval_bioasq11b_iprar_floor"
DRYRUN = "eval_bioasq11b_iprar_dryrun"
BATCH5 = "eval_bioasq11b_iprar_dryrun_batch5"
STRATA = "strata.json"
LISTS = {"question": "question (dense)", "virtual": "+ virtual answer (dense)",
         "keyword": "+ keywords (BM25)"}  # fmt: skip
LEVELS = ("abstract", "fulltext", "multi-level", "cumulative")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


@figure("iprar-recall")
def iprar_recall() -> str:
    data = result(RECALL)
    t4 = dig(data, "table4", RECALL)
    body = []
    for key, label in LISTS.items():
        cells = []
        for level in LEVELS:
            cell = dig(t4, [key, level], RECALL)
            text = _pct(cell["recall"])
            if level == "cumulative" and key == list(LISTS)[-1]:
                text += f" ({cell['mean_docs']:.1f} documents)"
            cells.append(text)
        body.append([label, *cells])
    k = dig(data, "k_per_list", RECALL)
    header = [f"list (k = {k} each)", "abstract level", "full-text level", "both levels",
              "cumulative"]  # fmt: skip
    return table(header, body, "lrrrr")


@figure("iprar-top10")
def iprar_top10() -> str:
    """The top-10 sentence: the aggregator against dense alone and the library hybrid."""
    data = result(RECALL)
    top = dig(data, "ranking_top10", RECALL)
    w = ", ".join(f"{x:g}" for x in dig(data, "weights", RECALL))
    agg = next(v for k, v in top.items() if k.startswith("IP-RAR aggregator"))
    dense = next(v for k, v in top.items() if k.startswith("library dense"))
    hyb = next(v for k, v in top.items() if k.startswith("library hybrid"))

    def pair(v: dict[str, Any]) -> str:
        return f"{num(v['R@10'])} / {num(v['MAP@10'])}"

    def side(v: dict[str, Any]) -> str:
        return "above" if v["MAP@10"] < agg["MAP@10"] else "below"

    lo, hi = agg["delta_95ci"]
    return (
        f"the aggregator ({w}) gives R@10 / MAP@10 {pair(agg)}, {side(dense)} dense alone "
        f"({pair(dense)}) and {side(hyb)} the library hybrid ({pair(hyb)}; MAP@10 difference "
        f"{signed(agg['MAP@10_delta_vs_hybrid'])} [{signed(lo)}, {signed(hi)}])"
    )


# -- the whole method through the runner -------------------------------------------------------


def _run(d: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return result(f"{d}/metrics.json"), result(f"{d}/run.json")


def _scores(e: dict[str, Any], block: str, keys: tuple[str, ...]) -> str:
    s = (e.get("scores") or {}).get(block) or {}
    return " / ".join(num(s.get(k)) if s.get(k) is not None else "-" for k in keys)


@figure("iprar-floor")
def iprar_floor() -> str:
    metrics, run = _run(FLOOR)
    body = []
    for m, e in dig(metrics, "methods", FLOOR).items():
        body.append([
            f"{m} (floor)", _scores(e, "yesno", ("accuracy", "macro_f1")),
            _scores(e, "factoid", ("strict_accuracy", "lenient_accuracy", "mrr")),
            _scores(e, "list", ("precision", "recall", "f1")),
            _scores(e, "documents", ("precision", "recall", "f1", "map")),
            num(e.get("seconds_per_question"), 2),
        ])  # fmt: skip
    header = ["method", "yes/no acc / macro-F1", "factoid strict / lenient / MRR",
              "list P / R / F1", "documents P / R / F1 / MAP", "s/question"]  # fmt: skip
    bits = [f"`benchmarks/results/{FLOOR}/` (metrics.json, run.json)", *run_recorded(FLOOR)]
    started = run.get("started_at")
    if started:
        bits.append(f"run started {started}")
    return table(header, body, "llllll") + "\n\nResult: " + ", ".join(bits) + "."


@figure("iprar-floor-questions")
def iprar_floor_questions() -> str:
    info = dig(_run(FLOOR)[1], "dataset_info", f"{FLOOR}/run.json")
    names = {"yesno": "yes/no", "factoid": "factoid", "list": "list", "summary": "summary"}
    kinds = ", ".join(f"{n} {names.get(t, t)}" for t, n in info["by_type"].items())
    return f"{info['count']} questions ({kinds})"


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@figure("iprar-floor-documents")
def iprar_floor_documents() -> str:
    """IP-RAR's document measures against retrieve-read's, as the run directory holds them."""
    metrics, run = _run(FLOOR)
    where = f"{FLOOR}/metrics.json"
    ip = dig(metrics, "methods/iprar/scores/documents", where)
    rr = dig(metrics, "methods/retrieve-read/scores/documents", where)
    target = dig(run, "effective_options/iprar/relevant_target", f"{FLOOR}/run.json")
    names = {"precision": "precision", "recall": "recall", "f1": "F1", "map": "MAP"}
    pairs = {n: (dig(ip, k, where), dig(rr, k, where)) for k, n in names.items()}
    higher = [n for n, (a, b) in pairs.items() if a > b]
    lower = [n for n, (a, b) in pairs.items() if a < b]
    parts = []
    if higher:
        parts.append(f"its document {_and(higher)} {'is' if len(higher) == 1 else 'are'} higher")
    if lower:
        parts.append(f"its {'document ' if not higher else ''}{_and(lower)} lower")
    cmp = " and ".join(parts) or "its document measures are equal"
    return (
        f"IP-RAR returns the documents of its final chunks (at most {target}); in this run "
        f"{cmp} than retrieve-read's top-10 list"
    )


def _calls(d: str, stage: str | None = None, key: str = "calls") -> float:
    e = dig(result(f"{d}/metrics.json"), "methods/iprar/accounting_per_question", d)
    return float(dig(e, ["total", key] if stage is None else ["stages", stage, key], d))


@figure("iprar-dryrun-calls")
def iprar_dryrun_calls() -> str:
    """LLM calls per question with the dry-run model, relevance one by one against batched."""
    n = dig(result(f"{DRYRUN}/metrics.json"), "methods/iprar/n", DRYRUN)
    one = (
        f"{_calls(DRYRUN):.1f} with the paper's one-by-one relevance checks "
        f"({_calls(DRYRUN, 'iprar_relevance'):.1f} `iprar_relevance` calls)"
    )
    batch = dig(result(f"{BATCH5}/run.json"), "effective_options/iprar/relevance_batch", BATCH5)
    five = (
        f"{_calls(BATCH5):.1f} with `relevance_batch = {batch}` "
        f"({_calls(BATCH5, 'iprar_relevance_batch'):g} `iprar_relevance_batch` call)"
    )
    tokens = (
        f"{_calls(DRYRUN, key='prompt_tokens'):,.0f} vs "
        f"{_calls(BATCH5, key='prompt_tokens'):,.0f} prompt tokens"
    )
    return f"(first {n} questions; calls carry no knowledge): {one}, {five}; {tokens}"


@figure("iprar-dryrun-stages")
def iprar_dryrun_stages() -> str:
    final = _calls(DRYRUN, "answer") + _calls(DRYRUN, "iprar_final")
    return (
        f"prereasoning {_calls(DRYRUN, 'iprar_prereason'):g}, draft answer "
        f"{_calls(DRYRUN, 'iprar_answer'):g}, support scores {_calls(DRYRUN, 'iprar_support'):g}, "
        f"final answer {final:g} (the reader for yes/no, `iprar_final` otherwise), exact answer "
        f"{_calls(DRYRUN, 'exact_answer'):g} (factoid and list questions)"
    )


# -- BioStrataKG -------------------------------------------------------------------------------

STRATA_RUNS = {
    "no-LLM, no vocabulary": "no-LLM, no vocabulary",
    "no-LLM, stand-in MeSH vocab": "no-LLM, stand-in vocabulary",
    "dry-run LLM, stand-in MeSH vocab": "dry-run model, stand-in vocabulary",
}
STAGES = ("extraction", "normalization", "storage", "projection")
RESOLUTION_S = 0.001  # a stage timed at the timer's resolution has no meaningful rate


def _rate(r: dict[str, Any], stage: str) -> str:
    if r["seconds_by_stage"].get(stage, 0) <= RESOLUTION_S:
        return "-"
    return num(r["papers_per_s_by_stage"][stage], 1 if r["papers_per_s_by_stage"][stage] < 100
               else 0)  # fmt: skip


def _llm_calls(r: dict[str, Any]) -> str:
    per = r.get("llm_calls_per_paper_by_stage") or {}
    if not per:
        return "0"
    stages = ", ".join(f"{k} {v:g}" for k, v in per.items())
    return f"{sum(per.values()):.1f} ({stages})"


@figure("iprar-strata")
def iprar_strata() -> str:
    body = []
    for r in dig(result(STRATA), "runs", STRATA):
        nodes = r["nodes"]
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(nodes.items(), key=lambda kv: -kv[1]))
        total = r["papers_per_s_total"]
        body.append([
            STRATA_RUNS.get(r["run"], r["run"]), num(total, 1 if total < 100 else 0),
            *(_rate(r, s) for s in STAGES), _llm_calls(r), f"{r['triplets']:,}",
            f"{sum(nodes.values()):,} ({kinds})",
        ])  # fmt: skip
    header = ["run", "total", *STAGES, "LLM calls/paper", "triplets", "nodes"]
    return table(header, body, "lrrrrrlrl")


@figure("iprar-strata-calls")
def iprar_strata_calls() -> str:
    r = next(
        r for r in dig(result(STRATA), "runs", STRATA) if r.get("llm_calls_per_paper_by_stage")
    )
    return f"{sum(r['llm_calls_per_paper_by_stage'].values()):g} per paper"
