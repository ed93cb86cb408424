"""Exports of a :class:`~biorag.graph.claim_graph.ClaimGraph`: GraphML and a self-contained HTML.

* :func:`to_graphml`: nodes carry ``name`` and ``members`` (a JSON list); each claim is an edge
  (key = claim id) with its text, triple, scores, verdict and provenance as string/number
  attributes (``relevant`` is ``"true"``, ``"false"`` or ``""``). Claims without a triple are
  listed in the graph attribute ``claims_without_triple`` (JSON).
* :func:`to_html`: one HTML file with inline CSS, inline SVG (layout precomputed with
  ``networkx.spring_layout(seed=0)``) and vanilla JS; no network access. Claims of interest are
  drawn dashed and thick; a selector colours edges by their layer around a chosen root; a click
  on a node or an edge lists its claims with their sources in the side panel.

Both write to a temporary file beside the target and rename it into place.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import networkx as nx

from biorag.graph.claim_graph import ClaimGraph
from biorag.util.files import atomic_writer, write_text_atomic

WIDTH, HEIGHT, MARGIN = 960, 720, 40


def _relevant_str(value: bool | None) -> str:
    return "" if value is None else str(value).lower()


def to_graphml(graph: ClaimGraph, path: str | Path) -> Path:
    """Write ``graph`` as GraphML at ``path`` (atomically); returns the path."""
    g = nx.MultiGraph()
    isolated = sorted(c for c in graph.claims if graph.endpoints(c) is None)
    g.graph["claims_without_triple"] = json.dumps(isolated)
    for node, d in sorted(graph.graph.nodes(data=True)):
        g.add_node(node, name=d["name"], members=json.dumps(list(d["members"]), ensure_ascii=False))
    for cid in sorted(graph.claims):
        if graph.endpoints(cid) is None:
            continue
        rec = graph.edge_record(cid)
        claim = graph.claims[cid]
        g.add_edge(
            rec["source"],
            rec["target"],
            key=cid,
            claim_id=cid,
            text=claim.text,
            chunk_id=claim.chunk_id,
            doc_id=claim.doc_id,
            subject=rec["subject"],
            predicate=rec["predicate"],
            object=rec["object"],
            direction=rec["direction"],
            score=float(claim.score),
            weight=float(claim.weight),
            relevant=_relevant_str(claim.relevant),
            triple_source=claim.triple_source or "",
        )
    with atomic_writer(path, binary=True) as fh:
        nx.write_graphml(g, fh)
    return Path(path)


def _layout(graph: ClaimGraph) -> dict[str, tuple[float, float]]:
    simple = nx.Graph(graph.graph)
    if simple.number_of_nodes() == 0:
        return {}
    k = 1.5 / math.sqrt(simple.number_of_nodes())
    pos = nx.spring_layout(simple, seed=0, k=k) if simple.number_of_nodes() > 1 else {}
    if not pos:
        return {n: (WIDTH / 2, HEIGHT / 2) for n in simple}
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)

    def scale(v: float, lo: float, hi: float, size: int) -> float:
        return size / 2 if hi - lo < 1e-12 else MARGIN + (v - lo) / (hi - lo) * (size - 2 * MARGIN)

    return {
        n: (round(scale(p[0], x0, x1, WIDTH), 1), round(scale(p[1], y0, y1, HEIGHT), 1))
        for n, p in pos.items()
    }


def _edge_path(a: tuple[float, float], b: tuple[float, float], i: int, m: int) -> str:
    """SVG path of the ``i``-th of ``m`` parallel edges between ``a`` and ``b`` (or a loop)."""
    (x1, y1), (x2, y2) = a, b
    if (x1, y1) == (x2, y2):
        r = 14 + 7 * i
        return (
            f"M{x1:.1f},{y1:.1f} C{x1 - r:.1f},{y1 - 2 * r:.1f} "
            f"{x1 + r:.1f},{y1 - 2 * r:.1f} {x1:.1f},{y1:.1f}"
        )
    offset = (i - (m - 1) / 2) * 18
    dx, dy = x2 - x1, y2 - y1
    length = math.hypot(dx, dy) or 1.0
    cx = (x1 + x2) / 2 - dy / length * offset
    cy = (y1 + y2) / 2 + dx / length * offset
    return f"M{x1:.1f},{y1:.1f} Q{cx:.1f},{cy:.1f} {x2:.1f},{y2:.1f}"


def _svg(graph: ClaimGraph, pos: dict[str, tuple[float, float]], interest: set[str]) -> str:
    out = [f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">', "<g>"]
    bundles: dict[tuple[str, str], list[str]] = {}
    for cid in sorted(graph.claims):
        ends = graph.endpoints(cid)
        if ends is not None:
            bundles.setdefault((min(ends), max(ends)), []).append(cid)
    for (u, v), cids in sorted(bundles.items()):
        for i, cid in enumerate(cids):
            cls = "edge interest" if cid in interest else "edge"
            claim = graph.claims[cid]
            tip = html.escape(f"{cid}: {claim.text}")
            path = _edge_path(pos[u], pos[v], i, len(cids))
            out.append(
                f'<path class="{cls}" data-claim="{html.escape(cid)}" d="{path}">'
                f"<title>{tip}</title></path>"
            )
    out.append("</g><g>")
    for node, d in sorted(graph.graph.nodes(data=True)):
        x, y = pos[node]
        cls = "node merged" if len(d["members"]) > 1 else "node"
        label = html.escape(d["name"][:40])
        r = 5 + min(9, 1.5 * math.sqrt(graph.graph.degree(node)))
        out.append(
            f'<g class="{cls}" data-node="{html.escape(node)}">'
            f'<circle cx="{x}" cy="{y}" r="{r:.1f}"><title>{label}</title></circle>'
            f'<text x="{x + r + 2:.1f}" y="{y + 4:.1f}">{label}</text></g>'
        )
    out.append("</g></svg>")
    return "\n".join(out)


def _claim_records(
    graph: ClaimGraph, sources: Mapping[str, Mapping[str, Any]], interest: set[str]
) -> dict[str, dict[str, Any]]:
    out = {}
    for cid, claim in sorted(graph.claims.items()):
        src = sources.get(cid, {})
        triple = claim.triple if graph.endpoints(cid) is not None else None
        out[cid] = {
            "text": claim.text,
            "subject": triple.subject if triple else None,
            "predicate": triple.predicate if triple else None,
            "object": triple.object if triple else None,
            "score": float(claim.score),
            "weight": float(claim.weight),
            "relevant": claim.relevant,
            "chunk_id": src.get("chunk_id", claim.chunk_id),
            "doc_id": src.get("doc_id", claim.doc_id),
            "source_id": src.get("source_id"),
            "title": src.get("title"),
            "interest": cid in interest,
        }
    return out


def _script_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def to_html(
    graph: ClaimGraph,
    path: str | Path,
    claims_of_interest: Sequence[str] = (),
    layers: Mapping[str, list[list[str]]] | None = None,
    sources: Mapping[str, Mapping[str, Any]] | None = None,
    title: str = "Claim graph",
) -> Path:
    """Write the self-contained HTML view of ``graph`` at ``path`` (atomically).

    ``layers`` maps a root claim id to its layers (computed with :meth:`ClaimGraph.layers` for
    each claim of interest when not given); ``sources`` maps a claim id to ``chunk_id``,
    ``doc_id``, ``source_id`` and ``title`` (chunk and document default to the claim's own).
    Ids not in the graph (e.g. dropped by denoising) are skipped.
    """
    interest = [c for c in claims_of_interest if c in graph.claims]
    if layers is None:
        layers = {c: graph.layers(c) for c in interest}
    shown_layers = {
        root: [[c for c in layer if c in graph.claims] for layer in ls]
        for root, ls in layers.items()
        if root in graph.claims
    }
    pos = _layout(graph)
    incident: dict[str, list[str]] = {n: [] for n in graph.graph.nodes}
    for cid in graph.ordered(graph.claims):
        ends = graph.endpoints(cid)
        for node in sorted(set(ends or ())):
            incident[node].append(cid)
    data = {
        "claims": _claim_records(graph, sources or {}, set(interest)),
        "nodes": {
            n: {"name": d["name"], "members": list(d["members"]), "claims": incident[n]}
            for n, d in sorted(graph.graph.nodes(data=True))
        },
        "interest": interest,
        "roots": list(shown_layers),
        "layers": shown_layers,
        "isolated": [c for c in graph.ordered(graph.claims) if graph.endpoints(c) is None],
    }
    values = {
        "__TITLE__": html.escape(title),
        "__SVG__": _svg(graph, pos, set(interest)),
        "__DATA__": _script_json(data),
    }
    template = resources.files("biorag.graph").joinpath("viewer.html").read_text(encoding="utf-8")
    page = re.sub("__TITLE__|__SVG__|__DATA__", lambda m: values[m.group(0)], template)

    write_text_atomic(path, page)
    return Path(path)
