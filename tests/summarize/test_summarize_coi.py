"""Claims of interest: top-k by score, test summaries, rerank, 1-hop filtering."""

from __future__ import annotations

import asyncio

from summarize_helpers import FakeGraph, MapReranker, make_llm, stage_calls

from biorag.llm import LLM, ChatRequest, ChatResponse
from biorag.summarize import ExtractiveSummarizer, LLMSummarizer, select_claims_of_interest

QUESTION = "Which drug lowers blood pressure?"
OPTIONS = {"A": "Amlodipine", "B": "Insulin"}


def five_claims() -> FakeGraph:
    texts = {f"X{i}": f"Statement number {i} about compound X{i}." for i in range(1, 7)}
    scores = {"X1": 0.9, "X2": 0.8, "X3": 0.7, "X4": 0.6, "X5": 0.5, "X6": 0.1}
    return FakeGraph(texts, [("X1", "X2"), ("X3", "X4"), ("X4", "X5")], scores)


async def test_rerank_by_test_summary_then_drop_neighbours_of_higher_ranked(hash_embedder):
    graph = five_claims()
    # test-summary relevance reorders the candidates: X2 > X1 > X4 > X3 > X5
    by_text = {graph.claims[k].text: v for k, v in {"X1": 4, "X2": 5, "X3": 2, "X4": 3}.items()}
    by_text[graph.claims["X5"].text] = 1
    reranker = MapReranker(by_text)
    summ = ExtractiveSummarizer(hash_embedder)
    cois = await select_claims_of_interest(graph, QUESTION, OPTIONS, reranker, summ, top_k=5)
    assert [c.claim_id for c in cois] == ["X2", "X4"]
    assert cois[0].merged == ["X1"] and cois[1].merged == ["X3", "X5"]
    assert [c.test_summary_score for c in cois] == [5.0, 3.0]
    assert cois[0].score == 0.8 and cois[0].text == graph.claims["X2"].text
    # X6 (6th by score) is no candidate; test summaries start with their claim
    [scored] = reranker.calls
    assert len(scored) == 5 and not any("X6." in t for t in scored)
    assert cois[0].test_summary.startswith(graph.claims["X2"].text)
    assert graph.claims["X1"].text in cois[0].test_summary  # the 1-hop neighbour is context


async def test_neighbour_of_a_dropped_claim_stays(hash_embedder):
    texts = {k: f"Claim {k} text." for k in ("Y1", "Y2", "Y3")}
    graph = FakeGraph(texts, [("Y1", "Y2"), ("Y2", "Y3")], {"Y1": 3, "Y2": 2, "Y3": 1})
    reranker = MapReranker({texts["Y1"]: 3, texts["Y2"]: 2, texts["Y3"]: 1})
    cois = await select_claims_of_interest(
        graph, QUESTION, None, reranker, ExtractiveSummarizer(hash_embedder)
    )
    assert [c.claim_id for c in cois] == ["Y1", "Y3"]
    assert cois[0].merged == ["Y2"]


async def test_llm_test_summaries_faithful_one_call_each_concurrently():
    texts = {f"Z{i:02d}": f"Claim Z{i:02d} about amlodipine dose {i}." for i in range(12)}
    scores = {k: 1.0 - i / 100 for i, k in enumerate(texts)}
    graph = FakeGraph(texts, [("Z00", "Z11"), ("Z05", "Z06")], scores)
    llm, backend = make_llm()
    reranker = MapReranker({t: 1.0 for t in texts.values()})
    cois = await select_claims_of_interest(
        graph, QUESTION, OPTIONS, reranker, LLMSummarizer(llm, mode="faithful"), top_k=10
    )
    calls = stage_calls(backend, "coi_test_summary")
    assert len(calls) == len(backend.calls) == 10
    assert llm.accounting.stage("coi_test_summary").calls == 10
    z00 = next(
        r.last_user_message()
        for r in calls
        if 'Central claim:\n<passage id="claim">\nClaim Z00' in r.last_user_message()
    )
    assert texts["Z11"] in z00 and QUESTION in z00
    assert "Amlodipine" not in z00  # the paper's test summary prompt has no options
    # equal test-summary scores keep the score order; Z06 is dropped as Z05's neighbour
    assert [c.claim_id for c in cois] == [f"Z{i:02d}" for i in range(10) if i != 6]
    assert cois[0].test_summary == f"{texts['Z00']} matters."


class SlowBackend:
    """Answers after a short sleep and records the most requests in flight at once."""

    name, model = "slow", "slow-1"

    def __init__(self) -> None:
        self.in_flight = self.peak = 0

    async def chat(self, req: ChatRequest) -> ChatResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        return ChatResponse(text="a test summary")


