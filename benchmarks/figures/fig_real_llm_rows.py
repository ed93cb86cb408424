"""docs/benchmarks.md, "Real small model behind llama-server": RAPTOR, IP-RAR and CRAG on the 50
PubMedQA and 50 BioASQ questions again, and VectorGraphRAG on both, with their per-question rows
kept (``real_llm/<run>_<tag>/questions.json``) and the commit and scoring recorded by each run
(helpers in ``fig_real_llm``)."""

from __future__ import annotations

from figures import figure, num, result, table
from figures.fig_real_llm import methods, score_text, src, stage_sum

ROWS, VGRAG = "_rows_n50", "_vgrag_rows_n50"


def rows_table(tag: str, runs: list[str]) -> str:
    """One row per (run, method) of the runs of ``tag``, then each run's command and files."""
    rows, made, files = [], [], [f"real_llm_summary{tag}.json"]
    for run in runs:
        for m, s in methods(tag, run).items():
            st = s["stages"]
            skip = ["iprar_prereason"]
            pf = f"{stage_sum(st, 'parse_failures', skip)} of {stage_sum(st, 'calls', skip)}"
            rows.append([run.split("_")[0], m, f"{s['answered']}/{s['n']}", s["errors"],
                         s["context_errors"], num(s["calls_per_q"], 1), num(s["tokens_per_q"], 0),
                         num(s["p50_s"], 1), pf, score_text(s["scores"])])  # fmt: skip
        rec = result(f"real_llm/{run}{tag}/metrics.json")
        made.append(
            f"{run.split('_')[0]}: commit {rec.get('commit')}, {rec.get('scoring')} scoring: "
            f"`{rec.get('command')}`."
        )
        files.append(f"real_llm/{run}{tag}/questions.json")
    head = ["dataset", "method", "answered", "errors", "context errors", "calls / q",
            "tokens / q", "p50 s / q", "parse failures (all stages but IP-RAR's pre-reasoning)",
            "score"]  # fmt: skip
    return "\n\n".join([table(head, rows, "lllrrrrrll"), *made, src(*files)])


@figure("real_llm_rows_n50")
def rows_n50() -> str:
    return rows_table(ROWS, ["pubmedqa_auto", "bioasq_auto"])


@figure("real_llm_vgrag_rows_n50")
def vgrag_rows_n50() -> str:
    return rows_table(VGRAG, ["pubmedqa_auto", "bioasq_auto"])
