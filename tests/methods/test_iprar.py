"""IP-RAR: the aggregator formula, the relevance loop, the method with and without an LLM."""

from __future__ import annotations

import json

import pytest
from methods_helpers import DRY_RUN, GIVEN, QUESTION, build_index, make_runtime

from biorag.config import Settings
from biorag.errors import BioragError
from biorag.llm import MockBackend, build_llm
from biorag.llm.evidence import passage_ids
from biorag.methods.iprar import IPRAR, plain_keywords
from biorag.retrieve.aggregate import AggregatedChunk, aggregate, by_similarity


def test_aggregate_formula_by_hand():
    lists = {
        "question@fulltext": [("a", "d1", 0.8), ("b", "d1", 0.6)],
        "virtual@fulltext": [("a", "d1", 0.7), ("c", "d2", 0.4)],
        "keyword@fulltext": [("c", "d2", 0.5), ("d", "d1", 0.2)],
    }
    out = aggregate(lists)
    by = {c.chunk_id: c for c in out}
    # sim_max 0.8, M_max 2, R_max 3 (d1: a, b, d)
    assert by["a"].score == pytest.approx(5 * 1 + 3 * 1 + 1 * 1)
    assert by["b"].score == pytest.approx(5 * 0.6 / 0.8 + 3 * 0.5 + 1)
    assert by["c"].score == pytest.approx(5 * 0.5 / 0.8 + 3 * 1 + 1 / 3)
    assert by["d"].score == pytest.approx(5 * 0.2 / 0.8 + 3 * 0.5 + 1)
    assert [c.chunk_id for c in out] == ["a", "c", "b", "d"]
    assert by["c"].methods == ["keyword@fulltext", "virtual@fulltext"]
    assert by["c"].similarity == 0.5 and by["c"].same_doc == 1 and by["a"].same_doc == 3
    assert sum(by["b"].terms.values()) == pytest.approx(by["b"].score)
    # other weights, and the aggregator off (similarity order)
    w = aggregate(lists, (0, 0, 1))
    assert [c.chunk_id for c in w][:3] == ["a", "b", "d"]  # same doc d1, ties by similarity
    assert [c.chunk_id for c in by_similarity(lists)] == ["a", "b", "c", "d"]
    assert aggregate({}) == [] and aggregate({"x": []}) == []


def test_aggregate_ties_and_nonpositive_maxima():
    out = aggregate({"m1": [("x", "d", 0.0), ("y", "e", 0.0)]})
    assert [c.chunk_id for c in out] == ["x", "y"]  # first appearance
    assert out[0].terms["similarity"] == 0.0 and out[0].score == pytest.approx(3 + 1)
    assert isinstance(out[0], AggregatedChunk) and out[0].to_dict()["methods"] == ["m1"]
    with pytest.raises(ValueError):
        aggregate({"m": [("x", "d", 1.0)]}, (1, 2))


def test_plain_keywords():
    kws = plain_keywords("Could zelocitinib reduce fibrosis of the liver?")
    assert kws == [
        "could",
        "zelocitinib",
        "reduce",
        "fibrosis",
        "liver",
        "could zelocitinib",
        "zelocitinib reduce",
        "reduce fibrosis",
    ]


def mock_runtime(tmp_path, emb, rules, index=None):
    backend = MockBackend(rules=rules)
    llm = build_llm(Settings(home=str(tmp_path / "home")), backend=backend)
    return make_runtime(tmp_path, emb, index, client=llm), backend


PRE = {
    "keywords": ["KRX1", "fibrosis"],
    "synonyms": {"fibrosis": ["scarring"]},
    "virtual_answer": "Yes, KRX1 drives fibrosis of the liver.",
}


def rules(verdicts: list[str], scores: dict | None = None) -> list[dict]:
    out = [{"stage": "iprar_prereason", "response": PRE}]
    out += [{"stage": "iprar_relevance", "response": v, "once": True} for v in verdicts]
    out += [
        {"stage": "iprar_answer", "response": "KRX1 drives liver fibrosis."},
        {"stage": "iprar_support", "response": scores or {"scores": []}},
        {"stage": "answer", "response": "The passages say yes."},
        {"stage": "answer_extract", "response": {"answer": "A"}},
        {
            "stage": "iprar_final",
            "response": "KRX1 drives fibrosis [1]. It is raised in cirrhosis [2].",
        },
    ]
    return out


