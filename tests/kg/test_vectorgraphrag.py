"""The VectorGraphRAG method: KG context, the reader request, regex answers, paper_compat, floor."""

from __future__ import annotations

import pytest
from tests.kg.test_retrieval import OPTIONS, QUESTION, TABLE, TRIPLETS, DictEmbedder

from biorag.answer.regex_extract import extract_letter_regex
from biorag.config import Settings
from biorag.errors import BioragError
from biorag.kg.models import Triplet
from biorag.kg.stores.factory import open_store
from biorag.llm import LLM, MockBackend
from biorag.llm.evidence import numbered_passages, parse_passages
from biorag.methods.base import Question
from biorag.methods.vectorgraphrag import VectorGraphRAG, extract_letter_paper
from biorag.runtime import Runtime

Q = Question(id="m1", text=QUESTION, options=dict(zip("ABCD", OPTIONS, strict=True)))
SYSTEM_START = "You are a helpful assistant with medical knowledge."


@pytest.fixture
def kg(tmp_path):
    store = open_store(tmp_path / "kg")
    store.add_triplets(
        Triplet(subject=s, predicate=p, object=o, source_id=f"src{i}")
        for i, (s, p, o, *_) in enumerate(TRIPLETS)
    )
    store.close()
    return tmp_path / "kg"


def runtime(tmp_path, reply: str | None):
    return Runtime(
        Settings.model_validate({"home": str(tmp_path / "home")}),
        embedder=DictEmbedder(TABLE),
        llm=None if reply is None else LLM(MockBackend(rules=[{"response": reply}]), max_retries=0),
    )


async def test_answer_with_ranked_triplet_context(tmp_path, kg):
    rt = runtime(tmp_path, "Chloroquine treats malaria, so the answer is A.")
    a = await VectorGraphRAG(rt, kg=str(kg)).answer(Q)
    assert a.answer == "A" and a.answer_text == "Chloroquine" and a.llm_used and not a.parse_failed
    (req,) = rt.llm.backend.calls
    assert req.stage == "kg_answer" and [m["role"] for m in req.messages] == ["system", "user"]
    assert req.messages[0]["content"].startswith(SYSTEM_START)
    user = req.messages[1]["content"]
    ranked = [
        "Chloroquine treats Malaria",
        "Plasmodium falciparum infection is treated with Artemisinin",
        "Malaria is caused by Plasmodium",
        "Chloroquine treats Lupus",
    ]
    assert parse_passages(user) == [(str(i), t) for i, t in enumerate(ranked, 1)]
    assert "Context:\n" + numbered_passages(ranked) + "\nQuestion:" in user
    assert "A. Chloroquine\nB. Aspirin" in user
    d = a.model_dump()["details"]
    assert "malaria" in d["search_terms"]
    assert {"term": "malaria", "entity": "Malaria", "similarity": 1.0} in d["matched_entities"]
    assert [t["object"] for t in d["triplets"]] == ["Malaria", "Artemisinin", "Plasmodium", "Lupus"]
    assert [e.source_id for e in a.evidence] == ["src4", "src1", "src0", "src6"]
    assert a.context.splitlines()[0] == "Chloroquine treats Malaria"


async def test_paper_compat_merges_the_system_prompt_and_uses_the_typo_regex(tmp_path, kg):
    rt = runtime(tmp_path, "Based on the context, the answer is B")
    a = await VectorGraphRAG(rt, kg=str(kg), paper_compat="true", top_n="300").answer(Q)
    (req,) = rt.llm.backend.calls
    assert [m["role"] for m in req.messages] == ["user"]
    assert req.messages[0]["content"].startswith(SYSTEM_START)
    assert "Question: Which drug treats malaria?" in req.messages[0]["content"]
    assert a.answer == "" and a.parse_failed  # the "answer is" branch never fires
    assert extract_letter_regex("Based on the context, the answer is B", "ABCD") == "B"
    scores = [t["score"] for t in a.model_dump()["details"]["triplets"]]
    assert scores != sorted(scores, reverse=True)  # the rank order is lost


