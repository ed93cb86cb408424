"""CLAIMS LLM economy: calls, tokens and sequential rounds per question, faithful vs batched.

The model is the dry-run backend (``llm.mock_script = "dry-run"``): well-formed answers for every
prompt, no knowledge, so the numbers are what the pipeline asks of a model, not how well it
answers. Each call's *round* is 1 + the highest round among calls that had finished before it
started (every call sleeps a few milliseconds so that concurrent calls overlap); the largest
round of a question is its critical path. Concurrency is set high so the path is the logical
one, not the throttle's.

    python benchmarks/bench_claims_economy.py --limit 100 \
        --out benchmarks/results/claims_economy.json

Needs ../shared/data (PubMedQA); builds (once) an index of the 1,000 PubMedQA contexts under
benchmarks/.cache/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "pubmedqa"
CACHE = REPO / "benchmarks" / ".cache"


class RoundTracker:
    """Wraps a backend; records per call its stage and round on the critical path."""

    def __init__(self, inner: Any, delay_s: float = 0.003):
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.delay_s = delay_s
        self.calls: list[tuple[str, int]] = []
        self._done_max = 0
        self._deepest = 0

    def reset(self) -> None:
        self.calls = []
        self._done_max = 0
        self._deepest = 0

    async def chat(self, req: Any) -> Any:
        depth = self._done_max + 1
        await asyncio.sleep(self.delay_s)
        resp = await self.inner.chat(req)
        self._deepest = max(self._deepest, depth)
        self._done_max = max(self._done_max, depth)
        self.calls.append((req.stage, depth))
        return resp


def ensure_index(embedder: Any) -> Path:
    from biorag.config import ChunkingSettings, RetrievalSettings
    from biorag.corpus.loaders import load_corpus
    from biorag.retrieve.index import IndexDir, index_stats

    path = CACHE / "idx-pubmedqa"
    if (path / "manifest.json").is_file() and index_stats(path)["complete"]:
        return path
    idx = IndexDir(path, embedder, ChunkingSettings(), RetrievalSettings(), name="pubmedqa")
    idx.add(load_corpus(DATA / "ori_pqal.json", "pubmedqa"))
    idx.close()
    return path


def dev_questions(limit: int) -> list[dict[str, Any]]:
    data = json.loads((DATA / "ori_pqal.json").read_text())
    test = set(json.loads((DATA / "test_ground_truth.json").read_text()))
    ids = sorted(k for k in data if k not in test)[:limit]
    return [{"id": k, "question": data[k]["QUESTION"]} for k in ids]


def run_mode(mode: str, questions: list[dict[str, Any]], index: Path, denoise: str) -> dict:
    from biorag.config import Settings
    from biorag.llm import build_llm
    from biorag.llm.dry_run import dry_run_responder
    from biorag.llm.mock_backend import MockBackend
    from biorag.methods.base import Question
    from biorag.methods.claims import Claims
    from biorag.runtime import Runtime

    settings = Settings.model_validate(
        {"llm": {"backend": "mock", "mock_script": "dry-run", "cache": False, "concurrency": 256}}
    )
    tracker = RoundTracker(MockBackend(responder=dry_run_responder, model="dry-run"))
    rt = Runtime(settings, [index], llm=build_llm(settings, backend=tracker))
    method = Claims(rt, mode=mode, denoise=denoise)
    per_q: list[dict[str, Any]] = []
    options = {"A": "yes", "B": "no", "C": "maybe"}
    t0 = time.perf_counter()
    for i, q in enumerate(questions):
        tracker.reset()
        before = rt.llm.accounting.report()["total"]
        ans = asyncio.run(method.answer(Question(id=q["id"], text=q["question"], options=options)))
        after = rt.llm.accounting.report()["total"]
        by_stage: dict[str, int] = defaultdict(int)
        for stage, _ in tracker.calls:
            by_stage[stage] += 1
        layer_depth = max((len(s["layer_sizes"]) for s in ans.details["summaries"]), default=0)
        per_q.append(
            {
                "id": q["id"],
                "calls": len(tracker.calls),
                "prompt_tokens": after["prompt_tokens"] - before["prompt_tokens"],
                "completion_tokens": after["completion_tokens"] - before["completion_tokens"],
                "rounds": max((d for _, d in tracker.calls), default=0),
                "deepest_layers": layer_depth,
                "claims": len(ans.details["claims"]),
                "calls_by_stage": dict(by_stage),
            }
        )
        if (i + 1) % 10 == 0:
            print(f"{mode}: {i + 1}/{len(questions)}", file=sys.stderr)
    seconds = time.perf_counter() - t0
    stages = sorted({s for r in per_q for s in r["calls_by_stage"]})
    mean = statistics.fmean
    return {
        "mode": mode,
        "denoise": denoise,
        "questions": len(per_q),
        "seconds": round(seconds, 1),
        "calls_per_q": round(mean(r["calls"] for r in per_q), 2),
        "prompt_tokens_per_q": round(mean(r["prompt_tokens"] for r in per_q), 1),
        "completion_tokens_per_q": round(mean(r["completion_tokens"] for r in per_q), 1),
        "rounds_mean": round(mean(r["rounds"] for r in per_q), 2),
        "rounds_max": max(r["rounds"] for r in per_q),
        "rounds_over_target": sum(r["rounds"] > r["deepest_layers"] + 5 for r in per_q),
        "claims_per_q": round(mean(r["claims"] for r in per_q), 1),
        "calls_per_q_by_stage": {
            s: round(mean(r["calls_by_stage"].get(s, 0) for r in per_q), 2) for s in stages
        },
        "per_question": per_q,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=100, help="PubMedQA dev questions (max 500)")
    ap.add_argument("--denoise", default="keep", choices=["keep", "drop", "downweight"])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit(f"needs {DATA} (the shared benchmark data)")
    from biorag.config import EmbedSettings
    from biorag.embed.factory import build_embedder

    index = ensure_index(build_embedder(EmbedSettings(), CACHE / "embed"))
    questions = dev_questions(args.limit)
    results = [run_mode(m, questions, index, args.denoise) for m in ("faithful", "batched")]
    faithful, batched = results
    summary = {
        "command": " ".join(["python", *sys.argv]),
        "calls_ratio_batched_over_faithful": round(
            batched["calls_per_q"] / faithful["calls_per_q"], 3
        ),
        "modes": results,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=1))
    if args.json:
        print(json.dumps({k: v for k, v in summary.items()}, indent=1))
        return
    print(
        "| mode | calls/q | prompt tok/q | completion tok/q | rounds mean | rounds max | "
        "rounds > layers+5 | claims/q | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['mode']} | {r['calls_per_q']} | {r['prompt_tokens_per_q']} | "
            f"{r['completion_tokens_per_q']} | {r['rounds_mean']} | {r['rounds_max']} | "
            f"{r['rounds_over_target']} | {r['claims_per_q']} | {r['seconds']} |"
        )
    print(f"\ncalls ratio batched/faithful: {summary['calls_ratio_batched_over_faithful']}")
    for r in results:
        print(f"{r['mode']} calls per question by stage: {r['calls_per_q_by_stage']}")


if __name__ == "__main__":
    main()
