"""CRAG: evaluate the retrieved chunks, then correct (refine), incorrect (search again) or
ambiguous (both), and read the kept strips."""

from __future__ import annotations

import json

import pytest
from tests.methods.methods_helpers import GIVEN, QUESTION, build_index, make_runtime

from biorag.errors import BioragError
from biorag.methods.crag import action_of, strips_of
from biorag.methods.registry import build_method


def test_action_and_strips():
    assert action_of([0.2, 0.7], 0.6, 0.3) == "correct"
    assert action_of([0.1, 0.29], 0.6, 0.3) == "incorrect"
    assert action_of([0.1, 0.45], 0.6, 0.3) == "ambiguous"
    assert action_of([], 0.6, 0.3) == "incorrect"
    text = "One is here. Two is here. Three is here. Four is here. Five is here."
    assert strips_of(text, 2) == ["One is here. Two is here.", "Three is here. Four is here.",
                                  "Five is here."]  # fmt: skip
    assert strips_of("Just one sentence.", 2) == ["Just one sentence."]


def _scripted(tmp_path, rules):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(rules))
    return {"backend": "mock", "mock_script": str(script), "cache": False}


def test_correct_keeps_the_relevant_strips_only(tmp_path, hash_embedder):
    # passage 2 of GIVEN is relevant (90), the others are not; its two strips score 90 and 10
    rules = [
        {"stage": "crag_evaluate", "match": "Vitamin D supplementation",
         "response": {"scores": [{"id": "1", "score": 5}, {"id": "2", "score": 90},
                                 {"id": "3", "score": 40}]}},
        {"stage": "crag_evaluate",
         "response": {"scores": [{"id": "1", "score": 90}, {"id": "2", "score": 10},
                                 {"id": "3", "score": 60}]}},
        {"stage": "answer", "response": "KRX1 drives fibrosis, so yes."},
        {"stage": "answer_extract", "response": {"answer": "A"}},
    ]  # fmt: skip
    rt = make_runtime(tmp_path, hash_embedder, llm=_scripted(tmp_path, rules))
    ans = build_method("crag", rt, {"strip_sentences": 1}).answer_sync(GIVEN)
    crag = ans.model_dump()["details"]["crag"]
    assert crag["action"] == "correct" and crag["searched_again"] == []
    assert crag["scores"] == {"given:g1:0": 0.05, "given:g1:1": 0.9, "given:g1:2": 0.4}
    # kept: the strips of chunks 1 and 2 (scores >= lower) that score >= strip_min
    assert ans.context.split("\n\n") == [
        "The enzyme KRX1 drives fibrosis of the liver.",
        "Zelocitinib inhibits the enzyme KRX1 in hepatocytes.",
    ]
    assert ans.answer == "A"
    assert rt.accounting()["stages"]["crag_evaluate"]["calls"] == 2


def test_incorrect_searches_again_with_a_keyword_query(tmp_path, hash_embedder):
    idx = build_index(tmp_path, hash_embedder)
    rules = [
        {"stage": "crag_keywords", "response": "zelocitinib KRX1 liver fibrosis"},
        {"stage": "crag_evaluate", "match": "strips", "response": {"scores": []}},
        {"stage": "crag_evaluate", "response": {"scores": [{"id": str(i), "score": 0}
                                                           for i in range(1, 30)]}},
        {"stage": "answer", "response": "Unclear."},
        {"stage": "answer_extract", "response": {"answer": "C"}},
    ]  # fmt: skip
    rt = make_runtime(tmp_path, hash_embedder, idx, llm=_scripted(tmp_path, rules))
    ans = build_method("crag", rt, {"k": 2}).answer_sync(QUESTION)
    crag = ans.model_dump()["details"]["crag"]
    assert crag["action"] == "incorrect"
    assert crag["keyword_query"] == "zelocitinib KRX1 liver fibrosis"
    assert crag["searched_again"]  # the index was searched with the rewrite
    assert crag["strips_kept"] == 0 and ans.answer == "C"
    assert rt.accounting()["stages"]["crag_keywords"]["calls"] == 1


def test_floor_and_bad_options(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder)
    ans = build_method("crag", rt).answer_sync(GIVEN)
    assert ans.model_dump()["details"]["crag"]["action"] in ("correct", "ambiguous", "incorrect")
    assert not ans.llm_used
    with pytest.raises(BioragError, match="lower <= upper"):
        build_method("crag", rt, {"lower": 0.9, "upper": 0.5})
    with pytest.raises(BioragError, match="method crag: unknown option"):
        build_method("crag", rt, {"nope": 1})
