"""docs/benchmarks.md, "Retrieval quality", "Chunks longer than the embedding model reads" and
"Retrieval speed and memory": rendered from ``retrieval_quality.json``, ``long_chunks.json`` and
``retrieval_speed.json``.

Also the small helpers the other modules of these sections use (``fmt``: halves rounded up,
``num``, ``sgn``, ``interval``, ``span``, ``sig``, ``sec``, ``ms``)."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

from figures import FigureError, dig, family, figure, find_row, result, table

QUALITY = "retrieval_quality.json"
LONG = "long_chunks.json"
SPEED = "retrieval_speed.json"


# --- helpers (the other modules of these sections use them) --------------------------------


def dec(x: Any) -> Decimal:
    """``x`` as the decimal number the result file wrote (0.0185, not 0.018499...)."""
    return x if isinstance(x, Decimal) else Decimal(repr(x) if isinstance(x, float) else x)


def fmt(x: Any, spec: str) -> str:
    """``x`` formatted by ``spec``, halves rounded up (the file's 0.0185 is 0.019 at .3f)."""
    if isinstance(x, bool) or not isinstance(x, int | float | Decimal):
        return str(x)
    with localcontext() as ctx:
        ctx.rounding = ROUND_HALF_UP
        return format(dec(x), spec)


def num(x: Any, digits: int = 3, *, bold: bool = False) -> str:
    """A number with ``digits`` decimals, thousands separated; '' for None."""
    if x is None:
        return ""
    text = fmt(x, f",.{digits}f")
    return f"**{text}**" if bold else text


def sgn(x: Any, digits: int = 3) -> str:
    """A signed difference (``+0.007``, ``-0.000``); an exact zero unsigned (``0.000``)."""
    return fmt(0, f".{digits}f") if x == 0 else fmt(x, f"+.{digits}f")


def interval(lo: Any, hi: Any, digits: int = 3) -> str:
    """A confidence interval as ``[-0.008, +0.002]``."""
    return f"[{sgn(lo, digits)}, {sgn(hi, digits)}]"


def span(values: list[Any], spec: str = ".3f", sep: str = "-") -> str:
    """``lo-hi`` of ``values`` (one value where they round alike)."""
    lo, hi = fmt(min(values), spec), fmt(max(values), spec)
    return lo if lo == hi else f"{lo}{sep}{hi}"


def sig(x: Any, digits: int = 2) -> str:
    """``x`` rounded to ``digits`` significant digits, thousands separated (4,386 -> 4,400)."""
    d = dec(x)
    step = Decimal(1).scaleb(d.adjusted() + 1 - digits)
    return fmt(d.quantize(step, rounding=ROUND_HALF_UP), ",f")


def sec(x: Any) -> str:
    """Seconds as the tables give them: 0.69, 2.8, 229."""
    return fmt(x, ".2f" if x < 1 else ".1f" if x < 10 else ",.0f")


def ms(x: Any) -> str:
    """Milliseconds: 0.16, 1.95, 10.6."""
    return fmt(x, ".2f" if x < 10 else ",.1f")


# --- retrieval quality ---------------------------------------------------------------------


def dataset(name: str) -> dict[str, Any]:
    return find_row(QUALITY, "results", dataset=name)


def attempts(ds: str, pattern: str) -> list[dict[str, Any]]:
    """The attempts of ``ds`` whose name matches the regular expression ``pattern``."""
    found = [a for a in dataset(ds)["attempts"] if re.search(pattern, a["name"])]
    if not found:
        raise FigureError(f"{QUALITY}: {ds} has no attempt matching {pattern!r}")
    return found


def attempt(ds: str, pattern: str) -> dict[str, Any]:
    found = attempts(ds, pattern)
    if len(found) != 1:
        raise FigureError(f"{QUALITY}: {ds}: {len(found)} attempts match {pattern!r}")
    return found[0]


RRF = r"^hybrid RRF k=60, equal weights"  # the first version: the attempts' reference


def _map(a: dict[str, Any]) -> float:
    return a["test"]["MAP@10"]


def _delta(a: dict[str, Any]) -> str:
    return f"{sgn(a['test_objective_delta_vs_hybrid'])} {interval(*a['delta_95ci'])}"


def _no_effect(rows: list[dict[str, Any]]) -> str:
    """'no effect' where every interval spans zero, then each delta with its interval."""
    spans_zero = all(lo <= 0 <= hi for lo, hi in (a["delta_95ci"] for a in rows))
    return ("no effect: " if spans_zero else "") + "; ".join(_delta(a) for a in rows)


@figure("retrieval-pubmedqa")
def pubmedqa() -> str:
    r = dataset("pubmedqa")
    lib, ref = r["library"]["own PMID"], r["reference"]
    rows = []
    for key, label in (("bm25", "BM25"), ("dense", "dense (MiniLM)")):
        m = lib[key]
        rows.append([label, num(m["R@1"]), num(m["R@10"]), num(m["MRR@10"]),
                     num(ref[key]["R@1"])])  # fmt: skip
    m = lib["hybrid"]
    rows.append(["hybrid (library default)", num(m["R@1"], bold=True), num(m["R@10"], bold=True),
                 num(m["MRR@10"], bold=True), num(ref["hybrid"]["R@1"])])  # fmt: skip
    return table(["retriever", "R@1", "R@10", "MRR@10", "issue's reference R@1"], rows)


@figure("retrieval-bioasq")
def bioasq() -> str:
    r = dataset("bioasq")
    lib, ref = r["library"]["documents, in corpus"], r["reference"]
    k1b = "k1 {k1}, b {b}".format(**r["default_via_library_functions"]["config"])

    def refs(key: str) -> str:
        return f"{num(ref[key]['R@10'])} / {num(ref[key]['MAP@10'])}"

    rrf = attempt("bioasq", RRF)["test"]
    rows = [
        [f"BM25 ({k1b})", num(lib["bm25"]["R@10"]), num(lib["bm25"]["MAP@10"]), refs("bm25")],
        ["dense (MiniLM)", num(lib["dense"]["R@10"]), num(lib["dense"]["MAP@10"]), refs("dense")],
        ["hybrid RRF k=60 (the first version)", num(rrf["R@10"]), num(rrf["MAP@10"]),
         refs("hybrid")],
        [f"**hybrid, library default (min-max score fusion, BM25 {k1b})**",
         num(lib["hybrid"]["R@10"], bold=True), num(lib["hybrid"]["MAP@10"], bold=True), ""],
    ]  # fmt: skip
    return table(["retriever", "R@10", "MAP@10", "issue's reference R@10 / MAP@10"], rows)


@figure("retrieval-rrf-map")
def rrf_map() -> str:
    return num(_map(attempt("bioasq", RRF)))


@figure("retrieval-rrf-snippet-map")
def rrf_snippet_map() -> str:
    return num(attempt("bioasq", RRF)["test"]["MAP@10 (snippet qrels)"])


def _bracket(a: dict[str, Any]) -> dict[str, str]:
    """The settings in an attempt's name: 'x [w_dense=0.5, rrf_k=20]' -> {w_dense: 0.5, ...}."""
    m = re.search(r"\[(.*)\]$", a["name"])
    return dict(re.findall(r"(\w+)=([^,\]]+)", m[1])) if m else {}


@figure("retrieval-attempts")
def retrieval_attempts() -> str:
    bq = "bioasq"
    w = attempt(bq, r"^hybrid weighted RRF")
    ws = _bracket(w)
    comb = attempt(bq, r"^hybrid convex score fusion")
    agg = attempts(bq, r"doc = (sum|top2) of chunk")
    lse_b, lse_d = attempt(bq, r"^BM25, doc = log-sum-exp"), attempt(bq, r"^dense, doc = log-sum")
    bm25, dense = attempt(bq, r"^BM25 \(first occurrence\)"), attempt(bq, r"^dense \(first occ")
    whole = attempts(bq, r"^hybrid of whole-doc BM25")
    rm3, rocchio = attempt(bq, r"^BM25 \+ RM3"), attempt(bq, r"^dense \+ Rocchio")
    prf = attempts(bq, r"^hybrid( of BM25\+RM3|; RM3\+Rocchio)")
    title = attempt(bq, r"^hybrid, title snippets")
    mesh = attempt("pubmedqa", r"^hybrid \+ MeSH-terms")
    k1b = attempt(bq, r"^hybrid with BM25 k1=")
    depth = attempt(bq, r"^hybrid, candidates per retriever")
    tuned = attempt(bq, r"^coordinate ascent on dev")
    one = attempt(bq, r"^one setting for all")
    agg_d = [a["test_objective_delta_vs_hybrid"] for a in agg]
    rows = [
        [f"(a) weighted RRF (dense {ws['w_dense']}, k={ws['rrf_k']})", num(_map(w)), _delta(w)],
        ["(a) convex fusion of min-max normalised scores", num(_map(comb)), _delta(comb)],
        ["(b) document score = sum / top-2 of chunk scores (BM25, dense) or RRF contributions "
         "(hybrid)", span([_map(a) for a in agg]), span(agg_d, "+.2f", " to ")],
        ["(b) log-sum-exp of chunk scores (BM25 / dense)",
         f"{num(_map(lse_b))} / {num(_map(lse_d))}",
         f"{sgn(_map(lse_b) - _map(bm25))} / {sgn(_map(lse_d) - _map(dense))} against max"],
        ["(b) whole-document BM25 or centroid vectors inside the hybrid",
         span([_map(a) for a in whole]), _no_effect(whole)],
        ["(c) RM3 on BM25 / Rocchio on dense, alone", f"{num(_map(rm3))} / {num(_map(rocchio))}",
         f"{sgn(_map(rm3) - _map(bm25))} / {sgn(_map(rocchio) - _map(dense))} over each "
         "single retriever"],
        ["(c) PRF inside the hybrid", span([_map(a) for a in prf]), _no_effect(prf)],
        ["(d) fields: up-weighting BioASQ title snippets", num(_map(title)),
         f"{_delta(title)} (no fields exist otherwise; MeSH terms on PubMedQA, MRR@10: "
         f"{_delta(mesh)})"],
        ["(e) BM25 k1/b tuned on dev, inside the hybrid", num(_map(k1b)), _delta(k1b)],
        ["(e) candidate depth 20-500", num(_map(depth)),
         f"{_no_effect([depth])} (tuned depth {_bracket(depth)['depth']})"],
        ["everything tuned per dataset (coordinate ascent)", num(_map(tuned)), _delta(tuned)],
        ["**one setting for both sets: score fusion + BM25 k1 0.9, b 0.5 (adopted)**",
         num(_map(one), bold=True), f"**{_delta(one)}**"],
    ]  # fmt: skip
    return table(["attempt (tuned on dev)", "MAP@10", "delta [95% CI]"], rows)


# --- chunks longer than the window -----------------------------------------------------------

LONG_CORPORA = {
    "pubmedqa-whole": "PubMedQA abstracts whole (1,000 documents)",
    "pubmedqa-sections": "PubMedQA sections (the library's index, {chunks} chunks)",
    "bioasq-whole": "BioASQ 7b-11b snippets joined per PMID ({chunks} chunks; {queries} 11b test "
    "questions)",
}


def _over(c: dict[str, Any]) -> str:
    return f"{c['over_window']:,} of {c['chunks']:,}"


@figure("long-chunks")
def long_chunks() -> str:
    data = result(LONG)
    rows = []
    for key, label in LONG_CORPORA.items():
        r = dig(data, key, LONG)
        ch = r["chunks"]
        same = ch["aligned"] == ch["truncate"]
        over = _over(ch["truncate"]) + ("" if same else f" (aligned: {_over(ch['aligned'])})")
        for i, ret in enumerate(("dense", "hybrid")):
            m = r[ret]
            base = m["truncate"]["RR@10"]

            def cell(v: str, m: dict[str, Any] = m, base: float = base) -> str:
                mrr, lohi = m[v]["RR@10"], m[f"mrr_delta_ci_{v}"]
                return f"{num(mrr)} ({sgn(dec(mrr) - dec(base))} {interval(*lohi)})"

            first = [label.format(chunks=f"{ch['truncate']['chunks']:,}", queries=r["queries"]),
                     over] if i == 0 else ["", ""]  # fmt: skip
            rows.append([*first, ret, num(base), cell("pool"),
                         "same chunks" if same else cell("aligned")])  # fmt: skip
    return table(["corpus", "chunks over the window", "retriever", "MRR@10 truncate",
                  "pool (delta, 95% CI)", "aligned (delta, 95% CI)"], rows)  # fmt: skip


def _r10(keys: list[str], ret: str) -> list[float]:
    data = result(LONG)
    return [data[k][ret][v]["R@10"] for k in keys for v in ("truncate", "pool", "aligned")]


@figure("long-chunks-r10-pubmedqa")
def r10_pubmedqa() -> str:
    return span([x for ret in ("dense", "hybrid")
                 for x in _r10(["pubmedqa-whole", "pubmedqa-sections"], ret)])  # fmt: skip


@figure("long-chunks-r10-bioasq-dense")
def r10_bioasq_dense() -> str:
    return span(_r10(["bioasq-whole"], "dense"))


@figure("long-chunks-r10-bioasq-hybrid")
def r10_bioasq_hybrid() -> str:
    return span(_r10(["bioasq-whole"], "hybrid"))


@figure("long-chunks-pool-fall")
def pool_fall() -> str:
    m = dig(result(LONG), "pubmedqa-whole/dense", LONG)
    return num(dec(m["truncate"]["RR@10"]) - dec(m["pool"]["RR@10"]))


@figure("long-chunks-bioasq-over-share")
def bioasq_over_share() -> str:
    c = dig(result(LONG), "bioasq-whole/chunks/truncate", LONG)
    return f"{c['over_window'] / c['chunks']:.1%}"


# --- retrieval speed -------------------------------------------------------------------------


def speed_row(scale: str, stage: str) -> dict[str, Any]:
    return find_row(SPEED, "rows", scale=scale, stage=stage)


@family("retrieval-speed")
def speed_value(label: str) -> str:
    """``retrieval-speed/SCALE/STAGE/KEY|FMT``: one value of a row of ``retrieval_speed.json``."""
    path, _, spec = label.partition("|")
    scale, stage, key = path.split("/")
    x = dig(speed_row(scale, stage), key, SPEED)
    return fmt(x, spec) if spec else str(x)


def _params(r: dict[str, Any]) -> dict[str, str]:
    return dict(x.split("=") for x in r["params"].split())


@figure("retrieval-speed")
def retrieval_speed() -> str:
    data = result(SPEED)
    real, syn = "real 21k", "synthetic 1M"

    def build(r: dict[str, Any], rate: bool = False) -> str:
        text = f"{sec(r['build_s'])} s"
        return text + (f" ({r['build_per_s'] / 1000:.1f}k chunks/s)" if rate else "")

    def lat(r: dict[str, Any], bold: bool = False) -> list[str]:
        p50, p95 = ms(r["p50_ms"]), ms(r["p95_ms"])
        return [f"**{p50}**", f"**{p95}**"] if bold else [p50, p95]

    def gb(r: dict[str, Any]) -> str:
        return f"{r['peak_gb']:.2f}"

    q = speed_row(real, "query embedding (MiniLM, 1 query)")
    bm, fl = speed_row(real, "bm25 build+search"), speed_row(real, "dense flat build+search")
    hy, hn = speed_row(real, "hybrid bm25+flat+rrf"), speed_row(real, "dense hnsw build+search")
    sbm, sfl = speed_row(syn, "bm25 build+search"), speed_row(syn, "dense flat build+search")
    shy, shn = speed_row(syn, "hybrid bm25+flat+rrf"), speed_row(syn, "dense hnsw build+search")
    shh, siv = speed_row(syn, "hybrid bm25+hnsw+rrf"), speed_row(syn, "dense ivf build+search")
    shi = speed_row(syn, "hybrid bm25+ivf+rrf")
    hp, ip = _params(shn), _params(siv)
    n_syn = data["synthetic"]["n"]
    rows = [
        [f"BioASQ snippets ({data['real']['n_snippets']:,})", "query embedding (MiniLM)", "",
         *lat(q), ""],
        ["", "BM25", build(bm, True), *lat(bm), gb(bm)],
        ["", "dense exact (flat)", build(fl), *lat(fl), gb(fl)],
        ["", "hybrid, flat", "", *lat(hy), ""],
        ["", f"dense HNSW (recall@10 vs exact {hn['recall10_vs_flat']:.2f})", build(hn), *lat(hn),
         gb(hn)],
        [f"{n_syn / 1e6:g}M synthetic chunks", "BM25", build(sbm, True), *lat(sbm), gb(sbm)],
        ["", "dense exact (flat)", build(sfl), *lat(sfl), gb(sfl)],
        ["", "hybrid, flat", "", *lat(shy), ""],
        ["", f"dense HNSW (M {hp['M']}, efC {hp['efC']}, ef {hp['ef']})", build(shn), *lat(shn),
         gb(shn)],
        ["", "**hybrid, HNSW**", "", *lat(shh, bold=True), ""],
        ["", f"dense IVF ({ip['nlist']} lists, nprobe {ip['nprobe']})", build(siv), *lat(siv),
         gb(siv)],
        ["", "hybrid, IVF", "", *lat(shi), ""],
    ]  # fmt: skip
    return table(["corpus", "stage", "build", "p50 ms", "p95 ms", "peak GB"], rows)


@figure("retrieval-speed-cold")
def speed_cold() -> str:
    """The seconds a cold run adds: the snippets at the sample's embedding rate."""
    r = speed_row("real 21k", "embed MiniLM (uncached sample)")
    return f"{result(SPEED)['real']['n_snippets'] / r['build_per_s']:.0f}"


@figure("retrieval-speed-rebuild-min")
def speed_rebuild_min() -> str:
    bm = speed_row("synthetic 1M", "bm25 build+search")["build_s"]
    hn = speed_row("synthetic 1M", "dense hnsw build+search")["build_s"]
    return f"{(bm + hn) / 60:.1f}"
