"""docs/benchmarks.md, "Real small model behind llama-server": SmolLM2-135M's runs of
``bench_real_llm.py``, from their summaries (``real_llm_summary*.json``) and run folders
(``real_llm/<run>/metrics.json``, ``questions.json``). The later tables of the section (IP-RAR,
exact answers, VectorGraphRAG, loops stopped, MIRAGE's reader) are in ``fig_real_llm_claims``.

``real_llm_summary_n50.json`` was written before ``bench_real_llm.summarize`` read each
question's latest record: its HyDE row counts a resumed question twice (n=51). Its PubMedQA rows
are read from the run's ``metrics.json`` (the eval's own counts, one record a question) and the
summary gives only the p50 seconds of the methods it counts right (n equal to the eval's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from figures import count, dig, figure, num, result, score_summary, table

SHOW = {"claims": "claims (batched)"}


def summary(tag: str) -> dict[str, Any]:
    """``real_llm_summary<tag>.json`` (tag ``""``, ``"_n50"``, ...)."""
    return result(f"real_llm_summary{tag}.json")


def methods(tag: str, run: str) -> dict[str, Any]:
    """The per-method figures of run ``run`` (``pubmedqa_auto``) in a summary."""
    return dig(summary(tag), ["runs", run, "methods"], f"real_llm_summary{tag}.json")


def metrics(run: str) -> dict[str, Any]:
    """``real_llm/<run>/metrics.json``: the eval's own figures of a run folder."""
    return result(f"real_llm/{run}/metrics.json")


def totals(run: str, method: str) -> dict[str, Any]:
    """The accounting of ``method`` over all questions of ``run`` (stages and total)."""
    return dig(metrics(run), ["methods", method, "accounting_total"], f"real_llm/{run}")


def questions(run: str) -> list[dict[str, Any]]:
    """``real_llm/<run>/questions.json``: one row per (method, question), its latest record."""
    return result(f"real_llm/{run}/questions.json")


def stage_sum(stages: dict[str, Any], key: str, skip: Iterable[str] = ()) -> int:
    """``key`` summed over the stages not in ``skip``."""
    return sum(int(c.get(key) or 0) for s, c in stages.items() if s not in set(skip))


def tokens(stats: dict[str, Any]) -> float:
    """Prompt + completion tokens of an accounting entry (a total, or a mean per question)."""
    return (stats.get("prompt_tokens") or 0) + (stats.get("completion_tokens") or 0)


def scorings(path: str) -> set[str]:
    """The scorings a result file records: per run and method (summaries) or once (metrics)."""
    data = result(path)
    if not isinstance(data, dict):
        return set()
    found = {data["scoring"]} if data.get("scoring") else set()
    for run in (data.get("runs") or {}).values():
        for m in (run.get("methods") or {}).values():
            if (m.get("scores") or {}).get("scoring"):
                found.add(m["scores"]["scoring"])
    return found


def src(*paths: str, note: str = "") -> str:
    """One line naming a figure's result files and the scoring each records (a file that
    records none is named as such, not taken for official)."""
    files = ", ".join(f"`benchmarks/results/{p}`" for p in paths)
    scored = [p for p in paths if not p.endswith("questions.json")]
    kinds = {p: scorings(p) for p in scored}
    told = sorted(set().union(*kinds.values())) if kinds else []
    silent = [p for p, k in kinds.items() if not k]
    bits = []
    if told:
        bits.append(" / ".join(told) + " scoring")
    if silent:
        names = ", ".join(f"`{p}`" for p in silent)
        bits.append(f"{names} record{'s' if len(silent) == 1 else ''} no scoring")
    line = f"Result: {files}" + (f"; {'; '.join(bits)}" if bits else "")
    return line + (f". {note}" if note else "") + "."


