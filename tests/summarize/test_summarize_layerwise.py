"""Layerwise summarization: multi-hop information reaches the root, cycles, batched vs faithful,
malformed batch answers, compression."""

from __future__ import annotations

import json

import pytest
from summarize_helpers import FakeGraph, claim_in_prompt, make_llm, stage_calls

from biorag.corpus.tokens import default_counter
from biorag.summarize import (
    ExtractiveSummarizer,
    LayerItem,
    LayerOutcome,
    LLMSummarizer,
    build_context,
    critical_rounds,
    summarize_layerwise,
    total_calls,
)

QUESTION = "Does zorvex cause fever?"
CHAIN = {
    "A": "Zorvex inhibits the phosphatase PTQ7 in hepatocytes.",
    "B": "Loss of PTQ7 activity activates the transcription factor NRF9.",
    "C": "NRF9 drives the expression of the cytokine IL-99.",
    "D": "High IL-99 levels cause fever in mice.",
}
CHAIN_EDGES = [("A", "B"), ("B", "C"), ("C", "D")]


def chain_graph() -> FakeGraph:
    return FakeGraph(CHAIN, CHAIN_EDGES, {"A": 0.9, "B": 0.5, "C": 0.4, "D": 0.3})


def tree_graph() -> FakeGraph:
    """21 claims: root R, 4 children, 8 grandchildren, 8 great-grandchildren (layers 1/4/8/8)."""
    texts, edges = {"R": "Root claim about gene R."}, []
    for i in range(4):
        texts[f"K{i}"] = f"Child claim {i} about protein K{i}."
        edges.append(("R", f"K{i}"))
        for j in range(2):
            g = f"G{i}{j}"
            texts[g] = f"Grandchild claim about enzyme {g}."
            texts[f"L{i}{j}"] = f"Leaf claim about metabolite L{i}{j}."
            edges += [(f"K{i}", g), (g, f"L{i}{j}")]
    return FakeGraph(texts, edges)


async def test_two_hop_chain_extractive_keeps_both_hops(hash_embedder) -> None:
    graph = chain_graph()
    summ = ExtractiveSummarizer(hash_embedder)
    [root] = await summarize_layerwise(graph, ["A"], summ, QUESTION)
    assert root.text.startswith(CHAIN["A"])
    for key in "BCD":  # 1-hop, 2-hop and 3-hop facts all reach the root's context
        assert CHAIN[key] in root.text
    assert root.claim_ids == ["A", "B", "C", "D"]
    assert root.layer_sizes == [1, 1, 1, 1]
    assert root.calls_by_stage == {"layer_summary": 3}  # D is outermost: no call
    assert root.rounds == 3
    assert build_context([root]) == root.text


async def test_two_hop_chain_llm_root_prompt_holds_outer_summary() -> None:
    rules = [
        {
            "stage": "layer_summary",
            "match": "^Claim:\n<passage[^\n]*>\nNRF9 drives",
            "response": "SUMMARY-C",
        },
        {
            "stage": "layer_summary",
            "match": "^Claim:\n<passage[^\n]*>\nLoss of PTQ7",
            "response": "SUMMARY-B",
        },
        {
            "stage": "layer_summary",
            "match": "^Claim:\n<passage[^\n]*>\nZorvex",
            "response": "SUMMARY-A",
        },
    ]
    llm, backend = make_llm(rules, responder=None)
    [root] = await summarize_layerwise(chain_graph(), ["A"], LLMSummarizer(llm), QUESTION)
    assert root.text == "SUMMARY-A"
    prompts = {claim_in_prompt(r): r.last_user_message() for r in backend.calls}
    assert "SUMMARY-B" in prompts[CHAIN["A"]]  # the root sees the 1-hop summary...
    assert "SUMMARY-C" in prompts[CHAIN["B"]]  # ...which was built from the 2-hop summary
    assert CHAIN["D"] in prompts[CHAIN["C"]]  # the outermost claim enters verbatim
    assert QUESTION not in prompts[CHAIN["A"]]  # the paper's layer summary has no question
    assert llm.accounting.stage("layer_summary").calls == 3
    llm, backend = make_llm(rules, responder=None)
    shown = LLMSummarizer(llm, layer_question=True)  # biorag's earlier prompt, switched on
    await summarize_layerwise(chain_graph(), ["A"], shown, QUESTION)
    assert all(QUESTION in r.last_user_message() for r in backend.calls)


