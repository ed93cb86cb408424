from __future__ import annotations

import json

import pytest

from biorag.corpus.datasets import load_dataset
from biorag.errors import BioragError
from biorag.kg import open_typed_store
from biorag.strata import build_strata
from biorag.strata.generate import generate_biocdqa, pick_groups

GOOD = "Trastuzumab targets ERBB2."
GOOD2 = "ERBB2 activates TP53."


def _papers(papers):
    return {p["pid"]: {"title": p["title"], "abstract": p["abstract"]} for p in papers}


def _gen(question, sentences):
    return {
        "question": question,
        "type": "knowledge_discovery",
        "ideal_answer": f"Answer to {question}",
        "source_sentences": sentences,
    }


@pytest.fixture
def kg(papers, emb, vocab, tmp_path):
    build_strata(papers, None, emb, vocab, tmp_path / "kg")
    return tmp_path / "kg"


def test_groups_connected_and_deterministic(kg, papers):
    with open_typed_store(kg / "kg.sqlite") as store:
        a = pick_groups(store, [p["pid"] for p in papers], 6, 5, seed=3)
        b = pick_groups(store, [p["pid"] for p in papers], 6, 5, seed=3)
    assert a == b and a
    for g in a:
        assert len(g) in range(1, 6) and len(set(g)) == len(g)
        if len(g) > 1:  # P3 shares nothing with P1/P2
            assert "P3" not in g


async def _run_one(mock_llm, kg, papers, out, gen, verdict):
    llm = mock_llm(
        [
            {"stage": "biocdqa_generate", "response": gen},
            {"stage": "biocdqa_ground", "response": {"grounded": verdict, "reason": "r"}},
        ]
    )
    rep = await generate_biocdqa(kg, _papers(papers[:1]), llm, n_questions=1, out_path=out)
    return rep, llm, [json.loads(line) for line in out.read_text().splitlines()]


async def test_generation_keeps_grounded_drops_others(kg, papers, mock_llm, tmp_path):
    out = tmp_path / "qa.jsonl"
    rep, _, recs = await _run_one(mock_llm, kg, papers, out, _gen("Q good?", [GOOD]), "yes")
    assert rep.kept == 1 and [r["question"] for r in recs] == ["Q good?"]
    assert recs[0]["documents_pid"] == ["P1"] and recs[0]["source_sentences"] == [GOOD]

    rep, _, recs = await _run_one(mock_llm, kg, papers, out, _gen("Q no?", [GOOD]), "no")
    assert rep.kept == 0 and rep.dropped_ungrounded == 1 and recs == []

    bad = _gen("Q invented?", ["Aspirin cures everything."])
    rep, llm, recs = await _run_one(mock_llm, kg, papers, out, bad, "yes")
    assert rep.kept == 0 and rep.dropped_unquoted == 1 and recs == []
    assert not [c for c in llm.backend.calls if c.stage == "biocdqa_ground"]  # judge not asked


async def test_round_trip_through_loader(kg, papers, mock_llm, tmp_path):
    llm = mock_llm(
        [
            {"stage": "biocdqa_generate", "response": _gen("What does Trastuzumab target?",
                                                             [GOOD])},
            {"stage": "biocdqa_ground", "response": {"grounded": "yes"}},
        ]
    )  # fmt: skip
    docs = _papers([papers[0]])
    rep = await generate_biocdqa(kg, docs, llm, n_questions=1, seed=1)
    assert rep.kept == 1 and rep.out_path == str(kg / "biocdqa.jsonl")
    (item,) = load_dataset("biocdqa", rep.out_path).items
    assert item.question == "What does Trastuzumab target?"
    assert item.gold_docs == ["P1"] and item.gold_snippets == [GOOD]
    assert item.subset in ("factual", "knowledge_extraction", "knowledge_discovery")


async def test_ungrounded_when_quote_missing_even_if_judge_says_yes(kg, papers, mock_llm, tmp_path):
    llm = mock_llm(
        [
            {"stage": "biocdqa_generate", "response": _gen("Q?", ["Trastuzumab cures ERBB2."])},
            {"stage": "biocdqa_ground", "response": {"grounded": "yes"}},
        ]
    )
    out = tmp_path / "o.jsonl"
    rep = await generate_biocdqa(kg, _papers(papers[:1]), llm, n_questions=1, out_path=out)
    assert rep.kept == 0 and rep.dropped_unquoted == 1 and out.read_text() == ""


async def test_no_llm_is_a_clear_error(kg, papers):
    with pytest.raises(BioragError, match="needs an LLM"):
        await generate_biocdqa(kg, _papers(papers), None, n_questions=1)


async def test_the_dry_run_model_generates_kept_pairs(kg, papers):
    """The dry-run mock answers both generation prompts in format: quoted, grounded, kept."""
    from biorag.llm import LLM, MockBackend
    from biorag.llm.dry_run import dry_run_responder

    llm = LLM(MockBackend(responder=dry_run_responder), max_retries=0, retry_base_delay=0.0)
    rep = await generate_biocdqa(kg, _papers(papers), llm, n_questions=3, seed=0)
    assert rep.kept == rep.groups == 3 and rep.dropped_unquoted == 0
    items = load_dataset("biocdqa", rep.out_path).items
    texts = {p["pid"]: f"{p['title']} {p['abstract']}" for p in papers}
    for it in items:
        assert it.gold_snippets and all(
            any(s in texts[d] for d in it.gold_docs) for s in it.gold_snippets
        )
