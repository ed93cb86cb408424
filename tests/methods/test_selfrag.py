"""SELF-RAG: retrieval on demand, one segment per passage with the model's own reflection, the
best critique score answers, passages ranked by it."""

from __future__ import annotations

import json

import pytest
from tests.methods.methods_helpers import GIVEN, QUESTION, build_index, make_runtime

from biorag.errors import BioragError
from biorag.methods.base import Question
from biorag.methods.details import SelfRAGSegment
from biorag.methods.registry import build_method
from biorag.methods.selfrag import critique_score, parse_segment


def _scripted(tmp_path, rules):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(rules))
    return {"backend": "mock", "mock_script": str(script), "cache": False}


def seg(rel: str, answer: str, sup: str, use: int) -> dict:
    return {"relevance": rel, "answer": answer, "support": sup, "utility": use}


def test_critique_score_and_parsing() -> None:
    s = SelfRAGSegment(chunk_id="c", relevance="relevant", support="partially", utility=3,
                       answer="x")  # fmt: skip
    assert critique_score(s, 1.0, 1.0, 0.5) == 1.0 + 0.5 + 0.25
    assert critique_score(s, 0.0, 2.0, 0.0) == 1.0
    opts = {"A": "yes", "B": "no"}
    assert parse_segment("c", seg("relevant", "B. Because no.", "fully", 5), opts).letter == "B"
    assert parse_segment("c", seg("relevant", "I cannot tell.", "fully", 5), opts) is None
    assert parse_segment("c", seg("relevant", "text", "mostly", 5), {}) is None
    assert parse_segment("c", seg("relevant", "text", "no", 7), {}) is None
    assert parse_segment("c", seg("relevant", "text", "no", True), {}) is None
    assert parse_segment("c", "not json", {}) is None


def test_best_segment_answers_and_ranks_the_passages(tmp_path, hash_embedder):
    rules = [
        {"stage": "selfrag_segment", "match": "Vitamin D",
         "response": seg("irrelevant", "B. Nothing on KRX1.", "no", 1)},
        {"stage": "selfrag_segment", "match": "drives fibrosis of the liver",
         "response": seg("relevant", "A. It says KRX1 drives liver fibrosis.", "fully", 5)},
        {"stage": "selfrag_segment", "match": "inhibits the enzyme",
         "response": seg("relevant", "C. It only says zelocitinib inhibits KRX1.", "partially", 3)},
    ]  # fmt: skip
    rt = make_runtime(tmp_path, hash_embedder, llm=_scripted(tmp_path, rules))
    ans = build_method("selfrag", rt).answer_sync(GIVEN)
    d = ans.model_dump()["details"]
    assert [(s["chunk_id"], s["score"]) for s in d["segments"]] == [
        ("given:g1:1", 2.5), ("given:g1:2", 1.75), ("given:g1:0", 0.0)
    ]  # fmt: skip
    assert d["retrieved"] and d["unusable"] == 0
    assert (ans.answer, ans.answer_text, ans.llm_used) == ("A", "yes", True)
    assert [e.chunk_id for e in ans.evidence] == ["given:g1:1", "given:g1:2", "given:g1:0"]
    assert [e.rank for e in ans.evidence] == [1, 2, 3]
    assert ans.sentences[0].chunk_ids == ["given:g1:1"] and "KRX1" in ans.context
    stages = rt.accounting()["stages"]
    assert stages["selfrag_segment"]["calls"] == 3 and "selfrag_retrieve" not in stages


