"""Verify: every answer sentence checked against the passages it cites.

A verdict per (sentence, cited passage), supported / partly supported / not supported /
contradicted, with the passage span that decides it (:mod:`.models`); two verifiers, claim
alignment without an LLM (:mod:`.align`, a floor) and the model's verdicts
(:mod:`.llm_verifier`); :func:`~biorag.verify.check.verify_answer` runs one on an answer, and
:mod:`.support` turns the verdicts into a sentence's verdict and citation recall/precision.
Names are exported lazily: importing this package stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["citation_quality", "verify_answer"]


def __getattr__(name: str) -> Any:
    if name == "verify_answer":
        from biorag.verify.check import verify_answer

        return verify_answer
    if name == "citation_quality":
        from biorag.verify.support import citation_quality

        return citation_quality
    raise AttributeError(f"module 'biorag.verify' has no attribute {name!r}")
