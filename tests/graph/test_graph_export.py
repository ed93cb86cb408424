"""GraphML and the self-contained HTML view."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import networkx as nx
from tests.graph.graph_helpers import make_claim

from biorag.graph import ClaimGraph, to_graphml, to_html

VOID = {"meta", "br", "img", "input", "link", "hr", "source", "area", "base", "col", "wbr"}


class TagChecker(HTMLParser):
    """Collects tags, attributes and script text; checks that elements are balanced."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.tags: set[str] = set()
        self.json_text = ""
        self._in_json = False

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        self._in_json = tag == "script" and ("type", "application/json") in attrs
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()
        self._in_json = False

    def handle_data(self, data):
        if self._in_json:
            self.json_text += data


def test_graphml_round_trip(small_graph: ClaimGraph, tmp_path: Path) -> None:
    small_graph.claims["c1"].relevant = True
    path = to_graphml(small_graph, tmp_path / "out" / "graph.graphml")
    g = nx.read_graphml(path, force_multigraph=True)
    assert g.number_of_nodes() == 8 and g.number_of_edges() == 9
    edges = {d["claim_id"]: d for _, _, d in g.edges(data=True)}
    assert set(edges) == {f"c{i}" for i in range(1, 10)}
    assert edges["c1"]["relevant"] == "true" and edges["c2"]["relevant"] == ""
    assert edges["c6"]["subject"] == "B" and edges["c6"]["chunk_id"] == "ch-c6"
    assert float(edges["c8"]["score"]) == 0.95
    assert json.loads(g.graph["claims_without_triple"]) == ["c10"]
    merged = [json.loads(d["members"]) for _, d in g.nodes(data=True)]
    assert ["tumor necrosis factor alpha", "TNF-alpha"] in merged
    assert [p.name for p in path.parent.iterdir()] == ["graph.graphml"]  # no temp file left


def test_html_is_self_contained_and_complete(small_graph: ClaimGraph, tmp_path: Path) -> None:
    small_graph.claims["c2"].text = "B binds C </script><script>alert(1)</script> & more"
    sources = {
        cid: {
            "chunk_id": c.chunk_id,
            "doc_id": c.doc_id,
            "source_id": f"PMID:{i}",
            "title": f"Paper {i}",
        }
        for i, (cid, c) in enumerate(sorted(small_graph.claims.items()))
    }
    path = to_html(
        small_graph,
        tmp_path / "graph.html",
        claims_of_interest=["c1", "c8", "gone"],
        layers={"c1": small_graph.layers("c1"), "c8": small_graph.layers("c8")},
        sources=sources,
    )
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert "http://" not in text and "https://" not in text
    for cid in small_graph.claims:
        assert cid in text
    checker = TagChecker()
    checker.feed(text)
    checker.close()
    assert not checker.errors and not checker.stack
    assert {"svg", "path", "circle", "select", "style", "script"} <= checker.tags
    assert not any(tag == "script" and k == "src" for tag, k, _ in checker.attrs)
    data = json.loads(checker.json_text)
    assert data["roots"] == ["c1", "c8"] and data["interest"] == ["c1", "c8"]
    assert data["layers"]["c1"] == [["c1"], ["c2", "c3", "c6"], ["c4"], ["c5"], ["c7"]]
    assert data["claims"]["c2"]["text"].startswith("B binds C </script>")
    assert data["claims"]["c3"]["title"] == "Paper 3" and data["claims"]["c3"]["source_id"]
    assert data["isolated"] == ["c10"]
    edge_ids = {v for tag, k, v in checker.attrs if tag == "path" and k == "data-claim"}
    assert edge_ids == {f"c{i}" for i in range(1, 10)}
    interest = [v for tag, k, v in checker.attrs if tag == "path" and k == "class"]
    assert interest.count("edge interest") == 2
    node_claims = {n: d["claims"] for n, d in data["nodes"].items()}
    assert sorted(c for cl in node_claims.values() for c in cl).count("c7") == 1  # loop once
    assert "<script>alert(1)" not in text.split('id="graph-data">')[1].split("</script>")[0]


def test_html_defaults_and_tiny_graphs(tmp_path: Path, hash_embedder) -> None:
    one = ClaimGraph.from_claims([make_claim("a", "X", "binds", "Y", 0.5)], hash_embedder)
    path = to_html(one, tmp_path / "one.html", claims_of_interest=["a"])
    data_text = path.read_text(encoding="utf-8").split('id="graph-data">')[1].split("</script>")[0]
    assert json.loads(data_text)["layers"] == {"a": [["a"]]}
    empty = ClaimGraph.from_claims([], hash_embedder)
    assert "<svg" in to_html(empty, tmp_path / "empty.html").read_text(encoding="utf-8")
    loop = ClaimGraph.from_claims([make_claim("l", "X", "is", "x", 0.5)], hash_embedder)
    assert loop.endpoints("l")[0] == loop.endpoints("l")[1]
    assert 'data-claim="l"' in to_html(loop, tmp_path / "loop.html").read_text(encoding="utf-8")
