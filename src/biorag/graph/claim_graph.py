"""The local claim graph of CLAIMS (§3.2): entities are nodes, claims are edges.

Every claim with a complete triple is one edge of an undirected ``networkx.MultiGraph`` between
the canonical nodes of its subject and object (edge key = claim id), so two claims about the
same two entities are two parallel edges, and a claim whose subject and object deduplicate to
the same entity is a self-loop. Edges keep the triple's direction (``source`` = subject node,
``target`` = object node) for the directed option below. Claims without a complete triple stay
in :attr:`ClaimGraph.claims` but touch no node: they have no neighbours and form singleton
components.

Claim adjacency (what ``neighbors``, ``component`` and ``layers`` walk):

* undirected (default, as in the paper): two claims are adjacent when their edges share an
  entity node (either endpoint of one equals either endpoint of the other);
* ``directed=True``: two claims are adjacent when they chain head to tail: one claim's object
  node is the other's subject node (``c.object == d.subject`` or ``d.object == c.subject``).
  Claims that only share a subject, or only an object, are not adjacent. The relation is
  symmetric, so layers stay well defined; a self-loop chains with every claim at its node.

Claims are copied in: the graph owns its claims, and denoising updates ``relevant`` and
``weight`` on those copies. Ordering inside layers and components uses the effective score
``score * weight`` (descending), then the claim id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import networkx as nx

from biorag.embed.base import Embedder
from biorag.extract.models import Claim
from biorag.graph.dedup import EntityClusters, deduplicate_entities


def effective_score(claim: Claim) -> float:
    """Reranker score times the denoising weight."""
    return claim.score * claim.weight


class ClaimGraph:
    """Entities as nodes, claims as (multi-)edges, with cached claim adjacency."""

    def __init__(
        self, graph: nx.MultiGraph, claims: dict[str, Claim], clusters: EntityClusters | None
    ) -> None:
        self.graph = graph
        self.claims = claims
        self.clusters = clusters
        self._ends: dict[str, tuple[str, str]] = {
            data["claim_id"]: (data["source"], data["target"])
            for _, _, data in graph.edges(data=True)
        }
        self._adjacency: dict[bool, dict[str, frozenset[str]]] = {}

    # ----------------------------------------------------------------- construction
    @classmethod
    def build(cls, claims: Iterable[Claim], clusters: EntityClusters) -> ClaimGraph:
        """The graph of ``claims`` with entities mapped through ``clusters``.

        Duplicate claim ids keep the first claim. KeyError when a triple names an entity that
        ``clusters`` does not know.
        """
        graph = nx.MultiGraph()
        owned: dict[str, Claim] = {}
        for claim in claims:
            if claim.id in owned:
                continue
            owned[claim.id] = claim = claim.model_copy(deep=True)
            if claim.triple is None or not claim.triple.is_complete():
                continue
            ends = (
                clusters.canonical(claim.triple.subject),
                clusters.canonical(claim.triple.object),
            )
            for node in ends:
                if node not in graph:
                    graph.add_node(node, name=clusters.name(node), members=clusters.members(node))
            graph.add_edge(
                *ends,
                key=claim.id,
                claim_id=claim.id,
                source=ends[0],
                target=ends[1],
                score=claim.score,
                weight=claim.weight,
            )
        return cls(graph, owned, clusters)

    @classmethod
    def from_claims(
        cls,
        claims: Sequence[Claim],
        embedder: Embedder,
        threshold: float = 0.8,
        block_above: int = 5000,
    ) -> ClaimGraph:
        """Deduplicate the triples' entities with ``embedder``, then :meth:`build`."""
        names = [
            name
            for c in claims
            if c.triple is not None and c.triple.is_complete()
            for name in (c.triple.subject, c.triple.object)
        ]
        clusters = deduplicate_entities(names, embedder, threshold, block_above)
        return cls.build(claims, clusters)

    # ----------------------------------------------------------------- mutation
    def _invalidate(self) -> None:
        self._adjacency.clear()

    def remove_claims(self, claim_ids: Iterable[str]) -> int:
        """Drop claims (and their edges; entity nodes left without edges go too)."""
        removed = 0
        for cid in list(claim_ids):
            if cid not in self.claims:
                continue
            del self.claims[cid]
            removed += 1
            ends = self._ends.pop(cid, None)
            if ends is None:
                continue
            self.graph.remove_edge(*ends, key=cid)
            for node in set(ends):
                if self.graph.degree(node) == 0:
                    self.graph.remove_node(node)
        if removed:
            self._invalidate()
        return removed

    def scale_weight(self, claim_id: str, factor: float) -> None:
        """Multiply a claim's denoising weight by ``factor`` (claim and edge stay in sync)."""
        claim = self.claims[claim_id]
        claim.weight *= factor
        if claim_id in self._ends:
            u, v = self._ends[claim_id]
            self.graph.edges[u, v, claim_id]["weight"] = claim.weight

    # ----------------------------------------------------------------- queries
    def endpoints(self, claim_id: str) -> tuple[str, str] | None:
        """``(subject node, object node)`` of a claim's edge, None for a claim without one."""
        if claim_id not in self.claims:
            raise KeyError(f"unknown claim {claim_id!r}")
        return self._ends.get(claim_id)

    def _adj(self, directed: bool) -> dict[str, frozenset[str]]:
        cached = self._adjacency.get(directed)
        if cached is not None:
            return cached
        by_node: dict[str, set[str]] = {}
        by_subject: dict[str, set[str]] = {}
        by_object: dict[str, set[str]] = {}
        for cid, (u, v) in self._ends.items():
            by_node.setdefault(u, set()).add(cid)
            by_node.setdefault(v, set()).add(cid)
            by_subject.setdefault(u, set()).add(cid)
            by_object.setdefault(v, set()).add(cid)
        empty: set[str] = set()
        adj: dict[str, frozenset[str]] = {}
        for cid in self.claims:
            ends = self._ends.get(cid)
            if ends is None:
                adj[cid] = frozenset()
                continue
            u, v = ends
            if directed:
                near = by_subject.get(v, empty) | by_object.get(u, empty)
            else:
                near = by_node[u] | by_node[v]
            adj[cid] = frozenset(near - {cid})
        self._adjacency[directed] = adj
        return adj

    def neighbors(self, claim_id: str, directed: bool = False) -> set[str]:
        """1-hop neighbour claims of ``claim_id`` (see the module docstring for ``directed``)."""
        adj = self._adj(directed)
        if claim_id not in adj:
            raise KeyError(f"unknown claim {claim_id!r}")
        return set(adj[claim_id])

    def ordered(self, ids: Iterable[str]) -> list[str]:
        """``ids`` sorted by effective score descending, then id."""
        return sorted(ids, key=lambda c: (-effective_score(self.claims[c]), c))

    def layers(
        self, root_claim_id: str, directed: bool = False, max_depth: int | None = None
    ) -> list[list[str]]:
        """Layer ``i`` = claims exactly ``i`` hops from the root (layer 0 = ``[root]``).

        Breadth-first over the claim adjacency; each layer sorted by effective score
        descending, then id. ``max_depth`` stops after that many hops.
        """
        adj = self._adj(directed)
        if root_claim_id not in adj:
            raise KeyError(f"unknown claim {root_claim_id!r}")
        seen = {root_claim_id}
        out = [[root_claim_id]]
        frontier = [root_claim_id]
        while frontier and (max_depth is None or len(out) <= max_depth):
            nxt = {n for c in frontier for n in adj[c] if n not in seen}
            if not nxt:
                break
            seen |= nxt
            frontier = self.ordered(nxt)
            out.append(frontier)
        return out

    def component(self, claim_id: str, directed: bool = False) -> set[str]:
        """The claims of ``claim_id``'s connected component (itself included)."""
        adj = self._adj(directed)
        if claim_id not in adj:
            raise KeyError(f"unknown claim {claim_id!r}")
        seen = {claim_id}
        queue = deque([claim_id])
        while queue:
            for n in adj[queue.popleft()]:
                if n not in seen:
                    seen.add(n)
                    queue.append(n)
        return seen

    def components(self, directed: bool = False) -> list[set[str]]:
        """All claim components, largest first (ties: higher best score, then smallest id)."""
        seen: set[str] = set()
        comps: list[set[str]] = []
        for cid in sorted(self.claims):
            if cid not in seen:
                comp = self.component(cid, directed)
                seen |= comp
                comps.append(comp)
        comps.sort(
            key=lambda c: (
                -len(c),
                -max(effective_score(self.claims[i]) for i in c),
                min(c),
            )
        )
        return comps

    # ----------------------------------------------------------------- output
    @property
    def merged_entities(self) -> dict[str, list[str]]:
        """Entity clusters with more than one member among this graph's nodes."""
        return {
            n: list(d["members"])
            for n, d in sorted(self.graph.nodes(data=True))
            if len(d["members"]) > 1
        }

    def edge_record(self, claim_id: str) -> dict[str, Any]:
        """The JSON record of a claim's edge (see :meth:`to_dict`)."""
        claim = self.claims[claim_id]
        u, v = self._ends[claim_id]
        assert claim.triple is not None
        return {
            "claim_id": claim_id,
            "source": u,
            "target": v,
            "subject": claim.triple.subject,
            "predicate": claim.triple.predicate,
            "object": claim.triple.object,
            "score": claim.score,
            "weight": claim.weight,
            "relevant": claim.relevant,
            "direction": f"{u}->{v}",
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready graph: ``nodes``, ``edges``, ``components``, ``merged_entities``."""
        nodes = [
            {"id": n, "name": d["name"], "members": list(d["members"])}
            for n, d in sorted(self.graph.nodes(data=True))
        ]
        edges = [self.edge_record(cid) for cid in sorted(self._ends)]
        return {
            "nodes": nodes,
            "edges": edges,
            "components": [self.ordered(c) for c in self.components()],
            "merged_entities": self.merged_entities,
        }

    def __len__(self) -> int:
        return len(self.claims)

    def __repr__(self) -> str:
        return (
            f"ClaimGraph(claims={len(self.claims)}, entities={self.graph.number_of_nodes()}, "
            f"edges={self.graph.number_of_edges()})"
        )


class DirectedClaimView:
    """A :class:`ClaimGraph` seen with ``directed=True`` adjacency: ``neighbors`` and ``layers``
    follow head-to-tail chains only (the ``directed`` option of the CLAIMS method); every other
    attribute is the graph's own."""

    def __init__(self, graph: ClaimGraph) -> None:
        self._graph = graph
        self.claims = graph.claims

    def neighbors(self, claim_id: str) -> set[str]:
        return self._graph.neighbors(claim_id, directed=True)

    def layers(self, root_claim_id: str, max_depth: int | None = None) -> list[list[str]]:
        return self._graph.layers(root_claim_id, directed=True, max_depth=max_depth)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)
