"""Denoising with a mock LLM (faithful, batched, malformed batches) and the embedding judge."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from tests.graph.graph_helpers import VecEmbedder, build_small_graph

from biorag.graph import (
    ClaimGraph,
    EmbeddingRelevanceJudge,
    JudgeItem,
    LLMRelevanceJudge,
    denoise,
    judge_items,
)
from biorag.graph.judges import parse_yes_no
from biorag.llm import LLM, MockBackend
from biorag.llm.evidence import format_passage

QUESTION = "Does A activate B?"
IRRELEVANT = {"c5", "c7", "c9"}


def claim_rule(graph: ClaimGraph, cid: str, answer: str, **extra) -> dict:
    """A per-claim rule: matches the single-claim prompt of ``cid`` only."""
    block = re.escape(format_passage(cid, graph.claims[cid].text))
    rule = {"match": f"Statement to assess:\n{block}\n", "stage": "denoise", "response": answer}
    return {**rule, **extra}


def faithful_rules(graph: ClaimGraph) -> list[dict]:
    rules = []
    for cid in graph.claims:
        if cid in IRRELEVANT:
            rules.append(claim_rule(graph, cid, "No", logprobs={"No": -0.05, "Yes": -3.0}))
        else:
            rules.append(claim_rule(graph, cid, "Yes", logprobs={"Yes": -0.1, "No": -2.5}))
    return rules


def make_llm(rules: list[dict]) -> tuple[LLM, MockBackend]:
    backend = MockBackend(rules=rules)
    return LLM(backend, retry_base_delay=0.0), backend


async def test_keep_mode_makes_no_calls(small_graph: ClaimGraph) -> None:
    llm, backend = make_llm([{"response": "No"}])
    report = await denoise(small_graph, QUESTION, "keep", LLMRelevanceJudge(llm))
    assert report.judged == 0 and backend.calls == []
    assert len(small_graph.claims) == 10
    assert all(c.relevant is None for c in small_graph.claims.values())


async def test_faithful_drop_uses_one_call_per_claim(small_graph: ClaimGraph) -> None:
    llm, backend = make_llm(faithful_rules(small_graph))
    judge = LLMRelevanceJudge(llm, batched=False)
    report = await denoise(small_graph, QUESTION, "drop", judge)
    assert len(backend.calls) == 10
    assert all(r.stage == "denoise" and r.logprobs for r in backend.calls)
    assert report.judged == 10 and report.irrelevant == 3 and report.dropped == 3
    assert sorted(report.dropped_ids) == sorted(IRRELEVANT)
    assert IRRELEVANT.isdisjoint(small_graph.claims)
    assert small_graph.neighbors("c4") == {"c2", "c3"}
    assert small_graph.claims["c1"].relevant is True
    v = report.verdicts["c5"]
    assert v.how == "logprob" and v.score is not None and v.score < 0.05
    assert llm.accounting.report()["stages"]["denoise"]["calls"] == 10
    json.dumps(report.to_dict())


async def test_prompt_shows_neighbour_claims_as_context(small_graph: ClaimGraph) -> None:
    llm, backend = make_llm(faithful_rules(small_graph))
    await denoise(small_graph, QUESTION, "downweight", LLMRelevanceJudge(llm))
    prompts = [r.last_user_message() for r in backend.calls]
    prompt = next(p for p in prompts if 'Statement to assess:\n<passage id="c7">' in p)
    assert small_graph.claims["c5"].text in prompt  # c7's only neighbour
    assert small_graph.claims["c1"].text not in prompt
    assert QUESTION in prompt


async def test_downweight_mode(small_graph: ClaimGraph) -> None:
    llm, _ = make_llm(faithful_rules(small_graph))
    report = await denoise(small_graph, QUESTION, "downweight", LLMRelevanceJudge(llm), factor=0.5)
    assert report.downweighted == 3 and report.dropped == 0 and report.factor == 0.5
    assert len(small_graph.claims) == 10
    assert small_graph.claims["c5"].weight == 0.5 and small_graph.claims["c5"].relevant is False
    assert small_graph.claims["c4"].weight == 1.0
    assert small_graph.claims["c5"].score == 0.5  # the reranker score is kept


async def test_logprobs_win_over_text_and_text_is_parsed_without_them(
    small_graph: ClaimGraph,
) -> None:
    rules = [
        claim_rule(small_graph, "c1", "Yes", logprobs={"Yes": -2.0, "No": -0.2}),
        claim_rule(small_graph, "c2", "Yes, it links A to C."),  # "Yes," has no clean logprob
        claim_rule(small_graph, "c3", "Hard to say."),
        {"stage": "denoise", "response": "No"},
    ]
    llm, _ = make_llm(rules)
    report = await denoise(small_graph, QUESTION, "drop", LLMRelevanceJudge(llm))
    assert report.verdicts["c1"].relevant is False and report.verdicts["c1"].how == "logprob"
    assert report.verdicts["c2"].relevant is True and report.verdicts["c2"].how == "text"
    assert report.verdicts["c3"].relevant is None and report.verdicts["c3"].how == "unparsed"
    assert report.undecided == 1 and "c3" in small_graph.claims  # undecided claims stay
    assert small_graph.claims["c3"].relevant is None


def batch_answer(graph: ClaimGraph, ids: list[str]) -> dict[str, str]:
    return {str(i): ("no" if cid in IRRELEVANT else "yes") for i, cid in enumerate(ids, 1)}


async def test_batched_one_call(small_graph: ClaimGraph) -> None:
    ids = sorted(small_graph.claims)
    answer = batch_answer(small_graph, ids)
    rules = [{"match": "numbered statements", "stage": "denoise", "response": answer}]
    llm, backend = make_llm(rules)
    judge = LLMRelevanceJudge(llm, batched=True, batch_size=20)
    report = await denoise(small_graph, QUESTION, "drop", judge)
    assert len(backend.calls) == 1 and backend.calls[0].json_schema is not None
    assert set(report.dropped_ids) == IRRELEVANT
    assert judge.stats == {"calls": 1, "batch_calls": 1, "fallbacks": 0, "failures": 0}
    assert all(v.how == "batch" for v in report.verdicts.values())


async def test_batches_of_three(small_graph: ClaimGraph) -> None:
    ids = sorted(small_graph.claims)
    chunks = [ids[i : i + 3] for i in range(0, len(ids), 3)]
    rules = [
        {
            "match": re.escape(format_passage(1, small_graph.claims[c[0]].text)),
            "stage": "denoise",
            "response": batch_answer(small_graph, c),
        }
        for c in chunks
    ]
    llm, backend = make_llm(rules)
    judge = LLMRelevanceJudge(llm, batched=True, batch_size=3)
    report = await denoise(small_graph, QUESTION, "drop", judge)
    assert len(backend.calls) == 4
    assert set(report.dropped_ids) == IRRELEVANT


async def test_malformed_batch_falls_back_per_claim(small_graph: ClaimGraph) -> None:
    rules = [
        {"match": "numbered statements", "stage": "denoise", "response": "1 yes, 2 no, 3 ..."},
        *faithful_rules(small_graph),
    ]
    llm, backend = make_llm(rules)
    judge = LLMRelevanceJudge(llm, batched=True)
    report = await denoise(small_graph, QUESTION, "drop", judge)
    assert len(backend.calls) == 11  # one batch + ten fallbacks
    assert judge.stats["fallbacks"] == 10
    assert set(report.dropped_ids) == IRRELEVANT
    assert all(v.how == "fallback-logprob" for v in report.verdicts.values())


async def test_partial_batch_keeps_good_items_and_reasks_the_rest(
    small_graph: ClaimGraph,
) -> None:
    ids = sorted(small_graph.claims)  # c1, c10, c2, c3, ...
    full = batch_answer(small_graph, ids)
    partial = {k: v for k, v in full.items() if k not in ("2", "5")}
    partial["5"] = "maybe"  # unusable value
    rules = [
        {"match": "numbered statements", "stage": "denoise", "response": json.dumps(partial)},
        *faithful_rules(small_graph),
    ]
    llm, backend = make_llm(rules)
    judge = LLMRelevanceJudge(llm, batched=True)
    report = await denoise(small_graph, QUESTION, "drop", judge)
    assert judge.stats["fallbacks"] == 2 and len(backend.calls) == 3
    assert report.verdicts[ids[1]].how == "fallback-logprob"
    assert report.verdicts[ids[4]].how == "fallback-logprob"
    assert report.verdicts[ids[0]].how == "batch"
    assert set(report.dropped_ids) == IRRELEVANT


async def test_failed_calls_leave_claims_undecided(small_graph: ClaimGraph) -> None:
    llm, _ = make_llm([{"stage": "denoise", "error": "fatal"}])
    judge = LLMRelevanceJudge(llm, batched=True)
    report = await denoise(small_graph, QUESTION, "drop", judge)
    assert report.undecided == 10 and report.dropped == 0 and len(small_graph.claims) == 10
    assert judge.stats["failures"] == 11


class TopicEmbedder:
    """Counts on-topic (c1-c3) and off-topic claim markers in a text: [on, 0, off]."""

    model_id = "test:topic"
    dim = 3

    def embed(self, texts, *, batch_size=None, show_progress=False):
        out = []
        for t in texts:
            ids = re.findall(r"claim (c\d+):", t)
            on = sum(1 for i in ids if i in {"c1", "c2", "c3"})
            v = np.array([on, 0.0, len(ids) - on]) if ids else np.array([1.0, 0.0, 0.0])
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)


async def test_embedding_judge(small_graph: ClaimGraph) -> None:
    judge = EmbeddingRelevanceJudge(TopicEmbedder(), threshold=0.2, keep_top_fraction=0.0)
    items = judge_items(small_graph)
    scores = dict(zip([i.claim_id for i in items], judge.scores(QUESTION, items), strict=True))
    assert scores["c1"] == pytest.approx(1.0) and scores["c10"] == pytest.approx(0.0)
    # c4 and c6 are off-topic alone, but their neighbours (c2, c3 / c1, c2, c3) are on topic
    assert scores["c4"] > 0.2 and scores["c6"] > 0.2
    assert scores["c5"] == pytest.approx(0.0)  # neighbours c4, c7 are off-topic too
    report = await denoise(small_graph, QUESTION, "drop", judge)
    assert set(report.dropped_ids) == {"c5", "c7", "c8", "c9", "c10"}
    assert all(v.how == "embedding" for v in report.verdicts.values())
    # with the default rank floor at most half of the claims go
    graph = build_small_graph()
    report = await denoise(graph, QUESTION, "drop", EmbeddingRelevanceJudge(TopicEmbedder()))
    assert report.dropped == 5 and len(graph.claims) == 5


async def test_embedding_judge_never_drops_more_than_the_rank_floor_allows() -> None:
    emb = VecEmbedder(dim=16)  # random vectors: cosines near 0
    items = [JudgeItem(f"x{i}", f"unrelated statement {i}") for i in range(9)]
    verdicts = await EmbeddingRelevanceJudge(emb, threshold=0.99).judge("q?", items)
    assert sum(v.relevant for v in verdicts) == 5  # ceil(0.5 * 9)


async def test_denoise_argument_checks(small_graph: ClaimGraph) -> None:
    with pytest.raises(ValueError, match="unknown denoise mode"):
        await denoise(small_graph, QUESTION, "prune")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a judge"):
        await denoise(small_graph, QUESTION, "drop")


def test_parse_yes_no() -> None:
    assert parse_yes_no("Yes.") is True
    assert parse_yes_no(" no, it does not") is False
    assert parse_yes_no("The answer is yes") is True
    assert parse_yes_no("Either yes or no.") is None
    assert parse_yes_no("") is None
