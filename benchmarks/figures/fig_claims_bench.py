"""docs/benchmarks.md, "CLAIMS": the LLM economy of faithful and batched mode
(``claims_economy.json``), the no-LLM end-to-end time (``claims_nollm.json``) and entity
deduplication (``dedup.json``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from figures import FigureError, dig, family, figure, find_row, result, table
from figures.fig_retrieval import dec, fmt, num

ECONOMY = "claims_economy.json"
NOLLM = "claims_nollm.json"
DEDUP = "dedup.json"


# --- LLM economy ---------------------------------------------------------------------------


def mode(name: str) -> dict[str, Any]:
    return find_row(ECONOMY, "modes", mode=name)


def _mean(m: dict[str, Any], key: str) -> Decimal:
    """The mean of a per-question count, exactly (the summary keeps it rounded)."""
    per_q = m["per_question"]
    return Decimal(sum(q[key] for q in per_q)) / len(per_q)


@figure("claims-economy")
def economy() -> str:
    rows = []
    for name in ("faithful", "batched"):
        m = mode(name)
        top = max(q["rounds"] for q in m["per_question"])
        rows.append([name, num(_mean(m, "calls"), 1), num(_mean(m, "prompt_tokens"), 0),
                     num(_mean(m, "completion_tokens"), 0),
                     f"{num(_mean(m, 'rounds'), 1)} / {top}"])  # fmt: skip
    return table(["mode", "calls/question", "prompt tokens/q", "completion tokens/q",
                  "rounds (mean / max)"], rows)  # fmt: skip


STAGES = {
    "faithful": [
        ("claims", ["claims"]),
        ("gleaning", ["claims_gleaning"]),
        ("triples", ["triples"]),
        ("triple fallbacks", ["triples_repair", "triples_entities", "triples_relation"]),
        ("test summaries", ["coi_test_summary"]),
        ("layer summaries", ["layer_summary"]),
        ("rewrite + HyDE", ["rewrite", "hyde"]),
        ("answer + extraction", ["answer", "answer_extract"]),
    ],
    "batched": [
        ("claims+triples", ["claims_triples"]),
        ("gleaning", ["claims_gleaning"]),
        ("triple fallbacks", ["triples_repair", "triples_entities", "triples_relation"]),
        ("test summaries", ["coi_test_summary"]),
        ("layer summaries", ["layer_summary"]),
        ("rewrite + HyDE", ["rewrite", "hyde"]),
        ("answer", ["answer"]),
    ],
}


@family("claims-stages")
def stages(name: str) -> str:
    """A mode's calls per question by stage, as one run of prose ('claims 3, gleaning 3, ...')."""
    m = mode(name)
    seen = {k for _, keys in STAGES[name] for k in keys}
    left = set(m["calls_per_q_by_stage"]) - seen
    if left:
        raise FigureError(f"{ECONOMY}: {name} has stages the doc does not name: {sorted(left)}")
    n = len(m["per_question"])
    parts = []
    for label, keys in STAGES[name]:
        calls = Decimal(sum(q["calls_by_stage"].get(k, 0) for q in m["per_question"] for k in keys))
        parts.append(f"{label} {fmt(calls / n, '.1f').removesuffix('.0')}")
    return ", ".join(parts)


