"""docs/benchmarks.md, retrieval: issue #32's settings one at a time and combined, on BioASQ 11b
and the PubMedQA test questions, each against the default with a paired-bootstrap interval
(``retrieval_ablation.json``, ``bench_retrieval_ablation.py``), and what they cost per query
(``retrieval_ablation_speed.json``)."""

from __future__ import annotations

from figures import ci, figure, num, result, signed, source, table

PATH = "retrieval_ablation.json"
SETS = {"bioasq": "BioASQ 11b", "pubmedqa": "PubMedQA test"}


def _cell(row: dict, metric: str) -> str:
    if not row.get("measured", True):
        return "not measured"
    if row["row"] == "default":
        return num(row[metric])
    lo, hi = row[f"{metric}_ci"]
    mark = "**" if lo > 0 else ""
    return f"{num(row[metric])} ({mark}{signed(row[f'{metric}_delta'])}{mark} {ci(lo, hi)})"


@figure("retrieval-ablation")
def retrieval_ablation() -> str:
    data = result(PATH)
    bio, pqa = data["results"]["bioasq"], data["results"]["pubmedqa"]
    by_row = {r["row"]: r for r in pqa["rows"]}
    rows = []
    for r in bio["rows"]:
        p = by_row[r["row"]]
        same = "yes" if r["end_to_end_equal"] and p.get("end_to_end_equal", True) else "**no**"
        rows.append([r["row"], f"`{r['setting']}`", _cell(r, "R@10"), _cell(r, "MAP@10"),
                     _cell(p, "R@1"), same])  # fmt: skip
    head = ["row (chosen on 7b-10b / PubMedQA dev)", "settings",
            "BioASQ 11b R@10 (delta [95% CI])", "BioASQ 11b MAP@10", "PubMedQA test R@1",
            "Searcher.search gives the same top 10"]  # fmt: skip
    mined_b, mined_p = bio["abbreviations_mined"], pqa["abbreviations_mined"]
    notes = (
        f"Queries: BioASQ {bio['queries']['test']} test / {bio['queries']['dev']} dev, PubMedQA "
        f"{pqa['queries']['test']} test / {pqa['queries']['dev']} dev. Abbreviations mined: "
        f"{mined_b:,} pairs from the BioASQ snippets ({bio['expanded_queries']['test']} of the "
        f"11b questions name one), {mined_p:,} from the PubMedQA abstracts "
        f"({pqa['expanded_queries']['test']} test questions). A delta in bold has its whole "
        "interval above 0."
    )
    return "\n\n".join([table(head, rows, "llrrrc"), notes, source(PATH)])


@figure("retrieval-ablation-speed")
def retrieval_ablation_speed() -> str:
    path = "retrieval_ablation_speed.json"
    data = result(path)
    base = data["rows"][0]["p50_ms"]
    rows = [
        [r["setting"], num(r["p50_ms"], 1), num(r["p95_ms"], 1), signed(r["p50_ms"] - base, 1),
         "yes" if r["p50_ms"] < 50 else "**no**"]
        for r in data["rows"]
    ]  # fmt: skip
    head = [f"setting ({data['n']:,} chunks, {data['queries']} BioASQ questions)", "p50 ms",
            "p95 ms", "p50 over the default", "under 50 ms p50"]  # fmt: skip
    emb = "; ".join(
        f"{m} {num(v['p50_ms'], 1)} ms" for m, v in data.get("query_embedding", {}).items()
    )
    note = (
        f"Query embedding included (MiniLM; all-mpnet-base-v2 for the second encoder); a "
        f"query's embedding alone, p50: {emb}. The "
        f"{data['abbreviation_pairs']:,} abbreviation pairs are those mined from the BioASQ "
        f"snippets (mined in {data['mine_s']} s)."
    )
    return "\n\n".join([table(head, rows, "lrrrc"), note, source(path)])


def _verdict(row: dict, metric: str) -> str:
    lo, hi = row[f"{metric}_ci"]
    return "gain" if lo > 0 else "loss" if hi < 0 else "no significant change"


@figure("retrieval-ablation-verdict")
def retrieval_ablation_verdict() -> str:
    """One bullet per row: what it did on BioASQ 11b MAP@10 / R@10 and PubMedQA R@1."""
    data = result(PATH)
    bio, pqa = data["results"]["bioasq"], data["results"]["pubmedqa"]
    by_row = {r["row"]: r for r in pqa["rows"]}
    out = []
    for r in bio["rows"][1:]:
        if not r.get("measured", True):
            continue
        p = by_row[r["row"]]
        pq = (
            f"PubMedQA R@1 {signed(p['R@1_delta'])} ({_verdict(p, 'R@1')})"
            if p.get("measured", True)
            else "not measured on PubMedQA"
        )
        out.append(
            f"- **{r['row']}** (`{r['setting']}`): BioASQ 11b MAP@10 {signed(r['MAP@10_delta'])} "
            f"({_verdict(r, 'MAP@10')}), R@10 {signed(r['R@10_delta'])} ({_verdict(r, 'R@10')}); "
            f"{pq}."
        )
    return "\n".join(out)


@figure("retrieval-ablation-decision")
def retrieval_ablation_decision() -> str:
    """Whether the default changed, and the issue's targets, from the result file."""
    data = result(PATH)
    bio = data["results"]["bioasq"]["rows"]
    base = bio[0]
    gains = [r["row"] for r in bio[1:] if r.get("measured", True)
             and r["MAP@10_ci"][0] > 0 and r["R@10_ci"][0] >= 0]  # fmt: skip
    verdict = (
        f"A significant gain on BioASQ 11b: {', '.join(gains)}."
        if gains
        else "No setting, alone or combined, is a significant gain on BioASQ 11b, so the "
        "default stays as it was (score fusion of BM25 and MiniLM)."
    )
    return (
        f"{verdict} The issue's targets (documents R@10 >= 0.78, MAP@10 >= 0.78) are not met: "
        f"the default gives {num(base['R@10'])} / {num(base['MAP@10'])}. The combination chosen "
        f"on dev with the second encoder was `{data['chosen']}`."
    )
