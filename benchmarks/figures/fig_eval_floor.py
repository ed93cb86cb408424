"""docs/benchmarks.md, "Evaluation harness: every method, offline": the no-LLM floor of every
method and the dry-run model's calls and tokens per question, from the ``metrics.json`` (and
``run.json``) of ``benchmarks/results/eval_*/`` (``benchmarks/run_eval_floor.sh``).

Each block ends with the scoring and the commit each run records, or says that it records none
(runs scored before ``metrics.json`` recorded them).
"""

from __future__ import annotations

from typing import Any

from figures import dig, figure, num, result, run_recorded, table

FLOOR_METHODS = ["closed-book", "retrieve-read", "rewrite", "hyde", "raptor", "claim", "claims"]
#: the floor's runs, in the table's column order: (run folder, column header, macro-F1 shown)
OPEN = "PubMedQA test, open (1,000-abstract index): acc / macro-F1"
FLOOR_RUNS = [
    ("eval_pubmedqa_reasoning_floor", "PubMedQA test, reasoning-required: acc / macro-F1", True),
    ("eval_pubmedqa_open_floor", OPEN, True),
    ("eval_bioasq11b_yesno_floor", "BioASQ 11b yes/no, pooled snippets: acc", False),
]
DRYRUN = "eval_pubmedqa_open_dryrun"
DRYRUN_FAITHFUL = "eval_pubmedqa_open_dryrun_faithful"
#: the dry-run table's rows: (run folder, method, label)
DRYRUN_ROWS = [
    *((DRYRUN, m, m) for m in FLOOR_METHODS[:-1]),
    (DRYRUN, "claims", "claims, batched"),
    (DRYRUN_FAITHFUL, "claims", "claims, faithful"),
]
#: the pipeline's order of stages (a stage not named here follows, by name)
STAGE_ORDER = ["rewrite", "hyde", "raptor_summary", "claims", "claims_triples", "claims_gleaning",
               "triples", "triple fallbacks", "coi_test_summary", "layer_summary", "answer",
               "answer_extract"]  # fmt: skip
#: the grounding check's fallback prompts for a claim's triple, shown as one count
FALLBACKS = ("triples_repair", "triples_entities", "triples_relation")
#: label_shares.json's entries named in the floor's prose
MAJORITY = [("PubMedQA test (500)", "PubMedQA test", False),
            ("BioASQ 7b-11b yes/no", "BioASQ 7b-11b yes/no", False),
            ("BioASQ 11b yes/no", "BioASQ 11b yes/no", True)]  # fmt: skip


def metrics(run: str) -> dict[str, Any]:
    data: dict[str, Any] = result(f"{run}/metrics.json")
    return data


def method(run: str, name: str) -> dict[str, Any]:
    block: dict[str, Any] = dig(metrics(run), ["methods", name], f"{run}/metrics.json")
    return block


def recorded(run: str) -> str:
    """``run``'s scoring and commit as its metrics.json (or run.json) records them."""
    return f"`{run}` ({', '.join(run_recorded(run))})"


def runs_line(runs: list[str]) -> str:
    return "Runs (`benchmarks/results/RUN/metrics.json`): " + "; ".join(map(recorded, runs)) + "."


def wall(run: str) -> str:
    secs = (metrics(run).get("accounting") or {}).get("wall_s")
    return f"{secs:,.0f} s" if secs is not None else "not recorded"


@figure("eval-floor")
def eval_floor() -> str:
    """The no-LLM floor: accuracy (and macro-F1 on PubMedQA) of every method on three runs."""
    rows = []
    for m in FLOOR_METHODS:
        cells = [m]
        for run, _, f1 in FLOOR_RUNS:
            e = method(run, m)
            acc = num(dig(e, "accuracy", run))
            cells.append(f"{acc} / {num(dig(e, 'macro_f1', run))}" if f1 else acc)
        rows.append(cells)
    answers = [sum(method(run, m)["n"] for m in FLOOR_METHODS) for run, _, _ in FLOOR_RUNS]
    rows.append([f"answers ({len(FLOOR_METHODS)} methods)", *(f"{n:,}" for n in answers)])
    rows.append(["wall time", *(wall(run) for run, _, _ in FLOOR_RUNS)])
    header = ["method", *(h for _, h, _ in FLOOR_RUNS)]
    text = table(header, rows) + "\n\n" + runs_line([run for run, _, _ in FLOOR_RUNS])
    if "not recorded" in rows[-1]:
        text += " The wall times given here before were removed: no result file kept them."
    return text + "\n"


@figure("eval-floor-majority")
def eval_floor_majority() -> str:
    """The majority class and its share on the floor's datasets (label_shares.json)."""
    shares = result("label_shares.json")
    majors = {dig(shares, [key, "majority"], "label_shares.json") for key, _, _ in MAJORITY}
    parts = []
    for key, label, counts in MAJORITY:
        e = dig(shares, [key], "label_shares.json")
        text = f"{e['majority_share']:.1%} "
        if counts:
            text += f"({e['counts'][e['majority']]} of {e['n']}) "
        parts.append(text + f"of {label}")
    head = f'"{majors.pop()}"' if len(majors) == 1 else "not one class"
    return f"{head}: {', '.join(parts[:-1])} and {parts[-1]}"


def stages(e: dict[str, Any]) -> str:
    per_q = dig(e, ["accounting_per_question", "stages"])
    calls = {s: float(v.get("calls", 0)) for s, v in per_q.items() if s not in FALLBACKS}
    fallbacks = sum(float(v.get("calls", 0)) for s, v in per_q.items() if s in FALLBACKS)
    if fallbacks:
        calls["triple fallbacks"] = fallbacks

    def order(s: str) -> tuple[int, str]:
        return (STAGE_ORDER.index(s) if s in STAGE_ORDER else len(STAGE_ORDER), s)

    return ", ".join(f"{s} {calls[s]:.2g}" for s in sorted(calls, key=order) if calls[s] > 0)


@figure("eval-dryrun")
def eval_dryrun() -> str:
    """Calls and tokens per question with the dry-run model, per method and stage."""
    rows = []
    for run, m, label in DRYRUN_ROWS:
        e = method(run, m)
        tot = dig(e, ["accounting_per_question", "total"], run)
        rows.append([label, num(tot["calls"], 1), num(tot["prompt_tokens"], 0),
                     num(tot["completion_tokens"], 0), stages(e)])  # fmt: skip
    header = ["method", "calls", "prompt tokens", "completion tokens", "calls by stage"]
    note = f"(triple fallbacks: {', '.join(FALLBACKS)}, the grounding check's fallback prompts.)"
    return (table(header, rows, "lrrrl") + "\n\n" + note + "\n\n"
            + runs_line([DRYRUN, DRYRUN_FAITHFUL]) + "\n")  # fmt: skip
