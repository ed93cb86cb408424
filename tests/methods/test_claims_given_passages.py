"""CLAIMS with the question's own passages: no query calls, a document's sections extracted in
one call, every claim pointing at the section it came from."""

from __future__ import annotations

import json

from biorag.config import Settings
from biorag.methods.base import Question
from biorag.methods.claims import pack_passages, source_passage
from biorag.methods.registry import build_method
from biorag.retrieve.search import Passage
from biorag.runtime import Runtime

SECTIONS = [
    "Zelocitinib inhibits the enzyme KRX1 in hepatocytes of adults with liver fibrosis.",
    "In a trial of 120 adults, zelocitinib lowered liver stiffness after 24 weeks.",
    "Headache was the most common adverse event of zelocitinib.",
]


QUESTION = Question(id="q", text="Does zelocitinib help liver fibrosis?",
                    options={"A": "yes", "B": "no"}, passages=SECTIONS)  # fmt: skip


def _runtime(tmp_path, rules: list[dict]) -> Runtime:
    """A runtime whose LLM answers by the scripted ``rules``, with a constant embedder."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(rules))
    settings = Settings.model_validate(
        {"home": str(tmp_path / "home"),
         "llm": {"backend": "mock", "mock_script": str(script), "cache": False}}
    )  # fmt: skip
    return Runtime(settings, embedder=_Embedder())


def _passage(i: int, text: str, doc: str = "given:q") -> Passage:
    return Passage(chunk_id=f"{doc}:{i}", doc_id=doc, source_id="q", title="", text=text,
                   score=1.0, rank=i + 1, corpus="given", retriever="given")  # fmt: skip


def test_pack_passages_joins_a_documents_sections_within_the_limit():
    ps = [_passage(i, t) for i, t in enumerate(SECTIONS)] + [_passage(0, "Other doc.", "d2")]
    units = pack_passages(ps, 1024)
    assert [u[0] for u in units] == ["given:q:0+given:q:1+given:q:2", "d2:0"]
    assert units[0][2] == "\n\n".join(SECTIONS)
    small = pack_passages(ps, 25)  # each section alone is within 25 tokens, two are not
    assert [u[0] for u in small] == ["given:q:0", "given:q:1", "given:q:2", "d2:0"]


def test_source_passage_prefers_the_verbatim_then_the_best_covered_section():
    texts = {f"given:q:{i}": t for i, t in enumerate(SECTIONS)}
    unit = "given:q:0+given:q:1+given:q:2"
    assert source_passage(SECTIONS[2], unit, texts) == "given:q:2"
    reworded = "Zelocitinib reduced liver stiffness in the 120 adults of a 24-week trial."
    assert source_passage(reworded, unit, texts) == "given:q:1"
    assert source_passage("x", "given:q:1", texts) == "given:q:1"


def test_claims_on_given_sections_one_extraction_call_and_no_query_calls(tmp_path):
    answer = "\n\n".join(
        f"CLAIM: {t}\nSUBJECT: zelocitinib\nPREDICATE: {p}\nOBJECT: {o}"
        for t, p, o in [
            (SECTIONS[0], "inhibits", "the enzyme KRX1"),
            ("Zelocitinib lowered liver stiffness in a trial of 120 adults after 24 weeks.",
             "lowered", "liver stiffness"),
        ]
    )  # fmt: skip
    rt = _runtime(tmp_path, [
        {"stage": "claims_triples", "response": answer},
        {"stage": "claims_gleaning", "response": "NO_ADDITIONAL_CLAIMS"},
        {"response": "{}"},
    ])  # fmt: skip
    method = build_method("claims", rt, {})
    import asyncio

    from biorag.methods.claims import ClaimsRun

    run = ClaimsRun(question=QUESTION)
    chunks = asyncio.run(method._retrieve(run))
    assert len(chunks) == 1  # the three sections, one extraction unit
    asyncio.run(method._extract(run, chunks))
    stages = rt.accounting()["stages"]
    assert "rewrite" not in stages and "hyde" not in stages  # nothing to search for
    assert stages["claims_triples"]["calls"] == 1 and stages["claims_gleaning"]["calls"] == 1
    assert {c.chunk_id for c in run.claims} == {"given:q:0", "given:q:1"}


class _Embedder:
    model_id = "test"
    dim = 8

    def embed(self, texts):
        import numpy as np

        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    def embed_query(self, text):
        return self.embed([text])[0]


def test_an_answer_without_usable_claims_says_so(tmp_path):
    made_up = ("CLAIM: In a 2019 study of 240 patients with type 2 diabetes, empagliflozin "
               "reduced HbA1c by 0.6% compared with placebo.\n"
               "SUBJECT: empagliflozin\nPREDICATE: lowered\nOBJECT: HbA1c")  # fmt: skip
    rt = _runtime(tmp_path, [
        {"stage": "claims_triples", "response": made_up},
        {"stage": "claims_gleaning", "response": "NO_ADDITIONAL_CLAIMS"},
        {"stage": "answer", "response": {"reasoning": "none", "answer": "B"}},
        {"response": "{}"},
    ])  # fmt: skip
    ans = build_method("claims", rt, {}).answer_sync(QUESTION)
    assert ans.context == ""
    assert any("no usable claims" in n and "dropped as not in their chunk: 1" in n
               for n in ans.notes)  # fmt: skip
