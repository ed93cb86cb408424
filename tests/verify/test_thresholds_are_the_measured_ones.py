"""The rules verifier's default thresholds are the ones bench_verify.py chose on BioASQ 7b-10b
(``benchmarks/results/verify.json``): a changed default without a re-run fails here."""

from __future__ import annotations

import json
from pathlib import Path

from biorag.config import AnswerSettings
from biorag.verify.align import Thresholds

RESULT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "verify.json"


def test_the_defaults_are_the_chosen_thresholds():
    chosen = json.loads(RESULT.read_text(encoding="utf-8"))["thresholds"]
    s = AnswerSettings()
    assert (s.verify_supported, s.verify_partial, s.verify_contradicted) == (
        chosen["supported"], chosen["partial"], chosen["contradicted"],
    )  # fmt: skip
    assert Thresholds() == Thresholds(
        chosen["supported"], chosen["partial"], chosen["contradicted"]
    )
