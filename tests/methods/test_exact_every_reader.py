"""Every method that reads a context gives BioASQ factoid/list questions an exact answer, as
the official evaluator scores them: the free-text answer alone would be scored as one long
candidate and never match."""

from __future__ import annotations

import json

import pytest
from tests.methods.methods_helpers import GIVEN, make_runtime

from biorag.methods.base import Question
from biorag.methods.registry import build_method

FACTOID = Question(
    id="f1", text="Which enzyme drives liver fibrosis?", type="factoid", passages=GIVEN.passages
)
CRAG_SCORES = {
    "scores": [{"id": "1", "score": 90}, {"id": "2", "score": 80}, {"id": "3", "score": 70}]
}


def _llm(tmp_path, rules):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(rules))
    return {"backend": "mock", "mock_script": str(script), "cache": False}


@pytest.mark.parametrize("method", ["retrieve-read", "crag"])
def test_the_model_draws_the_exact_answer_from_the_free_text(tmp_path, hash_embedder, method):
    rules = [
        {"stage": "crag_evaluate", "response": CRAG_SCORES},
        {"stage": "answer", "response": "KRX1 drives liver fibrosis [1]."},
        {"stage": "exact_answer", "response": {"answer": ["KRX1"]}},
    ]
    rt = make_runtime(tmp_path, hash_embedder, llm=_llm(tmp_path, rules))
    ans = build_method(method, rt).answer_sync(FACTOID)
    assert ans.answer_text.startswith("KRX1 drives")
    assert ans.exact == ["KRX1"] and not ans.parse_failed
    assert ans.details.exact_answer.method == "llm"
    assert rt.accounting()["stages"]["exact_answer"]["calls"] == 1


def test_an_unusable_exact_answer_falls_back_to_the_floor(tmp_path, hash_embedder):
    rules = [
        {"stage": "answer", "response": "KRX1 drives liver fibrosis [1]."},
        {"stage": "exact_answer", "response": {"answer": ["yes"]}},  # no name: refused
    ]
    rt = make_runtime(tmp_path, hash_embedder, llm=_llm(tmp_path, rules))
    ans = build_method("retrieve-read", rt).answer_sync(FACTOID)
    assert ans.answer_text.startswith("KRX1 drives")  # the ideal answer is kept
    trace = ans.details.exact_answer
    assert trace.method == "floor" and "no usable factoid answer" in trace.error
    assert '"yes"' in trace.raw  # what the model wrote is kept in the trace
    assert ans.exact and "yes" not in ans.exact and not ans.parse_failed
    assert rt.accounting()["stages"]["exact_answer"]["fallbacks"] == 1
    assert any("exact-answer step failed" in n for n in ans.notes)


def test_without_a_model_the_floor_gives_candidates_from_the_passages(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder)
    ans = build_method("retrieve-read", rt).answer_sync(FACTOID)
    assert ans.details.exact_answer.method == "floor"
    assert isinstance(ans.exact, list) and ans.exact
    context = " ".join(p.text if hasattr(p, "text") else str(p) for p in GIVEN.passages)
    assert all(c.lower() in context.lower() for c in ans.exact)


def test_multiple_choice_gets_no_exact_step(tmp_path, hash_embedder):
    rules = [
        {"stage": "answer", "response": "KRX1 drives fibrosis, so yes."},
        {"stage": "answer_extract", "response": {"answer": "A"}},
    ]
    rt = make_runtime(tmp_path, hash_embedder, llm=_llm(tmp_path, rules))
    ans = build_method("retrieve-read", rt).answer_sync(GIVEN)
    assert ans.answer == "A" and ans.exact is None
    assert "exact_answer" not in rt.accounting()["stages"]


def test_selfrag_asks_for_its_exact_answer_once(tmp_path, hash_embedder):
    # no usable segment: the reader answers, and the exact answer is drawn once, not twice
    rules = [
        {"stage": "selfrag_segment", "response": "not JSON at all"},
        {"stage": "answer", "response": "KRX1 drives liver fibrosis [1]."},
        {"stage": "exact_answer", "response": {"answer": ["KRX1"]}},
    ]
    rt = make_runtime(tmp_path, hash_embedder, llm=_llm(tmp_path, rules))
    ans = build_method("selfrag", rt).answer_sync(FACTOID)
    assert ans.exact == ["KRX1"]
    assert rt.accounting()["stages"]["exact_answer"]["calls"] == 1
