"""docs/benchmarks.md, "Real small model behind llama-server", its later tables: IP-RAR and
RAPTOR on 50 + 50, CRAG's BioASQ exact answers, VectorGraphRAG with a KG the model extracted,
CLAIMS and claim chunks with loops stopped, MIRAGE's reader against biorag's (helpers in
``fig_real_llm``)."""

from __future__ import annotations

import statistics
from typing import Any

from figures import count, dig, figure, num, result, score_summary, table
from figures.fig_real_llm import (
    methods,
    questions,
    score_text,
    src,
    stage_sum,
    summary,
    tokens,
    totals,
)

# -- IP-RAR and RAPTOR on 50 + 50, CRAG's BioASQ exact answers ------------------------------

PAPER_FAST = [("PubMedQA", "_paper_fast_n50_pubmedqa", "pubmedqa_auto"),
              ("BioASQ 11b", "_paper_fast_n50", "bioasq_auto")]  # fmt: skip


@figure("real_llm_paper_fast")
def paper_fast() -> str:
    rows = []
    for ds, tag, run in PAPER_FAST:
        for m, s in methods(tag, run).items():
            st = s["stages"]
            skip = ["iprar_prereason"]
            pf = f"{stage_sum(st, 'parse_failures', skip)} of {stage_sum(st, 'calls', skip)}"
            rows.append([ds, m, f"{s['answered']}/{s['n']}", s["errors"], s["context_errors"],
                         num(s["calls_per_q"], 1), num(s["tokens_per_q"], 0),
                         num(s["p50_s"], 1), pf, score_text(s["scores"])])  # fmt: skip
    head = ["dataset", "method", "answered", "errors", "context errors", "calls / q",
            "tokens / q", "p50 s / q", "parse failures (all stages but IP-RAR's pre-reasoning)",
            "score"]  # fmt: skip
    return (
        table(head, rows, "lllrrrrrll")
        + "\n\n"
        + src(
            "real_llm_summary_paper_fast_n50_pubmedqa.json", "real_llm_summary_paper_fast_n50.json"
        )
    )


def _exact(tag: str) -> dict[str, Any]:
    """The exact-answer stage of CRAG's BioASQ run under ``tag``, summed over its methods."""
    stages = [s["stages"].get("exact_answer", {}) for s in methods(tag, "bioasq_auto").values()]
    return {k: sum(int(st.get(k) or 0) for st in stages) for k in ("calls", "parse_failures")}


@figure("real_llm_paper_fast_exact")
def paper_fast_exact() -> str:
    e = _exact("_paper_fast_n50")
    return f"{e['calls']} calls, {e['parse_failures']} parse failures"


EXACT = {"paper_fast": ("_paper_fast_n50", "bioasq_auto_paper_fast_n50"),
         "exact_fix": ("_exact_fix_n50", "bioasq_auto_exact_fix_n50"),
         "exact_floor": ("_exact_floor_n50", "bioasq_auto_exact_floor_n50")}  # fmt: skip


def _crag(which: str) -> tuple[dict[str, Any], dict[str, Any]]:
    tag, run = EXACT[which]
    s = methods(tag, "bioasq_auto")["crag"]
    return s, totals(run, "crag")["stages"]["exact_answer"]


def _factoid(s: dict[str, Any], mrr: bool = False) -> str:
    fa = s["scores"]["factoid"]
    text = f"{num(fa['strict_accuracy'], 3)} / {num(fa['lenient_accuracy'], 3)}"
    return text + (f", {num(fa['mrr'], 3)}" if mrr else "")


@figure("real_llm_exact_fix")
def exact_fix() -> str:
    (b, _), (a, _) = _crag("paper_fast"), _crag("exact_fix")
    n = b["scores"]["factoid"]["n"]
    rows = [["no usable exact answer (the model still wrote yes/no: refused, counted as "
             "unparseable)", b["unparseable"], a["unparseable"]],
            ["strict / lenient accuracy", _factoid(b), _factoid(a)]]  # fmt: skip
    return table([f"CRAG, BioASQ 11b factoid ({n} questions)", "before the fix", "after"],
                 rows, "lrr") + "\n\n" + src("real_llm_summary_paper_fast_n50.json",
                                             "real_llm_summary_exact_fix_n50.json")  # fmt: skip


@figure("real_llm_exact_floor")
def exact_floor() -> str:
    (b, be), (a, ae) = _crag("exact_fix"), _crag("exact_floor")
    n = b["scores"]["factoid"]["n"]
    rows = [["no usable exact answer (counted as unparseable)", b["unparseable"], a["unparseable"]],
            ["exact answers from the pattern floor (counted fallbacks, the model's text in the "
             "trace)", be["fallbacks"], ae["fallbacks"]],
            ["strict / lenient accuracy, MRR", _factoid(b, True), _factoid(a, True)]]  # fmt: skip
    head = [f"CRAG, BioASQ 11b factoid ({n} questions)", "after the prompt fix",
            "and the floor fallback"]  # fmt: skip
    return table(head, rows, "lrr") + "\n\n" + src(
        "real_llm_summary_exact_fix_n50.json", "real_llm/bioasq_auto_exact_fix_n50/metrics.json",
        "real_llm_summary_exact_floor_n50.json",
        "real_llm/bioasq_auto_exact_floor_n50/metrics.json")  # fmt: skip


