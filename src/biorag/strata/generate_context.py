"""What one BioCDQA generation call is shown (the paper's two routes of dataset construction).

- **Text (every question type):** the group's papers. Each paper gives its title, its abstract
  and as much of its full text as fits its share of ``text_tokens``, paragraph by paragraph in
  order. The paper feeds the full texts to GPT-4o mini; a small local model's window needs the
  budget, and the abstract always fits first.
- **Subgraph (the structured families):** the facts the family's own query draws from
  BioStrataKG around the group (:func:`family_facts`), as the paper runs one kind of Cypher
  query per family (``strata/queries.py``, on SQLite or Neo4j alike):
  - ``drugs_for_disease``: the drugs that treat or prevent each disease the group mentions;
  - ``gene_disease_chain``: each gene's paths to diseases, directly or through a gene or
    protein (relationship chains);
  - ``drug_interaction``: the drugs each of the group's drugs synergizes with, antagonizes or
    interacts with;
  - ``research_direction``: the document level, each paper's methods, datasets and domains.

  Only facts stated by at least one group paper are kept (the answer must quote the group).
  Where a family's query finds none, the group's whole subgraph stands in
  (:func:`group_facts`: entity relations and document facts). Facts shared by more papers come
  first, at most ``max_facts`` of them.

Entity names in facts are the graph's normalized names ("Neoplasms, Breast"), which a question
would not use. :func:`refine_names` rewrites them:
- with a model, through the ``strata_refine_names`` operator;
- without one, by the no-LLM form, which undoes MeSH's inverted "X, Y" order and keeps acronyms.

Source sentences are checked against all of a paper's text (title, abstract, full text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from biorag.corpus.tokens import TokenCounter, default_counter
from biorag.errors import LLMError, LLMUnavailableError
from biorag.kg.stores.interfaces import TypedGraphStore
from biorag.llm import PromptTemplate
from biorag.llm.accounting import note_fallback
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage
from biorag.strata import queries
from biorag.strata.build import entity_triplets

PROMPTS = "biorag.strata.prompts"
STRUCTURED = ("drugs_for_disease", "gene_disease_chain", "drug_interaction", "research_direction")
DOC_FACTS = {"USES_METHOD": "uses the method", "USES_DATASET": "uses the dataset",
             "IN_DOMAIN": "is in the domain"}  # fmt: skip
TEXT_TOKENS = 6000
MAX_FACTS = 30
REFINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "names": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"graph": {"type": "string"}, "question": {"type": "string"}},
                "required": ["graph", "question"],
            },
        }
    },
    "required": ["names"],
}
_ACRONYM = re.compile(r"^[A-Z0-9][A-Z0-9-]*[A-Z0-9]$")


@dataclass(frozen=True)
class Fact:
    subject: str
    predicate: str
    object: str
    pids: tuple[str, ...]

    def line(self, names: Mapping[str, str]) -> str:
        s, o = names.get(self.subject, self.subject), names.get(self.object, self.object)
        return f"{s} {self.predicate} {o} (papers {', '.join(self.pids)})"


def paper_text(paper: Mapping[str, Any]) -> str:
    """A paper's whole text: title, abstract, full text."""
    parts = (paper.get("title"), paper.get("abstract"), paper.get("full_text"))
    return "\n".join(str(p) for p in parts if p)