@pytest.mark.parametrize("mode", ["faithful", "batched"])
async def test_cycles_each_claim_processed_once(mode: str) -> None:
    texts = {k: f"Claim {k} about entity {k}{k}." for k in "ABCDE"}
    # square A-B-C-D-A with diagonal B-D (same-layer edge) and E hanging off C
    graph = FakeGraph(
        texts, [("A", "B"), ("B", "C"), ("C", "D"), ("D", "A"), ("B", "D"), ("C", "E")]
    )
    assert graph.layers("A") == [["A"], ["B", "D"], ["C"], ["E"]]
    llm, backend = make_llm()
    [root] = await summarize_layerwise(graph, ["A"], LLMSummarizer(llm, mode=mode), QUESTION)
    assert sorted(root.claim_ids) == list("ABCDE")
    seen: list[str] = [claim_in_prompt(r) for r in stage_calls(backend, "layer_summary")]
    for r in stage_calls(backend, "layer_summary_batch"):
        seen += [
            t for t in texts.values() if f">\n{t}\n</passage>\nLinked" in r.last_user_message()
        ]
    assert sorted(seen) == sorted(texts[k] for k in "ABCD")  # once each; E is outermost
    if mode == "faithful":
        assert root.calls_by_stage == {"layer_summary": 4}
    else:  # B and D in one batch call; C and A alone
        assert root.calls_by_stage == {"layer_summary_batch": 1, "layer_summary": 2}
    assert root.rounds == 3
    # C's summary reached both B and D, D's summary did not reach B (same layer)
    batch_or_b = "".join(r.last_user_message() for r in backend.calls if texts["B"] in str(r))
    assert f"summary of <{texts['C']}>" in batch_or_b


async def test_batched_uses_far_fewer_calls_than_faithful() -> None:
    results = {}
    for mode in ("faithful", "batched"):
        llm, _ = make_llm()
        roots = await summarize_layerwise(
            tree_graph(), ["R", "K0"], LLMSummarizer(llm, mode=mode), QUESTION
        )
        calls = total_calls(roots)
        for stage, n in calls.items():  # our counts agree with the LLM's accounting
            assert llm.accounting.stage(stage).calls == n
        results[mode] = (calls, critical_rounds(roots))
        assert [r.root_claim_id for r in roots] == ["R", "K0"]
        assert [r.layer_sizes for r in roots] == [[1, 4, 8, 8], [1, 3, 5, 6, 6]]
        assert len(set(roots[0].claim_ids)) == 21
    # faithful: root R 8 + 4 + 1 calls, root K0 6 + 3 + 3 + 1 calls
    assert results["faithful"] == ({"layer_summary": 26}, 4)
    # batched: one batch per layer (R: 2, K0: 3), the single roots alone
    assert results["batched"] == ({"layer_summary_batch": 5, "layer_summary": 2}, 4)


async def test_batched_malformed_answer_falls_back_per_claim() -> None:
    texts = {"R": "Root claim R.", "B1": "Claim B1.", "B2": "Claim B2.", "B3": "Claim B3."}
    texts |= {f"O{i}": f"Outer claim O{i}." for i in (1, 2, 3)}
    edges = [("R", "B1"), ("R", "B2"), ("R", "B3"), ("B1", "O1"), ("B2", "O2"), ("B3", "O3")]
    bad = {"summaries": [{"claim_id": "B1", "summary": "good B1"}, {"claim_id": "B2"}, "junk"]}
    bad["summaries"].append({"claim_id": "ZZ", "summary": "unknown id"})
    llm, backend = make_llm([{"stage": "layer_summary_batch", "response": json.dumps(bad)}])
    summ = LLMSummarizer(llm, mode="batched")
    [root] = await summarize_layerwise(FakeGraph(texts, edges), ["R"], summ, QUESTION)
    fallback = sorted(claim_in_prompt(r) for r in stage_calls(backend, "layer_summary"))
    assert fallback == ["Claim B2.", "Claim B3.", "Root claim R."]  # B1 came from the batch
    assert root.calls_by_stage == {"layer_summary_batch": 1, "layer_summary": 3}
    assert root.rounds == 3  # batch + fallback round, then the root
    root_prompt = next(r for r in backend.calls if claim_in_prompt(r) == "Root claim R.")
    msg = root_prompt.last_user_message()
    assert "good B1" in msg and "summary of <Claim B2.>" in msg and "summary of <Claim B3.>" in msg
    batch_req = stage_calls(backend, "layer_summary_batch")[0]
    assert batch_req.json_schema is not None and "### Claim id: B2" in batch_req.last_user_message()


