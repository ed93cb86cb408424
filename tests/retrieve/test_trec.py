"""TREC run/qrels files and ir_measures evaluation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from biorag.errors import BioragError, InputFormatError
from biorag.retrieve.trec import evaluate_run, read_qrels, read_run, write_run


def test_run_round_trip(tmp_path: Path) -> None:
    run = {"q1": [("d3", 2.5), ("d1", 1.25), ("d2", -0.5)], "q2": [("d9", 0.123456789)]}
    path = write_run(tmp_path / "runs" / "x.run", run, tag="bm25")
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 d3 1 2.5 bm25"
    assert lines[3] == "q2 Q0 d9 1 0.123456789 bm25"
    assert read_run(path) == run
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.run"]


def test_bad_ids_and_lines(tmp_path: Path) -> None:
    with pytest.raises(BioragError, match="whitespace"):
        write_run(tmp_path / "r", {"q 1": [("d", 1.0)]})
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 0.5\n")
    with pytest.raises(InputFormatError, match=r"bad\.run:1"):
        read_run(bad)


def test_ir_measures_hand_computed(tmp_path: Path) -> None:
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("q1 0 d2 1\nq1 0 d4 1\nq1 0 d1 0\nq2 0 d7 1\n")
    qrels = read_qrels(qrels_path)
    assert qrels == {"q1": {"d2": 1, "d4": 1, "d1": 0}, "q2": {"d7": 1}}
    # q1: d2 (relevant) at rank 2 of 3; d4 (relevant) not retrieved.
    run = {"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)]}
    dcg = 1 / math.log2(3)
    expected_q1 = {
        "R@1": 0.0,
        "R@10": 0.5,
        "RR@10": 0.5,
        "AP@10": (1 / 2) / 2,
        "nDCG@10": dcg / (1 + dcg),
    }
    only_answered = evaluate_run(run, qrels, missing_as_zero=False)
    assert only_answered == pytest.approx(expected_q1)
    # q2 is judged but unanswered: it counts as 0, halving each mean.
    both = evaluate_run(run, qrels)
    assert both == pytest.approx({m: v / 2 for m, v in expected_q1.items()})


def test_write_run_refuses_what_trec_eval_would_misread(tmp_path: Path) -> None:
    with pytest.raises(BioragError, match="lists docid twice"):
        write_run(tmp_path / "r", {"q1": [("d1", 2.0), ("d1", 1.0)]})
    with pytest.raises(BioragError, match="scores out of rank order"):
        write_run(tmp_path / "r", {"q1": [("d1", 0.5), ("d2", 9.0)]})  # two score scales


def test_fuse_for_run_one_comparable_ranking_each_docid_once(tmp_path: Path) -> None:
    from biorag.retrieve.trec import fuse_for_run

    # one index at doc level: a document's second chunk is dropped, its scores kept
    assert fuse_for_run([[("d1", 9.0), ("d2", 5.0), ("d1", 4.0)]]) == [("d1", 9.0), ("d2", 5.0)]
    # two indexes on different scales (BM25 ~ 10s, cosine ~ 0.x): fused by reciprocal rank
    bm25 = [("a", 31.0), ("b", 12.0), ("c", 11.0)]
    dense = [("c", 0.91), ("d", 0.55)]
    fused = fuse_for_run([bm25, dense], rrf_k=60)
    ids = [d for d, _ in fused]
    assert ids == ["c", "a", "b", "d"] and len(set(ids)) == len(ids)  # b, d tie: b ranked 1st
    assert fused[0][1] == pytest.approx(1 / 63 + 1 / 61)
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    path = write_run(tmp_path / "fused.run", {"q1": fused})
    back = read_run(path)["q1"]  # scores are written with 10 significant digits
    assert [d for d, _ in back] == ids
    assert [s for _, s in back] == pytest.approx(scores, rel=1e-9)
