"""docs/benchmarks.md, CLAIMS: what the no-LLM claim extractor emits before and after its claim
rules (``rule_claims.json``, ``bench_rule_claims.py``), and a sample of the kept claims read by
hand (``rule_claims_judged.json``)."""

from __future__ import annotations

from figures import RESULTS, FigureError, figure, num, result, source, table

RULES, JUDGED = "rule_claims.json", "rule_claims_judged.json"
SETS = {"demo": "the demo's 200 abstracts", "pubmedqa": "200 other PubMedQA abstracts"}


@figure("rule-claims")
def rule_claims() -> str:
    data = result(RULES)
    rows = []
    for key, name in SETS.items():
        if key not in data:
            continue
        b, a = data[key]["before"], data[key]["after"]
        problems = ", ".join(f"{k} {v}" for k, v in b["problems"].items())
        rows.append([name, str(b["claims"]), num(b["well_formed_share"]), problems,
                     str(a["claims"]), num(b["claims_with_a_triple_share"]),
                     num(a["claims_with_a_triple_share"])])  # fmt: skip
    head = ["abstracts", "claims before", "well-formed before (by the rules)",
            "what the rest were", "claims after", "with a triple before", "after"]  # fmt: skip
    judged = result(JUDGED)
    if judged["sample"] != data["demo"]["sample"]:
        raise FigureError(
            f"{JUDGED} judged another sample than {RULES} now holds: read the new sample"
        )
    read = (
        f"Read by hand: {judged['well_formed']} of {judged['of']} kept claims sampled from the "
        f"demo set are well-formed claims ({judged['judged_by']}); the others: "
        + "; ".join(f'"{x["claim"]}" ({x["why"]})' for x in judged["not_well_formed"])
        + "."
    )
    return "\n\n".join([table(head, rows, "lrrlrrr"), read, source(RULES), source(JUDGED)])


@figure("summary-relevance")
def summary_relevance() -> str:
    """The default embedder's rows, then another embedder's where it was run (the same threshold
    read on its own cosine)."""
    files = ["summary_relevance.json"]
    if (RESULTS / "summary_relevance_mpnet.json").is_file():
        files.append("summary_relevance_mpnet.json")
    rows = []
    for path in files:
        data = result(path)
        embedder = data.get("embedder", "all-MiniLM-L6-v2")
        held_out = data.get("held_out") or []
        sets = [("the demo's 40 questions, 200 abstracts", data["rows"]),
                ("200 other PubMedQA questions and abstracts", held_out)]  # fmt: skip
        rows += [[name, embedder,
                  ("none (the paper)" if r["threshold"] is None else num(r["threshold"], 2)),
                  str(r["questions"]), num(r["summary_claims_per_question"], 2),
                  num(r["own_abstract_share"]), num(r["accuracy"])]
                 for name, found in sets for r in found]  # fmt: skip
    head = ["set", "embedder (relevance: its cosine)", "summary_min_relevance", "questions",
            "summary claims / question", "from the question's own abstract",
            "floor accuracy"]  # fmt: skip
    return "\n\n".join([table(head, rows, "lllrrrr"), *(source(f) for f in files)])
