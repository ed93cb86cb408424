"""Rerankers with fakes: bi-encoder cosine, LLM judge (fake llm module), factory."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from biorag.config import RerankSettings
from biorag.embed.rerank import (
    BiEncoderReranker,
    CrossEncoderReranker,
    LLMJudgeReranker,
    Reranker,
    build_reranker,
)
from biorag.errors import BioragError, ConfigError
from biorag.llm.evidence import EVIDENCE_RULE


class KeywordEmbedder:
    """2-d vectors: (mentions 'cancer', 1) normalized; the query points at 'cancer'."""

    model_id = "fake:keyword"
    dim = 2

    def embed(self, texts, *, batch_size=None, show_progress=False) -> np.ndarray:
        x = np.array([[3.0 * ("cancer" in t), 1.0] for t in texts], dtype=np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return np.array([1.0, 0.0], dtype=np.float32)


def test_bi_encoder_reranks_by_cosine() -> None:
    r = BiEncoderReranker(KeywordEmbedder())
    assert isinstance(r, Reranker)
    items = [{"t": "weather"}, {"t": "lung cancer"}, {"t": "sports"}]
    out = r.rerank("cancer?", items, key=lambda d: d["t"], top_k=2)
    assert [d["t"] for d, _ in out] == ["lung cancer", "weather"]  # tie keeps input order
    assert out[0][1] == pytest.approx(3 / math.sqrt(10))
    assert r.rerank("q", []) == []
    assert r.score("q", []).shape == (0,)


@dataclass
class FakeChatRequest:
    messages: list[dict[str, str]]
    max_tokens: int | None = None
    temperature: float | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    stage: str = ""


@dataclass
class FakeChatResponse:
    top_logprobs: dict[str, float] = field(default_factory=dict)


def fake_yes_no_probability(resp: FakeChatResponse) -> float | None:
    lp = {k.strip().lower(): v for k, v in resp.top_logprobs.items()}
    if "yes" not in lp and "no" not in lp:
        return None
    yes, no = math.exp(lp.get("yes", -100.0)), math.exp(lp.get("no", -100.0))
    return yes / (yes + no)


class FakeLLM:
    """Says 'Yes' (P=0.9 of yes/no mass) when the passage mentions aspirin, 'No' (0.2)
    otherwise, and gives no log-probabilities for passages containing 'silent'."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    async def chat_many(self, requests: list[Any]) -> list[FakeChatResponse]:
        self.requests.extend(requests)
        out = []
        for r in requests:
            prompt = r.messages[-1]["content"]
            passage = prompt.split("B:", 1)[1]
            if "silent" in passage:
                out.append(FakeChatResponse({"The": -0.1}))
            elif "aspirin" in passage:
                out.append(FakeChatResponse({"Yes": math.log(0.9), " No": math.log(0.1)}))
            else:
                out.append(FakeChatResponse({"Yes": math.log(0.2), "No": math.log(0.8)}))
        return out


@pytest.fixture
def fake_llm_types(monkeypatch) -> None:
    """The reranker's request and yes/no reading replaced by the fakes above (it imports both
    at its module's top)."""
    import biorag.embed.rerank as rerank

    monkeypatch.setattr(rerank, "ChatRequest", FakeChatRequest)
    monkeypatch.setattr(rerank, "yes_no_probability", fake_yes_no_probability)


def test_llm_judge_scores_p_yes(fake_llm_types) -> None:
    llm = FakeLLM()
    r = LLMJudgeReranker(llm)
    texts = ["ibuprofen dosing", "aspirin prevents stroke", "silent passage"]
    scores = r.score("What prevents stroke?", texts)
    np.testing.assert_allclose(scores, [0.2, 0.9, 0.5], atol=1e-6)
    req = llm.requests[0]
    assert (req.max_tokens, req.temperature, req.logprobs, req.top_logprobs, req.stage) == (
        1,
        0,
        True,
        5,
        "rerank",
    )
    assert req.messages[0] == {"role": "system", "content": EVIDENCE_RULE}
    content = req.messages[-1]["content"]
    assert "What prevents stroke?" in content
    assert 'B:\n<passage id="B">\nibuprofen dosing\n</passage>' in content
    assert "'Yes' or 'No'" in content
    ranked = r.rerank("What prevents stroke?", texts, top_k=1)
    assert ranked == [("aspirin prevents stroke", pytest.approx(0.9))]


async def test_llm_judge_inside_a_running_loop(fake_llm_types) -> None:
    r = LLMJudgeReranker(FakeLLM())
    assert r.score("q", ["aspirin"])[0] == pytest.approx(0.9)  # sync call from async code
    assert (await r.ascore("q", ["other"]))[0] == pytest.approx(0.2)


def test_build_reranker(tmp_path) -> None:
    emb = KeywordEmbedder()
    assert isinstance(build_reranker(RerankSettings(), emb), BiEncoderReranker)
    with pytest.raises(ConfigError, match="needs a language model"):
        build_reranker(RerankSettings(backend="llm"), emb)
    assert isinstance(
        build_reranker(RerankSettings(backend="llm"), emb, FakeLLM()), LLMJudgeReranker
    )
    with pytest.raises(ConfigError, match=r"rerank\.model"):
        build_reranker(RerankSettings(backend="cross-encoder"), emb)
    with pytest.raises(BioragError, match="cannot be downloaded"):
        build_reranker(RerankSettings(backend="cross-encoder", model="BAAI/bge-reranker"), emb)
    ce = build_reranker(RerankSettings(backend="cross-encoder", model=str(tmp_path)), emb)
    assert isinstance(ce, CrossEncoderReranker)  # loads lazily: nothing loaded yet