def _no_fallback(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [q for q in m["per_question"]
            if not any(k.startswith("triples_") for k in q["calls_by_stage"])]  # fmt: skip


@figure("claims-no-fallback")
def no_fallback() -> str:
    """'25 of 100': the batched questions whose triples needed no fallback."""
    m = mode("batched")
    return f"{len(_no_fallback(m))} of {len(m['per_question'])}"


def _within(name: str) -> str:
    """'every', 'no' or 'N of M': the questions without fallback within deepest layers + 5."""
    qs = _no_fallback(mode(name))
    ok = sum(q["rounds"] <= q["deepest_layers"] + 5 for q in qs)
    return "every" if ok == len(qs) else "no" if ok == 0 else f"{ok} of {len(qs)}"


@family("claims-fallback-free")
def fallback_free(label: str) -> str:
    """``MODE/within`` (or ``never``), ``MODE/rounds``, ``MODE/layers`` of the questions without
    fallback; ``MODE/chain``: the rounds the fallback chain adds to a question."""
    name, _, what = label.partition("/")
    qs = _no_fallback(mode(name))
    if what == "within":
        return _within(name)
    if what == "never":  # the same, as a verb phrase: 'never does', 'always does'
        w = _within(name)
        return {"no": "never does", "every": "always does"}.get(w, f"does for {w}")
    if what == "chain":  # the rounds the fallback chain adds: deepest layers + k against + j
        fallback = [q for q in mode(name)["per_question"] if q not in qs]
        extra = max(q["rounds"] - q["deepest_layers"] for q in fallback)
        return str(extra - max(q["rounds"] - q["deepest_layers"] for q in qs))
    key = {"rounds": "rounds", "layers": "deepest_layers"}.get(what)
    if key is None:
        raise FigureError(f"claims-fallback-free has no {what!r}")
    values = sorted({q[key] for q in qs})
    return f"{values[0]}-{values[-1]}" if len(values) > 1 else str(values[0])


# --- no-LLM end-to-end time ----------------------------------------------------------------


@figure("claims-nollm")
def nollm() -> str:
    d = result(NOLLM)
    st = d["stage_mean_s"]
    cells = [f"**{fmt(d['p50_s'], '.2f')} s**", f"{fmt(d['p95_s'], '.2f')} s",
             f"{fmt(d['mean_s'], '.2f')} s"]  # fmt: skip
    cells += [f"{fmt(st[k], '.2f')} s" for k in ("retrieve", "extract", "graph", "summarize")]
    return table(["questions", "p50", "p95", "mean", "retrieve", "extract", "graph", "summarize",
                  "claims/q"], [[f"{d['questions']} PubMedQA dev", *cells,
                                 fmt(d["claims_per_q"], "")]])  # fmt: skip


@figure("claims-nollm-target")
def nollm_target() -> str:
    """Whether the p50 meets the 3 s target."""
    return "met" if result(NOLLM)["p50_s"] < 3 else "missed"


# --- entity deduplication ------------------------------------------------------------------


def _label(r: dict[str, Any]) -> str | None:
    """The doc's name for a row of dedup.json (None: a row the doc leaves out)."""
    index = r.get("stats", {}).get("index")
    if r["method"] == "exact":
        return "exact"
    if r["method"] == "blocked-flat":
        return "blocked, exact candidates"
    if r["method"] == "blocked" and index == "flat":
        return "blocked"
    if r["method"] == "blocked" and index == "ivf":
        return "blocked, IVF candidates"
    return None  # blocked-ivf at 20k: the IVF check at a size exact search covers


def _rows() -> list[dict[str, Any]]:
    return [r for r in dig(result(DEDUP), "rows", DEDUP) if _label(r)]


def _same(r: dict[str, Any]) -> str:
    if "vs_exact" in r:
        v = r["vs_exact"]
        return f"{'yes' if v['identical'] else 'no'} (ARI {v['ari']})"
    if "vs_flat" in r:
        return f"ARI {fmt(r['vs_flat']['ari'], '.4f')} vs flat-blocked"
    if r["method"] == "blocked-flat":
        # exact UPGMA's condensed distance matrix alone: n(n-1)/2 float64s
        gb = Decimal(r["n"] * (r["n"] - 1) // 2 * 8) / 10**9
        return f"(stands in for exact: {fmt(gb, '.0f')} GB)"
    return ""


@figure("dedup")
def dedup() -> str:
    rows = []
    for r in _rows():
        ivf = _label(r) == "blocked, IVF candidates"
        s = r["seconds"]
        secs = fmt(s, ".2f" if s < 10 else ".1f")
        rows.append([_label(r), f"{r['n']:,}", f"**{secs}**" if ivf else secs,
                     fmt(r["peak_rss_mb"], ",.0f"), f"{r['clusters']:,}", _same(r)])  # fmt: skip
    return table(["method", "entities", "seconds", "peak MB", "clusters", "same as exact"], rows)


def _at(label: str, n: int) -> dict[str, Any]:
    for r in _rows():
        if _label(r) == label and r["n"] == n:
            return r
    raise FigureError(f"{DEDUP} has no {label!r} row at {n:,} entities")


@figure("dedup-ivf-seconds")
def ivf_seconds() -> str:
    return fmt(_at("blocked, IVF candidates", 100_000)["seconds"], ".0f")


@figure("dedup-ivf-missed")
def ivf_missed() -> str:
    """The share of the pairs above the threshold that IVF candidate search missed."""
    ivf = dec(_at("blocked, IVF candidates", 100_000)["stats"]["candidate_pairs"])
    flat = dec(_at("blocked, exact candidates", 100_000)["stats"]["candidate_pairs"])
    return fmt(1 - ivf / flat, ".1%")


@figure("dedup-ivf-extra")
def ivf_extra() -> str:
    ivf, flat = _at("blocked, IVF candidates", 100_000), _at("blocked, exact candidates", 100_000)
    return f"{ivf['clusters'] - flat['clusters']} extra clusters of {flat['clusters'] / 1000:.1f}k"
