"""Joint support: a sentence two cited passages back only together, with MiniLM."""

from __future__ import annotations

import asyncio

from biorag.config import AnswerSettings
from biorag.methods.base import Answer, AnswerSentence, Evidence
from biorag.verify.align import Thresholds, verify_pairs
from biorag.verify.check import verify_answer
from biorag.verify.joint import Joined, best_joined, joint_label, joint_support
from biorag.verify.support import citation_quality

SENTENCE = ("In a trial of 420 adults with type 2 diabetes, metformin reduced HbA1c by 1.2% and "
            "lowered body weight by 2.5 kg over 24 weeks.")  # fmt: skip
HALF_A = "In a trial of 420 adults with type 2 diabetes, metformin reduced HbA1c by 1.2%."
HALF_B = "Over 24 weeks, metformin lowered body weight by 2.5 kg."
OTHER = "Atorvastatin lowers LDL cholesterol in adults with hypercholesterolemia."


def _verdicts(minilm, *passages: str):
    return verify_pairs([(SENTENCE, f"c{i}", p) for i, p in enumerate(passages)], minilm)


def test_two_halves_support_together_what_neither_supports_alone(minilm):
    vs = _verdicts(minilm, HALF_A, OTHER, HALF_B)
    assert all(v.label != "supported" for v in vs), vs
    joint = joint_support(SENTENCE, vs, minilm, Thresholds())
    assert joint is not None and joint.label == "supported", (vs, joint)
    assert joint.passage_ids == ["c0", "c2"]  # the unrelated passage is not joined
    assert joint.needed == ["c0", "c2"] and joint.score > max(v.score for v in vs)


def test_no_joint_check_where_one_passage_decides(minilm):
    vs = _verdicts(minilm, SENTENCE, HALF_B)
    assert vs[0].label == "supported"
    assert joint_support(SENTENCE, vs, minilm, Thresholds()) is None
    contradicted = verify_pairs(
        [(SENTENCE.replace("reduced", "did not reduce"), "c0", SENTENCE), ("x", "c1", HALF_B)],
        minilm,
    )
    assert contradicted[0].label == "contradicted"
    assert joint_support("x", contradicted, minilm, Thresholds()) is None
    (alone,) = _verdicts(minilm, HALF_A)
    assert joint_support(SENTENCE, [alone], minilm, Thresholds()) is None  # one passage


def test_joined_spans_that_disagree_with_the_sentence_add_nothing(minilm):
    changed = SENTENCE.replace("2.5 kg", "7.5 kg")
    vs = verify_pairs([(changed, "c0", HALF_A), (changed, "c1", HALF_B)], minilm)
    joined = best_joined(changed, vs, minilm)
    assert joined is not None and joined.reason.startswith("numbers")
    assert joint_label("partly_supported", joined, Thresholds()) is None
    agreeing = Joined(joined.chosen, joined.score, joined.without, reason="")
    assert joint_label("partly_supported", agreeing, Thresholds()) == "supported"
    assert joint_label("not_supported", Joined((0, 1), 0.5, (0.3, 0.2), ""), Thresholds()) == (
        "partly_supported"
    )


def test_an_answer_carries_the_joint_verdict_and_counts_the_needed_citations(minilm):
    answer = Answer(
        method="retrieve-read", question_id="q", answer="x",
        sentences=[AnswerSentence(text=SENTENCE, chunk_ids=["a", "b", "o"])],
        evidence=[Evidence(text=HALF_A, chunk_id="a"), Evidence(text=HALF_B, chunk_id="b"),
                  Evidence(text=OTHER, chunk_id="o")],
    )  # fmt: skip
    a = asyncio.run(verify_answer(answer, AnswerSettings(), minilm, None))
    support = a.sentences[0].support
    assert support.label == "supported" and support.joint is not None
    assert support.joint.passage_ids == ["a", "b"]
    assert a.verification.counts["supported"] == 1
    q = citation_quality([a.sentences[0].model_dump()])
    # recall from the joint verdict; precision counts "a" and "b" (needed), not "o"
    assert q["recall"] == 1.0 and q["jointly_supported"] == 1
    assert (q["citations"], q["needed"]) == (3, 2)
