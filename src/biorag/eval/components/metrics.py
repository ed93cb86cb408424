"""Component-level metrics of CLAIMS (paper 4.3, appendix L): the metrics themselves.

Every metric returns a :class:`Score`: a float that also carries ``details`` (counts, per-item
values, the detector used), so averages can be pooled over items.

Relation extraction
* :func:`reference_score`: per claim, explicit entity mentions / (mentions + unresolved
  pronoun/demonstrative references), averaged over the claims that have any; a claim with
  neither is skipped (1.0 when no claim has any). Mentions come from a scispaCy/spaCy model
  when one loads (``details["detector"] = "spacy:<model>"``), else from
  :func:`~biorag.extract.rule_based_entities` (``"rule_based"``); references from
  :func:`~biorag.extract.count_references`. Mentions overlapping a reference are not counted.
* :func:`semantic_similarity`: cosine(chunk, its claims joined by spaces), averaged over the
  chunks; a chunk without claims scores 0 (its meaning was all lost).
* :func:`key_claim_retention`: a judge LLM lists the chunk's key claims; for each it says
  whether the method's claims hold its information; the share retained (1.0 with no key claim).

Graph summarization (claims are first split out of a summary by the judge,
:func:`extract_summary_claims`; pass ``summary_claims=`` to reuse them)
* :func:`faithfulness`: share of summary claims the summary's source claims support (empty: 1.0);
* :func:`relevancy`: share of summary claims that help answer the question (empty: 0.0);
* :func:`source_diversity`: ``|covered ∩ input| / |input|`` - the share of the input (retrieved)
  documents with at least one claim in the summaries. Coverage comes from claim provenance
  (each claim's ``doc_id``), or from the judge (:func:`judged_source_docs`, appendix L's
  per-document question).

Yes/no judges read P(yes) from the first token's top logprobs (``yes_no_probability``) and
say yes when ``P(yes) >= 0.5``; without logprobs they parse the answer text; an unparsable
answer counts as no (``details["unparsed"]``). No LLM: these raise :class:`BioragError`.

Graph construction (graph vs semantic communities) lives in
:mod:`biorag.eval.components.communities`;
:func:`biorag.eval.components.evaluate.evaluate_components` runs every metric that applies to one
CLAIMS run.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from biorag.embed.base import Embedder, l2_normalize
from biorag.errors import BioragError, LLMError
from biorag.eval.components import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.extract import rule_based_entities
from biorag.extract.coref import find_references
from biorag.graph.judges import parse_yes_no
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage, numbered_passages
from biorag.llm.prompts import PromptTemplate
from biorag.llm.types import yes_no_probability

PROMPTS = "biorag.eval.components.prompts"
SPACY_MODELS = ("en_core_sci_sm", "en_core_sci_md", "en_core_sci_lg", "en_core_web_sm")
CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
}


class Score(float):
    """A metric value (a plain float in arithmetic and comparisons) with ``details``."""

    details: dict[str, Any]

    def __new__(cls, value: float, **details: Any) -> Score:
        obj = super().__new__(cls, value)
        obj.details = details
        return obj


def _text(x: Any) -> str:
    return x if isinstance(x, str) else x.text


def _bullets(items: Iterable[Any]) -> str:
    """Statements as passage blocks numbered from 1 ('(none)' when there are none)."""
    texts = [_text(x).strip() for x in items]
    return numbered_passages(texts) if texts else "(none)"


def _summary(summary: str) -> str:
    return format_passage("summary", summary)


def _need(llm: ChatModel | None, what: str) -> None:
    if llm is None:
        raise BioragError(
            f"{what} needs a judge LLM, and llm.backend = 'none' has none; "
            "set llm.backend to openai or hf"
        )


@functools.cache
def _template(name: str) -> PromptTemplate:
    return PromptTemplate.load(PROMPTS, name)


# ------------------------------------------------------------------ relation extraction
@functools.cache
def _spacy() -> tuple[Any, str] | None:
    try:
        import spacy
    except ImportError:
        return None
    for name in SPACY_MODELS:
        try:
            return spacy.load(name), name
        except OSError:
            continue
    return None


def entity_detector(prefer: str = "auto") -> str:
    """``"spacy:<model>"`` when ``prefer`` is auto/spacy and a model loads, else "rule_based"."""
    if prefer not in ("auto", "spacy", "rules"):
        raise BioragError(f"entity detector must be auto, spacy or rules, got {prefer!r}")
    found = _spacy() if prefer != "rules" else None
    if found is None and prefer == "spacy":
        raise BioragError(f"no spaCy model is installed (tried {', '.join(SPACY_MODELS)})")
    return f"spacy:{found[1]}" if found else "rule_based"


def explicit_mentions(text: str, detector: str = "rule_based") -> list[str]:
    """Entity mentions of ``text`` that are not themselves pronoun/demonstrative references."""
    refs = [(r.start, r.end) for r in find_references(text)]
    if detector.startswith("spacy:"):
        nlp = _spacy()[0]  # type: ignore[index]
        spans = [(e.start_char, e.end_char, e.text) for e in nlp(text).ents]
    else:
        spans = []
        for phrase in rule_based_entities(text):
            at = text.find(phrase)
            spans.append((at, at + len(phrase), phrase) if at >= 0 else (-1, -1, phrase))
    return [t for s, e, t in spans if not any(s < re and rs < e for rs, re in refs)]


def reference_score(claims: Iterable[Any], detector: str = "auto") -> Score:
    """Decontextualization of claims (``Claim`` objects or texts); see the module docstring."""
    used = entity_detector(detector)
    per_claim: list[float] = []
    skipped = 0
    for c in claims:
        text = _text(c)
        mentions = len(explicit_mentions(text, used))
        total = mentions + len(find_references(text))
        if total == 0:
            skipped += 1
        else:
            per_claim.append(mentions / total)
    value = float(np.mean(per_claim)) if per_claim else 1.0
    return Score(value, detector=used, per_claim=per_claim, n=len(per_claim), skipped=skipped)


def semantic_similarity(
    chunks_texts: Sequence[str] | Mapping[str, str],
    claims_by_chunk: Sequence[Sequence[Any]] | Mapping[str, Sequence[Any]],
    embedder: Embedder,
) -> Score:
    """Chunks as a list (claims as an aligned list of lists) or by id (claims by chunk id)."""
    if isinstance(chunks_texts, Mapping):
        assert isinstance(claims_by_chunk, Mapping)
        texts = list(chunks_texts.values())
        claims = [claims_by_chunk.get(cid, []) for cid in chunks_texts]
    else:
        texts, claims = list(chunks_texts), list(claims_by_chunk)
        if len(texts) != len(claims):
            raise ValueError(f"{len(texts)} chunks but {len(claims)} claim lists")
    joined = [" ".join(_text(c).strip() for c in cl).strip() for cl in claims]
    have = [i for i, j in enumerate(joined) if j]
    sims = np.zeros(len(texts))
    if have:
        vecs = l2_normalize(embedder.embed([texts[i] for i in have] + [joined[i] for i in have]))
        sims[have] = np.clip(np.sum(vecs[: len(have)] * vecs[len(have) :], axis=1), -1.0, 1.0)
    value = float(sims.mean()) if len(texts) else 0.0
    return Score(
        value, per_chunk=sims.tolist(), n=len(texts), without_claims=len(texts) - len(have)
    )


async def _claims_json(llm: ChatModel, name: str, stage: str, **values: Any) -> list[str]:
    text = " ".join(str(v) for v in values.values())
    req = _template(name).request(
        values,
        stage=stage,
        json_schema=CLAIMS_SCHEMA,
        max_tokens=budget.JSON_CLAIMS.for_text(text),
    )
    resp = await llm.chat_json(req)
    if not isinstance(resp.parsed, dict) or not isinstance(resp.parsed.get("claims"), list):
        raise LLMError(
            f"the judge's answer at stage {stage!r} is not {{'claims': [...]}}: "
            f"{resp.parse_error or resp.text[:120]!r}"
        )
    return [str(c).strip() for c in resp.parsed["claims"] if str(c).strip()]


async def key_claims(llm: ChatModel, chunk_text: str) -> list[str]:
    """The key claims of a chunk, as the judge LLM lists them (stage ``eval_key_claims``)."""
    _need(llm, "key claim extraction")
    text = format_passage("passage", chunk_text)
    return await _claims_json(llm, "component_key_claims", "eval_key_claims", text=text)


async def extract_summary_claims(llm: ChatModel, summary: str) -> list[str]:
    """The claims a summary makes, split out by the judge (stage ``eval_summary_claims``)."""
    _need(llm, "summary claim extraction")
    return await _claims_json(
        llm, "component_summary_claims", "eval_summary_claims", summary=_summary(summary)
    )


async def judge_yes(llm: ChatModel, name: str, stage: str, **values: Any) -> float | None:
    """P(yes) of one yes/no judge call (1.0/0.0 from the text without logprobs; None unparsed)."""
    req = _template(name).request(
        values, stage=stage, logprobs=True, top_logprobs=5, max_tokens=budget.YES_NO
    )
    resp = await llm.chat(req)
    p = yes_no_probability(resp)
    if p is not None:
        return p
    answer = parse_yes_no(resp.text)
    return None if answer is None else float(answer)


async def _share_yes(
    llm: ChatModel, name: str, stage: str, items: list[str], empty: float, **values: Any
) -> Score:
    probs = await asyncio.gather(
        *(judge_yes(llm, name, stage, claim=format_passage("claim", c), **values) for c in items)
    )
    yes = [p is not None and p >= 0.5 for p in probs]
    value = sum(yes) / len(yes) if yes else empty
    unparsed = sum(p is None for p in probs)
    return Score(
        value, n=len(yes), yes=sum(yes), p_yes=list(probs), unparsed=unparsed, claims=items
    )


async def key_claim_retention(
    llm: ChatModel, chunk_text: str, method_claims: Sequence[Any], *, keys: list[str] | None = None
) -> Score:
    """Share of the chunk's key claims whose information the method's claims hold."""
    _need(llm, "key claim retention")
    keys = keys if keys is not None else await key_claims(llm, chunk_text)
    score = await _share_yes(
        llm, "component_retained", "eval_retention", keys, 1.0, claims=_bullets(method_claims)
    )
    score.details["key_claims"] = keys
    return score


async def faithfulness(
    llm: ChatModel,
    summary: str,
    source_claims: Sequence[Any],
    *,
    summary_claims: list[str] | None = None,
) -> Score:
    """Share of the summary's claims supported by the claims it was built from."""
    _need(llm, "faithfulness")
    items = await _summary_items(llm, summary, summary_claims)
    sources = _bullets(source_claims)
    judge = ("component_faithful", "eval_faithfulness")
    return await _share_yes(llm, *judge, items, 1.0, summary=_summary(summary), sources=sources)


