"""docs/benchmarks.md, "Real small model behind llama-server": RAPTOR, IP-RAR and CRAG on the 50
PubMedQA questions again, with their per-question rows kept (``real_llm/pubmedqa_auto_rows_n50/
questions.json``) and the commit and scoring recorded by the run (helpers in ``fig_real_llm``)."""

from __future__ import annotations

from figures import figure, num, result, table
from figures.fig_real_llm import methods, score_text, src, stage_sum

TAG, RUN = "_rows_n50", "pubmedqa_auto"


@figure("real_llm_rows_n50")
def rows_n50() -> str:
    rows = []
    for m, s in methods(TAG, RUN).items():
        st = s["stages"]
        skip = ["iprar_prereason"]
        pf = f"{stage_sum(st, 'parse_failures', skip)} of {stage_sum(st, 'calls', skip)}"
        rows.append([m, f"{s['answered']}/{s['n']}", s["errors"], s["context_errors"],
                     num(s["calls_per_q"], 1), num(s["tokens_per_q"], 0), num(s["p50_s"], 1),
                     pf, score_text(s["scores"])])  # fmt: skip
    head = ["method", "answered", "errors", "context errors", "calls / q", "tokens / q",
            "p50 s / q", "parse failures (all stages but IP-RAR's pre-reasoning)",
            "score"]  # fmt: skip
    run = result(f"real_llm/{RUN}{TAG}/metrics.json")
    made = (
        f"Run at commit {run.get('commit')}, {run.get('scoring')} scoring: `{run.get('command')}`."
    )
    return "\n\n".join([
        table(head, rows, "llrrrrrll"),
        made,
        src(f"real_llm_summary{TAG}.json", f"real_llm/{RUN}{TAG}/questions.json"),
    ])  # fmt: skip
