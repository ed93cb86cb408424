"""Query helpers for the paper's question families over a built BioStrataKG.

They take any :class:`~biorag.kg.stores.interfaces.TypedGraphStore` (SQLite or Neo4j) and treat node
ids as opaque (compared and hashed only). Every answer carries its provenance (the ids of the
papers that state each edge).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from biorag.kg.stores.interfaces import NodeId, TypedGraphStore
from biorag.strata.build import DOC_EDGE_TYPES

DRUG_RELATIONS = ("TREATS", "PREVENTS")
INTERACTION_RELATIONS = ("SYNERGIZES_WITH", "ANTAGONIZES", "INTERACTS_WITH")
CHAIN_MIDDLE = ("Gene", "Protein")


def _ids(store: TypedGraphStore, type_: str, name: str) -> list[NodeId]:
    return [n["id"] for n in store.find_nodes(type_, name)]


def drugs_for_disease(
    store: TypedGraphStore, disease: str, relations: tuple[str, ...] = DRUG_RELATIONS
) -> list[dict[str, Any]]:
    """Drugs with a ``relations`` edge to the disease: [{drug, relation, papers}]."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for did in _ids(store, "Disease", disease):
        for rel in relations:
            for e in store.edges(dst=did, type_=rel):
                src = store.node(e["src"])
                if src.get("type") == "Drug":
                    found[(src["name"], rel)].add(e["source_pid"])
    rows = [{"drug": d, "relation": r, "papers": sorted(p)} for (d, r), p in found.items()]
    return sorted(rows, key=lambda r: (-len(r["papers"]), r["drug"]))


def drug_interactions(
    store: TypedGraphStore, drug: str, relations: tuple[str, ...] = INTERACTION_RELATIONS
) -> list[dict[str, Any]]:
    """Drugs that synergize with, antagonize or interact with ``drug``, either direction:
    ``[{drug, relation, other, direction ("out": drug -> other, "in": other -> drug), papers}]``.
    """
    found: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for did in _ids(store, "Drug", drug):
        for rel in relations:
            for direction, edges, end in (
                ("out", store.edges(src=did, type_=rel), "dst"),
                ("in", store.edges(dst=did, type_=rel), "src"),
            ):
                for e in edges:
                    other = store.node(e[end])
                    if other.get("type") == "Drug" and other["id"] != did:
                        found[(other["name"], rel, direction)].add(e["source_pid"])
    name = (store.find_nodes("Drug", drug) or [{"name": drug}])[0]["name"]
    rows = [
        {"drug": name, "relation": r, "other": o, "direction": d, "papers": sorted(p)}
        for (o, r, d), p in found.items()
    ]
    return sorted(rows, key=lambda r: (-len(r["papers"]), r["relation"], r["other"]))


def _entity_out(store: TypedGraphStore, nid: NodeId) -> list[tuple[dict[str, Any], str, str]]:
    return [
        (store.node(e["dst"]), e["type"], e["source_pid"])
        for e in store.edges(src=nid)
        if e["type"] not in DOC_EDGE_TYPES
    ]


def gene_disease_chains(store: TypedGraphStore, gene: str) -> list[dict[str, Any]]:
    """Directed paths gene -> disease (1 hop) and gene -> protein/gene -> disease (2 hops).

    Each: ``{"path": [gene, rel, (mid, rel2,) disease], "papers": [...]}``.
    """
    chains: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for gid in _ids(store, "Gene", gene):
        g = store.node(gid)["name"]
        for n1, r1, p1 in _entity_out(store, gid):
            if n1.get("type") == "Disease":
                chains[(g, r1, n1["name"])].add(p1)
            elif n1.get("type") in CHAIN_MIDDLE and n1["id"] != gid:
                for n2, r2, p2 in _entity_out(store, n1["id"]):
                    if n2.get("type") == "Disease":
                        chains[(g, r1, n1["name"], r2, n2["name"])].update({p1, p2})
    rows = [{"path": list(k), "papers": sorted(v)} for k, v in chains.items()]
    return sorted(rows, key=lambda r: (len(r["path"]), r["path"]))


def _domain_ids(store: TypedGraphStore, domain: str) -> list[NodeId]:
    q = domain.lower().strip()
    return [n["id"] for n in store.nodes("Domain") if q == n["key"] or q in n["key"]]


def papers_by_domain(store: TypedGraphStore, domain: str) -> list[dict[str, Any]]:
    """Papers IN_DOMAIN of a domain (exact or substring of the domain name), newest first."""
    seen: dict[NodeId, dict[str, Any]] = {}
    for did in _domain_ids(store, domain):
        for e in store.edges(dst=did, type_="IN_DOMAIN"):
            n = store.node(e["src"])
            seen[n["id"]] = {"pid": n["key"], "title": n["name"], "year": n["attrs"].get("year")}
    return sorted(seen.values(), key=lambda r: (-(r["year"] or 0), r["pid"]))


def methods_datasets_of_domain(
    store: TypedGraphStore, domain: str
) -> dict[str, list[tuple[str, int]]]:
    """Methods and datasets used by the domain's papers, with how many papers use each."""
    pids = {p["pid"] for p in papers_by_domain(store, domain)}
    counts: dict[str, Counter[str]] = {"methods": Counter(), "datasets": Counter()}
    for pid in pids:
        for nid in _ids(store, "Paper", pid):
            for kind, edge in (("methods", "USES_METHOD"), ("datasets", "USES_DATASET")):
                for e in store.edges(src=nid, type_=edge):
                    counts[kind][store.node(e["dst"])["name"]] += 1
    return {k: sorted(c.items(), key=lambda x: (-x[1], x[0])) for k, c in counts.items()}


def related_papers(store: TypedGraphStore, pid: str) -> list[dict[str, Any]]:
    """Papers sharing entities, methods, datasets or domains with ``pid``, or citing links."""
    shared: dict[str, list[str]] = defaultdict(list)
    for nid in _ids(store, "Paper", pid):
        for e in store.edges(src=nid):
            if e["type"] == "CITES":
                shared[store.node(e["dst"])["key"]].append("CITES")
                continue
            for back in store.edges(dst=e["dst"], type_=e["type"]):
                other = store.node(back["src"])
                if other.get("type") == "Paper" and other["key"] != pid:
                    shared[other["key"]].append(store.node(e["dst"])["name"])
        for e in store.edges(dst=nid, type_="CITES"):
            shared[store.node(e["src"])["key"]].append("CITED_BY")
    rows = [{"pid": k, "shared": sorted(set(v))} for k, v in shared.items()]
    return sorted(rows, key=lambda r: (-len(r["shared"]), r["pid"]))
