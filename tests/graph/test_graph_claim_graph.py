"""The claim multigraph: nodes, parallel edges, self-loops, neighbours, components, layers."""

from __future__ import annotations

import json

import pytest
from tests.graph.graph_helpers import VecEmbedder, entity_vectors, make_claim, small_claims

from biorag.graph import ClaimGraph, deduplicate_entities

# Undirected claim adjacency of the small graph, checked by hand (see graph_helpers):
# c1 A-B, c2 B-C, c3 C-A, c4 C-D, c5 D-E, c6 B-A, c7 E-E (self-loop), c8 F-G, c9 G-H, c10 none
ADJ = {
    "c1": {"c2", "c3", "c6"},
    "c2": {"c1", "c3", "c4", "c6"},
    "c3": {"c1", "c2", "c4", "c6"},
    "c4": {"c2", "c3", "c5"},
    "c5": {"c4", "c7"},
    "c6": {"c1", "c2", "c3"},
    "c7": {"c5"},
    "c8": {"c9"},
    "c9": {"c8"},
    "c10": set(),
}


def test_nodes_edges_self_loop_and_parallel_edges(small_graph: ClaimGraph) -> None:
    g = small_graph.graph
    assert g.number_of_nodes() == 8  # A..H, with the two TNF names merged into one node
    assert g.number_of_edges() == 9  # c10 has no triple
    assert len(small_graph.claims) == 10
    a, b = small_graph.endpoints("c1")
    assert small_graph.endpoints("c6") == (b, a)  # direction kept: B -> A
    assert set(g[a][b]) == {"c1", "c6"}  # two parallel edges, keyed by claim id
    u, v = small_graph.endpoints("c7")
    assert u == v and g.has_edge(u, u, key="c7")  # "TNF-alpha is also called ..." is a loop
    assert g.nodes[u]["members"] == ["tumor necrosis factor alpha", "TNF-alpha"]
    assert small_graph.endpoints("c10") is None
    assert g.edges[a, b, "c1"]["score"] == 0.9


def test_neighbors_undirected(small_graph: ClaimGraph) -> None:
    for cid, expected in ADJ.items():
        assert small_graph.neighbors(cid) == expected, cid
    with pytest.raises(KeyError):
        small_graph.neighbors("nope")


def test_neighbors_directed_chain_head_to_tail(small_graph: ClaimGraph) -> None:
    # c4 C->D: follows c2 (B->C) and is followed by c5 (D->E); c3 (C->A) only shares C as
    # subject, so it is not a directed neighbour
    assert small_graph.neighbors("c4", directed=True) == {"c2", "c5"}
    # c1 A->B: followed by c2 (B->C) and c6 (B->A); follows c3 (C->A) and c6 (B->A)
    assert small_graph.neighbors("c1", directed=True) == {"c2", "c3", "c6"}
    # the self-loop c7 E->E chains with c5 (D->E)
    assert small_graph.neighbors("c7", directed=True) == {"c5"}
    # symmetric relation
    for cid in small_graph.claims:
        for n in small_graph.neighbors(cid, directed=True):
            assert cid in small_graph.neighbors(n, directed=True)


def test_layers_hand_checked(small_graph: ClaimGraph) -> None:
    assert small_graph.layers("c1") == [["c1"], ["c2", "c3", "c6"], ["c4"], ["c5"], ["c7"]]
    assert small_graph.layers("c7") == [["c7"], ["c5"], ["c4"], ["c2", "c3"], ["c1", "c6"]]
    assert small_graph.layers("c4") == [["c4"], ["c2", "c3", "c5"], ["c1", "c6", "c7"]]
    assert small_graph.layers("c9") == [["c9"], ["c8"]]
    assert small_graph.layers("c10") == [["c10"]]
    assert small_graph.layers("c7", max_depth=2) == [["c7"], ["c5"], ["c4"]]
    # directed: from c3 (C->A): c1 (A->B) follows; c2 (B->C) precedes; then c6, c4
    expected = [["c3"], ["c1", "c2"], ["c4", "c6"], ["c5"], ["c7"]]
    assert small_graph.layers("c3", directed=True) == expected


def test_layers_order_by_effective_score(small_graph: ClaimGraph) -> None:
    small_graph.scale_weight("c2", 0.25)  # 0.8 * 0.25 = 0.2 < c6's 0.4
    assert small_graph.layers("c1")[1] == ["c3", "c6", "c2"]
    u, v = small_graph.endpoints("c2")
    assert small_graph.graph.edges[u, v, "c2"]["weight"] == 0.25


def test_every_layer_is_exactly_i_hops(small_graph: ClaimGraph) -> None:
    for root in small_graph.claims:
        layers = small_graph.layers(root)
        flat = [c for layer in layers for c in layer]
        assert len(flat) == len(set(flat))
        assert set(flat) == small_graph.component(root)
        for i in range(1, len(layers)):
            for c in layers[i]:
                near = small_graph.neighbors(c)
                assert near & set(layers[i - 1])  # reached from the previous layer
                assert not near & set(flat[: sum(len(x) for x in layers[: i - 1])])


