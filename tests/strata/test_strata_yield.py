"""BioStrataKG builds report the yield of every LLM stage and warn loudly when it is low."""

from __future__ import annotations

import json
import logging

from biorag.strata import build_strata

GOOD_TRIPLETS = [
    {"subject": "Herceptin", "subject_type": "Drug", "relation": "treats",
     "object": "breast cancer", "object_type": "Disease"},
]  # fmt: skip
GOOD_DOC = {"methods": ["randomised trial"], "datasets": [], "domains": ["Oncology"]}


def test_a_model_that_answers_garbage_gets_a_loud_low_yield_warning(
    tmp_path, vocab, emb, papers, mock_llm, caplog
):
    llm = mock_llm([{"response": "Sure! Here are some relations I found in the text."}])
    with caplog.at_level(logging.WARNING, logger="biorag"):
        rep = build_strata(papers, llm, emb, vocab, tmp_path / "kg")
    y = rep.llm_yield["strata_triplets"]
    assert (y["inputs"], y["usable"], y["fallbacks"]) == (3, 0, 3)
    assert y["fallback_share"] == 1.0 and y["low"] is True
    assert rep.llm_fallbacks == 3 and rep.triplets >= 1  # the floor still found some
    warnings = [r.getMessage() for r in caplog.records if "LOW YIELD" in r.getMessage()]
    assert any("strata_triplets" in w and "0 of 3 papers" in w for w in warnings)
    assert all(r.levelno == logging.WARNING for r in caplog.records if "LOW YIELD" in r.message)
    assert "bigger model" in warnings[0] and "structured output" in warnings[0]
    saved = json.loads((tmp_path / "kg" / "build_report.json").read_text())
    assert saved["llm_yield"]["strata_triplets"]["usable"] == 0
    assert saved["llm_yield"]["strata_doc"]["fallbacks"] == 3


def test_a_model_that_follows_the_format_gives_a_full_yield(
    tmp_path, vocab, emb, papers, mock_llm, caplog
):
    llm = mock_llm([
        {"stage": "strata_triplets", "response": GOOD_TRIPLETS},
        {"stage": "strata_doc", "response": GOOD_DOC},
        {"stage": "strata_normalize", "response": {"choice": 0}},
    ])  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="biorag"):
        rep = build_strata(papers, llm, emb, vocab, tmp_path / "kg")
    assert not [r for r in caplog.records if "LOW YIELD" in r.getMessage()]
    t, d = rep.llm_yield["strata_triplets"], rep.llm_yield["strata_doc"]
    assert (t["inputs"], t["usable"], t["outputs"], t["fallbacks"]) == (3, 3, 3, 0)
    assert (d["usable"], d["outputs"]) == (3, 6) and not t["low"] and not d["low"]
    n = rep.llm_yield["strata_normalize"]
    assert n["inputs"] == n["usable"] and n["fallbacks"] == 0


def test_the_document_level_is_counted_apart_from_the_triplets(
    tmp_path, vocab, emb, papers, mock_llm
):
    llm = mock_llm([
        {"stage": "strata_triplets", "response": GOOD_TRIPLETS},
        {"stage": "strata_doc", "response": "no JSON here"},
        {"stage": "strata_normalize", "response": {"choice": None}},
    ])  # fmt: skip
    rep = build_strata(papers[:2], llm, emb, vocab, tmp_path / "kg")
    assert rep.llm_yield["strata_triplets"]["usable"] == 2
    assert rep.llm_yield["strata_doc"]["fallbacks"] == 2 and rep.llm_fallbacks == 2


def test_no_llm_build_has_no_llm_yield(tmp_path, vocab, emb, papers):
    assert build_strata(papers, None, emb, vocab, tmp_path / "kg").llm_yield == {}