def stage_calls(backend, stage):
    return sum(r.stage == stage for r in backend.calls)


@pytest.fixture
def many(tmp_path):
    """A given-passages question with 8 passages (8 chunks to check)."""
    texts = [f"KRX1 fibrosis liver passage number {i} cirrhosis." for i in range(8)]
    return GIVEN.model_copy(update={"passages": texts, "id": "m"})


@pytest.mark.parametrize(
    ("verdicts", "n_checked", "n_selected"),
    [
        (["Yes", "No", "Yes", "Yes", "No", "Yes", "Yes", "Yes"], 7, 5),  # 5 found: stops
        (["No", "Yes", "No", "No", "No", "No", "Yes", "No"], 8, 2),  # fewer: all checked
        (["No"] * 8, 8, 5),  # none: the top 5
    ],
)
def test_relevance_loop(tmp_path, hash_embedder, many, verdicts, n_checked, n_selected):
    rt, backend = mock_runtime(tmp_path, hash_embedder, rules(verdicts))
    ans = IPRAR(rt, use_support_scores=False).answer_sync(many)
    d = ans.model_dump()["details"]
    assert stage_calls(backend, "iprar_relevance") == n_checked == len(d["relevance"])
    ranked = [c["chunk_id"] for c in d["aggregated"]]
    assert len(ranked) == 8
    expect = [c for c, v in zip(ranked, verdicts, strict=False) if v == "Yes"][:5] or ranked[:5]
    assert d["selected"] == expect and len(expect) == n_selected
    assert [v["relevant"] for v in d["relevance"]] == [v == "Yes" for v in verdicts[:n_checked]]
    assert d["final_chunks"] == d["selected"] and d["support"] == []
    assert ans.answer == "A" and ans.llm_used
    assert [e.chunk_id for e in ans.evidence] == d["selected"]


def test_support_scores_choose_final_chunks(tmp_path, hash_embedder, many):
    scores = {
        "scores": [{"id": "1", "score": 90}, {"id": "2", "score": 10}, {"id": "3", "score": 60}]
    }
    rt, backend = mock_runtime(tmp_path, hash_embedder, rules(["Yes"] * 3 + ["No"] * 5, scores))
    q = many.model_copy(update={"options": {}})
    ans = IPRAR(rt).answer_sync(q)
    d = ans.model_dump()["details"]
    sel = d["selected"]
    assert len(sel) == 3 and [s["score"] for s in d["support"]] == [90, 10, 60]
    assert d["final_chunks"] == [sel[0], sel[2]] and d["draft_answer"]
    assert ans.answer.startswith("KRX1 drives fibrosis")
    assert ans.sentences[0].chunk_ids == [sel[0]] and ans.sentences[1].chunk_ids == [sel[2]]
    for st in ("iprar_prereason", "iprar_answer", "iprar_support", "iprar_final"):
        assert stage_calls(backend, st) == 1
    # none >= 50: the best 3 of the 4 selected: id 2 (40), then ids 1 and 3 (missing ids
    # score 0; ties keep rank order, so id 4 is dropped), i.e. the first 3 in rank order
    low = {"scores": [{"id": "2", "score": 40}]}
    rt2, _ = mock_runtime(tmp_path, hash_embedder, rules(["Yes"] * 4 + ["No"] * 4, low))
    d2 = IPRAR(rt2).answer_sync(q).model_dump()["details"]
    assert d2["final_chunks"] == d2["selected"][:3] and d2["support"][0].get("missing")


def test_no_llm_over_an_index(tmp_path, hash_embedder):
    index = build_index(tmp_path, hash_embedder)
    rt = make_runtime(tmp_path, hash_embedder, index)
    ans = IPRAR(rt, k=3).answer_sync(QUESTION)
    d = ans.model_dump()["details"]
    assert not ans.llm_used and "no-LLM floor" in ans.notes[0]
    assert ans.answer in QUESTION.options and ans.evidence
    # Section 4.3.1: dense lists at both levels, keyword matching at the full-text level only.
    assert set(d["lists"]) == {
        f"{g}@{lv}" for g in ("question", "virtual") for lv in ("abstract", "fulltext")
    } | {"keyword@fulltext"}
    assert all(len(rows) <= 3 for rows in d["lists"].values())
    abstract = d["lists"]["question@abstract"]
    assert len({r["doc_id"] for r in abstract}) == len(abstract)
    assert "zelocitinib" in d["prereasoning"]["keywords"] and d["prereasoning"]["synonyms"] == {}
    scores = [c["score"] for c in d["aggregated"]]
    assert scores == sorted(scores, reverse=True)
    assert all("cosine" in v for v in d["relevance"])
    assert [s["chunk_id"] for s in d["support"]] == d["selected"]
    assert set(d["final_chunks"]) <= set(d["selected"])
    assert [e.chunk_id for e in ans.evidence] == d["final_chunks"]
    assert rt.accounting() == {}
    json.dumps(d)
    rt.close()


