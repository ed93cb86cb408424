"""Ranked retrieval measures through ir_measures, and set-based document P/R/F1."""

from __future__ import annotations

import math

import pytest

from biorag.eval.metrics.retrieval import (
    document_prf,
    mean_document_prf,
    qrels_from_gold,
    retrieval_measures,
    run_from_ranked,
)


def test_retrieval_measures_hand_computed() -> None:
    run = run_from_ranked({"q1": ["d1", "d2", "d3"], "q2": ["d5", "d6"]})
    qrels = qrels_from_gold({"q1": ["d2", "d3", "d9"], "q2": ["d6"], "q3": ["d7"]})
    out = retrieval_measures(run, qrels, ks=(1, 5))
    # q1: relevant at ranks 2, 3 of 3 relevant. R@5 = 2/3, RR = 1/2, P@5 = 2/5,
    #     DCG = 1/log2(3) + 1/log2(4); IDCG = 1 + 1/log2(3) + 1/log2(4)
    # q2: relevant at rank 2 of 1 relevant. R@5 = 1, RR = 1/2, P@5 = 1/5, nDCG = 1/log2(3)
    # q3: not answered -> 0 everywhere (trec_eval -c). Means over 3 queries.
    ndcg_q1 = (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3) + 0.5)
    ndcg_q2 = 1 / math.log2(3)
    assert out["R@1"] == 0.0
    assert out["P@1"] == 0.0
    assert out["MRR@1"] == 0.0
    assert out["R@5"] == pytest.approx((2 / 3 + 1) / 3)
    assert out["MRR@5"] == pytest.approx((0.5 + 0.5) / 3)
    assert out["P@5"] == pytest.approx((0.4 + 0.2) / 3)
    assert out["nDCG@5"] == pytest.approx((ndcg_q1 + ndcg_q2) / 3)
    assert set(out) == {f"{m}@{k}" for m in ("R", "MRR", "nDCG", "P") for k in (1, 5)}
    with pytest.raises(ValueError):
        retrieval_measures(run, qrels, ks=(0,))


def test_run_from_ranked_dedupes_and_keeps_order() -> None:
    assert run_from_ranked({"q": ["b", "a", "b", " "]}) == {"q": [("b", 2.0), ("a", 1.0)]}
    assert qrels_from_gold({"q": ["x", "x"]}) == {"q": {"x": 1}}


def test_document_prf_hand_computed() -> None:
    # 1 of 2 predicted relevant, 1 of 3 gold found: P = 1/2, R = 1/3, F1 = 2PR/(P+R) = 0.4
    assert document_prf(["d1", "d2", "d3"], ["d1", "d4"]) == pytest.approx((0.5, 1 / 3, 0.4))
    assert document_prf(["d1"], []) == (0.0, 0.0, 0.0)
    assert document_prf([], ["d1"]) == (0.0, 0.0, 0.0)
    # Duplicates are dropped before scoring.
    assert document_prf(["d1"], ["d1", "d1"]) == (1.0, 1.0, 1.0)
    out = mean_document_prf([["d1", "d2", "d3"], ["d9"]], [["d1", "d4"], ["d9"]])
    assert out == pytest.approx({"precision": 0.75, "recall": 2 / 3, "f1": 0.7, "n": 2})
