"""The extractive summarizer, compression clustering and the small LLM-summarizer helpers."""

from __future__ import annotations

import numpy as np
import pytest
from summarize_helpers import make_llm

from biorag.corpus.tokens import default_counter
from biorag.summarize import ExtractiveSummarizer, LayerItem, LLMSummarizer, mmr_extract
from biorag.summarize.compress import cluster_texts, compress_summaries
from biorag.summarize.llm_summarizer import clean_summary, parse_batch, tfidf_vectors

CONTEXT = [
    "Aspirin inhibits platelet aggregation. Aspirin inhibits platelet aggregation.",
    "Platelet aggregation drives arterial thrombosis. The weather was sunny in Boston.",
    "Arterial thrombosis causes myocardial infarction.",
]


def test_mmr_extract_keeps_claim_first_dedups_and_respects_budget(hash_embedder) -> None:
    head = "Low-dose aspirin reduces the risk of myocardial infarction."
    out = mmr_extract(head, CONTEXT, hash_embedder, 2000, query="Does aspirin prevent MI?")
    assert out.startswith(head)
    assert out.count("Aspirin inhibits platelet aggregation.") == 1
    again = mmr_extract(head, CONTEXT, hash_embedder, 2000, query="Does aspirin prevent MI?")
    assert out == again  # deterministic
    counter = default_counter()
    budget = counter.count(head) + counter.count(
        "Arterial thrombosis causes myocardial infarction."
    )
    small = mmr_extract(head, CONTEXT, hash_embedder, budget)
    assert small.startswith(head) and counter.count(small) <= budget
    assert small != head  # one more sentence fitted


def test_mmr_extract_without_head_cuts_an_oversized_sentence(hash_embedder) -> None:
    out = mmr_extract("", ["word " * 50 + "end."], hash_embedder, 5)
    assert 0 < default_counter().count(out) <= 5


async def test_extractive_layer_outcome(hash_embedder) -> None:
    summ = ExtractiveSummarizer(hash_embedder)
    items = [LayerItem("a", "Claim a.", ["Context one."]), LayerItem("b", "Claim b.", [])]
    outcome = await summ.summarize_layer("q", items)
    assert outcome.summaries == {"a": "Claim a. Context one.", "b": "Claim b."}
    assert outcome.calls == {"layer_summary": 2} and outcome.rounds == 1


def test_cluster_texts_is_deterministic_and_groups_similar(hash_embedder) -> None:
    texts = ["insulin glucose liver"] * 2 + ["statin cholesterol ldl"] * 2
    texts[1] += " pancreas"
    texts[3] += " heart"
    vecs = hash_embedder.embed(texts)
    groups = cluster_texts(vecs, 2)
    assert groups == [[0, 1], [2, 3]] == cluster_texts(vecs, 2)
    assert cluster_texts(vecs[:1], 3) == [[0]]
    assert cluster_texts(np.repeat(vecs[:1], 3, axis=0), 2) == [[0, 1, 2]]  # duplicates


async def test_compress_noop_under_limit(hash_embedder) -> None:
    summ = ExtractiveSummarizer(hash_embedder, token_limit=100)
    out = await compress_summaries(["short one.", "short two."], summ, "q")
    assert (out.texts, out.calls, out.rounds) == (["short one.", "short two."], 0, 0)


def test_parse_batch_ignores_bad_entries() -> None:
    parsed = {
        "summaries": [
            {"claim_id": " a ", "summary": "Summary: A."},
            {"claim_id": "a", "summary": "second A"},
            {"claim_id": "b", "summary": ""},
            {"claim_id": "x", "summary": "unknown"},
            ["not", "a", "dict"],
        ]
    }
    assert parse_batch(parsed, {"a", "b"}) == {"a": "A."}
    assert parse_batch({"summaries": {"b": "B."}}, {"a", "b"}) == {"b": "B."}
    assert parse_batch(None, {"a"}) == {} == parse_batch({"other": 1}, {"a"})
    assert clean_summary("  **Summary:** text ") == "text"


def test_tfidf_vectors_and_mode_check() -> None:
    vecs = tfidf_vectors(["insulin glucose", "statin ldl", "insulin liver"])
    assert vecs.shape[0] == 3 and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert tfidf_vectors(["", " "]).shape == (2, 1)
    llm, _ = make_llm()
    with pytest.raises(ValueError, match="batched"):
        LLMSummarizer(llm, mode="fast")  # type: ignore[arg-type]


async def test_batches_split_by_items() -> None:
    llm, backend = make_llm()
    summ = LLMSummarizer(llm, max_batch_items=2)
    items = [LayerItem(f"c{i}", f"Claim {i}.", ["ctx."]) for i in range(5)]
    outcome = await summ.summarize_layer("q", items)
    assert set(outcome.summaries) == {f"c{i}" for i in range(5)}
    assert outcome.calls == {"layer_summary_batch": 2, "layer_summary": 1}  # 2 + 2 + 1 alone
    assert outcome.rounds == 1 and len(backend.calls) == 3


async def test_failed_batch_call_falls_back_per_claim() -> None:
    llm, _ = make_llm([{"stage": "layer_summary_batch", "error": "fatal"}])
    items = [LayerItem(f"c{i}", f"Claim {i}.", ["ctx."]) for i in range(3)]
    outcome = await LLMSummarizer(llm).summarize_layer("q", items)
    assert outcome.summaries == {f"c{i}": f"summary of <Claim {i}.>" for i in range(3)}
    assert outcome.calls == {"layer_summary_batch": 1, "layer_summary": 3}
    assert outcome.rounds == 2 and llm.accounting.stage("layer_summary_batch").failures == 1