def test_components(small_graph: ClaimGraph) -> None:
    comps = small_graph.components()
    assert comps == [{"c1", "c2", "c3", "c4", "c5", "c6", "c7"}, {"c8", "c9"}, {"c10"}]
    assert small_graph.component("c5") == comps[0]
    assert small_graph.component("c10") == {"c10"}


def test_remove_claims_updates_adjacency_and_nodes(small_graph: ClaimGraph) -> None:
    assert small_graph.neighbors("c4") == {"c2", "c3", "c5"}  # caches the adjacency
    assert small_graph.remove_claims(["c4", "c9", "missing"]) == 2
    assert "c4" not in small_graph.claims
    assert small_graph.neighbors("c5") == {"c7"}
    assert [sorted(c) for c in small_graph.components()][:2] == [
        ["c1", "c2", "c3", "c6"],
        ["c5", "c7"],
    ]
    assert small_graph.graph.number_of_nodes() == 7  # H lost its only claim
    assert small_graph.layers("c8") == [["c8"]]


def test_to_dict_is_json_ready(small_graph: ClaimGraph) -> None:
    d = json.loads(json.dumps(small_graph.to_dict()))
    assert {n["id"] for n in d["nodes"]} == set(small_graph.graph.nodes)
    assert len(d["edges"]) == 9
    c6 = next(e for e in d["edges"] if e["claim_id"] == "c6")
    assert (c6["subject"], c6["predicate"], c6["object"]) == ("B", "feeds back on", "A")
    assert c6["direction"] == f"{c6['source']}->{c6['target']}"
    assert c6["score"] == 0.4
    assert d["components"][0] == ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]
    assert d["components"][2] == ["c10"]
    (tnf_members,) = d["merged_entities"].values()
    assert tnf_members == ["tumor necrosis factor alpha", "TNF-alpha"]


def test_build_copies_claims_and_skips_duplicates() -> None:
    claims = small_claims()
    names = [n for c in claims if c.triple for n in (c.triple.subject, c.triple.object)]
    clusters = deduplicate_entities(names, VecEmbedder(entity_vectors()))
    graph = ClaimGraph.build([*claims, make_claim("c1", "G", "x", "H")], clusters)
    assert graph.claims["c1"].triple.subject == "A"  # first claim with an id wins
    graph.scale_weight("c1", 0.5)
    assert claims[0].weight == 1.0  # the caller's claim is untouched
    with pytest.raises(KeyError, match="not among"):
        ClaimGraph.build([make_claim("x", "A", "p", "Zeta")], clusters)


def test_from_claims_deduplicates(hash_embedder) -> None:
    claims = [
        make_claim("a", "Metformin", "lowers", "blood glucose", 0.9),
        make_claim("b", "metformin ", "activates", "AMPK", 0.5),
        make_claim("c", "AMPK", "inhibits", "mTOR", 0.4),
    ]
    graph = ClaimGraph.from_claims(claims, hash_embedder)
    assert graph.neighbors("a") == {"b"}
    assert graph.layers("a") == [["a"], ["b"], ["c"]]
    assert "ClaimGraph(claims=3" in repr(graph)


def test_directed_view_walks_chains_and_passes_the_rest_through(small_graph: ClaimGraph) -> None:
    from biorag.graph.claim_graph import DirectedClaimView
    from biorag.summarize.base import ClaimGraphLike

    view = DirectedClaimView(small_graph)
    assert isinstance(view, ClaimGraphLike)
    assert view.neighbors("c4") == small_graph.neighbors("c4", directed=True)
    assert view.neighbors("c4") != small_graph.neighbors("c4")
    assert view.layers("c3") == small_graph.layers("c3", directed=True)
    assert view.claims is small_graph.claims and view.ordered(["c1"]) == ["c1"]


async def test_claims_directed_option_reaches_the_summarize_stage(monkeypatch, small_graph):
    import biorag.methods.claims as claims_method
    from biorag.config import Settings
    from biorag.graph.claim_graph import DirectedClaimView
    from biorag.methods.base import Question
    from biorag.methods.claims import ClaimsRun
    from biorag.methods.registry import build_method
    from biorag.runtime import Runtime

    seen = []

    async def fake_select(graph, *a, **k):
        seen.append(graph)
        return []

    async def fake_layers(graph, *a, **k):
        seen.append(graph)
        return []

    # the method imports both at its module's top: patch the names it calls
    monkeypatch.setattr(claims_method, "select_claims_of_interest", fake_select)
    monkeypatch.setattr(claims_method, "summarize_layerwise", fake_layers)
    for directed in (False, True):
        seen.clear()
        method = build_method("claims", Runtime(Settings()), {"directed": directed})
        await method._summarize(ClaimsRun(question=Question(text="q"), graph=small_graph))
        assert len(seen) == 2
        assert all(isinstance(g, DirectedClaimView) == directed for g in seen)
