"""BioCDQA-style question generation from BioStrataKG (the paper's dataset construction).

:func:`generate_biocdqa` picks groups of 1..``max_papers`` connected papers (a seed paper, then
papers linked to the group through shared entities, methods, datasets, domains or citations, see
:func:`biorag.strata.queries.related_papers`; deterministic for a ``seed``), asks the model for
one QA pair per group (stage ``biocdqa_generate``: ``{question, type, ideal_answer,
source_sentences}``), and keeps a pair only when

* every source sentence occurs verbatim (whitespace collapsed) in a group paper's title,
  abstract or full text, checked in code, and
* a grounding judge (stage ``biocdqa_ground``) says yes: every part of the answer is supported
  by those sentences.

Kept pairs are written atomically as JSON Lines records ``{id, question, type, ideal_answer,
documents_pid, source_sentences}`` that ``load_dataset("biocdqa", path)`` reads;
``documents_pid`` lists the group papers a source sentence was quoted from. Question types:
``factual`` and ``knowledge_extraction`` (any group), ``knowledge_discovery`` and the structured
families ``drugs_for_disease``, ``gene_disease_chain``, ``drug_interaction``,
``research_direction`` (groups of two or more papers). One group is one generation call, so at
most ``n_questions`` pairs are kept; the report counts why the others were dropped.

What each call is shown (:mod:`biorag.strata.generate_context`): the papers with as much of
their full texts as ``text_tokens`` allows and, for the structured families, the group's
subgraph from BioStrataKG with its entity names refined for a question.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.errors import BioragError, LLMError, LLMUnavailableError
from biorag.kg.stores.factory import open_typed_store
from biorag.kg.stores.interfaces import TypedGraphStore
from biorag.llm import ChatRequest, PromptTemplate, budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import numbered_passages
from biorag.strata import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.strata.build import DB_NAME
from biorag.strata.generate_context import (
    STRUCTURED,
    TEXT_TOKENS,
    facts_block,
    family_facts,
    paper_blocks,
    paper_text,
)
from biorag.strata.queries import related_papers
from biorag.util.files import write_text_atomic

PROMPTS = "biorag.strata.prompts"
OUT_NAME = "biocdqa.jsonl"

TYPE_HINTS = {
    "factual": "a fact stated in the papers",
    "knowledge_extraction": "a specific finding, method or dataset extracted from the papers",
    "knowledge_discovery": "a link that only appears by combining the papers",
    "drugs_for_disease": "which drugs treat or are studied for a disease",
    "gene_disease_chain": "how a gene relates to a disease through intermediate entities",
    "drug_interaction": "synergy or antagonism between drugs",
    "research_direction": "papers, methods or datasets of a research direction",
}
SINGLE_TYPES = ("factual", "knowledge_extraction")
MULTI_TYPES = tuple(TYPE_HINTS)

GEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        "type": {"type": "string"},
        "ideal_answer": {"type": "string"},
        "source_sentences": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["question", "type", "ideal_answer", "source_sentences"],
}
GROUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"grounded": {"type": "string", "enum": ["yes", "no"]},
                   "reason": {"type": "string"}},
    "required": ["grounded"],
}  # fmt: skip


@dataclass
class GenerationReport:
    """Where the pairs went and what happened to every group."""

    out_path: str
    requested: int = 0
    groups: int = 0
    kept: int = 0
    dropped_invalid: int = 0  # generation answer missing fields / unparseable / duplicate
    dropped_unquoted: int = 0  # a source sentence is not in the papers' text
    dropped_ungrounded: int = 0  # the judge said no (or gave no usable verdict)
    failed: int = 0  # an LLM call failed after its retries
    by_type: dict[str, int] = field(default_factory=dict)
    # structured groups whose family query found nothing: the group's subgraph stood in
    family_fallbacks: int = 0


def _ws(text: str) -> str:
    return " ".join(text.split())


def _open(strata: TypedGraphStore | str | Path) -> tuple[TypedGraphStore, bool]:
    """The store (and whether this module opened it, so must close it)."""
    if not isinstance(strata, str | Path):
        return strata, False
    p = Path(strata)
    db = p / DB_NAME if p.is_dir() else p
    if not db.is_file():
        raise BioragError(f"no BioStrataKG at {db}; build one first (biorag strata build)")
    return open_typed_store(db), True


def _default_out(strata: TypedGraphStore | str | Path) -> Path:
    """``biocdqa.jsonl`` beside the SQLite file; a store without one needs ``out_path``."""
    if isinstance(strata, str | Path):
        p = Path(strata)
        return (p if p.is_dir() else p.parent) / OUT_NAME
    path = getattr(strata, "path", None)
    if not isinstance(path, Path) or str(path) == ":memory:":
        raise BioragError(
            f"{strata!r} has no directory for the BioCDQA file: pass out_path",
            param="out",
        )
    return path.parent / OUT_NAME


def _neighbours(store: TypedGraphStore, pids: list[str]) -> dict[str, list[str]]:
    known = set(pids)
    out: dict[str, set[str]] = {p: set() for p in pids}
    for pid in pids:
        for row in related_papers(store, pid):
            other = row["pid"]
            if other in known and other != pid:
                out[pid].add(other)
                out[other].add(pid)  # CITED_BY etc. make links symmetric
    return {p: sorted(v) for p, v in out.items()}


def pick_groups(
    store: TypedGraphStore, pids: list[str], n: int, max_papers: int = 5, seed: int = 0
) -> list[list[str]]:
    """``n`` groups of 1..``max_papers`` connected papers (distinct where possible)."""
    pids = sorted(set(pids))
    if not pids or n <= 0:
        return []
    rng = random.Random(seed)
    adj = _neighbours(store, pids)
    groups: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for _ in range(n * 10):
        if len(groups) >= n:
            break
        group = [rng.choice(pids)]
        size = rng.randint(1, max(1, min(max_papers, 5)))
        while len(group) < size:
            frontier = sorted({q for p in group for q in adj[p]} - set(group))
            if not frontier:
                break
            group.append(rng.choice(frontier))
        key = tuple(sorted(group))
        if key in seen:
            continue
        seen.add(key)
        groups.append(group)
    return groups


def _quoted_in(sentences: list[str], group: list[str], papers: Mapping[str, Any]) -> list[str]:
    """The group papers the sentences come from; [] when one sentence is in none."""
    texts = {pid: _ws(paper_text(papers[pid])) for pid in group}
    docs: list[str] = []
    for s in sentences:
        hits = [pid for pid, t in texts.items() if _ws(s) in t]
        if not hits:
            return []
        docs += [h for h in hits if h not in docs]
    return [pid for pid in group if pid in docs]


def _pair(value: Any, qtype: str) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    q, a, src = value.get("question"), value.get("ideal_answer"), value.get("source_sentences")
    if isinstance(src, str):
        src = [src]
    if not (isinstance(q, str) and q.strip() and isinstance(a, str) and a.strip()):
        return None
    if not isinstance(src, list):
        return None
    src = [s.strip() for s in src if isinstance(s, str) and s.strip()]
    if not src:
        return None
    t = value.get("type")
    t = t.strip() if isinstance(t, str) and t.strip() in TYPE_HINTS else qtype
    return {"question": q.strip(), "type": t, "ideal_answer": a.strip(), "source_sentences": src}


def _verdict(value: Any) -> bool:
    if isinstance(value, dict):
        value = value.get("grounded", value.get("answer"))
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() in ("yes", "true")


def _generation_values(
    group: list[str],
    qtype: str,
    papers: Mapping[str, Mapping[str, Any]],
    text_tokens: int,
    facts: str,
) -> dict[str, str]:
    """The generation prompt's values for one group and question type."""
    return {
        "qtype": qtype,
        "type_hint": TYPE_HINTS[qtype],
        "multi": " together (the answer needs more than one paper)" if len(group) > 1 else "",
        "papers": paper_blocks(group, papers, text_tokens),
        "facts": f"\nFacts from the knowledge graph linking these papers:\n{facts}\n"
        if facts
        else "",
    }