async def test_test_summaries_run_concurrently():
    texts = {f"W{i}": f"Claim W{i}." for i in range(10)}
    graph = FakeGraph(texts, [], {k: float(i) for i, k in enumerate(texts)})
    backend = SlowBackend()
    summ = LLMSummarizer(LLM(backend, concurrency=8))
    cois = await select_claims_of_interest(graph, "q", None, MapReranker({}), summ)
    assert len(cois) == 10 and backend.peak == 8


async def test_empty_graph(hash_embedder):
    graph = FakeGraph({}, [])
    summ = ExtractiveSummarizer(hash_embedder)
    assert await select_claims_of_interest(graph, "q", None, MapReranker({}), summ) == []


async def test_llm_test_summaries_batched_one_call_with_per_item_fallback():
    import json

    texts = {f"B{i}": f"Claim B{i} about losartan dose {i}." for i in range(4)}
    graph = FakeGraph(texts, [], {k: 1.0 - i / 10 for i, k in enumerate(texts)})

    def responder(req: ChatRequest) -> str:
        if req.json_schema is not None:  # the batch answers only two of the four
            return json.dumps(
                {"summaries": [{"claim_id": "B0", "summary": "zero"}, {"claim_id": "B2"}]}
            )
        return "single"

    llm, backend = make_llm(responder=responder)
    reranker = MapReranker({})
    cois = await select_claims_of_interest(
        graph, QUESTION, OPTIONS, reranker, LLMSummarizer(llm, mode="batched"), top_k=4
    )
    calls = stage_calls(backend, "coi_test_summary")
    assert len(calls) == 4  # one batch call + B1, B2 (no summary), B3 on their own
    assert sum(r.json_schema is not None for r in calls) == 1
    by_id = {c.claim_id: c.test_summary for c in cois}
    assert by_id == {"B0": "zero", "B1": "single", "B2": "single", "B3": "single"}


def test_batch_schema_fixes_the_ids_the_count_and_the_length_of_each_summary():
    from biorag.summarize.llm_summarizer import CHARS_PER_SUMMARY_TOKEN, batch_schema

    schema = batch_schema(["B0", "B1", "B1"], 200)
    entries = schema["properties"]["summaries"]
    assert entries["required"] == ["B0", "B1"] and entries["additionalProperties"] is False
    assert list(entries["properties"]) == ["B0", "B1"]
    assert entries["properties"]["B0"]["maxLength"] == 200 * CHARS_PER_SUMMARY_TOKEN


async def test_llm_test_summaries_batch_request_names_its_claims_in_the_schema():
    texts = {f"B{i}": f"Claim B{i} about losartan dose {i}." for i in range(3)}
    graph = FakeGraph(texts, [], {k: 1.0 - i / 10 for i, k in enumerate(texts)})
    llm, backend = make_llm(responder=lambda req: "single")
    await select_claims_of_interest(
        graph, QUESTION, OPTIONS, MapReranker({}), LLMSummarizer(llm, mode="batched"), top_k=3
    )
    batch = [r for r in stage_calls(backend, "coi_test_summary") if r.json_schema is not None]
    assert len(batch) == 1
    ids = batch[0].json_schema["properties"]["summaries"]["required"]
    assert sorted(ids) == ["B0", "B1", "B2"]


async def test_test_summary_shows_the_options_only_when_switched_on():
    texts = {"Z00": "Claim Z00 about amlodipine dose 0."}
    graph = FakeGraph(texts, [], {"Z00": 1.0})
    llm, backend = make_llm()
    summ = LLMSummarizer(llm, mode="faithful", test_options=True)
    await select_claims_of_interest(graph, QUESTION, OPTIONS, MapReranker({}), summ, top_k=1)
    [call] = stage_calls(backend, "coi_test_summary")
    assert "A. Amlodipine" in call.last_user_message()
    assert "do not choose an answer option" in call.last_user_message()


async def test_candidates_below_the_least_relevance_are_left_out(hash_embedder):
    graph = five_claims()
    reranker = MapReranker({c.text: c.score for c in graph.claims.values()})
    summ = ExtractiveSummarizer(hash_embedder)
    cois = await select_claims_of_interest(graph, QUESTION, OPTIONS, reranker, summ, top_k=6,
                                           min_score=0.65)  # fmt: skip
    assert {c.claim_id for c in cois} | {m for c in cois for m in c.merged} == {"X1", "X2", "X3"}
    # the best claim stays whatever the threshold
    cois = await select_claims_of_interest(graph, QUESTION, OPTIONS, reranker, summ, top_k=6,
                                           min_score=5.0)  # fmt: skip
    assert [c.claim_id for c in cois] == ["X1"]
