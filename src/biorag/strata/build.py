"""Build BioStrataKG from papers: entity level, document level, and the links between papers.

Nodes: Paper (key = pid), Gene, Protein, Drug, Disease (key = vocabulary id, or the lower-cased
surface when unnormalized), Method, Dataset, Domain (key = lower-cased record name).
Edges (directed, one per stating paper = provenance): entity relations in upper case
(``TREATS``, ``INHIBITS``, ...), ``MENTIONS`` (Paper -> entity), ``USES_METHOD``,
``USES_DATASET``, ``IN_DOMAIN`` and ``CITES`` (Paper -> Paper; a cited paper outside the input
becomes a stub Paper node). Papers are linked through the entities, methods, datasets and
domains they share (see :func:`biorag.strata.queries.related_papers`) and through citations.

The graph goes into the shared knowledge-graph store (:func:`biorag.kg.open_typed_store`):
``backend="sqlite"`` (default) writes the typed tables of ``OUT/kg.sqlite``; ``"neo4j"`` writes
to the server at ``uri`` (``user``, ``password_env``, ``database`` passed on). The entity level
is also projected into the flat VectorGraphRAG store of the same place
(:func:`project_entity_level`): each entity relation edge of the papers built becomes a
:class:`~biorag.kg.models.Triplet` ``(name, relation in lower case, name)`` with the paper as
``source_id``, so ``biorag kg stats|query --kg OUT`` and ``biorag ask --method vectorgraphrag
--kg OUT`` read the same graph; with SQLite and an embedder the entity index of ``OUT`` is
synced too (VectorGraphRAG would otherwise embed the entities when it first opens ``OUT``).

With ``llm=None`` every paper goes through the no-LLM floor; with an LLM a failed call falls
back to the floor for that paper (counted in the report). ``llm_yield`` reports, per LLM stage
(``strata_triplets``, ``strata_doc``, ``strata_normalize``), the inputs, those that gave usable
output, the outputs and the floor fallbacks (:class:`~biorag.llm.stage_yield.StageYield`); a
stage where under 20% of the inputs gave usable output is logged as a WARNING.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from biorag.embed.base import Embedder
from biorag.errors import BioragError, InputFormatError
from biorag.executor.checkpoint import run_checkpointed, stats_since
from biorag.kg.directory import sync_entity_index
from biorag.kg.entity_index import META, EntityIndex
from biorag.kg.models import AddReport, Triplet
from biorag.kg.stores.factory import open_store, open_typed_store
from biorag.kg.stores.interfaces import Backend, KGStore, NodeId, TypedGraphStore, node_key
from biorag.kg.stores.sqlite_common import FILENAME
from biorag.llm.base import ChatModel
from biorag.llm.stage_yield import StageYield, warn_if_low
from biorag.strata.doclevel import NameMatcher
from biorag.strata.extract import DocInfo, EntityTriplet
from biorag.strata.extract_papers import (
    CHECKPOINT,
    executor_batches,
    header,
    local_batches,
    paper_units,
)
from biorag.strata.normalize import Normalizer
from biorag.strata.normalize_mentions import CHECKPOINT as NORMALIZE_CHECKPOINT
from biorag.strata.normalize_mentions import normalize_mentions
from biorag.strata.vocab import ENTITY_TYPES, Vocabulary
from biorag.strata.word_shapes import entity_source
from biorag.util.files import write_json_atomic

log = logging.getLogger(__name__)

DB_NAME = FILENAME  # the strata tables live in the knowledge graph's kg.sqlite
REPORT_NAME = "build_report.json"
DOC_EDGE_TYPES = frozenset({"MENTIONS", "USES_METHOD", "USES_DATASET", "IN_DOMAIN", "CITES"})


@dataclass
class BuildReport:
    """What a build stored: counts per node/edge type, how entities were normalized, the
    projection into the flat VectorGraphRAG store; written to ``OUT/build_report.json``."""

    db_path: str  # OUT/kg.sqlite, or the Neo4j URI
    backend: str = "sqlite"
    papers: int = 0
    triplets: int = 0
    nodes: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)
    normalized: dict[str, int] = field(default_factory=dict)  # exact/llm/vector/new
    llm_fallbacks: int = 0  # papers with at least one LLM stage on the no-LLM floor
    # per LLM stage: inputs, usable, outputs, fallbacks and shares (StageYield.to_dict())
    llm_yield: dict[str, dict[str, Any]] = field(default_factory=dict)
    mode: str = "no-llm"
    entities: str = ""  # how entity mentions were found and whether they are normalized
    flat_triplets_added: int = 0  # entity relations new to the flat VectorGraphRAG store
    flat_triplets_duplicates: int = 0  # already there (another paper, an earlier build)
    flat_entities_embedded: int | None = None  # entity index synced (None: not done here)
    vectorgraphrag: str = ""  # how to use the projected graph
    papers_resumed: int = 0  # papers whose extraction a killed build had finished
    mentions_resumed: int = 0  # (mention, type) pairs a killed build had normalized
    executor: dict[str, Any] = field(default_factory=dict)  # where extraction ran, per worker
    normalize_executor: dict[str, Any] = field(default_factory=dict)  # where normalizing ran


def _check(papers: list[dict[str, Any]]) -> None:
    for i, p in enumerate(papers):
        if not isinstance(p, dict) or not str(p.get("pid") or "").strip():
            raise InputFormatError(f"paper {i} needs a non-empty 'pid' (got {p!r:.80})")


def _location(out: Path, backend: Backend, uri: str | None) -> str | Path:
    if backend == "sqlite":
        return out / DB_NAME
    if backend == "neo4j":
        if not uri:
            raise BioragError(
                "the neo4j backend needs the server URI (uri bolt://...)", param="neo4j_uri"
            )
        return uri
    raise BioragError(f"unknown knowledge-graph backend {backend!r}: use 'sqlite' or 'neo4j'")


def build_strata(
    papers: list[dict[str, Any]],
    llm: ChatModel | None,
    embedder: Embedder | None,
    vocab: Vocabulary,
    out_dir: str | Path,
    *,
    backend: Backend = "sqlite",
    uri: str | None = None,
    executor: Any | None = None,
    worker_settings: dict[str, Any] | None = None,
    **store_kw: Any,
) -> BuildReport:
    """Extract, normalize, store and project; returns counts (also in ``build_report.json``).

    ``backend``/``uri``/``store_kw`` choose the store (see the module docstring); ``out_dir``
    always receives the report (and, with SQLite, the graph itself). Extraction is resumable
    (:mod:`biorag.strata.extract_papers`); ``executor``: a batch executor other than local
    extracts on its workers, each building the LLM from ``worker_settings``
    (:func:`biorag.executor.settings_for_workers`).
    """
    _check(papers)
    out = Path(out_dir)
    location = _location(out, backend, uri)
    if out.exists() and not out.is_dir():
        raise BioragError(f"{out} is a file: pass a directory for the BioStrataKG", param="out")
    out.mkdir(parents=True, exist_ok=True)
    index_here = backend == "sqlite" and embedder is not None
    if index_here and (out / META).is_file():  # another embedding model: fail before storing
        EntityIndex.open(out, embedder)
    report = BuildReport(
        db_path=str(location), backend=backend, mode="llm" if llm is not None else "no-llm"
    )
    models: dict[str, str] = {}  # pid -> who extracted its entity triplets
    if executor is not None and executor.kind != "local":
        if worker_settings is None:
            raise ValueError("an executor needs the settings its workers build from")
        run = executor_batches(executor, worker_settings, vocab, getattr(llm, "accounting", None))
    else:
        executor, run = None, local_batches(llm, vocab)
    units = paper_units(papers)
    done, report.papers_resumed = run_checkpointed(
        units, out / CHECKPOINT, header(llm, vocab), run, "extracting papers"
    )
    extracted = [done[(u["sid"], u["hash"])] for u in units]
    if executor is not None:
        report.executor = copy.deepcopy(executor.stats())
    normalizer = Normalizer(vocab, embedder, llm)
    mentioned, report.mentions_resumed = normalize_mentions(
        papers, extracted, normalizer, out, executor=executor, worker_settings=worker_settings
    )
    if executor is not None:
        report.normalize_executor = stats_since(report.executor, executor.stats())
    with open_typed_store(location, backend, **store_kw) as store:
        _build(store, papers, extracted, mentioned, normalizer, llm, embedder, report, models)
        store.commit()
        report.nodes, report.edges = store.counts()
        flat = open_store(location, backend, **store_kw)
        try:
            added = project_entity_level(store, flat, models)
            report.flat_triplets_added, report.flat_triplets_duplicates = (
                added.added,
                added.duplicates,
            )
            if index_here:
                report.flat_entities_embedded, _ = sync_entity_index(out, embedder, flat.entities())
        finally:
            flat.close()
    report.vectorgraphrag = (
        f"biorag kg stats --kg {out}; biorag ask --method vectorgraphrag --kg {out}"
        if backend == "sqlite"
        else f"the entity relations are Entity/RELATION in the Neo4j database at {location}"
    )
    write_json_atomic(out / REPORT_NAME, asdict(report))
    for done_with in (CHECKPOINT, NORMALIZE_CHECKPOINT):  # stored: nothing left to resume
        (out / done_with).unlink(missing_ok=True)
    return report


def _build(
    store: TypedGraphStore,
    papers: list[dict[str, Any]],
    extracted: list[dict[str, Any]],
    mentioned: list[list[tuple[str, str]]],
    normalizer: Normalizer,
    llm: ChatModel | None,
    embedder: Embedder | None,
    report: BuildReport,
    models: dict[str, str],
) -> None:
    """Write every paper's entity and document level (``extracted``, one result per paper of
    :func:`~biorag.strata.extract_papers.extract_paper`; ``mentioned``, its vocabulary
    mentions) into ``store``, entities normalized by ``normalizer``."""
    vocab = normalizer.vocab
    yields = {
        "strata_triplets": StageYield("strata_triplets", unit="papers", output_unit="triplets"),
        "strata_doc": StageYield(
            "strata_doc", unit="papers", output_unit="methods, datasets and domains"
        ),
    }
    names = NameMatcher(embedder)
    report.entities = entity_source(len(vocab), llm is not None)
    pids = {str(p["pid"]) for p in papers}
    for p in papers:  # every input paper first, so a citation never makes it a stub
        store.upsert_node("Paper", str(p["pid"]), str(p.get("title") or p["pid"]))
    for p, got, seen in zip(papers, extracted, mentioned, strict=True):
        _build_paper(store, p, pids, got, seen, normalizer, names, report, models, yields)
    if llm is not None:
        _report_yields(yields, normalizer, report)


def _build_paper(
    store: TypedGraphStore,
    p: dict[str, Any],
    pids: set[str],
    got: dict[str, Any],
    mentioned: list[tuple[str, str]],
    normalizer: Normalizer,
    names: NameMatcher,
    report: BuildReport,
    models: dict[str, str],
    yields: dict[str, StageYield],
) -> None:
    """Write one paper: its node, entity relations, mentions, document level and citations."""
    pid = str(p["pid"])
    title = str(p.get("title") or "")
    keywords = [str(k) for k in p.get("keywords") or []]
    attrs = {"title": title, "year": p.get("year"), "keywords": keywords}
    paper = store.upsert_node("Paper", pid, title or pid, None, attrs)
    triplets = [EntityTriplet(**t) for t in got["triplets"]]
    doc = DocInfo(**got["doc"])
    models[pid] = got["model"]
    report.llm_fallbacks += bool(got["fell_back"])
    if got["tally"] is not None:
        _tally(yields, *got["tally"])
    for t in triplets:
        s = _entity(store, normalizer, report, t.subject, t.subject_type)
        o = _entity(store, normalizer, report, t.object, t.object_type)
        store.add_edge(s, o, t.relation.upper(), pid)
        store.add_edge(paper, s, "MENTIONS", pid)
        store.add_edge(paper, o, "MENTIONS", pid)
        report.triplets += 1
    for surface, type_ in mentioned:
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


def _report_yields(
    yields: dict[str, StageYield], normalizer: Normalizer, report: BuildReport
) -> None:
    """Add the normalization stage, warn about low-yield stages, put them in ``report``."""
    asked = normalizer.stats
    yields["strata_normalize"] = StageYield(
        "strata_normalize",
        inputs=asked["asked"],
        usable=asked["answered"],
        outputs=asked["answered"],
        fallbacks=asked["asked"] - asked["answered"],
        unit="mentions",
        output_unit="choices",
    )
    for y in yields.values():
        warn_if_low(y, logger=log)
    report.llm_yield = {k: y.to_dict() for k, y in yields.items()}


def _tally(yields: dict[str, StageYield], triplets: int | None, facts: int | None) -> None:
    """Count one paper's LLM stages: None is a fallback to the floor (the call failed; the
    document level is not asked when the triplets failed), else usable when not zero."""
    for stage, n in (("strata_triplets", triplets), ("strata_doc", facts)):
        y = yields[stage]
        y.inputs += 1
        if n is None:
            y.fallbacks += 1
        else:
            y.usable += bool(n)
            y.outputs += n


def _entity(
    store: TypedGraphStore, normalizer: Normalizer, report: BuildReport, name: str, type_: str
) -> NodeId:
    n = normalizer.normalize(name, type_)
    report.normalized[n.method] = report.normalized.get(n.method, 0) + 1
    nid = store.upsert_node(n.type, n.key, n.name, n.vocab_id)
    entry = normalizer.vocab.get(n.vocab_id) if n.vocab_id else None
    store.add_aliases(nid, [name, *(entry.surfaces() if entry else [])])
    return nid


def entity_triplets(store: TypedGraphStore, models: dict[str, str]) -> Iterator[Triplet]:
    """The entity relation edges stated by the papers of ``models`` (pid -> extractor model).

    Only edges between Gene/Protein/Drug/Disease nodes (not MENTIONS, USES_*, IN_DOMAIN,
    CITES); each becomes ``Triplet(subject name, relation lower-cased with spaces, object
    name, source_id=pid, model=models[pid])``.
    """
    _, edge_counts = store.counts()
    names: dict[NodeId, dict[str, Any]] = {}

    def node(nid: NodeId) -> dict[str, Any]:
        if nid not in names:
            names[nid] = store.node(nid)
        return names[nid]

    for rel in sorted(set(edge_counts) - DOC_EDGE_TYPES):
        predicate = rel.lower().replace("_", " ")
        for e in store.edges(type_=rel):
            pid = e["source_pid"]
            if pid not in models:
                continue
            s, o = node(e["src"]), node(e["dst"])
            if s.get("type") in ENTITY_TYPES and o.get("type") in ENTITY_TYPES:
                yield Triplet(
                    subject=s["name"],
                    predicate=predicate,
                    object=o["name"],
                    source_id=pid,
                    model=models[pid],
                )


def project_entity_level(
    store: TypedGraphStore, flat: KGStore, models: dict[str, str]
) -> AddReport:
    """Add :func:`entity_triplets` to the flat VectorGraphRAG store; duplicates are counted."""
    return flat.add_triplets(entity_triplets(store, models))
