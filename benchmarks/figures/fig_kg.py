"""docs/benchmarks.md: VectorGraphRAG's knowledge graph (``kg.json``: the synthetic scale-up and
the MedMCQA no-LLM floor) and its entity encoder (``vgrag_encoders.json``)."""

from __future__ import annotations

import math

from figures import dig, figure, num, result, source, table

KG = "kg.json"
# the scale-up measured alone (62ea1d6, 2026-11-22): it does not pass through the eval's overlap
# guard, and kg.json's re-run of it shared the cores with other jobs (load average ~8)
SCALE = "kg_scale_quiet.json"
ENCODERS = "vgrag_encoders.json"
STORES = {"sqlite": "SQLite", "memory": "in-memory"}
KG_FROM = {
    "second": "the other half",
    "first": "the questions' own half (control, leaks the answers)",
}
# the encoders' output dimension: a property of each model, not a measurement
DIMS = {"all-MiniLM-L6-v2": 384, "all-mpnet-base-v2": 768}
ENCODER_NOTE = {"all-MiniLM-L6-v2": " (default)", "all-mpnet-base-v2": " (the paper's)"}


def _scale(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n:,}"


def _rows() -> list[dict]:
    return dig(result(SCALE), "synthetic/rows", SCALE)


def _source_unscored() -> str:
    """The result line of the scale-up: file and commit (it scores nothing)."""
    return f"Result: `benchmarks/results/{SCALE}` (run alone, commit 62ea1d6)."


@figure("kg-scale")
def kg_scale() -> str:
    rows, body = _rows(), []
    for i, r in enumerate(rows):
        store = STORES.get(r["store"], r["store"])
        if i == 0 and r["store"] == "sqlite":
            store += " (default)"
        retrieval = (
            f"{num(r['retrieval_p50_ms'], 0)} ({num(r['match_p50_ms'], 0)} / "
            f"{num(r['rank_p50_ms'], 0)})"
        )
        body.append([
            _scale(r["triplets"]), store, f"{r['triplets_per_s']:,}",
            num(r["build_peak_rss_gb"], 2), num(r["disk_mb"], 1), num(r["lookup_p50_ms"], 2),
            retrieval, num(r["query_peak_rss_gb"], 2),
        ])  # fmt: skip
    header = [
        "triplets", "store", "build triplets/s", "build peak RSS GB", "disk MB",
        "store lookup p50 ms", "retrieval p50 ms (match / rank)", "query peak RSS GB",
    ]  # fmt: skip
    same = all(r.get("same_results") for r in rows)
    lines = [
        table(header, body, "llrrrrrr"),
        "",
        "Both stores returned the same triplets for every question: "
        f"{'yes' if same else 'no'}. " + _source_unscored(),
    ]
    return "\n".join(lines)


@figure("kg-total-time")
def kg_total_time() -> str:
    s = round(float(dig(result(SCALE), "seconds_total", SCALE)))
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


@figure("kg-lookup-max")
def kg_lookup_max() -> str:
    return f"{num(max(r['lookup_p50_ms'] for r in _rows()), 2)} ms"


@figure("kg-medmcqa-commands")
def kg_medmcqa_commands() -> str:
    runs = dig(result(KG), "medmcqa/runs", KG)
    cmds = [c for r in runs for c in r["commands"]]
    return "\n".join(["```", *cmds, "```"])


def _overlap(ov: dict | None) -> str:
    if not ov or ov.get("policy") is None:
        return "not recorded"
    n, policy = ov.get("overlapping") or 0, ov["policy"]
    if policy == "allow":
        return f"{n:,}, scored anyway (allow)"
    if policy == "exclude":
        return f"{n:,}, left out (exclude)"
    return f"{n:,} ({policy})"


@figure("kg-medmcqa")
def kg_medmcqa() -> str:
    mm = dig(result(KG), "medmcqa", KG)
    body = []
    for r in mm["runs"]:
        for m, e in r["methods"].items():
            body.append([
                KG_FROM.get(r["kg_half"], r["kg_half"]), f"{r['kg']['triplets_total']:,}",
                f"{r['kg']['entities_total']:,}", f"{m} (floor)", f"{e['n']:,}",
                _overlap(r.get("kg_overlap")), num(e["accuracy"]),
            ])  # fmt: skip
    header = ["KG built from", "triplets", "entities", "method", "questions scored",
              "questions that went into the KG", "accuracy"]  # fmt: skip
    return table(header, body, "lrrlrlr") + "\n\n" + source(KG)


# -- the entity encoder ------------------------------------------------------------------------


def _encoders() -> dict[str, dict]:
    return dig(result(ENCODERS), "encoders", ENCODERS)


def _correct(e: dict) -> int:
    return round(e["accuracy"] * e["n"])


@figure("kg-encoders")
def kg_encoders() -> str:
    body = []
    for name, e in _encoders().items():
        body.append([
            name + ENCODER_NOTE.get(name, ""), DIMS.get(name, ""), num(e["entities_per_s"], 0),
            f"{num(e['kg_build_wall_s'], 0)} s", num(e["seconds_per_question"], 2),
            f"{num(e['accuracy'])} ({_correct(e)}/{e['n']})",
        ])  # fmt: skip
    header = ["encoder", "dim", "entities embedded / s", "KG build wall", "eval s / question",
              "accuracy (floor reader)"]  # fmt: skip
    return table(header, body, "lrrrrr") + "\n\n" + source(ENCODERS)


@figure("kg-encoders-diff")
def kg_encoders_diff() -> str:
    """How many more questions one encoder got right than the other, of how many."""
    a, b = list(_encoders().values())[:2]
    return f"{abs(_correct(a) - _correct(b))} questions of {a['n']}"


@figure("kg-encoders-ci")
def kg_encoders_ci() -> str:
    """Half the width of a 95% normal interval on the larger accuracy, in points."""
    e = max(_encoders().values(), key=lambda x: x["accuracy"])
    p, n = e["accuracy"], e["n"]
    return f"+-{100 * 1.96 * math.sqrt(p * (1 - p) / n):.0f} points"


@figure("kg-encoders-overlap")
def kg_encoders_overlap() -> str:
    """The questions the overlap guard left out, and how many were scored."""
    e = next(iter(_encoders().values()))
    left = dig(e, "kg_overlap", ENCODERS)
    return f"{left} whose text repeats a second-half question: {e['n']} scored"


@figure("kg-load")
def kg_load() -> str:
    """The 1-minute load average at the run's start and end (other jobs on the same cores)."""
    m = dig(result(KG), "machine", KG)
    start = dig(m, "load_average_at_start", KG)[0]
    end = dig(m, "load_average_at_end", KG)[0]
    return f"load average {start:.1f} at the start, {end:.1f} at the end"
