"""The RAPTOR method end to end: no LLM, the dry-run model, given passages, the recorded tree."""

from __future__ import annotations

import pytest
from methods_helpers import DRY_RUN, GIVEN, QUESTION, build_index, make_runtime

from biorag.corpus.tokens import default_counter
from biorag.errors import BioragError
from biorag.methods.raptor import Raptor, make_leaves
from biorag.summarize.raptor_tree import umap_available


@pytest.fixture
def index(tmp_path, hash_embedder):
    return build_index(tmp_path, hash_embedder)


def check_tree(ans) -> dict:
    r = ans.model_dump()["details"]["raptor"]
    nodes = {n["id"]: n for n in r["nodes"]}
    assert r["layer_sizes"] == [len(layer) for layer in r["layers"]]
    assert [nodes[i]["layer"] for layer in r["layers"] for i in layer] == [
        k for k, layer in enumerate(r["layers"]) for _ in layer
    ]
    retrieved = {p for n in r["nodes"] if n["layer"] == 0 for p in n["chunk_ids"]}
    for n in r["nodes"]:
        assert n["text"]
        if n["layer"] == 0:
            assert n["children"] == [] and len(n["chunk_ids"]) == 1
            continue
        assert n["children"]
        kids = [nodes[c] for c in n["children"]]
        assert all(k["layer"] == n["layer"] - 1 for k in kids)
        assert set(n["chunk_ids"]) == {c for k in kids for c in k["chunk_ids"]}
    assert {s["id"] for s in r["selected"]} <= set(nodes)
    assert [s["score"] for s in r["selected"]] == sorted(
        (s["score"] for s in r["selected"]), reverse=True
    )
    # Evidence: the retrieved chunks under the selected nodes.
    under = {c for s in r["selected"] for c in nodes[s["id"]]["chunk_ids"]}
    assert {e.chunk_id for e in ans.evidence} == under <= retrieved
    assert default_counter().count(ans.context) <= ans.model_dump()["details"]["token_limit"]
    if not umap_available():
        assert r["reduction"] in ("pca", "none")
    return r


def test_no_llm_over_an_index(tmp_path, index, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder, index)
    ans = Raptor(rt, leaf_tokens=20).answer_sync(QUESTION)
    r = check_tree(ans)
    assert ans.method == "raptor" and ans.answer in QUESTION.options and not ans.llm_used
    assert "no-LLM floor" in ans.notes[0] and r["summarizer"] == "extractive"
    assert len(r["layers"]) >= 2 and r["layer_sizes"][0] > 6  # leaves cut from 6 chunks
    if r["reduction"] == "pca":
        assert any("PCA" in n for n in ans.notes)
    assert rt.accounting() == {}
    rt.close()


def test_dry_run_model_summarizes_each_cluster_once(tmp_path, index, hash_embedder, reader_spy):
    settings = make_runtime(tmp_path, hash_embedder).settings
    rt = make_runtime(tmp_path, hash_embedder, index, client=reader_spy.client(settings))
    ans = Raptor(rt, leaf_tokens=20, reduction_dim=2).answer_sync(QUESTION)
    r = check_tree(ans)
    assert ans.llm_used and ans.answer == "C" and not ans.parse_failed
    assert reader_spy.read(ans.context)  # the selected tree nodes were what the reader read
    stages = rt.accounting()["stages"]
    summaries = sum(1 for n in r["nodes"] if n["layer"] > 0)
    assert summaries >= 1 and stages["raptor_summary"]["calls"] == summaries
    assert stages["hyde"]["calls"] == 1 and "rewrite" not in stages
    assert stages["answer"]["calls"] == 1
    rt.close()


@pytest.mark.parametrize("llm", [None, DRY_RUN])
def test_given_passages_need_no_index(tmp_path, hash_embedder, llm):
    rt = make_runtime(tmp_path, hash_embedder, None, llm)
    ans = Raptor(rt).answer_sync(GIVEN)
    r = check_tree(ans)
    assert ans.answer in GIVEN.options and ans.context
    assert r["layer_sizes"] == [3, 1]  # three short passages: one cluster, one root
    assert all(e.chunk_id.startswith("given:g1:") for e in ans.evidence)
    assert "searcher" not in rt.built()


def test_context_respects_the_token_limit(tmp_path, index, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder, index)
    ans = Raptor(rt, leaf_tokens=20, token_limit=40).answer_sync(QUESTION)
    check_tree(ans)
    assert 0 < default_counter().count(ans.context) <= 40
    assert len(ans.model_dump()["details"]["raptor"]["selected"]) < len(
        ans.model_dump()["details"]["raptor"]["nodes"]
    )
    rt.close()


def test_leaves_and_options(tmp_path, hash_embedder):
    from biorag.methods.base import given_passages

    passages = given_passages(GIVEN)
    leaves = make_leaves(passages, 8)
    assert len(leaves) > len(passages)
    assert {c for _, _, ids in leaves for c in ids} == {p.chunk_id for p in passages}
    assert len(make_leaves(passages, None)) == len(passages)
    rt = make_runtime(tmp_path, hash_embedder)
    with pytest.raises(BioragError, match="unknown raptor option"):
        Raptor(rt, depth=2)
    with pytest.raises(BioragError, match="tree_query"):
        Raptor(rt, tree_query="both")