def stage_notes(stages: dict[str, Any], fallbacks: dict[str, Any]) -> str:
    """Parse failures, loops cut and fallbacks per stage, in words ('none' where all are 0)."""
    parts = []
    failed = [f"{s} {c['parse_failures']}/{c['calls']}" for s, c in stages.items()
              if c.get("parse_failures")]  # fmt: skip
    if failed:
        parts.append("parse failures " + ", ".join(failed))
    cut = [f"{s} {c['repetition_cuts']}" for s, c in stages.items() if c.get("repetition_cuts")]
    if cut:
        parts.append("loops cut: " + ", ".join(cut))
    fell = [f"{s} {c['fallbacks']} of {c['calls']}" for s, c in fallbacks.items()
            if c.get("fallbacks")]  # fmt: skip
    if fell:
        parts.append("fallbacks: " + ", ".join(fell))
    return "; ".join(parts) or "none"


# -- the first run: every method on 5 PubMedQA questions ------------------------------------


@figure("real_llm_first")
def first() -> str:
    rows = []
    for m, s in methods("", "pubmedqa_auto").items():
        sc = s["scores"]
        fb = totals("pubmedqa_auto", m)["stages"]
        rows.append([SHOW.get(m, m), "auto", f"{s['answered']}/{s['n']}", s["errors"],
                     num(s["calls_per_q"], 1), num(s["tokens_per_q"], 0), num(s["p50_s"], 1),
                     count(sc["accuracy"], sc["n"]), stage_notes(s["stages"], fb)])  # fmt: skip
    head = ["method", "mode", "answered", "errors", "calls / q", "tokens / q", "p50 s / q",
            "correct", "parse failures (stage failed/calls), loops cut, fallbacks"]  # fmt: skip
    return (table(head, rows, "llllrrrrl") + "\n\n"
            + src("real_llm_summary.json", "real_llm/pubmedqa_auto/metrics.json"))  # fmt: skip


@figure("real_llm_first_context_errors")
def first_context_errors() -> str:
    return str(sum(s["context_errors"] for s in methods("", "pubmedqa_auto").values()))


# -- CLAIMS tokens per question: before, after grounding, after packing ---------------------

CLAIMS_RUNS = [("before (the run above)", "", "pubmedqa_auto"),
               ("after (`--tag grounded`)", "_grounded", "pubmedqa_auto_grounded"),
               ("then packed (`--tag packed`)", "_packed", "pubmedqa_auto_packed")]  # fmt: skip


def claims_rows(which: list[int]) -> str:
    rows = []
    for label, tag, run in (CLAIMS_RUNS[i] for i in which):
        s = methods(tag, "pubmedqa_auto")["claims"]
        t = totals(run, "claims")["total"]
        rows.append([label, f"{s['answered']}/{s['n']}", s["errors"], num(s["calls_per_q"], 1),
                     num(s["tokens_per_q"], 0), num(s["p50_s"], 0),
                     stage_sum(s["stages"], "parse_failures"), t["fallbacks"],
                     count(s["scores"]["accuracy"], s["scores"]["n"])])  # fmt: skip
    head = ["CLAIMS batched, the same 5 questions", "answered", "errors", "calls / q",
            "tokens / q", "p50 s / q", "parse failures", "fallbacks", "correct"]  # fmt: skip
    paths = []
    for i in which:
        paths += [f"real_llm_summary{CLAIMS_RUNS[i][1]}.json",
                  f"real_llm/{CLAIMS_RUNS[i][2]}/metrics.json"]  # fmt: skip
    return table(head, rows, "lllrrrrrr") + "\n\n" + src(*paths)


@figure("real_llm_claims_grounded")
def claims_grounded() -> str:
    return claims_rows([0, 1])


@figure("real_llm_claims_packed")
def claims_packed() -> str:
    return claims_rows([2])


def _share(run: str, stages: list[str]) -> str:
    acc = totals(run, "claims")
    whole = tokens(acc["total"])
    part = sum(tokens(acc["stages"][s]) for s in stages)
    return f"{100 * part / whole:.0f}%"


def _register_shares() -> None:
    for tag, run in (("grounded", "pubmedqa_auto_grounded"), ("packed", "pubmedqa_auto_packed")):
        three = ["claims_triples", "claims_gleaning", "claims"]
        for stage in three:
            figure(f"real_llm_share_{tag}_{stage}")(lambda r=run, s=stage: _share(r, [s]))
        figure(f"real_llm_share_{tag}_three")(lambda r=run, t=three: _share(r, t))


