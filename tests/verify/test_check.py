"""Verifying a whole answer: citations resolved against its evidence, unknown ids reported,
the verifier chosen by cost, and the LLM verifier's verdicts read (a scripted mock model)."""

from __future__ import annotations

import asyncio
import json

from biorag.config import AnswerSettings, Settings
from biorag.llm.factory import build_llm
from biorag.methods.base import Answer, AnswerSentence, Evidence, cited_sentences
from biorag.verify.check import choose_verifier, cited_pairs, verify_answer
from biorag.verify.llm_verifier import Pair, read_verdicts, requests

P1 = "Metformin reduces hepatic glucose production in patients with type 2 diabetes."
P2 = "Atorvastatin lowers LDL cholesterol in adults with hypercholesterolemia."


def _answer() -> Answer:
    return Answer(
        method="retrieve-read", question_id="q", answer="x",
        sentences=[
            AnswerSentence(text="Metformin reduces hepatic glucose production in type 2 diabetes.",
                           chunk_ids=["c1", "c2"]),
            AnswerSentence(text="Metformin cures alopecia in every adolescent.", chunk_ids=["c1"]),
            AnswerSentence(text="An uncited sentence about statins."),
            AnswerSentence(text="A sentence citing a passage nobody retrieved.", chunk_ids=["zz"]),
        ],
        evidence=[Evidence(text=P1, chunk_id="c1"), Evidence(text=P2, chunk_id="c2"),
                  Evidence(kind="triplet", text="metformin treats diabetes", rank=3)],
    )  # fmt: skip


def test_rules_verdicts_for_every_sentence(minilm):
    a = asyncio.run(verify_answer(_answer(), AnswerSettings(), minilm, None))
    labels = [s.support.label for s in a.sentences]
    assert labels == ["supported", "not_supported", "not_supported", "not_supported"]
    first = {v.passage_id: v.label for v in a.sentences[0].support.verdicts}
    assert first == {"c1": "supported", "c2": "not_supported"}
    assert a.sentences[3].support.unknown_citations == ["zz"]  # reported, not dropped
    v = a.verification
    assert v.verifier == "rules" and v.sentences == 4 and v.uncited == 1
    assert v.unknown_citations == 1 and v.tokens == 0 and "floor" in v.note
    assert any("not in the evidence" in n for n in a.notes)
    lines = cited_sentences(a.model_dump())
    assert lines[0].endswith("[1][2]") and lines[1].endswith("[1] (unsupported)")


def test_verify_off_leaves_the_answer_unchecked(minilm):
    a = asyncio.run(verify_answer(_answer(), AnswerSettings(verify="off"), minilm, None))
    assert a.verification is None and all(s.support is None for s in a.sentences)


def test_a_triplet_is_cited_by_its_rank():
    a = _answer()
    a.sentences[0].chunk_ids = ["triplet:3"]
    pairs, _ = cited_pairs(a)
    assert pairs[0].passage == "metformin treats diabetes"


def test_auto_picks_the_llm_only_when_it_costs_under_the_share():
    pairs = [Pair(1, "Metformin lowers glucose.", "c1", P1)]
    s = AnswerSettings()
    assert choose_verifier(s, None, pairs, 10**6) == ("rules", "")
    llm = object()
    assert choose_verifier(s, llm, pairs, 10**6)[0] == "llm"  # type: ignore[arg-type]
    kind, why = choose_verifier(s, llm, pairs, 50)  # type: ignore[arg-type]
    assert kind == "rules" and "20%" in why
    assert choose_verifier(AnswerSettings(verify="on"), llm, pairs, 50)[0] == "llm"  # type: ignore[arg-type]
    assert choose_verifier(AnswerSettings(verifier="rules", verify="on"), llm, pairs, 1)[0] == (  # type: ignore[arg-type]
        "rules"
    )


def test_the_models_verdicts_are_read_by_position_and_checked():
    batch = [Pair(1, "s one", "c1", P1), Pair(1, "s one", "c2", P2), Pair(2, "s two", "c1", P1),
             Pair(3, "s three", "c2", P2)]  # fmt: skip
    parsed = {"verdicts": [
        {"label": "Supported", "span": "hepatic  glucose"},
        {"label": "partially supported", "span": "made up"},
        {"label": "maybe"},  # no such label: left out
    ]}  # fmt: skip
    got = read_verdicts(parsed, batch)
    assert set(got) == {(1, "c1"), (1, "c2")}
    assert got[(1, "c1")].label == "supported" and got[(1, "c1")].span.text == "hepatic glucose"
    assert got[(1, "c2")].label == "partly_supported" and got[(1, "c2")].span is None
    assert read_verdicts("not json", batch) == {} and read_verdicts({"verdicts": [1]}, batch) == {}
    (only,) = requests(batch)
    prompt = only[1].messages[-1]["content"]
    assert "1. sentence 1 against P1\n2. sentence 1 against P2\n3. sentence 2 against P1" in prompt
    items = only[1].json_schema["properties"]["verdicts"]
    assert items["minItems"] == items["maxItems"] == 4


def test_the_llm_verifier_through_a_scripted_model(tmp_path, minilm):
    reply = {"verdicts": [  # pairs: (1, c1), (1, c2), (2, c1); the last left out
        {"label": "supported", "span": "not copied"},
        {"label": "not_supported", "span": ""},
    ]}  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"stage": "verify", "response": reply}]))
    settings = Settings.model_validate({"home": str(tmp_path), "llm": {
        "backend": "mock", "mock_script": str(script), "cache": False}})  # fmt: skip
    llm = build_llm(settings)
    a = asyncio.run(verify_answer(_answer(), AnswerSettings(verify="on"), minilm, llm))
    v = a.verification
    assert v.verifier == "llm" and v.tokens > 0
    assert a.sentences[0].support.label == "supported"
    assert [v.label for v in a.sentences[0].support.verdicts] == ["supported", "not_supported"]
    # the model's span is not in the passage: the aligned one is shown instead
    first = a.sentences[0].support.verdicts[0]
    assert first.span is not None and first.span.text in P1
    # (2, c1) got no verdict from the model: the rules one, and the note counts it
    assert "1 of 3 pairs had no usable verdict" in v.note


def test_a_failing_check_keeps_the_answer(tmp_path, monkeypatch):
    """An error inside the check (here the embedder) is a note on the answer, not a failed ask."""
    from biorag.asking import ask
    from biorag.corpus.datasets.base import Question
    from biorag.runtime import Runtime

    settings = Settings.model_validate({"home": str(tmp_path), "llm": {
        "backend": "mock", "mock_script": "dry-run", "cache": False}})  # fmt: skip

    def broken(*a, **k):
        raise OSError("embedding model files are missing")

    monkeypatch.setattr("biorag.verify.check.verify_pairs", broken)
    q = Question(text="Does metformin lower glucose?", passages=[P1, P2])
    with Runtime(settings, []) as rt:
        a = asyncio.run(ask(rt, q, "retrieve-read"))
    assert a.answer and a.sentences and a.verification is None
    assert all(s.support is None for s in a.sentences)
    assert any("could not be checked (OSError: embedding model files" in n for n in a.notes)
