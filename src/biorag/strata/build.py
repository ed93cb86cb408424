"""Build BioStrataKG from papers: entity level, document level, and the links between papers.

Nodes: Paper (key = pid), Gene, Protein, Drug, Disease (key = vocabulary id, or the lower-cased
surface when unnormalized), Method, Dataset, Domain (key = lower-cased record name).
Edges (directed, one per stating paper = provenance): entity relations in upper case
(``TREATS``, ``INHIBITS``, ...), ``MENTIONS`` (Paper -> entity), ``USES_METHOD``,
``USES_DATASET``, ``IN_DOMAIN`` and ``CITES`` (Paper -> Paper; a cited paper outside the input
becomes a stub Paper node). Papers are linked through the entities, methods, datasets and
domains they share (see :func:`biorag.strata.queries.related_papers`) and through citations.

With ``llm=None`` every paper goes through the no-LLM floor; with an LLM a failed call falls
back to the floor for that paper (counted in the report).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from biorag.embed.base import Embedder
from biorag.errors import InputFormatError, LLMError
from biorag.strata.doclevel import NameMatcher
from biorag.strata.extract import (
    MentionMatcher,
    extract_doc_llm,
    extract_doc_rules,
    extract_triplets_llm,
    extract_triplets_rules,
)
from biorag.strata.normalize import Normalizer
from biorag.strata.store import StrataStore, node_key
from biorag.strata.vocab import Vocabulary

log = logging.getLogger(__name__)

DB_NAME = "strata.sqlite"


@dataclass
class BuildReport:
    db_path: str
    papers: int = 0
    triplets: int = 0
    nodes: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)
    normalized: dict[str, int] = field(default_factory=dict)  # exact/llm/vector/new
    llm_fallbacks: int = 0
    mode: str = "no-llm"


def _check(papers: list[dict[str, Any]]) -> None:
    for i, p in enumerate(papers):
        if not isinstance(p, dict) or not str(p.get("pid") or "").strip():
            raise InputFormatError(f"paper {i} needs a non-empty 'pid' (got {p!r:.80})")


def build_strata(
    papers: list[dict[str, Any]],
    llm: Any,
    embedder: Embedder | None,
    vocab: Vocabulary,
    out_dir: str | Path,
) -> BuildReport:
    """Extract, normalize and store; returns counts (also written to ``build_report.json``)."""
    _check(papers)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = BuildReport(db_path=str(out / DB_NAME), mode="llm" if llm is not None else "no-llm")
    normalizer = Normalizer(vocab, embedder, llm)
    names = NameMatcher(embedder)
    matcher = MentionMatcher(vocab)
    pids = {str(p["pid"]) for p in papers}
    with StrataStore(report.db_path) as store:
        for p in papers:  # every input paper first, so a citation never makes it a stub
            store.upsert_node("Paper", str(p["pid"]), str(p.get("title") or p["pid"]))
        for p in papers:
            pid = str(p["pid"])
            title, abstract = str(p.get("title") or ""), str(p.get("abstract") or "")
            keywords = [str(k) for k in p.get("keywords") or []]
            attrs = {"title": title, "year": p.get("year"), "keywords": keywords}
            paper = store.upsert_node("Paper", pid, title or pid, None, attrs)
            triplets, doc = None, None
            if llm is not None:
                try:
                    triplets = extract_triplets_llm(llm, title, abstract)
                    doc = extract_doc_llm(llm, title, abstract, keywords)
                except LLMError as e:
                    log.warning("paper %s: LLM extraction failed (%s); using patterns", pid, e)
                    report.llm_fallbacks += 1
            if triplets is None:
                triplets = extract_triplets_rules(f"{title}. {abstract}", vocab, matcher)
            if doc is None:
                doc = extract_doc_rules(title, abstract, keywords)
            mentioned = {(m[0], m[1]) for m in matcher.find(f"{title}. {abstract}")}
            for t in triplets:
                s = _entity(store, normalizer, report, t.subject, t.subject_type)
                o = _entity(store, normalizer, report, t.object, t.object_type)
                store.add_edge(s, o, t.relation.upper(), pid)
                store.add_edge(paper, s, "MENTIONS", pid)
                store.add_edge(paper, o, "MENTIONS", pid)
                report.triplets += 1
            for surface, type_ in sorted(mentioned):
                store.add_edge(paper, _entity(store, normalizer, report, surface, type_),
                               "MENTIONS", pid)  # fmt: skip
            for kind, edge, items in (
                ("Method", "USES_METHOD", doc.methods),
                ("Dataset", "USES_DATASET", doc.datasets),
                ("Domain", "IN_DOMAIN", doc.domains),
            ):
                for item in items:
                    name = names.canonical(kind, item)
                    nid = store.upsert_node(kind, node_key(name), name)
                    store.add_edge(paper, nid, edge, pid)
            for cited in p.get("citations") or []:
                cited = str(cited)
                attrs_c = {} if cited in pids else {"stub": True}
                cid = store.upsert_node("Paper", cited, cited, None, attrs_c)
                store.add_edge(paper, cid, "CITES", pid)
            report.papers += 1
        store.commit()
        report.nodes, report.edges = store.counts()
    (out / "build_report.json").write_text(json.dumps(asdict(report), indent=2), encoding="utf-8")
    return report


def _entity(store: StrataStore, normalizer: Normalizer, report: BuildReport, name, type_) -> int:
    n = normalizer.normalize(name, type_)
    report.normalized[n.method] = report.normalized.get(n.method, 0) + 1
    nid = store.upsert_node(n.type, n.key, n.name, n.vocab_id)
    entry = normalizer.vocab.get(n.vocab_id) if n.vocab_id else None
    store.add_aliases(nid, [name, *(entry.surfaces() if entry else [])])
    return nid
