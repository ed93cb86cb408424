"""CLAIMS with the no-LLM operators: end-to-end time per question, retrieval to answer.

    python benchmarks/bench_claims_nollm.py --limit 100 --out benchmarks/results/claims_nollm.json

PubMedQA development questions over the 1,000-abstract PubMedQA index (built once under
benchmarks/.cache/). The embedding model is loaded and warmed up before timing; each question's
time covers query, retrieval, claim extraction, graph, summaries and the floor answerer. The
accuracy printed is the no-LLM floor's, on a closed corpus that contains each question's abstract.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_claims_economy import CACHE, DATA, dev_questions, ensure_index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit(f"needs {DATA} (the shared benchmark data)")
    from biorag.config import Settings
    from biorag.methods.base import Question
    from biorag.methods.claims import Claims
    from biorag.runtime import Runtime

    settings = Settings.model_validate({"home": str(CACHE / "home")})
    rt = Runtime(settings)
    index = ensure_index(rt.embedder)
    rt.index_paths = [index]
    method = Claims(rt)
    gold = json.loads((DATA / "ori_pqal.json").read_text())
    options = {"A": "yes", "B": "no", "C": "maybe"}
    letter = {"yes": "A", "no": "B", "maybe": "C"}
    rt.embedder.embed(["warm up"])
    rt.searcher.search(["warm up"], 3)
    rows = []
    for q in dev_questions(args.limit):
        t = time.perf_counter()
        ans = asyncio.run(method.answer(Question(id=q["id"], text=q["question"], options=options)))
        rows.append(
            {
                "id": q["id"],
                "seconds": time.perf_counter() - t,
                "stages": ans.details["seconds"],
                "claims": len(ans.details["claims"]),
                "correct": ans.answer == letter[gold[q["id"]]["final_decision"]],
            }
        )
    secs = sorted(r["seconds"] for r in rows)
    stages = sorted({s for r in rows for s in r["stages"]})
    summary = {
        "command": " ".join(["python", *sys.argv]),
        "questions": len(rows),
        "p50_s": round(statistics.median(secs), 3),
        "p95_s": round(secs[int(0.95 * (len(secs) - 1))], 3),
        "mean_s": round(statistics.fmean(secs), 3),
        "stage_mean_s": {
            s: round(statistics.fmean(r["stages"].get(s, 0.0) for r in rows), 3) for s in stages
        },
        "claims_per_q": round(statistics.fmean(r["claims"] for r in rows), 1),
        "floor_accuracy": round(sum(r["correct"] for r in rows) / len(rows), 3),
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({**summary, "per_question": rows}, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