@figure("real_llm_exact_floor_hits")
def exact_floor_hits() -> str:
    fa = methods("_exact_floor_n50", "bioasq_auto")["crag"]["scores"]["factoid"]
    return str(count(fa["lenient_accuracy"], fa["n"]))


# -- VectorGraphRAG, its KG extracted by the model ------------------------------------------

DROPS = ["subject equals object", "no SUBJECT/PREDICATE/OBJECT lines in the reply",
         "object longer than 200 characters"]  # fmt: skip


def _kg(ds: str) -> dict[str, Any]:
    return dig(summary("_vgrag_n50"), ["kg_builds", f"{ds}_auto_vgrag_n50_n50"], "vgrag_n50")


@figure("real_llm_vgrag")
def vgrag() -> str:
    rows = []
    for ds, label in (("pubmedqa", "PubMedQA"), ("bioasq", "BioASQ 11b")):
        b = _kg(ds)
        s = methods("_vgrag_n50", f"{ds}_auto")["vectorgraphrag"]
        calls = b["stats"]["calls"]
        drop = " / ".join(str(b["dropped_by_reason"].get(r, 0)) for r in DROPS)
        unusable = f" ({s['unparseable']} factoid answers unusable)" if s["unparseable"] else ""
        sc = s["scores"]
        score = (
            f"yes/no {sc['yesno']['accuracy']:.2f}; factoid strict "
            f"{count(sc['factoid']['strict_accuracy'], sc['factoid']['n'])}/"
            f"{sc['factoid']['n']}"
            if "yesno" in sc
            else f"accuracy {sc['accuracy']:.2f}"
        )
        rows.append([label, f"{calls} ({tokens(b['accounting']['total']) / 1000:.0f}k tokens)",
                     f"{b['added']} ({100 * b['added'] / calls:.0f}%)", drop,
                     num(b["bench_wall_s"], 0), f"{s['answered']}/{s['n']}{unusable}",
                     s["errors"], num(s["calls_per_q"], 1), num(s["tokens_per_q"], 0),
                     num(s["p50_s"], 2), score])  # fmt: skip
    head = ["dataset", "KG build: LLM calls (one per sentence)", "triplets kept",
            "dropped: subject = object / no triplet lines / too long", "build s", "answered",
            "errors", "calls / q", "tokens / q", "p50 s / q", "score"]  # fmt: skip
    return table(head, rows, "lrrrrlrrrrl") + "\n\n" + src("real_llm_summary_vgrag_n50.json")


@figure("real_llm_vgrag_yield")
def vgrag_yield() -> str:
    shares = [f"{100 * _kg(d)['added'] / _kg(d)['stats']['calls']:.0f}%"
              for d in ("pubmedqa", "bioasq")]  # fmt: skip
    return " and ".join(shares)


@figure("real_llm_vgrag_triplets")
def vgrag_triplets() -> str:
    return " and ".join(str(_kg(d)["added"]) for d in ("pubmedqa", "bioasq"))


# -- CLAIMS and claim chunks with loops stopped ---------------------------------------------


def _loop_tokens(ds: str, method: str) -> list[int]:
    """Tokens per question of ``method``: BioASQ's questions.json, PubMedQA's partial rows."""
    if ds == "bioasq":
        rows = questions("bioasq_auto_loopstop_n50")
    else:
        rows = result("real_llm_summary_loopstop_n50_partial.json")["rows"]
    return [r["prompt_tokens"] + r["completion_tokens"] for r in rows if r["method"] == method]


def _loop_score(sc: dict[str, Any]) -> str:
    return score_summary(
        sc,
        pubmedqa="accuracy {accuracy:.2f} (macro-F1 {macro_f1:.2f})",
        bioasq="yes/no {yesno[accuracy]:.2f} (macro-F1 {yesno[macro_f1]:.2f}); factoid strict "
        "{factoid[strict_accuracy]:.2f}, lenient {factoid[lenient_accuracy]:.2f}, MRR "
        "{factoid[mrr]:.2f}",
    )