async def _group_pair(
    llm: ChatModel,
    gen: PromptTemplate,
    judge: PromptTemplate,
    group: list[str],
    qtype: str,
    papers: Mapping[str, Mapping[str, Any]],
    seen_q: set[str],
    report: GenerationReport,
    context: tuple[int, str],
) -> tuple[dict[str, Any], list[str]] | None:
    """Generate and check one group's pair: the pair and its papers, or None (counted why).
    ``context``: the papers' token budget and the group's facts (refined lines, or "")."""
    try:
        resp = await llm.chat_json(
            gen.request(
                _generation_values(group, qtype, papers, *context),
                stage="biocdqa_generate",
                json_schema=GEN_SCHEMA,
                max_tokens=budget.GENERATED_QA,
            )
        )
    except LLMUnavailableError:
        raise  # no model at all: stop, do not run on without it
    except LLMError:
        report.failed += 1
        return None
    pair = _pair(resp.parsed, qtype)
    if pair is None or pair["question"].lower() in seen_q:
        report.dropped_invalid += 1
        return None
    docs = _quoted_in(pair["source_sentences"], group, papers)
    if not docs:
        report.dropped_unquoted += 1
        return None
    sources = numbered_passages(pair["source_sentences"])
    req: ChatRequest = judge.request(
        {"question": pair["question"], "answer": pair["ideal_answer"], "sources": sources},
        stage="biocdqa_ground",
        json_schema=GROUND_SCHEMA,
        max_tokens=budget.GROUNDED_VERDICT,
    )
    try:
        verdict = await llm.chat_json(req)
    except LLMUnavailableError:
        raise  # no model at all: stop, do not run on without it
    except LLMError:
        report.failed += 1
        return None
    if not _verdict(verdict.parsed):
        report.dropped_ungrounded += 1
        return None
    return pair, docs


