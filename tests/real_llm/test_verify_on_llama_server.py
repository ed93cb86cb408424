"""Every sentence-writing method's answer carries a verdict per sentence through the real
llama-server (SmolLM2-135M-Instruct), as a user asks through the CLI: by default (``auto``:
the rules verifier unless the model's check is cheap) and with the model as the verifier
(``answer.verify = "on"``, ``answer.verifier = "llm"``), whose calls count in stage ``verify``.
What SmolLM2 says of a sentence is not the point (docs/benchmarks.md measures the verifiers);
that every sentence gets a verdict, with a span that is really in its passage, is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from devkit.servers import LlamaServer
from tests.real_llm.conftest import biorag, llm_env

pytestmark = pytest.mark.real_llm

QUESTION = "What is the role of leukocyte count and CRP in diagnosing appendicitis?"
LABELS = {"supported", "partly_supported", "not_supported", "contradicted"}


def _check(out: dict[str, Any]) -> None:
    assert out["sentences"], out
    text_of = {e.get("chunk_id"): e["text"] for e in out["evidence"]}
    for s in out["sentences"]:
        support = s["support"]
        assert support["label"] in LABELS
        assert len(support["verdicts"]) + len(support["unknown_citations"]) == len(
            set(s["chunk_ids"])
        )
        for v in support["verdicts"]:
            span = v.get("span")
            if span:
                assert text_of[v["passage_id"]][span["start"] : span["end"]] == span["text"]
    assert out["verification"]["sentences"] == len(out["sentences"])


@pytest.mark.parametrize("method", ["closed-book", "retrieve-read", "iprar", "selfrag"])
def test_every_sentence_gets_a_verdict(
    llama: LlamaServer, demo_index: Path, tmp_path: Path, method: str
) -> None:
    env = llm_env(llama.url, tmp_path / "home", BIORAG_RETRIEVAL_K="3")
    r = biorag(["ask", "--index", str(demo_index), "--method", method, "--json", QUESTION], env,
               timeout=1800)  # fmt: skip
    assert r["rc"] == 0, r["stderr"][-3000:]
    _check(r["json"])


def test_the_model_as_the_verifier(llama: LlamaServer, demo_index: Path, tmp_path: Path) -> None:
    env = llm_env(llama.url, tmp_path / "home", BIORAG_RETRIEVAL_K="3",
                  BIORAG_ANSWER_VERIFY="on", BIORAG_ANSWER_VERIFIER="llm")  # fmt: skip
    r = biorag(["ask", "--index", str(demo_index), "--json", QUESTION], env, timeout=1800)
    assert r["rc"] == 0, r["stderr"][-3000:]
    out = r["json"]
    _check(out)
    v = out["verification"]
    cited = any(s["chunk_ids"] for s in out["sentences"])
    assert v["verifier"] == "llm"
    if cited:  # the model is asked only about sentences that cite something
        assert out["accounting"]["stages"]["verify"]["calls"] >= 1 and v["tokens"] > 0