@figure("real_llm_loopstop")
def loopstop() -> str:
    rows = []
    for ds, label in (("pubmedqa", "PubMedQA"), ("bioasq", "BioASQ 11b")):
        for m, s in methods("_loopstop_n50", f"{ds}_auto").items():
            st = s["stages"]
            failed = [k for k, c in st.items() if c.get("parse_failures")]
            pf = f"{stage_sum(st, 'parse_failures')} of {stage_sum(st, 'calls'):,} calls"
            pf += f" ({', '.join(failed)})" if failed else ""
            med = statistics.median(_loop_tokens(ds, m))
            rows.append([label, "claims (batched)" if m == "claims" else m,
                         f"{s['answered']}/{s['n']}", s["errors"], s["context_errors"], pf,
                         num(s["calls_per_q"], 1), f"{s['tokens_per_q']:,} ({med:,.0f})",
                         f"{stage_sum(st, 'loops_stopped')} / {stage_sum(st, 'repetition_cuts')}",
                         _loop_score(s["scores"])])  # fmt: skip
    head = ["dataset", "method", "answered", "errors", "context errors", "parse failures",
            "calls / q", "tokens / q: mean (median)", "loops stopped early / cut",
            "score"]  # fmt: skip
    return table(head, rows, "lllrrrrrrl") + "\n\n" + src(
        "real_llm_summary_loopstop_n50.json", "real_llm_summary_loopstop_n50_partial.json",
        "real_llm/bioasq_auto_loopstop_n50/questions.json")  # fmt: skip


@figure("real_llm_loopstop_bioasq_calls")
def loopstop_bioasq_calls() -> str:
    runs = methods("_loopstop_n50", "bioasq_auto").values()
    return f"{sum(stage_sum(s['stages'], 'calls') for s in runs):,}"


@figure("real_llm_loopstop_claim_median")
def loopstop_claim_median() -> str:
    return f"{statistics.median(_loop_tokens('bioasq', 'claim')) / 1000:.1f}k"


@figure("real_llm_loopstop_claim_max")
def loopstop_claim_max() -> str:
    return f"{max(_loop_tokens('bioasq', 'claim')):,}"


@figure("real_llm_loopstop_claim_hyde")
def loopstop_claim_hyde() -> str:
    acc = totals("bioasq_auto_loopstop_n50", "claim")
    hyde = tokens(acc["stages"]["hyde"])
    return f"{hyde:,} tokens, {100 * hyde / tokens(acc['total']):.0f}% of claim's"


# -- MIRAGE's reader against biorag's -------------------------------------------------------

SUBSETS = [("mmlu", "MMLU-Med"), ("medqa", "MedQA-US"), ("medmcqa", "MedMCQA"),
           ("pubmedqa", "PubMedQA*"), ("bioasq", "BioASQ-Y/N")]  # fmt: skip


def _reader(prompt: str, subset: str) -> dict[str, Any]:
    return methods(f"_{prompt}_prompt", f"mirage-{subset}_auto")["closed-book"]


@figure("real_llm_mirage")
def mirage() -> str:
    rows, acc = [], {"mirage": [], "biorag": []}
    unread = {"mirage": 0, "biorag": 0}
    n = {"mirage": 0, "biorag": 0}
    for key, label in SUBSETS:
        a, b = _reader("mirage", key), _reader("biorag", key)
        for p, s in (("mirage", a), ("biorag", b)):
            acc[p].append(s["scores"]["accuracy"])
            unread[p] += s["unparseable"]
            n[p] += s["n"]
        rows.append([label, f"{a['scores']['accuracy']:.2f}", f"{a['unparseable']}/{a['n']}",
                     f"{b['scores']['accuracy']:.2f}", f"{b['unparseable']}/{b['n']}",
                     f"{num(a['calls_per_q'], 0)}, {num(b['calls_per_q'], 0)}",
                     f"{a['tokens_per_q']:,}, {b['tokens_per_q']:,}"])  # fmt: skip
    mean = {p: statistics.mean(v) for p, v in acc.items()}
    rows.append(["**mean of subsets**", f"**{mean['mirage']:.2f}**",
                 f"{unread['mirage']}/{n['mirage']}", f"**{mean['biorag']:.2f}**",
                 f"{unread['biorag']}/{n['biorag']}", "", ""])  # fmt: skip
    head = ["subset", "accuracy, MIRAGE's reader", "unread by `locate_answer`",
            "accuracy, biorag's reader", "unread", "calls / q (MIRAGE, biorag)",
            "tokens / q (MIRAGE, biorag)"]  # fmt: skip
    return (
        table(head, rows, "lrrrrrr")
        + "\n\n"
        + src("real_llm_summary_mirage_prompt.json", "real_llm_summary_biorag_prompt.json")
    )


@figure("real_llm_mirage_unread")
def mirage_unread() -> str:
    sub = [_reader("mirage", k) for k, _ in SUBSETS]
    return f"{sum(s['unparseable'] for s in sub)} of {sum(s['n'] for s in sub)}"


@figure("real_llm_mirage_token_ratio")
def mirage_token_ratio() -> str:
    per = {p: sum(_reader(p, k)["tokens_per_q"] for k, _ in SUBSETS) for p in ("mirage", "biorag")}
    return f"{per['biorag'] / per['mirage']:.1f}"
