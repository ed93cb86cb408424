"""docs/benchmarks.md, "Sentence verification": the two verifiers on the labelled BioASQ
sentences (``verify.json``, ``bench_verify.py``) and the citation quality of answers checked by
them (``verify_citations.json``, ``bench_verify_citations.py``)."""

from __future__ import annotations

from figures import dig, figure, num, result, source, table

VERIFY = "verify.json"
CITATIONS = "verify_citations.json"
CLASSES = ("supported", "partly_supported", "not_supported", "contradicted")


def _class_rows(name: str, block: dict) -> list[list[str]]:
    rows = []
    for c in CLASSES:
        s = dig(block, f"scores/classes/{c}", VERIFY)
        rows.append([name, c.replace("_", " "), num(s["precision"]), num(s["recall"]),
                     num(s["f1"]), str(s["n"])])  # fmt: skip
    return rows


@figure("verify-classes")
def verify_classes() -> str:
    data = result(VERIFY)
    rows = _class_rows("rules (no LLM, floor)", data["rules"])
    if "rules_one_by_one" in data:
        rows += _class_rows("rules, each passage alone", data["rules_one_by_one"])
    if "llm" in data:
        rows += _class_rows(f"LLM ({data['llm']['model']})", data["llm"])
    head = ["verifier", "label", "precision", "recall", "F1", "n"]
    return "\n\n".join([table(head, rows, "llrrrr"), source(VERIFY)])


@figure("verify-summary")
def verify_summary() -> str:
    data = result(VERIFY)
    th = data["thresholds"]
    rows = [["rules (no LLM, floor)", num(dig(data, "rules/scores/macro_f1", VERIFY)),
             num(dig(data, "rules/scores/supported_or_not_accuracy", VERIFY)),
             str(data["set"]["test"]),
             num(data["rules"]["seconds_per_item"], 4), "0"]]  # fmt: skip
    if "rules_one_by_one" in data:
        alone = data["rules_one_by_one"]
        rows.append(["rules, each passage alone (no joint check)",
                     num(dig(alone, "scores/macro_f1", VERIFY)),
                     num(dig(alone, "scores/supported_or_not_accuracy", VERIFY)),
                     str(data["set"]["test"]), num(alone["seconds_per_item"], 4), "0"])  # fmt: skip
    if "llm" in data:
        llm = data["llm"]
        sub = data["rules_on_llm_subset"]
        rows.append([f"LLM ({llm['model']})", num(llm["scores"]["macro_f1"]),
                     num(llm["scores"]["supported_or_not_accuracy"]), str(llm["n"]),
                     num(llm["seconds_per_item"], 2), num(llm["tokens_per_item"], 0)])  # fmt: skip
        rows.append(["rules, on the LLM's items", num(sub["macro_f1"]),
                     num(sub["supported_or_not_accuracy"]), str(llm["n"]), "", "0"])  # fmt: skip
    head = ["verifier", "macro-F1 (4 labels)", "accuracy of supported vs not", "test items",
            "seconds / item", "LLM tokens / item"]  # fmt: skip
    s = data["set"]
    made = (
        f"Thresholds chosen on the {s['dev']} dev items (BioASQ 7b-10b): supported >= "
        f"{th['supported']}, partly supported >= {th['partial']}, contradicted from "
        f"{th['contradicted']}; reported on {s['test']} test items (11b; "
        f"{s['test_questions_left_out_as_rewordings_of_dev']} 11b questions left out as "
        f"rewordings of dev ones). Contradictions made by: "
        + ", ".join(f"{k} {n}" for k, n in s["contradicted_by"].items())
        + f". Command: `{data['command']}`."
    )
    if "rules_one_by_one" in data:
        alone = data["rules_one_by_one"]["thresholds"]
        made += (
            f" The joint check changed {data['rules']['jointly_labelled']} of the "
            f"{s['test']} test verdicts; each passage alone, the same tuning chose supported >= "
            f"{alone['supported']}, partly supported >= {alone['partial']}, contradicted from "
            f"{alone['contradicted']}."
        )
    return "\n\n".join([table(head, rows, "lrrrrr"), made, source(VERIFY)])


@figure("verify-citations")
def verify_citations() -> str:
    data = result(CITATIONS)
    rows = []
    for r in data["rows"]:
        c = r["citations"]
        by = ", ".join(f"{k} {n}" for k, n in (c.get("verifiers") or {}).items())
        rows.append([r["method"], r["reader"], num(c["recall"]), num(c["precision"]),
                     str(c["sentences"]), str(dig(c, "jointly_supported", CITATIONS)),
                     str(c["citations"]), str(c["uncited"]),
                     by])  # fmt: skip
    head = ["method", "reader", "citation recall", "citation precision", "sentences",
            "of them supported only jointly", "citations", "uncited sentences",
            "checked by"]  # fmt: skip
    made = "Commands: " + "; ".join(f"`{c}`" for c in data["commands"]) + "."
    return "\n\n".join([table(head, rows, "llrrrrrrl"), made, source(CITATIONS)])