def test_dry_run_and_given_passages(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder, None, DRY_RUN)
    ans = IPRAR(rt).answer_sync(GIVEN)  # the dry-run model may not know the iprar stages
    assert ans.method == "iprar" and ans.model_dump()["details"]["lists"]
    assert all(e.chunk_id.startswith("given:g1:") for e in ans.evidence)
    assert "searcher" not in rt.built()


@pytest.mark.parametrize(
    ("opts", "present"),
    [
        ({"use_keywords": False}, {"question", "virtual"}),
        ({"use_virtual_answer": False}, {"question", "keyword"}),
        ({"use_abstract_level": False}, {"fulltext"}),
        ({"use_fulltext_level": False}, {"abstract"}),
    ],
)
def test_ablation_switches_change_the_lists(tmp_path, hash_embedder, opts, present):
    rt = make_runtime(tmp_path, hash_embedder)
    d = IPRAR(rt, **opts).answer_sync(GIVEN).model_dump()["details"]
    parts = {p for name in d["lists"] for p in name.split("@")}
    assert present <= parts and not (
        parts - present - {"question", "virtual", "keyword", "abstract", "fulltext"}
    )
    removed = {
        "use_keywords": "keyword",
        "use_virtual_answer": "virtual",
        "use_abstract_level": "abstract",
        "use_fulltext_level": "fulltext",
    }[next(iter(opts))]
    assert removed not in parts


def test_flat_ablations_and_bad_options(tmp_path, hash_embedder, many):
    rt = make_runtime(tmp_path, hash_embedder)
    flat = dict(
        use_keywords=False,
        use_virtual_answer=False,
        use_abstract_level=False,
        use_aggregator=False,
        use_relevance_check=False,
        use_support_scores=False,
    )
    d = IPRAR(rt, **flat).answer_sync(many).model_dump()["details"]
    assert list(d["lists"]) == ["question@fulltext"] and d["relevance"] == []
    sims = [c["similarity"] for c in d["aggregated"]]
    assert sims == sorted(sims, reverse=True)
    assert d["selected"] == [c["chunk_id"] for c in d["aggregated"][:5]] == d["final_chunks"]
    with pytest.raises(BioragError):
        IPRAR(rt, use_abstract_level=False, use_fulltext_level=False)
    with pytest.raises(BioragError):
        IPRAR(rt, nope=1)


def test_reasoning_model_is_a_second_llm(tmp_path, hash_embedder, many):
    rt, _ = mock_runtime(tmp_path, hash_embedder, rules(["Yes"] * 8))
    m = IPRAR(
        rt,
        reasoning_model={"backend": "mock", "mock_script": "dry-run", "model": "r1"},
        use_support_scores=False,
    )
    ans = m.answer_sync(many)
    assert m.reasoning_llm() is not rt.llm and m.reasoning_llm().model == "r1"
    assert ans.answer == "A"  # the dry-run reader picks the first option


# -- batched relevance checks ---------------------------------------------------------------------


def batch_rules(batches: list[str | dict]) -> list[dict]:
    """``rules`` with one scripted ``iprar_relevance_batch`` answer per batch, in order (a Y/N
    string gives one verdict per passage, a dict is sent as it is)."""
    pre, *rest = [r for r in rules([]) if r["stage"] != "iprar_relevance"]
    scripted = [
        {"verdicts": [{"id": str(i), "relevant": v == "Y"} for i, v in enumerate(b, 1)]}
        if isinstance(b, str)
        else b
        for b in batches
    ]
    once = [{"stage": "iprar_relevance_batch", "response": r, "once": True} for r in scripted]
    return [pre, *once, *rest]