async def relevancy(
    llm: ChatModel, summary: str, question: str, *, summary_claims: list[str] | None = None
) -> Score:
    """Share of the summary's claims that help answer ``question`` (read in the summary)."""
    _need(llm, "relevancy")
    items = await _summary_items(llm, summary, summary_claims)
    judge = ("component_relevant", "eval_relevancy")
    return await _share_yes(llm, *judge, items, 0.0, summary=_summary(summary), question=question)


async def _summary_items(llm: ChatModel, summary: str, given: list[str] | None) -> list[str]:
    return given if given is not None else await extract_summary_claims(llm, summary)


def source_diversity(
    summaries_claim_docs: Iterable[Iterable[str]], input_docs: Iterable[str]
) -> Score:
    """``|docs covered by the summaries ∩ input docs| / |input docs|`` (0.0 without inputs).

    ``summaries_claim_docs[i]``: the document ids of the claims summary ``i`` covers (or the
    documents :func:`judged_source_docs` found for it).
    """
    inputs = set(input_docs)
    covered = set().union(*(set(d) for d in summaries_claim_docs)) & inputs
    value = len(covered) / len(inputs) if inputs else 0.0
    return Score(value, covered=sorted(covered), n_docs=len(inputs))


async def judged_source_docs(
    llm: ChatModel, summary: str, claims: Sequence[str], documents: Mapping[str, str]
) -> set[str]:
    """Documents some summary claim could have been taken from (one judge call per pair)."""
    _need(llm, "source attribution")
    pairs = [(c, d) for c in claims for d in documents]
    ask = functools.partial(
        judge_yes, llm, "component_derived", "eval_source", summary=_summary(summary)
    )
    probs = await asyncio.gather(
        *(
            ask(claim=format_passage("claim", c), document=format_passage(d, documents[d]))
            for c, d in pairs
        )
    )
    return {d for (_, d), p in zip(pairs, probs, strict=True) if p is not None and p >= 0.5}
