"""The shared baseline steps: filling the context to the token limit, options, reranking."""

from __future__ import annotations

import pytest
from methods_helpers import KeywordReranker, make_runtime

from biorag.corpus.tokens import default_counter
from biorag.errors import BioragError
from biorag.methods.claims import DEFAULTS as CLAIMS_DEFAULTS
from biorag.methods.context import (
    DEFAULT_TOKEN_LIMIT,
    ContextItem,
    evidence_for,
    fill_context,
    fill_ranked,
    merge_options,
    rerank,
)
from biorag.methods.rewrite import CHUNK_DEFAULTS

TEXTS = [
    "Metformin reduces hepatic glucose production.",
    "Atorvastatin lowers LDL cholesterol in adults with hypercholesterolemia.",
    "Aspirin inhibits platelet aggregation.",
    "Low.",
]


def test_default_limit_is_the_claims_context_limit():
    assert DEFAULT_TOKEN_LIMIT == CLAIMS_DEFAULTS["token_limit"] == 2000
    assert CHUNK_DEFAULTS["token_limit"] == DEFAULT_TOKEN_LIMIT


def test_fill_adds_in_rank_order_and_stops_at_the_first_text_that_does_not_fit():
    c = default_counter()
    sizes = [c.count(t) for t in TEXTS]
    assert fill_context(TEXTS, sum(sizes), c) == TEXTS
    limit = sizes[0] + sizes[1]
    assert fill_context(TEXTS, limit, c) == TEXTS[:2]
    # The third does not fit in limit+2 tokens: filling stops although the short fourth would.
    assert sizes[2] > 2 >= sizes[3]
    assert fill_context(TEXTS, limit + 2, c) == TEXTS[:2]
    joined = "\n\n".join(fill_context(TEXTS, limit + 2, c))
    assert c.count(joined) <= limit + 2


def test_a_first_text_over_the_limit_is_cut_to_it_and_empty_texts_are_skipped():
    c = default_counter()
    long = " ".join(["glucose production in the liver"] * 20)
    out = fill_context(["", "  ", long, TEXTS[0]], 12, c)
    assert len(out) == 1 and long.startswith(out[0]) and 0 < c.count(out[0]) <= 12
    assert fill_context([], 100, c) == []


def test_fill_ranked_keeps_items_and_texts_aligned():
    items = [("a", TEXTS[0]), ("b", ""), ("c", TEXTS[2])]
    out = fill_ranked(items, lambda it: it[1], 1000)
    assert [(it[0], t) for it, t in out] == [("a", TEXTS[0]), ("c", TEXTS[2])]


def test_options_are_checked():
    with pytest.raises(BioragError, match="unknown hyde option"):
        merge_options("hyde", {"kk": 3}, CHUNK_DEFAULTS)
    with pytest.raises(BioragError, match="reader must be one of"):
        merge_options("hyde", {"reader": "three-call"}, CHUNK_DEFAULTS)
    with pytest.raises(BioragError, match="token_limit"):
        merge_options("hyde", {"token_limit": 0}, CHUNK_DEFAULTS)
    assert merge_options("hyde", {"k": 3}, CHUNK_DEFAULTS)["k"] == 3


async def test_rerank_uses_the_runtime_reranker(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder, reranker=KeywordReranker("aspirin"))
    out = await rerank(rt, "the query", TEXTS, key=lambda t: t)
    assert [t for t, _ in out] == [TEXTS[2], TEXTS[0], TEXTS[1], TEXTS[3]]
    assert rt.reranker.queries == ["the query"]
    assert await rerank(rt, "q", [], key=str) == []


def test_evidence_follows_first_use_and_ignores_unknown_chunks():
    class P:
        def __init__(self, cid):
            self.chunk_id = cid

        def to_dict(self):
            return {"chunk_id": self.chunk_id, "text": f"text of {self.chunk_id}"}

    items = [ContextItem("x", ["b", "zz"]), ContextItem("y", ["a", "b"])]
    got = evidence_for(items, [P("a"), P("b")])
    assert [(e.kind, e.chunk_id, e.text) for e in got] == [
        ("chunk", "b", "text of b"),
        ("chunk", "a", "text of a"),
    ]
    assert got[0].model_dump() == {  # no triplet fields in a chunk's record
        "kind": "chunk", "text": "text of b", "score": 0.0, "rank": 0, "source_id": "",
        "chunk_id": "b",
    }  # fmt: skip


async def test_an_llm_judge_reranker_runs_on_the_event_loop(tmp_path, hash_embedder):
    class AsyncJudge:
        async def ascore(self, query, texts):
            return [len(t) for t in texts]

        def rerank(self, *a, **k):  # pragma: no cover - must not be used
            raise AssertionError("the synchronous path was taken")

    rt = make_runtime(tmp_path, hash_embedder, reranker=AsyncJudge())
    out = await rerank(rt, "q", TEXTS, key=lambda t: t)
    assert [t for t, _ in out] == sorted(TEXTS, key=len, reverse=True)
