"""Component metrics on hand-made inputs: reference score, semantic similarity, judges."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from tests.graph.graph_helpers import VecEmbedder

from biorag.errors import BioragError, LLMError
from biorag.eval.components import evaluate, metrics
from biorag.eval.components.evaluate import (
    Score,
    faithfulness,
    judged_source_docs,
    key_claim_retention,
    reference_score,
    relevancy,
    semantic_similarity,
    source_diversity,
)
from biorag.extract.models import Claim
from biorag.llm import LLM, ChatRequest, ChatResponse, MockBackend
from biorag.llm.evidence import numbered_passages

CL = '<passage id="claim">\n'  # a judged claim's block opening, in mock rules

YES = {"Yes": -0.1, "No": -2.3}  # P(yes) = e^-0.1 / (e^-0.1 + e^-2.3) ~ 0.90
NO = {"Yes": -2.3, "No": -0.1}


def make_llm(rules: list[dict]) -> tuple[LLM, MockBackend]:
    backend = MockBackend(rules=rules)
    return LLM(backend, retry_base_delay=0.0), backend


class TextOnlyBackend(MockBackend):
    """A mock that never returns logprobs (the judges must parse the text)."""

    async def chat(self, req: ChatRequest) -> ChatResponse:
        resp = await super().chat(req)
        resp.logprobs = None
        return resp


# ------------------------------------------------------------------ reference score
def test_reference_score_rule_based_by_hand():
    claims = [
        "It inhibits BRCA1.",  # BRCA1 | it -> 1/2
        "Metformin reduces HbA1c in adults with type 2 diabetes.",  # 4 mentions, 0 refs -> 1
        "This drug lowers LDL cholesterol in patients.",  # 2 | "This drug" -> 2/3
        Claim(id="c", text="Aspirin inhibits COX-2 and it lowers fever.", chunk_id="k", doc_id="d"),
    ]  # Aspirin, COX-2 | it -> 2/3
    score = reference_score(claims, detector="rules")
    assert score == pytest.approx((0.5 + 1.0 + 2 / 3 + 2 / 3) / 4)
    assert isinstance(score, float) and isinstance(score, Score)
    assert score.details["detector"] == "rule_based"
    assert score.details["n"] == 4 and score.details["skipped"] == 0


def test_reference_score_skips_claims_without_any_reference(monkeypatch):
    assert reference_score([], detector="rules") == 1.0  # nothing to score
    monkeypatch.setattr(metrics, "_spacy", lambda: (lambda t: SimpleNamespace(ents=[]), "m"))
    score = reference_score(["Nothing to see.", "It works."], detector="spacy")
    assert score == 0.0  # "It works.": 0 mentions / 1 reference; the other claim is skipped
    assert score.details["skipped"] == 1 and score.details["n"] == 1


def test_reference_score_uses_spacy_model_when_one_loads(monkeypatch):
    class Ent:
        def __init__(self, text, start):
            self.text, self.start_char, self.end_char = text, start, start + len(text)

    def nlp(text):
        # a model that also tags the pronoun "It" as an entity: it must not count as explicit
        return SimpleNamespace(ents=[Ent("It", 0), Ent("BRCA1", text.index("BRCA1"))])

    monkeypatch.setattr(metrics, "_spacy", lambda: (nlp, "en_core_sci_sm"))
    score = reference_score(["It inhibits BRCA1."])
    assert score.details["detector"] == "spacy:en_core_sci_sm"
    assert score == pytest.approx(0.5)  # BRCA1 | it


def test_forcing_spacy_without_a_model_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(metrics, "_spacy", lambda: None)
    with pytest.raises(BioragError, match="no spaCy model"):
        reference_score(["It works."], detector="spacy")
    assert evaluate.entity_detector("auto") == "rule_based"


# ------------------------------------------------------------------ semantic similarity
def test_semantic_similarity_by_hand():
    emb = VecEmbedder(
        {
            "chunk one": [1.0, 0.0],
            "A. B.": [0.6, 0.8],  # the claims of chunk one joined by a space: cos 0.6
            "chunk two": [0.0, 1.0],
            "C.": [0.0, 2.0],  # cos 1.0 (vectors are normalized)
            "chunk three": [1.0, 1.0],  # no claims: 0
        }
    )
    by_list = semantic_similarity(
        ["chunk one", "chunk two", "chunk three"], [["A.", "B."], ["C."], []], emb
    )
    assert by_list == pytest.approx((0.6 + 1.0 + 0.0) / 3)
    assert by_list.details["per_chunk"] == pytest.approx([0.6, 1.0, 0.0])
    assert by_list.details["without_claims"] == 1
    claim = Claim(id="x", text="C.", chunk_id="k2", doc_id="d")
    by_id = semantic_similarity(
        {"k1": "chunk one", "k2": "chunk two"}, {"k1": ["A.", "B."], "k2": [claim]}, emb
    )
    assert by_id == pytest.approx(0.8)
    assert semantic_similarity([], [], emb) == 0.0
    with pytest.raises(ValueError):
        semantic_similarity(["a"], [], emb)


# ------------------------------------------------------------------ key claim retention
async def test_key_claim_retention_by_hand():
    llm, backend = make_llm(
        [
            {"stage": "eval_key_claims", "response": {"claims": ["K1 fact", "K2 fact", "K3 x"]}},
            {"stage": "eval_retention", "match": r"Key claim:\n" + CL + "K1", "response": "Yes",
             "logprobs": YES},
            {"stage": "eval_retention", "match": r"Key claim:\n" + CL + "K2", "response": "No",
             "logprobs": NO},
            {"stage": "eval_retention", "match": r"Key claim:\n" + CL + "K3", "response": "Yes.",
             "logprobs": {"Maybe": -0.1}},  # no yes/no among the logprobs: 'Yes.' is parsed
        ]
    )  # fmt: skip
    score = await key_claim_retention(llm, "The chunk.", ["alpha", "beta"])
    assert score == pytest.approx(2 / 3)
    assert score.details["key_claims"] == ["K1 fact", "K2 fact", "K3 x"]
    assert score.details["p_yes"][0] == pytest.approx(
        math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.3))
    )
    asked = [r for r in backend.calls if r.stage == "eval_retention"]
    assert all(r.logprobs and r.top_logprobs == 5 for r in asked)
    assert numbered_passages(["alpha", "beta"]) in asked[0].last_user_message()


async def test_key_claim_retention_needs_an_llm_and_a_usable_answer():
    with pytest.raises(BioragError, match="judge LLM"):
        await key_claim_retention(None, "text", ["a"])
    llm, _ = make_llm([{"stage": "eval_key_claims", "response": "no json here"}])
    with pytest.raises(LLMError, match="claims"):
        await key_claim_retention(llm, "text", ["a"])
    llm, _ = make_llm([{"stage": "eval_key_claims", "response": {"claims": []}}])
    assert await key_claim_retention(llm, "text", ["a"]) == 1.0  # nothing to retain


# ------------------------------------------------------------------ summary judges
SUMMARY_RULES = [
    {"stage": "eval_summary_claims", "response": {"claims": ["S1", "S2", "S3", "S4"]}},
    {
        "stage": "eval_faithfulness",
        "match": r"check:\n" + CL + r"S4\b",
        "response": "No",
        "logprobs": NO,
    },
    {"stage": "eval_faithfulness", "response": "Yes", "logprobs": YES},
    {
        "stage": "eval_relevancy",
        "match": r"judge:\n" + CL + r"S1\b",
        "response": "Yes",
        "logprobs": YES,
    },
    {"stage": "eval_relevancy", "response": "No", "logprobs": NO},
]


async def test_faithfulness_and_relevancy_by_hand():
    llm, backend = make_llm(SUMMARY_RULES)
    f = await faithfulness(llm, "A summary.", ["src one", "src two"])
    assert f == pytest.approx(3 / 4)
    assert f.details["n"] == 4 and f.details["yes"] == 3
    prompt = next(r for r in backend.calls if r.stage == "eval_faithfulness")
    assert numbered_passages(["src one", "src two"]) in prompt.last_user_message()
    r = await relevancy(llm, "A summary.", "Why?", summary_claims=["S1", "S2"])
    assert r == pytest.approx(0.5)
    assert sum(c.stage == "eval_summary_claims" for c in backend.calls) == 1  # reused claims
    assert await faithfulness(llm, "s", ["x"], summary_claims=[]) == 1.0
    assert await relevancy(llm, "s", "q", summary_claims=[]) == 0.0
    with pytest.raises(BioragError):
        await relevancy(None, "s", "q")


async def test_judges_parse_text_without_logprobs():
    backend = TextOnlyBackend(
        rules=[
            {"match": r"check:\n" + CL + r"S1\b", "response": "Yes, it is."},
            {"match": r"check:\n" + CL + r"S2\b", "response": "no"},
            {"response": "I cannot tell."},  # unparsable: counted as no
        ]
    )
    f = await faithfulness(LLM(backend), "s", ["x"], summary_claims=["S1", "S2", "S3"])
    assert f == pytest.approx(1 / 3)
    assert f.details["unparsed"] == 1
    assert f.details["p_yes"] == [1.0, 0.0, None]


def test_source_diversity_by_hand():
    score = source_diversity([["d1", "d2"], ["d2", "dX"]], ["d1", "d2", "d3", "d4"])
    assert score == 0.5  # d1, d2 of 4 inputs; dX was not an input
    assert score.details["covered"] == ["d1", "d2"]
    assert source_diversity([], ["d1"]) == 0.0
    assert source_diversity([["d1"]], []) == 0.0


async def test_judged_source_docs():
    llm, backend = make_llm(
        [
            {
                "match": r"Statement:\n" + CL + r"S1\n.*Document:\n<passage[^\n]*>\nfirst",
                "response": "Yes",
                "logprobs": YES,
            },
            {"response": "No", "logprobs": NO},
        ]
    )
    docs = {"d1": "first doc", "d2": "second doc"}
    found = await judged_source_docs(llm, "sum", ["S1", "S2"], docs)
    assert found == {"d1"}
    assert len(backend.calls) == 4  # one call per (claim, document)
    assert source_diversity([found], docs) == 0.5


def test_score_is_a_float_with_details():
    s = Score(0.25, n=4)
    assert s + 1 == 1.25 and float(s) == 0.25 and s.details == {"n": 4}
    assert np.mean([Score(0.5), Score(1.0)]) == 0.75
