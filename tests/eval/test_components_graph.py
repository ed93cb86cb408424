"""Graph vs semantic communities, share of wins, and the driver over one CLAIMS run."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from tests.graph.graph_helpers import VecEmbedder, build_small_graph, small_claims
from tests.summarize.summarize_helpers import FakeGraph

from biorag.eval.components import evaluate
from biorag.eval.components.evaluate import (
    community_comparison,
    evaluate_components,
    graph_communities,
    semantic_communities,
    share_of_wins,
)
from biorag.llm import LLM, MockBackend
from biorag.summarize import RootSummary

CL = '<passage id="claim">\n'  # a judged claim's block opening, in mock rules

YES = {"Yes": -0.1, "No": -2.3}
NO = {"Yes": -2.3, "No": -0.1}


class JoinSummarizer:
    """``test_summary`` = the claim, then its community, joined by " | "."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    async def test_summary(self, question, options, claim, related):
        self.calls.append((claim, list(related)))
        return " | ".join([claim, *related])


class CountReranker:
    """Score = how many times ``needle`` occurs in the text."""

    def __init__(self, needle: str) -> None:
        self.needle = needle

    def score(self, query, texts):
        return np.asarray([t.count(self.needle) for t in texts], dtype=np.float32)


def claim_vectors() -> VecEmbedder:
    """One-hot claim vectors, except cos(c1, c4) = 0.9, cos(c1, c5) = 0.79, cos(c8, c10) = 0.85."""
    texts = {c.id: c.text for c in small_claims()}
    eye = np.eye(12)
    vecs = {texts[f"c{i}"]: eye[i - 1] for i in range(1, 11)}
    vecs[texts["c4"]] = 0.9 * eye[0] + np.sqrt(1 - 0.81) * eye[10]
    vecs[texts["c5"]] = 0.79 * eye[0] + np.sqrt(1 - 0.79**2) * eye[11]
    vecs[texts["c10"]] = 0.85 * eye[7] + np.sqrt(1 - 0.85**2) * eye[9]
    return VecEmbedder(vecs)


def test_communities_by_hand():
    graph = build_small_graph()
    # c1 = A-B: claims sharing A or B are c2 (B-C, 0.8), c3 (C-A, 0.7), c6 (B-A, 0.4)
    assert graph_communities(graph, ["c1", "c8"]) == {"c1": ["c2", "c3", "c6"], "c8": ["c9"]}
    # cosine >= 0.8: c4 (0.9) joins c1, c5 (0.79) does not; c10 (0.85, no triple) joins c8
    sem = semantic_communities(graph, ["c1", "c8"], claim_vectors(), threshold=0.8)
    assert sem == {"c1": ["c4"], "c8": ["c10"]}
    assert semantic_communities(graph, ["c1"], claim_vectors(), threshold=0.75) == {
        "c1": ["c4", "c5"]
    }


async def test_community_comparison_winner():
    graph = build_small_graph()
    summarizer = JoinSummarizer()
    coi = [SimpleNamespace(claim_id="c1"), "c8"]  # ClaimOfInterest-like objects or ids
    # graph summaries mention 6 claims (c1 c2 c3 c6, c8 c9), semantic ones 4 (c1 c4, c8 c10)
    out = await community_comparison(
        graph, coi, "Why?", claim_vectors(), summarizer, CountReranker("claim c")
    )
    assert (out["graph"]["score"], out["semantic"]["score"]) == (6.0, 4.0)
    assert out["winner"] == "graph"
    assert out["semantic"]["communities"] == {"c1": ["c4"], "c8": ["c10"]}
    assert (
        out["graph"]["summaries"]["c8"] == f"{graph.claims['c8'].text} | {graph.claims['c9'].text}"
    )
    assert len(summarizer.calls) == 4
    lost = await community_comparison(
        graph, ["c1"], "q", claim_vectors(), summarizer, CountReranker("claim c4")
    )
    assert lost["winner"] == "semantic"
    none = await community_comparison(
        graph, [], "q", claim_vectors(), summarizer, CountReranker("x")
    )
    assert none["winner"] == "tie"


def test_share_of_wins():
    results = [{"winner": w} for w in ("graph", "graph", "semantic", "tie")]
    assert share_of_wins(results) == {"graph": 0.5, "semantic": 0.25, "tie": 0.25, "n": 4}
    assert share_of_wins([]) == {"graph": 0.0, "semantic": 0.0, "tie": 0.0, "n": 0}


