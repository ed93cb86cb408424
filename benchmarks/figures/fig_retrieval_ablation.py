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
