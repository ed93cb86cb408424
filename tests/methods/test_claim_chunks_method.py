"""The Claim ablation end to end: claims as the context, reranked and filled to the limit."""

from __future__ import annotations

import pytest
from methods_helpers import DRY_RUN, GIVEN, QUESTION, KeywordReranker, build_index, make_runtime

from biorag.corpus.tokens import default_counter
from biorag.errors import BioragError
from biorag.methods.claim_chunks import ClaimChunks


@pytest.fixture
def index(tmp_path, hash_embedder):
    return build_index(tmp_path, hash_embedder)


def check_claims(ans, question) -> list[dict]:
    d = ans.model_dump()["details"]
    claims = {c["id"]: c for c in d["claims"]}
    used = [claims[i] for i in d["context_claim_ids"]]
    assert used and ans.context == "\n\n".join(c["text"] for c in used)
    assert [c["score"] for c in d["claims"]] == sorted(
        (c["score"] for c in d["claims"]), reverse=True
    )
    assert [e.chunk_id for e in ans.evidence] == list(dict.fromkeys(c["chunk_id"] for c in used))
    for e in ans.evidence:
        assert {"chunk_id", "doc_id", "source_id"} <= set(e.model_dump())
    assert d["context_tokens"] <= d["token_limit"]
    assert ans.method == "claim" and ans.answer in question.options
    return used


def test_no_llm_rule_based_claims(tmp_path, index, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder, index)
    ans = ClaimChunks(rt).answer_sync(QUESTION)
    check_claims(ans, QUESTION)
    assert not ans.llm_used and "no-LLM floor" in ans.notes[0]
    assert ans.model_dump()["details"]["extraction"]["floor"] is True
    # Claims are finer than chunks: more claims than retrieved chunks.
    assert (
        len(ans.model_dump()["details"]["claims"])
        > ans.model_dump()["details"]["extraction"]["chunks"]
        == 6
    )
    rt.close()


def test_dry_run_model_batched_extraction(tmp_path, index, hash_embedder, reader_spy):
    settings = make_runtime(tmp_path, hash_embedder).settings
    rt = make_runtime(tmp_path, hash_embedder, index, client=reader_spy.client(settings))
    ans = ClaimChunks(rt).answer_sync(QUESTION)
    used = check_claims(ans, QUESTION)
    assert ans.llm_used and ans.answer == "C" and not ans.parse_failed
    assert all(reader_spy.read(c["text"]) for c in used)  # the reader was given the claims
    stages = rt.accounting()["stages"]
    assert stages["claims_triples"]["calls"] == 6  # one call per retrieved chunk
    assert stages["hyde"]["calls"] == 1 and "rewrite" not in stages
    assert ans.model_dump()["details"]["extraction"]["mode"] == "batched"
    rt.close()


@pytest.mark.parametrize("llm", [None, DRY_RUN])
def test_given_passages_need_no_index(tmp_path, hash_embedder, llm):
    rt = make_runtime(tmp_path, hash_embedder, None, llm)
    ans = ClaimChunks(rt).answer_sync(GIVEN)
    check_claims(ans, GIVEN)
    assert all(e.chunk_id.startswith("given:g1:") for e in ans.evidence)
    assert "searcher" not in rt.built()


def test_given_passages_cost_no_hyde_call_unless_the_query_reranks(
    tmp_path, hash_embedder, reader_spy
):
    settings = make_runtime(tmp_path, hash_embedder).settings
    rt = make_runtime(tmp_path, hash_embedder, None, client=reader_spy.client(settings))
    check_claims(ClaimChunks(rt).answer_sync(GIVEN), GIVEN)
    assert "hyde" not in rt.accounting()["stages"]
    ans = ClaimChunks(rt, rerank_query="query").answer_sync(GIVEN)
    check_claims(ans, GIVEN)
    assert rt.accounting()["stages"]["hyde"]["calls"] == 1
    assert ans.model_dump()["details"]["query"]["candidate_answer"]
    rt.close()


def test_claims_follow_the_rerank_order_and_the_limit(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder, reranker=KeywordReranker("krx1"))
    ans = ClaimChunks(rt).answer_sync(GIVEN)
    used = check_claims(ans, GIVEN)
    counts = [c["text"].lower().count("krx1") for c in used]
    assert counts == sorted(counts, reverse=True) and counts[0] >= 1
    assert rt.reranker.queries == [GIVEN.text]
    small = ClaimChunks(rt, token_limit=15).answer_sync(GIVEN)
    assert 0 < default_counter().count(small.context) <= 15
    assert len(small.model_dump()["details"]["context_claim_ids"]) < len(
        ans.model_dump()["details"]["context_claim_ids"]
    )


def test_bad_options(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder)
    with pytest.raises(BioragError, match="unknown claim option"):
        ClaimChunks(rt, per_corpus_k=3)
    with pytest.raises(BioragError, match="mode must be"):
        ClaimChunks(rt, mode="fast")