@pytest.mark.parametrize(
    ("batches", "n_calls", "picked"),
    [
        (["YYY", "YYY"], 2, [0, 1, 2, 3, 4]),  # target reached inside batch 2: rank order, 5
        (["NYN", "NNN", "YN"], 3, [1, 6]),  # fewer: the whole ranking checked
        (["NNN", "NNN", "NN"], 3, [0, 1, 2, 3, 4]),  # none: the top 5
    ],
)
def test_batched_relevance_loop(tmp_path, hash_embedder, many, batches, n_calls, picked):
    rt, backend = mock_runtime(tmp_path, hash_embedder, batch_rules(batches))
    d = (
        IPRAR(rt, use_support_scores=False, relevance_batch=3)
        .answer_sync(many)
        .model_dump()["details"]
    )
    assert stage_calls(backend, "iprar_relevance_batch") == n_calls
    assert stage_calls(backend, "iprar_relevance") == 0
    ranked = [c["chunk_id"] for c in d["aggregated"]]
    assert d["selected"] == [ranked[i] for i in picked] == d["final_chunks"]
    flat = "".join(batches)
    assert [v["relevant"] for v in d["relevance"]] == [c == "Y" for c in flat]
    assert [v["chunk_id"] for v in d["relevance"]] == ranked[: len(flat)]
    assert [v["batch"] for v in d["relevance"]] == [i // 3 for i in range(len(flat))]
    first = backend.calls[[r.stage for r in backend.calls].index("iprar_relevance_batch")]
    prompt = first.last_user_message()
    assert passage_ids(prompt) == ["1", "2", "3"] and first.json_schema is not None


def test_batched_relevance_missing_verdict(tmp_path, hash_embedder, many):
    partial = {"verdicts": [{"id": "1", "relevant": True}, {"id": "[3]", "relevant": "yes"}]}
    rt, _ = mock_runtime(tmp_path, hash_embedder, batch_rules([partial, "NNNN"]))
    d = (
        IPRAR(rt, use_support_scores=False, relevance_batch=4)
        .answer_sync(many)
        .model_dump()["details"]
    )
    ranked = [c["chunk_id"] for c in d["aggregated"]]
    rows = d["relevance"]
    assert len(rows) == 8 and d["selected"] == [ranked[0], ranked[2]]
    assert rows[1] == {"chunk_id": ranked[1], "relevant": False, "batch": 0, "missing": True}
    assert rows[3]["missing"] and not rows[0].get("missing") and not rows[4].get("missing")


def test_relevance_batch_one_is_one_call_per_chunk(tmp_path, hash_embedder, many):
    verdicts = ["No", "Yes", "Yes", "No", "Yes", "Yes", "Yes", "No"]
    rt, backend = mock_runtime(tmp_path, hash_embedder, rules(verdicts))
    d = (
        IPRAR(rt, use_support_scores=False, relevance_batch=1)
        .answer_sync(many)
        .model_dump()["details"]
    )
    assert stage_calls(backend, "iprar_relevance") == 7 == len(d["relevance"])
    assert stage_calls(backend, "iprar_relevance_batch") == 0
    assert all("batch" not in v for v in d["relevance"])
    with pytest.raises(BioragError):
        IPRAR(rt, relevance_batch=0)


# -- the exact answer ---------------------------------------------------------------------------


def typed(q, qtype):
    return q.model_copy(update={"type": qtype, "options": {}})


@pytest.mark.parametrize(
    ("qtype", "response", "exact"),
    [
        ("factoid", {"answer": ["KRX1", "1. TGF-beta", "krx1"]}, ["KRX1", "TGF-beta"]),
        ("list", {"answer": "KRX1; collagen"}, ["KRX1", "collagen"]),
        ("yesno", {"answer": "yes"}, "yes"),
    ],
)
def test_exact_answer_with_an_llm(tmp_path, hash_embedder, many, qtype, response, exact):
    script = [*rules(["Yes"] * 8), {"stage": "exact_answer", "response": response}]
    rt, backend = mock_runtime(tmp_path, hash_embedder, script)
    ans = IPRAR(rt, use_support_scores=False).answer_sync(typed(many, qtype))
    assert ans.exact == exact and not ans.parse_failed
    ex = ans.model_dump()["details"]["exact_answer"]
    assert ex["method"] == "llm" and ex["value"] == exact and ex["qtype"] == qtype
    assert stage_calls(backend, "exact_answer") == 1
    req = next(r for r in backend.calls if r.stage == "exact_answer")
    prompt = req.last_user_message()
    assert f"Question type: {qtype}" in prompt and "KRX1 drives fibrosis [1]." in prompt
    assert prompt.count("passage number") == len(ans.model_dump()["details"]["final_chunks"]) == 5
    assert ans.answer.startswith("KRX1 drives fibrosis")  # the ideal answer is kept


def test_exact_answer_parse_failure_and_switch_off(tmp_path, hash_embedder, many):
    script = [*rules(["Yes"] * 8), {"stage": "exact_answer", "response": "no idea"}]
    rt, backend = mock_runtime(tmp_path, hash_embedder, script)
    ans = IPRAR(rt, use_support_scores=False).answer_sync(typed(many, "list"))
    # nothing usable in the model's answer: the pattern floor answers, the model's text kept
    trace = ans.model_dump()["details"]["exact_answer"]
    assert trace["method"] == "floor" and trace["raw"] == "no idea"
    assert "no usable list answer" in trace["error"]
    assert ans.exact and not ans.parse_failed
    off = IPRAR(rt, use_support_scores=False, exact_answer=False).answer_sync(typed(many, "list"))
    assert off.exact is None and off.details.exact_answer is None
    assert stage_calls(backend, "exact_answer") == 1


def test_no_exact_answer_for_summary_untyped_or_yesno_options(tmp_path, hash_embedder, many):
    rt, backend = mock_runtime(tmp_path, hash_embedder, rules(["Yes"] * 8))
    for q in (typed(many, "summary"), typed(many, ""), many.model_copy(update={"type": "yesno"})):
        ans = IPRAR(rt, use_support_scores=False).answer_sync(q)
        assert ans.exact is None and ans.details.exact_answer is None
    assert stage_calls(backend, "exact_answer") == 0


def test_exact_answer_floor_without_llm(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder)
    q = GIVEN.model_copy(
        update={"type": "factoid", "options": {}, "text": "Which enzyme drives liver fibrosis?"}
    )
    ans = IPRAR(rt).answer_sync(q)
    assert not ans.llm_used and ans.exact and ans.exact[0] == "KRX1"
    assert ans.model_dump()["details"]["exact_answer"]["method"] == "floor" and len(ans.exact) <= 5
    assert any("exact answer: no-LLM floor" in n for n in ans.notes)
    yn = IPRAR(rt).answer_sync(GIVEN.model_copy(update={"type": "yesno", "options": {}}))
    assert (
        yn.exact in ("yes", "no")
        and yn.model_dump()["details"]["exact_answer"]["method"] == "floor"
    )
    summary = IPRAR(rt).answer_sync(q.model_copy(update={"type": "summary"}))
    assert summary.exact is None and summary.details.exact_answer is None


def test_exact_answer_uses_the_main_model_not_the_reasoning_one(tmp_path, hash_embedder, many):
    # The paper: the reasoning model writes the ideal answer, the main model (DeepSeek-V3)
    # extracts the exact answer from it.
    main = [
        *batch_rules(["YYYY", "YYYY"]),
        {"stage": "exact_answer", "response": {"answer": ["KRX1"]}},
    ]
    rt, backend = mock_runtime(tmp_path, hash_embedder, main)
    m = IPRAR(
        rt,
        reasoning_model={"backend": "mock", "mock_script": "dry-run", "model": "r1"},
        use_support_scores=False,
        relevance_batch=4,
    )
    ans = m.answer_sync(typed(many, "factoid"))
    assert stage_calls(backend, "exact_answer") == 1
    assert stage_calls(backend, "iprar_final") == 0  # the final answer is the reasoning model's
    assert stage_calls(backend, "iprar_relevance_batch") == 2
    assert ans.model_dump()["details"]["exact_answer"]["method"] == "llm" and ans.exact == ["KRX1"]
    assert ans.answer.startswith("Dry-run answer")


def test_dry_run_batched_and_exact(tmp_path, hash_embedder, many):
    rt = make_runtime(tmp_path, hash_embedder, None, DRY_RUN)
    ans = IPRAR(rt, relevance_batch=4).answer_sync(typed(many, "list"))
    d = ans.model_dump()["details"]
    assert len(d["relevance"]) == 8 and all(v["relevant"] for v in d["relevance"][:5])
    assert d["selected"] == [c["chunk_id"] for c in d["aggregated"][:5]]
    assert isinstance(ans.exact, list) and ans.exact and not ans.parse_failed
