"""Which claims CLAIMS' summaries take, by the ``summary_min_relevance`` threshold: on the demo's
40 bundled questions over its 200 bundled abstracts (no LLM: rule claims, extractive
summaries, the bi-encoder's relevance scores), the share of summary claims that come from the
question's own abstract (the one relevant document of a PubMedQA question), the summary claims
per question, and the floor's accuracy.

    python benchmarks/bench_summary_relevance.py [--thresholds none,0.2,0.3,0.4,0.5,0.6]
        [--held-out 200] [--held-out-thresholds none,0.4] [--embed-model all-mpnet-base-v2
        --out benchmarks/results/summary_relevance_mpnet.json]

The relevance a threshold is read on is the embedder's cosine of claim and question
(``Claim.relevance``), whatever the reranker; ``--embed-model`` says whether the default
threshold carries over to another embedder (``--thresholds ''``: the held-out set only).

``--held-out``: the same on 200 other PubMedQA abstracts and their questions
(``../shared/data``), a set the thresholds were not looked at on.

The demo index is built once under ``benchmarks/.cache/summary_relevance`` (the demo's
chunking). Writes ``benchmarks/results/summary_relevance.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from _bench import pin_threads, provenance

THREADS = pin_threads()

from biorag import BioRAG  # noqa: E402
from biorag.config import Settings  # noqa: E402
from biorag.util.files import write_text_atomic  # noqa: E402

CACHE = Path(__file__).parent / ".cache" / "summary_relevance"
DATA = Path(os.environ.get("BIORAG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared"
                           / "data"))  # fmt: skip
OUT = Path(__file__).parent / "results" / "summary_relevance.json"


def demo_index(settings: Settings) -> Path:
    from biorag.cli.demo_cmd import ensure_demo_index
    from biorag.runtime import Runtime

    with Runtime(settings, []) as rt:
        return ensure_demo_index(CACHE, rt)


def pubmedqa_set(settings: Settings, n: int) -> tuple[Path, list[dict[str, Any]]]:
    """An index of ``n`` PubMedQA abstracts not in the demo sample (the first PMIDs of
    ``ori_pqal.json``, contexts joined) and their questions: a set the threshold was not
    looked at on."""
    from biorag.cli.demo_cmd import demo_chunking
    from biorag.corpus.loaders import load_corpus
    from biorag.retrieve.index import IndexDir, index_stats
    from biorag.runtime import Runtime

    raw = resources.files("biorag.demo.data").joinpath("pubmedqa_sample.jsonl")
    demo = {str(json.loads(x)["id"]) for x in raw.read_text("utf-8").splitlines() if x.strip()}
    data = json.loads((DATA / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))
    pmids = [p for p in sorted(data) if p not in demo][:n]
    letter = {"yes": "A", "no": "B", "maybe": "C"}
    options = {"A": "yes", "B": "no", "C": "maybe"}
    questions = [{"id": p, "question": data[p]["QUESTION"], "options": options,
                  "gold": letter[data[p]["final_decision"]]} for p in pmids]  # fmt: skip
    path = CACHE / f"pubmedqa-{n}-index"
    if not ((path / "manifest.json").is_file() and index_stats(path)["complete"]):
        corpus = CACHE / f"pubmedqa-{n}.jsonl"
        corpus.parent.mkdir(parents=True, exist_ok=True)
        corpus.write_text("".join(json.dumps({"id": p, "text": "\n".join(data[p]["CONTEXTS"])})
                                  + "\n" for p in pmids), encoding="utf-8")  # fmt: skip
        with Runtime(settings, []) as rt:
            chunking, _ = demo_chunking(settings.chunking, rt)
            loaded = load_corpus(corpus, "jsonl", source="pubmedqa")
            with IndexDir(path, rt.embedder, chunking, settings.retrieval, name="pqa") as idx:
                idx.add(loaded)
    return path, questions


def run(rag: BioRAG, questions: list[dict[str, Any]], threshold: float | None) -> dict[str, Any]:
    own = total = correct = 0
    for q in questions:
        a = rag.ask(q["question"], q["options"], method="claims", summary_min_relevance=threshold)
        d = a.details
        doc_of = {c.id: c.doc_id for c in d.claims}
        source_of = {e.doc_id: e.source_id for e in a.evidence}
        ids = [cid for s in d.summaries for cid in s.claim_ids]
        total += len(ids)
        own += sum(1 for cid in ids if source_of.get(doc_of.get(cid, "")) == q["id"])
        correct += a.answer == q["gold"]
    n = len(questions)
    return {"threshold": threshold, "questions": n, "summary_claims": total,
            "summary_claims_per_question": round(total / n, 2),
            "own_abstract_share": round(own / max(total, 1), 4),
            "accuracy": round(correct / n, 4)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thresholds", default="none,0.2,0.3,0.4,0.5")
    ap.add_argument("--held-out", type=int, default=200, help="PubMedQA abstracts (0: none)")
    ap.add_argument("--held-out-thresholds", default="none,0.4")
    ap.add_argument("--threads", default=THREADS)
    ap.add_argument("--embed-model", default="all-MiniLM-L6-v2",
                    help="the embedder (relevance is its cosine); another one gets its own "
                    "indexes and home under the cache")  # fmt: skip
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    global CACHE
    if args.embed_model != "all-MiniLM-L6-v2":
        CACHE = CACHE / args.embed_model.replace("/", "_")
    settings = Settings.model_validate({"home": str(CACHE / "home"), "answer": {"verify": "off"},
                                        "embed": {"model": args.embed_model}})  # fmt: skip
    raw = resources.files("biorag.demo.data").joinpath("questions.jsonl").read_text("utf-8")
    questions = [json.loads(x) for x in raw.splitlines() if x.strip()]
    rows = []
    if args.thresholds:
        with BioRAG(demo_index(settings), settings=settings) as rag:
            for t in args.thresholds.split(","):
                rows.append(run(rag, questions, None if t == "none" else float(t)))
                print(json.dumps(rows[-1]))
    held_out = []
    if args.held_out and (DATA / "pubmedqa").is_dir():
        path, pqa = pubmedqa_set(settings, args.held_out)
        with BioRAG(path, settings=settings) as rag:
            for t in args.held_out_thresholds.split(","):
                held_out.append(run(rag, pqa, None if t == "none" else float(t)))
                print(json.dumps(held_out[-1]))
    out = {**provenance(), "embedder": args.embed_model, "rows": rows, "held_out": held_out}
    write_text_atomic(args.out, json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
