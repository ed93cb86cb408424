"""Rewrite and HyDE end to end: no LLM, the dry-run model, given passages, limits, rerank."""

from __future__ import annotations

import pytest
from methods_helpers import DRY_RUN, GIVEN, QUESTION, KeywordReranker, build_index, make_runtime

from biorag.corpus.store import CorpusStore
from biorag.corpus.tokens import default_counter
from biorag.errors import BioragError
from biorag.methods.hyde import HyDE
from biorag.methods.rewrite import Rewrite

METHODS = [Rewrite, HyDE]


@pytest.fixture
def index(tmp_path, hash_embedder):
    return build_index(tmp_path, hash_embedder)


def check_answer(ans, cls, question, *, llm: bool) -> None:
    assert ans.method == cls.name and ans.question_id == question.id
    assert ans.answer in question.options and ans.answer_text == question.options[ans.answer]
    assert ans.context and ans.evidence and not ans.parse_failed
    assert ans.llm_used is llm
    if not llm:
        assert "no-LLM floor" in ans.notes[0]
    for e in ans.evidence:
        assert {"chunk_id", "doc_id", "source_id", "text"} <= set(e.model_dump())
        assert e.text in ans.context or ans.context.startswith(e.text[:20])
    d = ans.model_dump()["details"]
    assert d["context_tokens"] <= d["token_limit"]
    assert d["context_chunk_ids"] == [e.chunk_id for e in ans.evidence]


@pytest.mark.parametrize("cls", METHODS)
def test_no_llm_over_an_index(tmp_path, index, hash_embedder, cls):
    rt = make_runtime(tmp_path, hash_embedder, index)
    ans = cls(rt).answer_sync(QUESTION)
    check_answer(ans, cls, QUESTION, llm=False)
    store = CorpusStore(index / "corpus.sqlite")
    ids = [e.chunk_id for e in ans.evidence]
    assert len(store.get_chunks(ids)) == len(ids)
    store.close()
    q = ans.model_dump()["details"]["query"]
    if cls is Rewrite:  # no LLM: the question itself
        assert q["rewritten"] == QUESTION.text
    else:  # no LLM: question + options
        assert q["text"] == " ".join([QUESTION.text, *QUESTION.options.values()])
    assert rt.accounting() == {}
    rt.close()


@pytest.mark.parametrize("cls", METHODS)
def test_dry_run_model_over_an_index(tmp_path, index, hash_embedder, cls, reader_spy):
    settings = make_runtime(tmp_path, hash_embedder).settings
    rt = make_runtime(tmp_path, hash_embedder, index, client=reader_spy.client(settings))
    ans = cls(rt).answer_sync(QUESTION)
    check_answer(ans, cls, QUESTION, llm=True)
    # the model's letter, read from its answer, over the context the method built
    assert ans.answer == "C" and ans.answer_text == "maybe" and ans.raw_output
    assert len(reader_spy.prompts) == 1 and reader_spy.read(ans.context)
    stages = rt.accounting()["stages"]
    assert stages["answer"]["calls"] == 1 and stages["answer_extract"]["calls"] == 1
    if cls is Rewrite:
        assert stages["rewrite"]["calls"] == 1 and "hyde" not in stages
    else:
        assert stages["hyde"]["calls"] == 1 and "rewrite" not in stages
        assert ans.model_dump()["details"]["query"]["candidate_answer"]
    rt.close()


@pytest.mark.parametrize("cls", METHODS)
@pytest.mark.parametrize("llm", [None, DRY_RUN])
def test_given_passages_need_no_index(tmp_path, hash_embedder, cls, llm):
    rt = make_runtime(tmp_path, hash_embedder, None, llm)
    ans = cls(rt).answer_sync(GIVEN)
    check_answer(ans, cls, GIVEN, llm=llm is not None)
    assert all(e.chunk_id.startswith("given:g1:") for e in ans.evidence)
    assert len(ans.evidence) == len(GIVEN.passages)
    assert "searcher" not in rt.built()


@pytest.mark.parametrize("cls", METHODS)
def test_context_respects_the_token_limit(tmp_path, index, hash_embedder, cls):
    rt = make_runtime(tmp_path, hash_embedder, index)
    full = cls(rt).answer_sync(QUESTION)
    ans = cls(rt, token_limit=60).answer_sync(QUESTION)
    c = default_counter()
    assert 0 < c.count(ans.context) <= 60 < c.count(full.context)
    assert 0 < len(ans.evidence) < len(full.evidence)
    rt.close()


@pytest.mark.parametrize("cls", METHODS)
def test_the_context_follows_the_rerank_order(tmp_path, hash_embedder, cls):
    rt = make_runtime(tmp_path, hash_embedder, reranker=KeywordReranker("krx1"))
    ans = cls(rt).answer_sync(GIVEN)
    # Passage 1 names KRX1 twice, passage 2 once, passage 0 never.
    assert ans.context == "\n\n".join(GIVEN.passages[i] for i in (1, 2, 0))
    assert [e.chunk_id for e in ans.evidence] == [f"given:g1:{i}" for i in (1, 2, 0)]
    assert rt.reranker.queries == [GIVEN.text]  # reranked against the question
    assert [r["rerank_score"] for r in ans.model_dump()["details"]["retrieved"]] == [2.0, 1.0, 0.0]
    kept = cls(rt, rerank=False).answer_sync(GIVEN)
    assert kept.context == "\n\n".join(GIVEN.passages)


def test_one_call_reader_and_bad_options(tmp_path, hash_embedder, reader_spy):
    settings = make_runtime(tmp_path, hash_embedder).settings
    rt = make_runtime(tmp_path, hash_embedder, client=reader_spy.client(settings))
    ans = HyDE(rt, reader="one-call").answer_sync(GIVEN)
    assert ans.answer == "C" and ans.llm_used and reader_spy.read(GIVEN.passages[1])
    assert "answer_extract" not in rt.accounting()["stages"]
    with pytest.raises(BioragError, match="unknown rewrite option"):
        Rewrite(rt, top_k=3)
    with pytest.raises(BioragError, match="rerank_query"):
        HyDE(rt, rerank_query="everything")


@pytest.mark.parametrize("llm", [None, DRY_RUN])
def test_open_questions_get_a_text_answer_with_sentences(tmp_path, hash_embedder, llm):
    from biorag.methods.base import Question
    from biorag.methods.claim_chunks import ClaimChunks
    from biorag.methods.raptor import Raptor

    question = Question(id="o1", text="What does KRX1 drive?", passages=GIVEN.passages)
    rt = make_runtime(tmp_path, hash_embedder, None, llm)
    for cls in (Rewrite, HyDE, Raptor, ClaimChunks):
        ans = cls(rt).answer_sync(question)
        assert ans.answer and ans.context and ans.llm_used is (llm is not None)
        if llm is None:
            assert ans.sentences and all(s.chunk_ids for s in ans.sentences)
