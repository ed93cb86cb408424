"""Entity normalization against a :class:`~biorag.strata.vocab.Vocabulary`.

For a mention and its type: an exact name/synonym match of the same type wins outright. Otherwise
the top 5 entries of each source vocabulary serving the mention's type (MeSH, UniProt: as the
paper) by embedding similarity over names and synonyms are candidates;
with an LLM it picks one (stage ``strata_normalize``, JSON ``{"choice": <index or null>}``),
without one the best candidate is taken when its similarity is at least ``threshold`` (0.85).
A chosen entry is only accepted when its type equals the mention's type, so a homonym (``CAD``
the gene, ``CAD`` coronary artery disease) never merges across types. Anything else becomes an
unnormalized node keyed by its lower-cased surface under its own type.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from biorag.embed.base import Embedder
from biorag.errors import LLMError, LLMUnavailableError
from biorag.kg.stores.interfaces import node_key
from biorag.llm import budget
from biorag.llm.accounting import note_fallback
from biorag.llm.base import ChatModel
from biorag.llm.evidence import neutralize
from biorag.llm.prompts import PromptTemplate
from biorag.strata import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.strata.vocab import VocabEntry, Vocabulary

log = logging.getLogger(__name__)

NORMALIZE_PROMPT = PromptTemplate.load("biorag.strata.prompts", "strata_normalize")
NORMALIZE_SCHEMA = {
    "type": "object",
    "properties": {"choice": {"type": ["integer", "null"]}},
    "required": ["choice"],
}


@dataclass(frozen=True)
class Normalized:
    """Where a mention went: node type/key/name, the vocabulary id if any, and how."""

    type: str
    key: str
    name: str
    vocab_id: str | None
    method: str  # exact | llm | vector | new


def mention_key(mention: str, type_: str) -> tuple[str, str]:
    """What the normalizer's results are keyed by: the mention with its whitespace collapsed,
    lower-cased, and its type."""
    return " ".join(mention.split()).lower(), type_


def source_of(entry: VocabEntry) -> str:
    """The vocabulary an entry comes from, by its id prefix (``MESH:``, ``UNIPROT:``; genes
    taken from a UniProt file, ``GENE:``, count as UniProt; an id without a prefix: ``local``)."""
    prefix = entry.id.split(":", 1)[0].upper() if ":" in entry.id else "LOCAL"
    return "UNIPROT" if prefix == "GENE" else prefix


class Normalizer:
    """Normalizes (mention, type) pairs; results are cached per lower-cased mention and type."""

    def __init__(
        self,
        vocab: Vocabulary,
        embedder: Embedder | None = None,
        llm: ChatModel | None = None,
        *,
        threshold: float = 0.85,
        top_k: int = 5,
    ) -> None:
        self.vocab = vocab
        self.embedder = embedder
        self.llm = llm
        self.threshold = threshold
        self.top_k = top_k
        self._sources_built: dict[str, tuple[list[VocabEntry], np.ndarray | None, set[str]]] = {}
        self._built = False
        self._cache: dict[tuple[str, str], Normalized] = {}
        #: LLM choices: ``asked``, ``answered`` (a usable choice, "none" included), ``failed``
        self.stats: Counter[str] = Counter()

    @property
    def _sources(self) -> dict[str, tuple[list[VocabEntry], np.ndarray | None, set[str]]]:
        """One surface matrix per source vocabulary (the paper takes the top 5 candidates from
        each database: MeSH for diseases and drugs, UniProt for genes and proteins), embedded
        on first use: a normalizer primed with results computed elsewhere never embeds them."""
        if not self._built:
            by_source: dict[str, list[tuple[str, VocabEntry]]] = {}
            for surface, entry in self.vocab.surfaces():
                by_source.setdefault(source_of(entry), []).append((surface, entry))
            for src, pairs in by_source.items():
                emb = self.embedder
                matrix = emb.embed([s for s, _ in pairs]) if emb is not None else None
                entries = [e for _, e in pairs]
                self._sources_built[src] = (entries, matrix, {e.type for e in entries})
            self._built = True
        return self._sources_built

    def prime(self, results: list[tuple[str, str, Normalized]]) -> None:
        """Take ``(mention, type, normalized)`` results computed elsewhere (a batch stage's, see
        :mod:`biorag.strata.normalize_mentions`) as if this normalizer had found them."""
        for mention, type_, n in results:
            self._cache[mention_key(mention, type_)] = n

    def candidates(self, mention: str, type_: str | None = None) -> list[tuple[VocabEntry, float]]:
        """Exact matches first (score 1.0), then up to ``top_k`` entries by cosine from each
        source vocabulary (:func:`source_of`) that holds entries of ``type_`` (every vocabulary
        when ``type_`` is None), best first.

        ``type_`` given: exact matches of other types are left out (vector candidates of a
        vocabulary that serves the type are not filtered; the type check happens when choosing).
        """
        out: dict[str, tuple[VocabEntry, float]] = {}
        for e in self.vocab.lookup(mention, type_):
            out.setdefault(e.id, (e, 1.0))
        if self.embedder is None:
            return list(out.values())
        query = None
        scored: dict[str, tuple[VocabEntry, float]] = {}
        for entries, matrix, types in self._sources.values():
            if matrix is None or (type_ is not None and type_ not in types):
                continue
            if query is None:
                query = self.embedder.embed_query(mention)
            sims = matrix @ query
            taken: set[str] = set()
            for i in np.argsort(-sims):
                if len(taken) >= self.top_k:
                    break
                e = entries[int(i)]
                if e.id in taken or e.id in out:
                    continue
                taken.add(e.id)
                if e.id not in scored or scored[e.id][1] < float(sims[int(i)]):
                    scored[e.id] = (e, float(sims[int(i)]))
        return [*out.values(), *sorted(scored.values(), key=lambda p: -p[1])]

    def normalize(self, mention: str, type_: str) -> Normalized:
        mention = " ".join(mention.split())
        ck = mention_key(mention, type_)
        if ck not in self._cache:
            self._cache[ck] = self._normalize(mention, type_)
        return self._cache[ck]

    def normalize_many(self, pairs: list[tuple[str, str]]) -> list[Normalized]:
        """What :meth:`normalize` gives each ``(mention, type)`` pair, in order, with the LLM's
        choices for the pairs that need one asked together (the client keeps its own limit
        of calls in flight)."""
        asking: dict[tuple[str, str], tuple[str, str, list[tuple[VocabEntry, float]]]] = {}
        for mention, type_ in pairs:
            mention = " ".join(mention.split())
            ck = mention_key(mention, type_)
            if ck in self._cache or ck in asking:
                continue
            found, cands = self._without_llm(mention, type_)
            if found is not None:
                self._cache[ck] = found
            else:
                asking[ck] = (mention, type_, cands)
        if asking:
            llm = self.llm
            if llm is None:  # _without_llm() leaves a pair undecided only when there is an LLM
                raise RuntimeError("Normalizer.normalize_many asks without an LLM")
            jobs = [self._choose(m, t, cands) for m, t, cands in asking.values()]
            choices = llm.run_sync(_gather(jobs))
            for (ck, (m, t, cands)), choice in zip(asking.items(), choices, strict=True):
                self._cache[ck] = self._decide(m, t, cands, choice)
        return [self._cache[mention_key(m, t)] for m, t in pairs]

    def _normalize(self, mention: str, type_: str) -> Normalized:
        found, cands = self._without_llm(mention, type_)
        if found is not None:
            return found
        if self.llm is None:  # _without_llm() leaves a pair undecided only when there is an LLM
            raise RuntimeError("Normalizer asks without an LLM")
        choice = self.llm.run_sync(self._choose(mention, type_, cands))
        return self._decide(mention, type_, cands, choice)

    def _without_llm(
        self, mention: str, type_: str
    ) -> tuple[Normalized | None, list[tuple[VocabEntry, float]]]:
        """An exact match, or with no LLM to choose (or no candidate) the threshold's verdict;
        None and the candidates when the LLM is to choose."""
        exact = self.vocab.lookup(mention, type_)
        if exact:
            return _to(exact[0], "exact"), []
        cands = self.candidates(mention, type_)
        if cands and self.llm is not None:
            return None, cands
        return self._by_threshold(mention, type_, cands), cands

    def _decide(
        self, mention: str, type_: str, cands: list[tuple[VocabEntry, float]], choice: Any
    ) -> Normalized:
        if choice is False:  # the call failed: fall back to the threshold
            return self._by_threshold(mention, type_, cands)
        if choice is not None and cands[choice][0].type == type_:
            return _to(cands[choice][0], "llm")
        return _new(mention, type_)

    def _by_threshold(
        self, mention: str, type_: str, cands: list[tuple[VocabEntry, float]]
    ) -> Normalized:
        for e, score in cands:
            if score >= self.threshold and e.type == type_:
                return _to(e, "vector")
            if score < self.threshold:
                break
        return _new(mention, type_)

    async def _choose(self, mention: str, type_: str, cands: list[tuple[VocabEntry, float]]):
        """The LLM's index (int), None for "none", or False when the call failed."""
        llm = self.llm
        if llm is None:  # asked only when there is an LLM
            raise RuntimeError("Normalizer._choose called without an LLM")
        lines = "\n".join(
            f"{i}. {e.name} [{e.type}] (synonyms: {', '.join(e.synonyms[:5]) or '-'})"
            for i, (e, _) in enumerate(cands)
        )
        req = NORMALIZE_PROMPT.request(
            # a mention is a few words of a paper: neutralized, not a passage block
            {"mention": neutralize(mention), "type": type_, "candidates": lines},
            stage="strata_normalize",
            json_schema=NORMALIZE_SCHEMA,
            max_tokens=budget.CHOICE_JSON,
        )
        self.stats["asked"] += 1
        try:
            resp = await llm.chat_json(req)
        except LLMUnavailableError:
            raise  # no model at all: stop, do not run on without it
        except LLMError as e:
            log.warning("strata_normalize failed for %r: %s", mention, e)
            self.stats["failed"] += 1
            note_fallback(llm, "strata_normalize")
            return False
        val = resp.parsed.get("choice") if isinstance(resp.parsed, dict) else False
        if isinstance(val, bool) or not (val is None or isinstance(val, int)):
            self.stats["failed"] += 1
            return False
        self.stats["answered"] += 1
        if isinstance(val, int) and not 0 <= val < len(cands):
            return None
        return val


async def _gather(jobs: list[Any]) -> list[Any]:
    return list(await asyncio.gather(*jobs))


def _to(e: VocabEntry, method: str) -> Normalized:
    return Normalized(e.type, e.id, e.name, e.id, method)


def _new(mention: str, type_: str) -> Normalized:
    return Normalized(type_, node_key(mention), mention, None, "new")