def small_run() -> SimpleNamespace:
    """Three connected claims from three chunks/documents, plus a fourth passage without claims."""
    graph = FakeGraph(
        {
            "x1": "Aspirin inhibits COX-2.",
            "x2": "COX-2 drives inflammation.",
            "x3": "Ibuprofen inhibits COX-2.",
        },
        [("x1", "x2"), ("x2", "x3"), ("x1", "x3")],
        scores={"x1": 0.9, "x2": 0.5, "x3": 0.4},
    )
    passages = [
        SimpleNamespace(chunk_id=f"ch_x{i}", doc_id=f"d_x{i}", text=f"passage {i}")
        for i in range(1, 5)
    ]
    summary = RootSummary("x1", "Aspirin and ibuprofen inhibit COX-2.", ["x1", "x2", "x3"],
                          [1, 2], 1, 1)  # fmt: skip
    return SimpleNamespace(
        question=SimpleNamespace(text="What does aspirin inhibit?"),
        passages=passages,
        claims=list(graph.claims.values()),
        graph=graph,
        coi=["x1"],
        summaries=[summary],
    )


def run_vectors() -> VecEmbedder:
    e = np.eye(8)
    texts = ["Aspirin inhibits COX-2.", "COX-2 drives inflammation.", "Ibuprofen inhibits COX-2."]
    vecs = {t: e[i] for i, t in enumerate(texts)}
    vecs.update({f"passage {i}": e[i - 1] for i in range(1, 5)})  # chunk i == its claim
    return VecEmbedder(vecs)


async def test_evaluate_components_without_llm():
    out = await evaluate_components(
        small_run(), None, None, run_vectors(), CountReranker("COX"), summarizer=JoinSummarizer()
    )
    assert out["reference_detector"] == evaluate.entity_detector()
    assert out["semantic_similarity"] == pytest.approx(0.75)  # 3 chunks at 1.0, one without claims
    # claims / graph community of x1 cover d_x1..d_x3 of 4; semantic community is x1 alone
    assert out["source_diversity"] == {"claims": 0.75, "graph": 0.75, "semantic": 0.25}
    assert out["community"]["winner"] == "graph"
    assert set(out["skipped"]) == {"key_claim_retention", "faithfulness", "relevancy"}


async def test_evaluate_components_with_judge_llm():
    backend = MockBackend(
        rules=[
            {"stage": "eval_key_claims", "response": {"claims": ["K"]}},
            {"stage": "eval_retention", "match": r'<passage id="\d+">\nAspirin', "response": "Yes",
             "logprobs": YES},
            {"stage": "eval_retention", "response": "No", "logprobs": NO},
            {"stage": "eval_summary_claims", "response": {"claims": ["S1", "S2"]}},
            {"stage": "eval_faithfulness", "match": r"check:\n" + CL + "S1", "response": "Yes",
             "logprobs": YES},
            {"stage": "eval_faithfulness", "response": "No", "logprobs": NO},
            {"stage": "eval_relevancy", "response": "Yes", "logprobs": YES},
        ]
    )  # fmt: skip
    out = await evaluate_components(
        small_run(), "Q?", LLM(backend), run_vectors(), CountReranker("COX"),
        summarizer=JoinSummarizer(),
    )  # fmt: skip
    # chunk 1 holds "Aspirin ..." (retained); chunks 2-4 do not; the empty chunk 4 neither
    assert out["key_claim_retention"] == pytest.approx(1 / 4)
    assert out["faithfulness"] == {"claims": 0.5, "graph": 0.5, "semantic": 0.5}
    assert out["relevancy"] == {"claims": 1.0, "graph": 1.0, "semantic": 1.0}
    assert out["skipped"] == {}
    relevancy_prompt = next(r for r in backend.calls if r.stage == "eval_relevancy")
    assert "Q?" in relevancy_prompt.last_user_message()


async def test_evaluate_components_defaults_and_judge_failures():
    # no summarizer given and no LLM: the extractive summarizer builds the community summaries
    out = await evaluate_components(small_run(), None, None, run_vectors(), CountReranker("COX"))
    assert out["community"]["winner"] in ("graph", "semantic", "tie")
    backend = MockBackend(rules=[{"response": "not JSON at all"}])
    out = await evaluate_components(
        small_run(), None, LLM(backend, retry_base_delay=0.0), run_vectors(),
        CountReranker("COX"), summarizer=JoinSummarizer(),
    )  # fmt: skip
    assert "claims" in out["skipped"]["key_claim_retention"]
    assert "faithfulness" not in out and "relevancy" in out["skipped"]
    assert out["source_diversity"]["claims"] == 0.75  # structural metrics still reported


async def test_a_run_without_summaries_says_why_its_summary_metrics_are_missing():
    run = small_run()
    run.summaries, run.coi = [], []
    backend = MockBackend(
        rules=[
            {"stage": "eval_key_claims", "response": {"claims": ["K"]}},
            {"stage": "eval_retention", "response": "No", "logprobs": NO},
        ]
    )
    out = await evaluate_components(
        run, "Q?", LLM(backend), run_vectors(), CountReranker("COX"), summarizer=JoinSummarizer()
    )
    assert out["faithfulness"] == {} and out["relevancy"] == {} and out["source_diversity"] == {}
    for key in ("faithfulness.claims", "relevancy.claims", "source_diversity.claims"):
        assert "no claims summaries" in out["skipped"][key]
    assert out["key_claim_retention"] == 0.0  # the judge still scored the chunks