def test_adaptive_retrieval_can_skip_the_search(tmp_path, hash_embedder):
    idx = build_index(tmp_path, hash_embedder)
    rules = [
        {"stage": "selfrag_retrieve", "response": {"retrieve": "no"}},
        {"stage": "answer", "response": "From general knowledge: maybe."},
        {"stage": "answer_extract", "response": {"answer": "C"}},
        {"stage": "selfrag_segment", "response": seg("relevant", "A. yes", "fully", 4)},
    ]  # fmt: skip
    rt = make_runtime(tmp_path, hash_embedder, idx, llm=_scripted(tmp_path, rules))
    ans = build_method("selfrag", rt).answer_sync(QUESTION)
    assert ans.answer == "C" and not ans.evidence
    assert ans.model_dump()["details"]["retrieved"] is False
    assert "selfrag_segment" not in rt.accounting()["stages"]
    always = build_method("selfrag", rt, {"retrieval": "always", "k": 2}).answer_sync(QUESTION)
    assert always.answer == "A" and len(always.evidence) == 2
    assert rt.accounting()["stages"]["selfrag_segment"]["calls"] == 2


def test_unusable_segments_are_dropped_and_counted(tmp_path, hash_embedder):
    rules = [
        {"stage": "selfrag_segment", "match": "drives fibrosis of the liver",
         "response": seg("relevant", "B. no", "partially", 2)},
        {"stage": "selfrag_segment", "response": seg("relevant", "no letter here", "fully", 5)},
    ]  # fmt: skip
    rt = make_runtime(tmp_path, hash_embedder, llm=_scripted(tmp_path, rules))
    ans = build_method("selfrag", rt).answer_sync(GIVEN)
    assert ans.answer == "B" and ans.model_dump()["details"]["unusable"] == 2
    assert any("2 segment(s) not usable" in n for n in ans.notes)
    rules = [
        {"stage": "selfrag_segment", "response": "not JSON at all"},
        {"stage": "answer", "response": "KRX1 drives fibrosis, so yes."},
        {"stage": "answer_extract", "response": {"answer": "A"}},
    ]
    rt = make_runtime(tmp_path, hash_embedder, llm=_scripted(tmp_path, rules))
    bad = build_method("selfrag", rt).answer_sync(GIVEN)
    assert bad.answer == "A" and bad.model_dump()["details"]["unusable"] == 3
    assert any("the reader answered" in n for n in bad.notes) and len(bad.evidence) >= 1
    assert rt.accounting()["stages"]["selfrag_segment"]["fallbacks"] == 1


def test_free_text_with_its_exact_answer(tmp_path, hash_embedder):
    q = Question(id="f1", text="Which enzyme drives liver fibrosis?", type="factoid",
                 passages=GIVEN.passages)  # fmt: skip
    rules = [
        {"stage": "selfrag_segment", "match": "drives fibrosis of the liver",
         "response": seg("relevant", "KRX1 drives it. Its expression rises in cirrhosis.",
                         "fully", 5)},
        {"stage": "selfrag_segment", "response": seg("irrelevant", "Unknown.", "no", 1)},
        {"stage": "exact_answer", "response": {"answer": ["KRX1"]}},
    ]  # fmt: skip
    rt = make_runtime(tmp_path, hash_embedder, llm=_scripted(tmp_path, rules))
    ans = build_method("selfrag", rt).answer_sync(q)
    assert ans.answer_text.startswith("KRX1 drives it")
    assert [s.text for s in ans.sentences] == [
        "KRX1 drives it.",
        "Its expression rises in cirrhosis.",
    ]
    assert all(s.chunk_ids == ["given:f1:1"] for s in ans.sentences)
    assert ans.exact == ["KRX1"] and ans.details.exact_answer.method == "llm"


def test_floor_and_bad_options(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder)
    ans = build_method("selfrag", rt).answer_sync(GIVEN)
    assert not ans.llm_used and ans.answer in GIVEN.options
    assert any("needs a model for its reflection" in n for n in ans.notes)
    assert ans.model_dump()["details"]["segments"] == []
    with pytest.raises(BioragError, match="retrieval must be one of"):
        build_method("selfrag", rt, {"retrieval": "sometimes"})
    with pytest.raises(BioragError, match="method selfrag: unknown option"):
        build_method("selfrag", rt, {"nope": 1})