_register_shares()


# -- the four fast methods on 50 + 50 questions ---------------------------------------------

FAST = ["closed-book", "retrieve-read", "rewrite", "hyde"]


def _fast_rows() -> list[list[Any]]:
    rows = []
    pm = dig(metrics("pubmedqa_auto_n50"), "methods")
    ps = methods("_n50", "pubmedqa_auto")
    for m in FAST:
        e, s = pm[m], ps[m]
        t = e["accounting_total"]["total"]
        per = e["accounting_per_question"]["total"]
        same = s["n"] == e["n"]  # the summary counts each question once
        ctx = s["context_errors"] if same or s["context_errors"] == 0 else None
        rows.append(["PubMedQA", m, e["n"], e["answered"], e["errors"], ctx,
                     f"{t['parse_failures']} of {t['calls']}", num(per["calls"], 1),
                     num(tokens(per), 0), num(s["p50_s"], 1) if same else "",
                     f"{count(e['accuracy'], e['n'])}/{e['n']}", t["calls"]])  # fmt: skip
    for m, s in methods("_fast_bioasq_n50", "bioasq_auto").items():
        yn = s["scores"]["yesno"]["accuracy"]
        calls = stage_sum(s["stages"], "calls")
        rows.append(["BioASQ 11b, all 50 (below)", m, s["n"], s["answered"], s["errors"],
                     s["context_errors"], f"{stage_sum(s['stages'], 'parse_failures')} of {calls}",
                     num(s["calls_per_q"], 1), num(s["tokens_per_q"], 0), num(s["p50_s"], 1),
                     f"yes/no {yn:.2f}", calls])  # fmt: skip
    return rows


@figure("real_llm_fast_n50")
def fast_n50() -> str:
    head = ["dataset", "method", "questions", "answered", "errors", "context errors",
            "parse failures (all stages)", "calls / q", "tokens / q", "p50 s / q",
            "correct"]  # fmt: skip
    rows = [r[:-1] for r in _fast_rows()]
    note = (
        "The PubMedQA rows are the run's `metrics.json` (one record a question); its "
        "summary counts HyDE's resumed question twice (n=51), so HyDE's p50 is left out"
    )
    return table(head, rows, "llrrrrrrrrl") + "\n\n" + src(
        "real_llm_summary_n50.json", "real_llm/pubmedqa_auto_n50/metrics.json",
        "real_llm_summary_fast_bioasq_n50.json", note=note)  # fmt: skip


@figure("real_llm_fast_n50_totals")
def fast_n50_totals() -> str:
    rows = _fast_rows()
    fails = sum(int(r[6].split(" of ")[0]) for r in rows)
    ctx, errors = sum(r[5] or 0 for r in rows), sum(r[4] for r in rows)
    calls, asked = sum(r[-1] for r in rows), sum(r[2] for r in rows)
    return (f"{fails} parse failures in the {calls:,} LLM calls of these {asked} questions, "
            f"{ctx} context errors and {errors} errors")  # fmt: skip


@figure("real_llm_fast_bioasq_calls")
def fast_bioasq_calls() -> str:
    runs = methods("_fast_bioasq_n50", "bioasq_auto").values()
    return f"{sum(stage_sum(s['stages'], 'calls') for s in runs):,}"


# -- the fast methods without constrained decoding, 20 + 20 questions -----------------------


def _json_calls(stages: dict[str, Any]) -> tuple[int, int]:
    """(parse failures, calls) of the JSON stages: the choice extraction and the exact answer."""
    js = {k: v for k, v in stages.items() if k in ("answer_extract", "exact_answer")}
    return stage_sum(js, "parse_failures"), stage_sum(js, "calls")


