"""docs/benchmarks.md: the label shares (``label_shares.json``), ``biorag serve`` under load
(``serve_load*.json``), ``kg push`` into a graph server (``neo4j_push.json``) and Milvus next to
the local backend (``milvus_*.json``)."""

from __future__ import annotations

from typing import Any

from figures import dig, figure, find_row, num, result, signed, source, table

LABELS = "label_shares.json"
SERVE = {"": "serve_load.json", "slots4": "serve_load_slots4.json",
         "add": "serve_load_with_add_job.json"}  # fmt: skip
PUSH = "neo4j_push.json"
MILVUS_Q = "milvus_quality.json"
MILVUS_100K = "milvus_scale_100k.json"
MILVUS_1M = "milvus_scale_1m.json"


# -- label shares ------------------------------------------------------------------------------


@figure("labels-shares")
def labels_shares() -> str:
    body = []
    for name, s in result(LABELS).items():
        labels = ", ".join(
            f"{lab} {s['counts'][lab]:,} ({100 * s['shares'][lab]:.1f}%)" for lab in s["counts"]
        )
        body.append([name, f"{s['n']:,}", labels,
                     f"{s['majority']} {100 * s['majority_share']:.1f}%"])  # fmt: skip
    return table(["set", "questions", "labels", "majority"], body, "lrll")


# -- biorag serve under load -------------------------------------------------------------------


def _serve(key: str) -> dict[str, Any]:
    return result(SERVE[key])


def _yes(x: Any) -> str:
    return "yes" if x else "no"


@figure("servers-serve-load")
def servers_serve_load() -> str:
    body = []
    for key, label in (("", "`--max-concurrent-asks {slots}`"), ("slots4", ""),
                       ("add", "while a job adds {docs:,} documents")):  # fmt: skip
        r = _serve(key)
        codes = r["status_codes"]
        slots = r["slots"]
        if key == "":
            name = f"{slots} ({label.format(slots=slots)})"
        elif key == "add":
            name = f"{slots}, {label.format(docs=r['add_job']['documents'])}"
        else:
            name = str(slots)
        if "index_consistent" in r:
            rep = r["add_job"]["report"]
            state = (
                f"{'consistent' if r['index_consistent'] else 'inconsistent'} "
                f"({rep['documents_total']:,} documents, "
                f"the new ones {'found' if r['new_documents_searchable'] else 'not found'})"
            )
        else:
            state = _yes(r["index_unchanged"])
        body.append([
            name, f"{codes.get('200', 0):,}", f"{codes.get('503', 0):,}", r["errors"],
            f"{num(r['p50_s'], 2)} s", f"{num(r['p95_s'], 1)} s", f"{num(r['max_s'], 1)} s",
            f"{num(r['asks_per_s'], 2)} asks/s", f"{state}, {_yes(r['clean_stop'])}",
        ])  # fmt: skip
    header = ["ask slots", "answered", "503 then retried", "other errors", "p50", "p95", "max",
              "throughput", "index unchanged, clean stop"]  # fmt: skip
    return table(header, body, "lrrrrrrrl")


@figure("servers-serve-add")
def servers_serve_add() -> str:
    """What the add job did while the asks ran."""
    job = _serve("add")["add_job"]
    return f"{job['documents']:,} generated documents and their job chunked, embedded"


@figure("servers-serve-add-s")
def servers_serve_add_s() -> str:
    return f"{_serve('add')['add_job']['seconds']:.1f} s"


@figure("servers-serve-fall")
def servers_serve_fall() -> str:
    """Throughput and p95 with the add job against without."""
    a, b = _serve(""), _serve("add")
    return (
        f"Throughput fell from {a['asks_per_s']:.2f} to {b['asks_per_s']:.2f} asks/s and p95 rose "
        f"from {a['p95_s']:.1f} to {b['p95_s']:.1f} s"
    )


# -- kg push into a graph server ---------------------------------------------------------------


@figure("servers-push")
def servers_push() -> str:
    body = []
    for r in dig(result(PUSH), "rows", PUSH):
        body.append([
            f"{r['batch_size']:,}", f"{r['seconds']:.1f} s ({r['triplets_per_s']:,} triplets/s)",
            f"{r['all_duplicates_seconds']:.1f} s ({r['all_duplicates_per_s']:,}/s)",
            f"{r['resume_seconds']:.1f} s, {r['resume_pushed']:,} sent", r["duplicates_stored"],
        ])  # fmt: skip
    header = ["batch size", "triplets into an empty server", "all duplicates again",
              "resumed from the checkpoint", "stored twice"]  # fmt: skip
    return table(header, body, "rrrrr") + "\n\n" + source(PUSH)


@figure("servers-push-merge")
def servers_push_merge() -> str:
    c = dig(result(PUSH), "compare_merge", PUSH)
    body = [
        ["`MERGE (s)-[r:RELATION {predicate_key}]->(o)` per row (the store before this change)",
         f"{c['pattern_merge_seconds']:.1f}", f"{c['pattern_merge_stored']:,}"],
        ["look the batch's relation keys up in the `biorag_relation_key` index, `CREATE` the "
         "missing ones (the store now)", f"{c['key_lookup_seconds']:.1f}",
         f"{c['key_lookup_stored']:,}"],
    ]  # fmt: skip
    return table(["how relations are written", "seconds", "triplets stored"], body, "lrr")


@figure("servers-push-compare")
def servers_push_compare() -> str:
    c = dig(result(PUSH), "compare_merge", PUSH)
    n, batch = c["triplets"], c["batch_size"]
    return f"The first {n:,} triplets were loaded both ways, in batches of {batch:,}"


