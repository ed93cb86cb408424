"""Output budgets: every operator's request carries a max_tokens sized to the answer it expects,
and plain-text formats stop at their natural end (JSON requests never get a stop sequence)."""

from __future__ import annotations

import pytest

from biorag.corpus.models import Chunk
from biorag.llm import LLM, ChatRequest, MockBackend, budget
from biorag.llm.dry_run import dry_run_responder

UNSET = 777  # the client's default max_tokens in these tests: no operator request may get it

SHORT = (
    "Metformin lowered HbA1c by 1.1% in adults with type 2 diabetes. "
    "It also reduced body weight by 2 kg."
)
LONG = " ".join(
    f"In cohort {i}, drug D{i} reduced the level of marker M{i} in patients with disease X{i}."
    for i in range(150)
)


def recording_llm() -> tuple[LLM, list[ChatRequest]]:
    backend = MockBackend(responder=dry_run_responder)
    return LLM(backend, max_retries=0, retry_base_delay=0.0, max_tokens=UNSET), backend.calls


def chunk(text: str, index: int = 0) -> Chunk:
    return Chunk(
        id=Chunk.make_id("d1", index * 10_000, index * 10_000 + len(text)),
        doc_id="d1",
        index=index,
        start=index * 10_000,
        end=index * 10_000 + len(text),
        text=text,
    )


def by_stage(calls: list[ChatRequest], stage: str) -> list[ChatRequest]:
    return [r for r in calls if r.stage == stage]


def test_list_budget_is_bounded_by_the_input() -> None:
    claims = budget.CLAIMS
    assert claims.items("") == claims.min_items
    assert claims.items("word " * 150) == 10
    assert claims.items("word " * 100_000) == claims.max_items
    assert claims.tokens(10) == 10 * 40 + budget.OVERHEAD
    assert claims.for_text("word " * 150) == 432
    assert claims.for_text("word " * 100_000, cap=1024) == 1024
    assert claims.for_more("word " * 150) == 5 * 40 + budget.OVERHEAD
    assert budget.fixed_list(3, budget.BATCH_TRIPLET) == 3 * 48 + 32
    assert budget.words_budget(100) == 140 + 32
    assert budget.rewrite_budget("x" * 350) == 150 + 32


async def test_faithful_extraction_budgets_and_stops() -> None:
    from biorag.extract import LLMClaimExtractor, LLMTripleExtractor

    llm, calls = recording_llm()
    claims = await LLMClaimExtractor(llm).extract_claims([chunk(SHORT), chunk(LONG, 1)])
    short, long = by_stage(calls, "claims")
    assert short.max_tokens < 200 < long.max_tokens == 1024  # the extractor's ceiling
    assert short.stop == long.stop == ["\nText:"]
    glean = by_stage(calls, "claims_gleaning")
    assert [g.max_tokens for g in glean] == [
        budget.CLAIMS.for_more(SHORT),
        min(1024, budget.CLAIMS.for_more(LONG)),
    ]
    await LLMTripleExtractor(llm).extract_triples(claims[:3])
    for r in by_stage(calls, "triples"):
        assert r.max_tokens == budget.TRIPLE and r.stop == ["\nClaim:"]


async def test_triple_fallback_budgets() -> None:
    from biorag.extract import LLMTripleExtractor
    from biorag.extract.models import Claim

    answers = {
        "triples": "no idea",
        "triples_repair": "still no idea",
        "triples_entities": "ENTITY: aspirin\nENTITY: headache",
        "triples_relation": "RELATION: relieves",
    }
    backend = MockBackend(responder=lambda r: answers[r.stage])
    llm = LLM(backend, max_retries=0, retry_base_delay=0.0, max_tokens=UNSET)
    text = "Aspirin relieves headache in adults."
    claim = Claim(id=Claim.make_id("c", text), text=text, chunk_id="c", doc_id="d")
    [out] = await LLMTripleExtractor(llm).extract_triples([claim])
    assert out.triple_source == "llm_entities_relation"
    sizes = {r.stage: r.max_tokens for r in backend.calls}
    assert sizes == {
        "triples": budget.TRIPLE,
        "triples_repair": budget.TRIPLE,
        "triples_entities": budget.ENTITY_LINES,
        "triples_relation": budget.RELATION_LINE,
    }


async def test_batched_extraction_budget_scales_with_the_chunk() -> None:
    from biorag.extract import BatchedClaimTripleExtractor

    llm, calls = recording_llm()
    await BatchedClaimTripleExtractor(llm).extract_claims([chunk(SHORT), chunk(LONG, 1)])
    short, long = by_stage(calls, "claims_triples")
    assert short.max_tokens < 300 and long.max_tokens == 1536  # the extractor's ceiling
    assert short.stop == ["\nText:"]


