"""Calls and tokens per question from a run's LLM accounting: one copy, for
``benchmarks/bench_llm_sizing.py`` (which writes ``llm_sizing.json``) and the figures of
docs/scaling.md that recount the runs it names (``fig_scaling_endpoints.py``). A plain module, not a
``fig_*`` one: it registers no figure and imports nothing beyond the standard library."""

from __future__ import annotations

from typing import Any


def scaled(stages: dict[str, dict[str, float]], n: int) -> dict[str, Any]:
    """Calls and tokens per question over ``n`` questions. A call answered from biorag's LLM
    cache (another method of the same run asked the same prompt) costs no server tokens, but
    a deployment running one method would make it: each stage's tokens are counted per call
    that reached the server, times all its calls."""
    calls = hits = prompt = completion = 0.0
    unsized = []
    for stage, st in stages.items():
        served = st["calls"] - st["cache_hits"]
        calls += st["calls"]
        hits += st["cache_hits"]
        if served <= 0:
            unsized.append(stage)
            continue
        prompt += st["prompt_tokens"] / served * st["calls"]
        completion += st["completion_tokens"] / served * st["calls"]
    return {
        "questions": n,
        "calls_per_q": round(calls / n, 2),
        "cache_hit_share": round(hits / calls, 3) if calls else 0.0,
        "prompt_tokens_per_q": round(prompt / n),
        "completion_tokens_per_q": round(completion / n),
        **({"stages_all_cached": unsized} if unsized else {}),
    }