# -- Milvus ------------------------------------------------------------------------------------

DATASETS = {"pubmedqa": "PubMedQA test", "bioasq": "BioASQ 11b"}
RETRIEVERS = {"bm25": "BM25", "dense": "dense", "hybrid": "hybrid (fused by biorag)"}


@figure("servers-milvus-quality")
def servers_milvus_quality() -> str:
    body, seen = [], set()
    for r in dig(result(MILVUS_Q), "quality", MILVUS_Q):
        ds = r["dataset"]
        name = "" if ds in seen else f"{DATASETS.get(ds, ds)} ({r['queries']:,})"
        seen.add(ds)
        delta = r["delta_R@10"]
        d = f"{delta:+.3f}".replace("+0.000", "0.000").replace("-0.000", "0.000")
        worst = min(x["delta_R@10"] for x in result(MILVUS_Q)["quality"])
        if delta == worst and delta < 0:
            d = f"**{d}**"
        body.append([
            name, RETRIEVERS.get(r["retriever"], r["retriever"]), num(r["local"]["R@10"]),
            num(r["milvus"]["R@10"]), d, num(r["local"]["MRR@10"]), num(r["milvus"]["MRR@10"]),
        ])  # fmt: skip
        fused = r.get("milvus_server_fusion")
        if fused:
            ds_delta = f"{r['delta_R@10_server_fusion']:+.3f}".replace("+0.000", "0.000")
            body.append(["", "hybrid (fused in Milvus, WeightedRanker)", "", num(fused["R@10"]),
                         ds_delta.replace("-0.000", "0.000"), "",
                         num(fused["MRR@10"])])  # fmt: skip
    header = ["dataset (queries)", "retriever", "local R@10", "Milvus R@10", "delta",
              "local MRR@10", "Milvus MRR@10"]  # fmt: skip
    return table(header, body, "llrrrrr")


def _q(dataset: str, retriever: str) -> dict[str, Any]:
    return find_row(MILVUS_Q, "quality", dataset=dataset, retriever=retriever)


@figure("servers-milvus-bm25-s")
def servers_milvus_bm25_s() -> str:
    r = _q("bioasq", "bm25")
    return (
        f"BioASQ's {r['queries']} BM25 queries take {r['milvus']['seconds']:.1f} s now "
        f"(local: {r['local']['seconds']:.1f} s)"
    )


@figure("servers-milvus-alone")
def servers_milvus_alone() -> str:
    """The largest |delta R@10| of BM25 and dense alone, over both sets."""
    rows = [r for r in result(MILVUS_Q)["quality"] if r["retriever"] in ("bm25", "dense")]
    return f"{max(abs(r['delta_R@10']) for r in rows):.4f}"


@figure("servers-milvus-hybrid-gap")
def servers_milvus_hybrid_gap() -> str:
    return signed(_q("bioasq", "hybrid")["delta_R@10"])


@figure("servers-milvus-bm25-loss")
def servers_milvus_bm25_loss() -> str:
    return f"{abs(_q('bioasq', 'bm25')['delta_R@10']):.3f}"


def _scale_rows(path: str, push_note: str) -> list[list[str]]:
    s = dig(result(path), "scale", path)
    n = s["n"]
    rate = round(n / s["milvus_build_s"])

    def pp(x: dict[str, float], digits: int) -> str:
        return f"{num(x['p50_ms'], digits)} / {num(x['p95_ms'], digits)}"

    d = 0 if s["milvus_bm25"]["p50_ms"] >= 100 else 1
    return [
        ["Milvus (milvus-lite)",
         f"{s['milvus_build_s']:.0f} s ({rate:,} chunks/s through `MilvusIndex.push`"
         + push_note + ")",
         pp(s["milvus_bm25"], d), pp(s["milvus_dense"], d),
         pp(s["milvus_hybrid"], d) + " (fused in the server)",
         f"server RSS {s['server_rss_gb_after_build']:.2f} GB after the build, "
         f"{s['server_rss_gb_after_search']:.2f} GB after searching; this process "
         f"{s['client_rss_gb_after_build']:.2f} GB"],
        ["local (bm25s + FAISS HNSW)", f"{s['local_build_s']:.0f} s", pp(s["local_bm25"], 1),
         pp(s["local_dense"], 1), pp(s["local_hybrid"], 1),
         f"this process {s['client_rss_gb_with_local']:.2f} GB with both indexes loaded"],
    ]  # fmt: skip


SCALE_HEADER = ["", "build (send or index)", "BM25 p50 / p95 ms", "dense p50 / p95 ms",
                "hybrid p50 / p95 ms", "memory"]  # fmt: skip


@figure("servers-milvus-100k")
def servers_milvus_100k() -> str:
    return table(SCALE_HEADER, _scale_rows(MILVUS_100K, ", terms included"), "llllll")


@figure("servers-milvus-1m")
def servers_milvus_1m() -> str:
    return table(SCALE_HEADER, _scale_rows(MILVUS_1M, ""), "llllll")


@figure("servers-milvus-bm25-100k")
def servers_milvus_bm25_100k() -> str:
    s = dig(result(MILVUS_100K), "scale", MILVUS_100K)
    return f"{s['milvus_bm25']['p50_ms']:.0f} ms a query at {s['n'] // 1000}k chunks"


@figure("servers-milvus-hybrid-loss")
def servers_milvus_hybrid_loss() -> str:
    return f"{abs(_q('bioasq', 'hybrid')['delta_R@10']):.3f}"
