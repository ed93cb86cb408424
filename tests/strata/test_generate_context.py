"""What a BioCDQA generation call is shown: full texts within a budget, and for the structured
families the group's BioStrataKG facts with names refined for a question."""

from __future__ import annotations

import json

import pytest

from biorag.kg import open_typed_store
from biorag.strata import build_strata
from biorag.strata.generate import generate_biocdqa
from biorag.strata.generate_context import (
    STRUCTURED,
    group_facts,
    paper_blocks,
    readable_name,
    refine_names,
)

FULL = "Methods paragraph about ERBB2 assays.\nResults: Trastuzumab shrank tumours in 62% of women."


@pytest.fixture
def kg(papers, emb, vocab, tmp_path):
    build_strata(papers, None, emb, vocab, tmp_path / "kg")
    return tmp_path / "kg"


def _docs(papers, full=FULL):
    docs = {p["pid"]: {"title": p["title"], "abstract": p["abstract"]} for p in papers}
    docs["P1"]["full_text"] = full
    return docs


def test_full_text_paragraphs_fit_the_budget(papers) -> None:
    docs = _docs(papers)
    whole = paper_blocks(["P1", "P2"], docs, text_tokens=4000)
    assert "Full text:\nMethods paragraph" in whole and "62% of women" in whole
    assert whole.count('<passage id="') == 2
    tight = paper_blocks(["P1"], docs, text_tokens=60)  # the abstract always, no paragraph
    assert "Trastuzumab targets ERBB2" in tight and "Full text" not in tight


def test_readable_names() -> None:
    assert readable_name("Neoplasms, Breast") == "breast neoplasms"
    assert readable_name("Breast Neoplasms") == "breast neoplasms"
    assert readable_name("HER2") == "HER2" and readable_name("mTOR inhibitors") == "mTOR inhibitors"
    assert readable_name("Diabetes Mellitus, Type 2") == "type 2 diabetes mellitus"


def test_group_facts_shared_first(kg) -> None:
    with open_typed_store(kg / "kg.sqlite") as store:
        facts = group_facts(store, ["P1", "P2"])
        assert facts and len(facts) <= 30
        shared = [f for f in facts if len(f.pids) > 1]
        assert facts[: len(shared)] == shared  # shared facts first
        lines = [f.line({}) for f in facts]
        assert any("Trastuzumab" in s and "P1" in s for s in lines)
        assert any(s.startswith("paper P2 uses the dataset") for s in lines)
        assert not any("Metformin" in s for s in lines)  # P3 is not in the group
        assert len(group_facts(store, ["P1", "P2"], max_facts=2)) == 2


async def test_refine_names_llm_and_fallback(mock_llm) -> None:
    llm = mock_llm([{"stage": "strata_refine_names",
                     "response": {"names": [{"graph": "Breast Neoplasms",
                                             "question": "breast cancer"}]}}])  # fmt: skip
    got = await refine_names(llm, ["Breast Neoplasms", "Neoplasms, Lung"])
    assert got == {"Breast Neoplasms": "breast cancer", "Neoplasms, Lung": "lung neoplasms"}
    assert llm.accounting.report()["stages"]["strata_refine_names"]["fallbacks"] == 1
    assert await refine_names(None, ["Neoplasms, Lung"]) == {"Neoplasms, Lung": "lung neoplasms"}


async def test_generation_sees_full_texts_and_refined_facts(kg, papers, mock_llm, tmp_path):
    quote = "Results: Trastuzumab shrank tumours in 62% of women."
    gen = {"question": "How often did tumours shrink?", "type": "drugs_for_disease",
           "ideal_answer": "In 62% of women.", "source_sentences": [quote]}  # fmt: skip
    llm = mock_llm(
        [
            {"stage": "strata_refine_names",
             "response": {"names": [{"graph": "Breast Neoplasms", "question": "breast cancer"}]}},
            {"stage": "biocdqa_generate", "response": gen},
            {"stage": "biocdqa_ground", "response": {"grounded": "yes"}},
        ]
    )  # fmt: skip
    out = tmp_path / "qa.jsonl"
    docs = _docs(papers[:2])
    rep = await generate_biocdqa(kg, docs, llm, n_questions=6, seed=1, out_path=out)
    prompts = [
        c.messages[-1]["content"] for c in llm.backend.calls if c.stage == "biocdqa_generate"
    ]
    assert all("62% of women" in p for p in prompts if 'id="P1"' in p)
    structured = [p for p in prompts if "Facts from the knowledge graph" in p]
    assert structured, "no structured question type was drawn: pick another seed"
    assert all("breast cancer" in p and "Breast Neoplasms" not in p.split("Facts")[1]
               for p in structured)  # fmt: skip
    assert rep.kept >= 1  # the full-text sentence counts as quoted
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert recs[0]["source_sentences"] == [quote] and recs[0]["documents_pid"] == ["P1"]
    assert set(rep.by_type) <= set(STRUCTURED) | {"factual", "knowledge_extraction",
                                                  "knowledge_discovery"}  # fmt: skip


def test_each_structured_family_has_its_own_query(kg) -> None:
    from biorag.strata.generate_context import family_facts

    with open_typed_store(kg / "kg.sqlite") as store:
        lines = {}
        for qtype in STRUCTURED:
            facts, from_family = family_facts(store, ["P1", "P2"], qtype)
            lines[qtype] = (from_family, [f.line({}) for f in facts])
    assert lines["drugs_for_disease"] == (
        True, ["Trastuzumab treats Breast Neoplasms (papers P1)"]
    )  # fmt: skip
    ok, chains = lines["gene_disease_chain"]
    # a relationship chain across two hops, as the paper's chain queries return
    assert (
        ok and "ERBB2 activates -> TP53 -> associated with Breast Neoplasms (papers P2)" in chains
    )
    ok, docs = lines["research_direction"]  # the document level only
    assert ok and docs and all(x.startswith("paper P") for x in docs)
    assert "paper P2 uses the dataset TCGA (papers P2)" in docs
    # no drug interaction in these papers: the group's whole subgraph stands in, and says so
    ok, fallback = lines["drug_interaction"]
    assert not ok and "Trastuzumab targets ERBB2 (papers P1)" in fallback
    with open_typed_store(kg / "kg.sqlite") as store:  # facts of papers outside the group go
        facts, _ = family_facts(store, ["P2"], "drugs_for_disease")
    assert all("P1" not in f.pids for f in facts)
