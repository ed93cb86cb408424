"""A question that brings its passages, answered by the Claim ablation against the real
llama-server: no HyDE call (nothing to search, and the claims are reranked against the
question), an answer, and token counts equal to what the server generated."""

from __future__ import annotations

from pathlib import Path

import pytest
from devkit.servers import LlamaServer

from biorag.config import Settings
from biorag.methods.base import Question
from biorag.methods.claim_chunks import ClaimChunks
from biorag.runtime import Runtime

pytestmark = pytest.mark.real_llm

QUESTION = Question(
    id="g1",
    text="Does KRX1 drive liver fibrosis?",
    options={"A": "yes", "B": "no", "C": "maybe"},
    passages=[
        "The enzyme KRX1 drives fibrosis of the liver. KRX1 expression is increased in cirrhosis.",
        "Zelocitinib inhibits the enzyme KRX1 in hepatocytes.",
    ],
)
#: tokens the server may generate past the last chunk read of a stream closed at a loop
LOOP_SLACK = 48


async def _answer(llama: LlamaServer, tmp_path: Path, **options: str) -> dict:
    settings = Settings.model_validate(
        {
            "home": str(tmp_path / "home"),
            # a quarter of each stage's token budget: the calls made are the point, and SmolLM2
            # fills whatever budget it gets (at full budgets the two runs took 133 s)
            "llm": {"backend": "openai", "base_url": llama.url, "model": "smollm2-135m",
                    "cache": False, "budget_scale": 0.25},
        }
    )  # fmt: skip
    before = llama.settled_metrics()["tokens_predicted_total"]
    async with Runtime(settings, []) as rt:
        ans = await ClaimChunks(rt, **options).answer(QUESTION)
        acc = rt.accounting()
    generated = llama.settled_metrics()["tokens_predicted_total"] - before
    assert ans.answer in QUESTION.options
    counted, stopped = acc["total"]["completion_tokens"], acc["total"]["loops_stopped"]
    assert counted <= generated <= counted + LOOP_SLACK * stopped
    return acc


async def test_given_passages_cost_no_hyde_call(llama: LlamaServer, tmp_path: Path) -> None:
    acc = await _answer(llama, tmp_path)
    assert "hyde" not in acc["stages"] and acc["stages"]["claims_triples"]["calls"] >= 1
    # reranked against the query, the HyDE query is used: its call is made
    acc = await _answer(llama, tmp_path, rerank_query="query")
    assert acc["stages"]["hyde"]["calls"] == 1