async def test_kg_triplet_budgets() -> None:
    from biorag.kg.extract_triplets import QAPair, extract_qa_triplets, extract_text_triplets

    pairs = [QAPair(f"q{i}", f"Which drug treats disease {i}?", f"drug {i}") for i in range(5)]
    llm, calls = recording_llm()
    await extract_qa_triplets(pairs[:2], llm)
    await extract_qa_triplets(pairs, llm, batch_size=5)
    await extract_text_triplets([("s1", "Aspirin relieves headache in most adults.")], llm)
    single = by_stage(calls, "kg_triplets")
    assert single and all(r.max_tokens == budget.TRIPLE for r in single)
    assert all(r.stop == ["\nQuestion:", "\nCorrect answer:"] for r in single)
    [batch] = by_stage(calls, "kg_triplets_batch")
    assert batch.max_tokens == 5 * budget.BATCH_TRIPLET + budget.OVERHEAD and batch.stop is None
    [text] = by_stage(calls, "kg_triplets_text")
    assert text.max_tokens == budget.TRIPLE and text.stop == ["\nSentence:"]


def test_strata_triplet_budget_scales_with_the_abstract() -> None:
    from biorag.strata.extract import MAX_TRIPLET_TOKENS, extract_triplets_llm

    backend = MockBackend(rules=[{"response": "[]"}])
    llm = LLM(backend, max_retries=0, retry_base_delay=0.0, max_tokens=UNSET)
    try:
        extract_triplets_llm(llm, "Aspirin", SHORT)
        extract_triplets_llm(llm, "Many drugs", LONG)
    finally:
        llm.close()
    short, long = backend.calls
    assert short.max_tokens < 400 < long.max_tokens == MAX_TRIPLET_TOKENS
    assert short.stop is None and short.json_schema is not None


@pytest.fixture
def chain_index(index_of):
    return index_of(
        [
            {"id": "p1", "text": "Zelocitinib inhibits the enzyme KRX1 in hepatocytes."},
            {"id": "p2", "text": "The enzyme KRX1 drives fibrosis of the liver."},
            {"id": "p3", "text": "Liver fibrosis causes portal hypertension in adults."},
        ],
        "chain",
    )


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("claims", {"mode": "faithful", "denoise": "drop"}),
        ("claims", {"mode": "batched", "denoise": "drop"}),
        ("closed-book", {}),
        ("retrieve-read", {}),
        ("rewrite", {}),
        ("hyde", {}),
        ("claim", {}),
        ("raptor", {}),
    ],
)
def test_every_request_of_a_method_has_a_budget(
    tmp_path, chain_index, hash_embedder, method, options
) -> None:
    """The dry-run model through whole methods: no request falls back to the client's default
    max_tokens, and no JSON request carries a stop sequence."""
    from biorag.config import Settings
    from biorag.methods.base import Question
    from biorag.methods.registry import build_method
    from biorag.runtime import Runtime

    llm = {"backend": "mock", "mock_script": "dry-run", "cache": False, "max_tokens": UNSET}
    settings = Settings.model_validate({"home": str(tmp_path / "h"), "llm": llm})
    rt = Runtime(settings, [chain_index], embedder=hash_embedder)
    question = Question(
        id="q1",
        text="Could zelocitinib reduce fibrosis of the liver?",
        options={"A": "yes", "B": "no", "C": "maybe"},
    )
    try:
        build_method(method, rt, options).answer_sync(question)
        calls = rt.shared_llm.backend.calls
    finally:
        rt.close()
    assert calls
    unbudgeted = sorted({r.stage for r in calls if r.max_tokens == UNSET})
    assert not unbudgeted, f"{method}: stages without a budget: {unbudgeted}"
    assert not [r.stage for r in calls if r.json_schema is not None and r.stop]


def test_shared_clients_scale_budgets_as_the_settings_say() -> None:
    """Eval answers and Ray workers take their clients from SharedLLM: budget_scale holds."""
    from biorag.config import Settings
    from biorag.llm.accounting import Accounting
    from biorag.llm.shared import SharedLLM

    s = Settings(
        llm={
            "backend": "mock",
            "mock_script": "dry-run",
            "budget_scale": 3.0,
            "cache": False,
            "concurrency": 5,
        }
    )
    client = SharedLLM(s).client(Accounting())
    assert client.budget_scale == 3.0 and client.concurrency == 5