async def generate_biocdqa(
    strata: TypedGraphStore | str | Path,
    papers: Mapping[str, Mapping[str, Any]],
    llm: ChatModel | None,
    *,
    n_questions: int,
    max_papers: int = 5,
    seed: int = 0,
    out_path: str | Path | None = None,
    text_tokens: int = TEXT_TOKENS,
) -> GenerationReport:
    """Generate, ground-check and write BioCDQA-style pairs; see the module docstring.

    ``strata`` is an open :class:`~biorag.kg.stores.interfaces.TypedGraphStore` (any backend), a
    BioStrataKG directory or its ``kg.sqlite``. ``papers`` maps pid -> ``{title, abstract,
    full_text}`` (``full_text`` optional). ``text_tokens`` bounds the papers' text per call.
    ``out_path`` defaults to ``biocdqa.jsonl`` beside the SQLite file (a Neo4j store needs it).
    Raises :class:`BioragError` without an LLM (generation needs a model).
    """
    if llm is None:
        raise BioragError(
            "BioCDQA generation needs an LLM: set llm.backend (openai, hf or mock) in the config"
        )
    if not 1 <= max_papers <= 5:
        raise BioragError(f"max_papers must be 1..5, got {max_papers}")
    out = Path(out_path) if out_path is not None else _default_out(strata)
    report = GenerationReport(out_path=str(out), requested=n_questions)
    gen = PromptTemplate.load(PROMPTS, "generate_biocdqa")
    judge = PromptTemplate.load(PROMPTS, "generate_ground")
    store, owned = _open(strata)
    try:
        records = await _generate(store, papers, llm, gen, judge, report, text_tokens,
                                  (n_questions, max_papers, seed))  # fmt: skip
    finally:
        if owned:
            store.close()
    report.kept = len(records)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    write_text_atomic(out, text)
    return report


async def _generate(
    store: TypedGraphStore,
    papers: Mapping[str, Mapping[str, Any]],
    llm: ChatModel,
    gen: PromptTemplate,
    judge: PromptTemplate,
    report: GenerationReport,
    text_tokens: int,
    picking: tuple[int, int, int],
) -> list[dict[str, Any]]:
    """One pair per picked group (``picking``: how many, their size, the seed)."""
    n_questions, max_papers, seed = picking
    groups = pick_groups(store, list(papers), n_questions, max_papers, seed)
    rng = random.Random(seed + 1)
    records: list[dict[str, Any]] = []
    seen_q: set[str] = set()
    for group in groups:
        report.groups += 1
        qtype = rng.choice(MULTI_TYPES if len(group) > 1 else SINGLE_TYPES)
        facts = ""
        if qtype in STRUCTURED:
            found, from_family = family_facts(store, group, qtype)
            report.family_fallbacks += not from_family
            facts = await facts_block(llm, found)
        context = (text_tokens, facts)
        kept = await _group_pair(llm, gen, judge, group, qtype, papers, seen_q, report, context)
        if kept is None:
            continue
        pair, docs = kept
        seen_q.add(pair["question"].lower())
        records.append({"id": f"g{len(records):04d}", **pair, "documents_pid": docs})
        report.by_type[pair["type"]] = report.by_type.get(pair["type"], 0) + 1
    return records