def test_extract_letter_paper_branches():
    opts = {"A": "Chloroquine", "B": "Aspirin", "C": "Insulin", "D": "Heparin"}
    assert extract_letter_paper("the answer is B", opts) is None
    assert extract_letter_paper("the answer is B", opts, typo=False) == "B"
    assert extract_letter_paper("Aanswer is C", opts) == "C"
    assert extract_letter_paper("(D)", opts) == "D"
    assert extract_letter_paper("A. Chloroquine", opts) == "A"
    assert extract_letter_paper("B. no; C. yes; C: sure", opts) == "C"
    assert extract_letter_paper("I would give insulin here", opts) == "C"
    assert extract_letter_paper("no idea at all", opts) is None


async def test_no_llm_floor_over_the_triplets(tmp_path, kg):
    a = await VectorGraphRAG(runtime(tmp_path, None), kg=str(kg)).answer(Q)
    assert a.answer in "ABCD" and a.answer and not a.llm_used
    assert "no-LLM floor" in a.notes[0] and len(a.evidence) == 4


async def test_missing_kg_names_the_argument(tmp_path):
    with pytest.raises(BioragError, match="knowledge graph directory") as e:
        await VectorGraphRAG(runtime(tmp_path, "A")).answer(Q)
    assert e.value.param == "kg"  # the CLI names its --kg option
    with pytest.raises(BioragError, match="no such knowledge-graph directory") as e:
        await VectorGraphRAG(runtime(tmp_path, "A"), kg=str(tmp_path / "nope")).answer(Q)
    assert e.value.param == "kg" and "--" not in str(e.value)


async def test_entity_index_built_once_per_method(tmp_path, kg):
    rt = runtime(tmp_path, "A")
    m = VectorGraphRAG(rt, kg=str(kg))
    await m.answer(Q)
    assert (kg / "entities.faiss").exists()
    rt.embedder.texts.clear()
    await m.answer(Q)
    assert "Malaria" not in rt.embedder.texts  # entity names are not embedded again


async def test_masked_question_searches_real_names_and_reads_masked_triplets(tmp_path, kg):
    """``eval --mask-entities`` on VectorGraphRAG: the KG is searched with the real names, the
    reader sees the triplets masked with the question's labels."""
    mapping = {"malaria": "<Disease1>", "Chloroquine": "<Chemical1>"}
    opts = dict(zip("ABCD", ["<Chemical1>", *OPTIONS[1:]], strict=True))
    q = Question(id="m2", text="Which drug treats <Disease1>?", options=opts, mask_mapping=mapping)
    rt = runtime(tmp_path, "The answer is A.")
    a = await VectorGraphRAG(rt, kg=str(kg)).answer(q)
    plain = await VectorGraphRAG(runtime(tmp_path, "A"), kg=str(kg)).answer(Q)
    assert [e.source_id for e in a.evidence] == [e.source_id for e in plain.evidence]
    (req,) = [c for c in rt.llm.backend.calls if c.stage == "kg_answer"]
    context = [t for _, t in parse_passages(req.messages[1]["content"])]
    assert context[0] == "<Chemical1> treats <Disease1>"
    assert not any("malaria" in t.lower() or "chloroquine" in t.lower() for t in context)
    assert a.context.splitlines()[0] == "<Chemical1> treats <Disease1>"
    assert a.answer == "A"


async def test_open_question_gets_its_exact_answer_from_the_triplets(tmp_path, kg):
    rt = Runtime(
        Settings.model_validate({"home": str(tmp_path / "home")}),
        embedder=DictEmbedder(TABLE),
        llm=LLM(
            MockBackend(
                rules=[
                    {"stage": "kg_answer", "response": "Chloroquine treats malaria [1]."},
                    {"stage": "exact_answer", "response": {"answer": ["Chloroquine"]}},
                ]
            ),
            max_retries=0,
        ),
    )
    q = Question(id="f1", text=QUESTION, type="factoid")
    a = await VectorGraphRAG(rt, kg=str(kg)).answer(q)
    assert a.answer_text.startswith("Chloroquine treats") and a.exact == ["Chloroquine"]
    exact_req = rt.llm.backend.calls[-1]
    assert exact_req.stage == "exact_answer" and a.context
    # the exact answer is drawn from the same ranked triplets the reader saw
    assert parse_passages(exact_req.messages[-1]["content"]) == [
        (str(i), t) for i, t in enumerate(a.context.splitlines(), 1)
    ]
    floor = await VectorGraphRAG(runtime(tmp_path, None), kg=str(kg)).answer(q)
    assert floor.details.exact_answer.method == "floor" and isinstance(floor.exact, list)