@figure("real_llm_fast_none")
def fast_none() -> str:
    auto_q = questions("bioasq_auto_fast_bioasq_n50")
    none_q = questions("bioasq_none_fast_none_n20")
    ids = {r["question_id"] for r in none_q}
    pm_auto = dig(metrics("pubmedqa_auto_n50"), "methods")
    rows = []
    for ds, run in (("PubMedQA", "pubmedqa_none"), ("BioASQ 11b", "bioasq_none")):
        for m, s in methods("_fast_none_n20", run).items():
            fail, calls = _json_calls(s["stages"])
            fb = stage_sum(totals(f"{run}_fast_none_n20", m)["stages"], "fallbacks")
            if ds == "PubMedQA":
                auto_fail = pm_auto[m]["accounting_total"]["stages"]["answer_extract"]
                rows.append([ds, m, f"{auto_fail['parse_failures']} (all 50) / {fail} of {calls}",
                             fb, f"- / {s['unparseable']}",
                             f"(accuracy `none`: {s['scores']['accuracy']:.2f})"])  # fmt: skip
                continue
            a = [r for r in auto_q if r["method"] == m and r["question_id"] in ids]
            n = [r for r in none_q if r["method"] == m]
            yn = [r for r in a if r["question_type"] == "yesno"]
            ok_a = sum(1 for r in yn if r["correct"])
            ok_n = sum(1 for r in n if r["question_type"] == "yesno" and r["correct"])
            rows.append([ds, m, f"{sum(r['parse_failures'] for r in a)} / {fail} of {calls}", fb,
                         f"{sum(1 for r in a if r['parse_failed'])} / {s['unparseable']}",
                         f"{ok_a} / {ok_n} of {len(yn)}"])  # fmt: skip
    head = ["dataset", "method", "JSON parse failures: `auto` / `none`",
            "fallbacks taken (`none`)", "unparseable answers: `auto` / `none`",
            "yes/no correct: `auto` / `none`"]  # fmt: skip
    return table(head, rows, "llrrrr") + "\n\n" + src(
        "real_llm_summary_fast_none_n20.json", "real_llm/bioasq_none_fast_none_n20/questions.json",
        "real_llm/bioasq_auto_fast_bioasq_n50/questions.json",
        "real_llm/pubmedqa_auto_n50/metrics.json")  # fmt: skip


@figure("real_llm_fast_none_share")
def fast_none_share() -> str:
    shares = []
    for run in ("pubmedqa_none", "bioasq_none"):
        for s in methods("_fast_none_n20", run).values():
            fail, calls = _json_calls(s["stages"])
            shares.append(100 * fail / calls)
    lo, hi = min(shares), max(shares)
    return f"{lo:.0f}%" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}%"


# -- SELF-RAG and CRAG on 50 + 50 questions -------------------------------------------------


def score_text(sc: dict[str, Any]) -> str:
    """A run's score in words: PubMedQA's accuracy and macro-F1, BioASQ's yes/no and factoid."""
    return score_summary(
        sc,
        pubmedqa="accuracy {accuracy:.2f} ({correct}/{n}), macro-F1 {macro_f1:.2f}",
        bioasq="yes/no accuracy {yesno[accuracy]:.2f} ({yesno_correct}/{yesno[n]}); "
        "factoid strict {factoid_correct}/{factoid[n]}",
    )


@figure("real_llm_baselines")
def baselines() -> str:
    rows = []
    for ds, run in (("PubMedQA", "pubmedqa_auto"), ("BioASQ 11b", "bioasq_auto")):
        for m, s in methods("_baselines_n50", run).items():
            st = s["stages"]
            if m == "selfrag":
                seg = st["selfrag_segment"]
                cut = f" ({seg['repetition_cuts']} cut as loops)" if seg["repetition_cuts"] else ""
                pf = f"{seg['parse_failures']} of {seg['calls']} segment calls{cut}"
            else:
                pf = f"{stage_sum(st, 'parse_failures')} of {stage_sum(st, 'calls')} calls"
            rows.append([ds, m, f"{s['answered']}/{s['n']}", s["errors"], s["context_errors"],
                         num(s["calls_per_q"], 1), num(s["tokens_per_q"], 0),
                         num(s["p50_s"], 1), pf, score_text(s["scores"])])  # fmt: skip
    head = ["dataset", "method", "answered", "errors", "context errors", "calls / q",
            "tokens / q", "p50 s / q", "parse failures", "score"]  # fmt: skip
    return table(head, rows, "lllrrrrrll") + "\n\n" + src("real_llm_summary_baselines_n50.json")