def paper_blocks(
    group: list[str],
    papers: Mapping[str, Mapping[str, Any]],
    text_tokens: int = TEXT_TOKENS,
    counter: TokenCounter | None = None,
) -> str:
    """The group's papers as passage blocks: title and abstract, then full-text paragraphs in
    order while the paper's share of ``text_tokens`` lasts."""
    counter = counter or default_counter()
    share = max(1, text_tokens // max(1, len(group)))
    blocks = []
    for pid in group:
        p = papers[pid]
        text = f"Title: {p.get('title') or ''}\nAbstract: {p.get('abstract') or ''}"
        used = counter.count(text)
        paragraphs = [x.strip() for x in str(p.get("full_text") or "").split("\n") if x.strip()]
        kept = []
        for para in paragraphs:
            n = counter.count(para)
            if used + n > share:
                break
            kept.append(para)
            used += n
        if kept:
            text += "\nFull text:\n" + "\n".join(kept)
        blocks.append(format_passage(pid, text))
    return "\n\n".join(blocks)


def group_facts(store: TypedGraphStore, group: list[str], max_facts: int = MAX_FACTS) -> list[Fact]:
    """The group's entity relations and document facts, shared ones first."""

    found: dict[tuple[str, str, str], list[str]] = {}
    for t in entity_triplets(store, {pid: "" for pid in group}):
        pids = found.setdefault((t.subject, t.predicate, t.object), [])
        if t.source_id not in pids:
            pids.append(t.source_id)
    for pid in group:
        for paper in store.find_nodes("Paper", pid):
            for edge, phrase in DOC_FACTS.items():
                for e in store.edges(src=paper["id"], type_=edge):
                    name = store.node(e["dst"])["name"]
                    found.setdefault((f"paper {pid}", phrase, name), []).append(pid)
    facts = [Fact(s, p, o, tuple(pids)) for (s, p, o), pids in found.items()]
    order = {pid: i for i, pid in enumerate(group)}
    facts.sort(key=lambda f: (-len(f.pids), min(order.get(p, 99) for p in f.pids)))
    return facts[:max_facts]


def _group_entities(store: TypedGraphStore, group: list[str]) -> dict[str, list[str]]:
    """Type -> names of the entities the group's papers mention, in first-seen order."""
    out: dict[str, list[str]] = {}
    for pid in group:
        for paper in store.find_nodes("Paper", pid):
            for e in store.edges(src=paper["id"], type_="MENTIONS"):
                n = store.node(e["dst"])
                names = out.setdefault(str(n.get("type")), [])
                if n["name"] not in names:
                    names.append(n["name"])
    return out


def _label(relation: str) -> str:
    return relation.lower().replace("_", " ")


def family_facts(
    store: TypedGraphStore, group: list[str], qtype: str, max_facts: int = MAX_FACTS
) -> tuple[list[Fact], bool]:
    """The facts of one structured family's query around the group (module docstring), and
    whether they came from it (False: the family found none, the group's subgraph stands in)."""

    members = set(group)
    found: dict[tuple[str, str, str], list[str]] = {}

    def add(s: str, p: str, o: str, pids: list[str]) -> None:
        mine = found.setdefault((s, p, o), [])
        mine += [x for x in pids if x in members and x not in mine]

    ents = _group_entities(store, group)
    if qtype == "drugs_for_disease":
        for disease in ents.get("Disease", []):
            for r in queries.drugs_for_disease(store, disease):
                add(r["drug"], _label(r["relation"]), disease, r["papers"])
    elif qtype == "gene_disease_chain":
        for gene in ents.get("Gene", []):
            for r in queries.gene_disease_chains(store, gene):
                path = r["path"]
                middle = " -> ".join(
                    _label(x) if i % 2 == 0 else x for i, x in enumerate(path[1:-1])
                )
                add(path[0], middle, path[-1], r["papers"])
    elif qtype == "drug_interaction":
        for drug in ents.get("Drug", []):
            for r in queries.drug_interactions(store, drug):
                s, o = (
                    (r["drug"], r["other"]) if r["direction"] == "out" else (r["other"], r["drug"])
                )
                add(s, _label(r["relation"]), o, r["papers"])
    elif qtype == "research_direction":
        docs = [
            f for f in group_facts(store, group, max_facts=10**6) if f.subject.startswith("paper ")
        ]
        return docs[:max_facts] or group_facts(store, group, max_facts), bool(docs)
    facts = [Fact(s, p, o, tuple(pids)) for (s, p, o), pids in found.items() if pids]
    if not facts:
        return group_facts(store, group, max_facts), False
    order = {pid: i for i, pid in enumerate(group)}
    facts.sort(key=lambda f: (-len(f.pids), min(order.get(p, 99) for p in f.pids)))
    return facts[:max_facts], True


def readable_name(name: str) -> str:
    """The no-LLM refinement: MeSH's "Neoplasms, Breast" -> "breast neoplasms"; acronyms and
    names with digits or capitals inside (HER2, mTOR) are kept as they are."""
    parts = [p.strip() for p in name.split(",")]
    if len(parts) == 2 and all(parts):
        parts = [parts[1], parts[0]]
    words = " ".join(parts).split()
    keep = [w if _ACRONYM.match(w) or any(c.isupper() for c in w[1:]) else w.lower() for w in words]
    return " ".join(keep)


async def refine_names(llm: ChatModel, names: list[str]) -> dict[str, str]:
    """Graph name -> how a question would name it (``strata_refine_names``; no model, or a
    reply that does not cover a name: :func:`readable_name`)."""
    names = list(dict.fromkeys(n for n in names if n))
    out = {n: readable_name(n) for n in names}
    if llm is None or not names:
        return out
    tpl = PromptTemplate.load(PROMPTS, "strata_refine_names")
    req = tpl.request(
        {"names": "\n".join(f"- {n}" for n in names)},
        stage="strata_refine_names",
        json_schema=REFINE_SCHEMA,
        max_tokens=24 * len(names) + 32,
    )
    try:
        resp = await llm.chat_json(req)
    except LLMUnavailableError:
        raise
    except LLMError:
        note_fallback(llm, "strata_refine_names")
        return out
    rows = resp.parsed.get("names") if isinstance(resp.parsed, dict) else None
    got = {
        str(r.get("graph")): str(r.get("question")).strip()
        for r in rows or []
        if isinstance(r, dict) and str(r.get("question") or "").strip()
    }
    missing = [n for n in names if n not in got]
    if missing:
        note_fallback(llm, "strata_refine_names", len(missing))
    return {n: got.get(n, out[n]) for n in names}


async def facts_block(llm: ChatModel, facts: list[Fact]) -> str:
    """The subgraph as lines, entity names refined (empty when there are no facts)."""
    if not facts:
        return ""
    names = await refine_names(
        llm, [x for f in facts for x in (f.subject, f.object) if not x.startswith("paper ")]
    )
    return "\n".join(f"- {f.line(names)}" for f in facts)
