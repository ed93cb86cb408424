"""docs/benchmarks.md, "Incremental local indexes (segments)": rendered from
``incremental_index_100k.json`` and ``incremental_index_1m.json`` (the run at b8ae3d8), with the
first run's figures in brackets from ``incremental_index_{100k,1m}_d30efb2.json`` (the files as
committed in 8c10ec7), and ``bm25_segments_equal.json``."""

from __future__ import annotations

from typing import Any

from figures import figure, result, table
from figures.fig_retrieval import dec, fmt, num

RUNS = {"100k": "incremental_index_100k.json", "1m": "incremental_index_1m.json"}
FIRST = {"100k": "incremental_index_100k_d30efb2.json", "1m": "incremental_index_1m_d30efb2.json"}
EQUAL = "bm25_segments_equal.json"


def run(size: str, first: bool = False) -> dict[str, Any]:
    return result((FIRST if first else RUNS)[size])


def s(x: Any) -> str:
    """Seconds as the result file holds them, thousands separated (1,163.97)."""
    return fmt(x, ",")


def _cells(size: str) -> list[str]:
    r, f = run(size), run(size, first=True)
    b, a, fb, fa = r["build"], r["add"], f["build"], f["add"]
    rb, se = r["full_rebuild"], r["search"]
    parts = " / ".join(s(b[k]) for k in ("store", "chunk", "embed", "index"))

    def lat(where: str, kind: str) -> str:
        m = se[where][kind]
        return f"{fmt(m['p50_ms'], '')} / {fmt(m['p95_ms'], '')}"

    return [
        f"{s(b['total_s'])} s ({parts}) [{s(fb['total_s'])}]",
        f"**{s(a['total_s'])} s** ({s(a['index'])} s) [{s(fa['total_s'])} ({s(fa['index'])})]",
        f"{s(rb['total_s'])} s ({s(rb['bm25_s'])} + {s(rb['dense_s'])}, {rb['dense_kind']})",
        f"**{s(r['remove']['total_s'])} s** [{s(f['remove']['total_s'])}]",
        ", ".join(f"{x['rows']:,}" for x in r["segments_after_add"]),
        f"{s(r['searcher_open']['s'])} s",
        lat("segments", "bm25"),
        lat("one_piece", "bm25"),
        lat("segments", "dense"),
        lat("one_piece", "dense"),
        lat("segments", "hybrid"),
        lat("one_piece", "hybrid"),
        f"{fmt(se['top10_same_scores']['bm25'], '.0%')} of queries",
        num(se["top10_agreement"]["dense"], 2),
    ]


ROWS = [
    "build through `IndexDir.add` (store / chunk / embed / index s)",
    "**add 1,000 documents**: total (its index step)",
    "the rebuild each add cost before (BM25 + dense)",
    "**remove 1,000 documents**",
    "segments after the add (rows)",
    "open the searcher",
    "bm25 p50 / p95 ms: segments",
    "bm25 p50 / p95 ms: one index (before)",
    "dense p50 / p95 ms: segments",
    "dense p50 / p95 ms: one index (before)",
    "hybrid p50 / p95 ms: segments",
    "hybrid p50 / p95 ms: one index (before)",
    "BM25 top-10 scores equal to one bm25s index",
    "dense top-10 overlap with one index",
]


@figure("segments-incremental")
def incremental() -> str:
    small, large = _cells("100k"), _cells("1m")
    rows = [[label, a, b] for label, a, b in zip(ROWS, small, large, strict=True)]
    return table(["", f"{run('100k')['n'] // 1000}k chunks", f"{run('1m')['n'] // 10**6}M chunks"],
                 rows)  # fmt: skip


@figure("segments-commit")
def commit() -> str:
    commits = {run(size)["commit"] for size in RUNS}
    return ", ".join(sorted(commits))


@figure("segments-first-commit")
def first_commit() -> str:
    return ", ".join(sorted({run(size, first=True)["commit"] for size in FIRST}))


@figure("segments-bm25-ratio")
def bm25_ratio() -> str:
    """How many times bm25s's p50 the segments' BM25 p50 is at 1M ('2x')."""
    se = run("1m")["search"]
    ratio = dec(se["segments"]["bm25"]["p50_ms"]) / dec(se["one_piece"]["bm25"]["p50_ms"])
    return f"{fmt(ratio, '.0f')}x"


@figure("segments-bm25-same")
def bm25_same() -> str:
    """For how many question bodies a term segment's top-10 scores equal bm25s's ('all 2,310')."""
    e = result(EQUAL)
    if e["same_top10_scores"] == e["questions"]:
        return f"all {e['questions']:,}"
    return f"{e['same_top10_scores']:,} of {e['questions']:,}"