class SpyLLMSummarizer(LLMSummarizer):
    """Records the items each layer call receives."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[LayerItem] = []

    async def summarize_layer(self, question: str, items: list[LayerItem]) -> LayerOutcome:
        self.seen.extend(items)
        return await super().summarize_layer(question, items)


def star_graph(n: int = 8) -> FakeGraph:
    texts = {"R": "Gene R regulates inflammation."}
    for i in range(n):
        texts[f"S{i}"] = (
            f"Study {i} reported that gene R interacts with receptor T{i} and that this "
            f"interaction alters cytokine signalling in cell line {i} under hypoxic conditions."
        )
    return FakeGraph(texts, [("R", f"S{i}") for i in range(n)])


async def test_compression_when_context_exceeds_limit() -> None:
    limit = 60
    llm, backend = make_llm()
    summ = SpyLLMSummarizer(llm, mode="faithful", token_limit=limit)
    [root] = await summarize_layerwise(star_graph(), ["R"], summ, QUESTION)
    compress = stage_calls(backend, "compress")
    assert compress and root.calls_by_stage["compress"] == len(compress)
    assert "at most" in compress[0].last_user_message()
    [item] = summ.seen
    counter = default_counter()
    assert sum(counter.count(t) for t in item.context) <= limit
    assert root.rounds == 1 + 1  # one compression round, then the root's summary


async def test_compression_that_does_not_shrink_is_cut_to_the_limit() -> None:
    limit = 60
    # the model ignores the budget (300 different words: a loop would be cut back to one copy)
    rules = [{"stage": "compress", "response": " ".join(f"w{i}" for i in range(300))}]
    llm, _ = make_llm(rules)
    summ = SpyLLMSummarizer(llm, mode="faithful", token_limit=limit)
    [root] = await summarize_layerwise(star_graph(), ["R"], summ, QUESTION)
    [item] = summ.seen
    assert sum(default_counter().count(t) for t in item.context) <= limit
    assert root.rounds == 3 + 1  # max_rounds compression rounds, then the root


async def test_extractive_compression(hash_embedder) -> None:
    limit = 60
    summ = ExtractiveSummarizer(hash_embedder, token_limit=limit)
    [root] = await summarize_layerwise(star_graph(), ["R"], summ, QUESTION)
    assert root.calls_by_stage["compress"] >= 1
    assert root.text.startswith("Gene R regulates inflammation.")
    assert default_counter().count(root.text) <= limit + default_counter().count("Gene R x.")


async def test_isolated_root_needs_no_call(hash_embedder) -> None:
    graph = FakeGraph({"A": "Lonely claim."}, [])
    [root] = await summarize_layerwise(graph, ["A"], ExtractiveSummarizer(hash_embedder), "q")
    assert (root.text, root.calls, root.rounds, root.layer_sizes) == ("Lonely claim.", 0, 0, [1])


def test_only_claims_relevant_enough_and_still_linked_enter_a_summary() -> None:
    from biorag.summarize.layerwise import relevant_layers

    # r - a - b (a chain) and r - c; a is irrelevant, so b (linked only through a) goes too
    g = FakeGraph(
        {"r": "root", "a": "off topic", "b": "on topic", "c": "on topic"},
        [("r", "a"), ("a", "b"), ("r", "c")],
        scores={"r": 0.1, "a": 0.1, "b": 0.9, "c": 0.8},
    )
    layers = g.layers("r")
    assert relevant_layers(g, layers, None) == layers
    assert relevant_layers(g, layers, 0.5) == [["r"], ["c"]]  # the root stays, whatever its score
    assert relevant_layers(g, layers, 0.95) == [["r"]]
