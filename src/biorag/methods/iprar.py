"""IP-RAR: integrated reasoning-based retrieval, then progressive reasoning-based generation.

Section 4.3 of the IP-RAR paper. Steps:

1. pre-retrieval reasoning (one call, ``iprar_prereason``): keywords, their synonyms and a
   virtual (hypothetical) answer. No LLM: the question's content words and bigrams (stop words
   removed), no synonyms, and question + options as the virtual answer;
2. multi-level x multi-granularity retrieval (section 4.3.1): at the abstract level and the
   full-text level, the top ``k`` by dense similarity to the question and to the virtual
   answer; at the levels of ``keyword_levels`` (default the full-text level only, as in the
   paper; ``["abstract", "fulltext"]`` adds an abstract-level keyword list), the top ``k`` by
   BM25 over keywords + synonyms. Lists are named ``<granularity>@<level>`` (five by default).
   The levels come from one of two sources, recorded in ``details["levels"]``:

   * split corpora (the paper): ``abstract_corpus`` and ``fulltext_corpus`` name two of the
     ``--index`` corpora (manifest names, ``biorag index build --name``; e.g. built from one
     papers file with ``--format paper-abstracts`` and ``paper-fulltexts``). The abstract
     level is a chunk-level search of the abstract corpus only, the full-text level one of the
     full-text corpus only; other indexes are not searched. Both or neither must be set;
   * the proxy (neither set; what the benchmarks use, whose corpora have no full texts): one
     search over all indexes, the abstract level at document level (each document's best
     chunk), the full-text level at chunk level.

   A question with given passages searches those passages at both levels, whatever the
   options (they are embedded here; they form one document, so the abstract level holds its
   best passage);
3. the aggregator (:mod:`biorag.retrieve.aggregate`) ranks the union; a keyword list's
   similarity is the chunk's cosine to the question. ``R_i`` counts the retrieved chunks of
   the same article: with split corpora the paper (``source_id`` = pid, which the abstract and
   the full text share while their document ids differ), in the proxy and for given passages
   the document (``doc_id``, unchanged). ``details["same_doc_by"]`` says which; the
   ``aggregated`` rows always carry the chunk's own ``doc_id`` and its ``source_id``;
4. progressive generation (:mod:`biorag.methods.iprar_generate`): a relevance check in ranked
   order (``iprar_relevance``, one Yes/No call per chunk; ``relevance_batch`` > 1 asks about
   several chunks per call, ``iprar_relevance_batch``) until ``relevant_target`` are relevant
   (fewer when the list ends; the top ``relevant_target`` when none is), a draft answer from
   them (``iprar_answer``), support scores 0-100 per chunk (``iprar_support``, one JSON call),
   and the final answer over the chunks scoring >= ``support_min`` (else the best 3) by the
   reasoning model: the project reader for multiple-choice questions (stages
   ``answer``/``answer_extract``), else ``iprar_final``. No LLM: relevant = cosine to the
   question >= ``relevance_threshold``, support = cosine x 100, and the floor answers over the
   chosen chunks. The reasoning model is ``[llm]`` updated with ``reasoning_model`` (a dict of
   ``[llm]`` keys; else the main model), built once per runtime
   (:meth:`~biorag.methods.base.Runtime.llm_variant`: one backend for a whole evaluation run),
   its calls counted in the question's accounting;
5. the BioASQ exact answer (``exact_answer``; factoid, list and option-less yes/no questions):
   the main model (stage ``exact_answer``; the floor when that call fails) or the no-LLM floor
   over the final chunks and the final answer, in ``Answer.exact`` and
   ``details["exact_answer"]``.

Options (:data:`DEFAULTS`) are checked at construction (:func:`check_options`): a wrong type or
value, or an unknown ``reasoning_model`` key, is a one-line :class:`BioragError`.

Table 5 ablations: "w/o integrated retrieval" = ``use_keywords=False, use_virtual_answer=False,
use_abstract_level=False, use_aggregator=False, k=50``; "w/o progressive generation" =
``use_relevance_check=False, use_support_scores=False`` (top ``relevant_target`` chunks);
"w/o retrieval" is the ``closed_book`` method.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
from typing import Any, Literal

import numpy as np

from biorag.errors import BioragError
from biorag.extract.masking import EntityMasker, MaskScope
from biorag.llm.base import ChatModel
from biorag.llm.shared import variant_settings
from biorag.methods import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.methods.base import Answer, QAMethod, Question, given_passages
from biorag.methods.context import merge_options
from biorag.methods.details import IPRARDetails
from biorag.methods.iprar_generate import PROMPTS, ProgressiveGeneration, numbered
from biorag.methods.iprar_prompts import PREREASON_SCHEMA
from biorag.methods.stages import stage
from biorag.retrieve.aggregate import DEFAULT_WEIGHTS, aggregate, by_similarity
from biorag.retrieve.bm25 import ENGLISH_STOP_WORDS, BM25Index
from biorag.retrieve.index import read_manifest
from biorag.runtime import Runtime

__all__ = ["DEFAULTS", "IPRAR", "PROMPTS", "numbered", "plain_keywords"]

DEFAULTS: dict[str, Any] = {
    "k": 10,
    "weights": list(DEFAULT_WEIGHTS),
    "relevant_target": 5,
    "use_keywords": True,
    "use_virtual_answer": True,
    "use_abstract_level": True,
    "use_fulltext_level": True,
    "use_aggregator": True,
    "use_relevance_check": True,
    "use_support_scores": True,
    "support_min": 50.0,
    "support_fallback": 3,
    "relevance_threshold": 0.3,
    "relevance_batch": 1,
    "reasoning_model": None,
    "exact_answer": True,
    "keyword_levels": ["fulltext"],
    "abstract_corpus": None,
    "fulltext_corpus": None,
}
#: The proxy's search level for each IP-RAR level (one index, no full texts).
LEVELS = {"abstract": "doc", "fulltext": "chunk"}
_PROXY = {"abstract": "doc-level proxy", "fulltext": "chunk-level proxy"}
_GIVEN = {"abstract": "given passages (doc level)", "fulltext": "given passages (chunk level)"}
_WORD = re.compile(r"[A-Za-z0-9][\w\-]*")
_POSITIVE_INTS = ("k", "relevant_target", "support_fallback", "relevance_batch")
_NUMBERS = ("support_min", "relevance_threshold")
_BOOLS = tuple(name for name, value in DEFAULTS.items() if isinstance(value, bool))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_options(o: dict[str, Any]) -> None:
    """Raise :class:`BioragError` naming the first option of ``o`` (merged with
    :data:`DEFAULTS`) whose type or value is wrong, and what it allows. The corpora are checked
    by :func:`_level_corpora`, ``reasoning_model``'s keys and values by
    :func:`~biorag.llm.shared.variant_settings`."""
    for name in _BOOLS:
        if not isinstance(o[name], bool):
            raise BioragError(f"iprar {name} must be true or false, got {o[name]!r}")
    for name in _POSITIVE_INTS:
        v = o[name]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise BioragError(f"iprar {name} must be a positive integer, got {v!r}")
    for name in _NUMBERS:
        if not _is_number(o[name]):
            raise BioragError(f"iprar {name} must be a number, got {o[name]!r}")
    w = o["weights"]
    if not isinstance(w, list | tuple) or len(w) != 3 or not all(_is_number(x) for x in w):
        raise BioragError(
            "iprar weights must be 3 numbers (similarity, retrieval methods, same document; "
            f"default {list(DEFAULT_WEIGHTS)}), got {w!r}"
        )
    kl = o["keyword_levels"]
    if (
        not isinstance(kl, list | tuple)
        or not all(isinstance(x, str) and x in LEVELS for x in kl)
        or len(set(kl)) != len(kl)
    ):
        raise BioragError(
            f"iprar keyword_levels must be a list of distinct levels among {list(LEVELS)} "
            f'(default ["fulltext"], the paper), got {kl!r}'
        )


def plain_keywords(question: str) -> list[str]:
    """The question's content words, then bigrams of adjacent content words (no stop words)."""

    words = [w.lower() for w in _WORD.findall(question)]
    keep = [w if len(w) > 1 and w not in ENGLISH_STOP_WORDS else None for w in words]
    grams = [w for w in keep if w] + [f"{a} {b}" for a, b in itertools.pairwise(keep) if a and b]
    return list(dict.fromkeys(grams))


def _level_corpora(abstract: Any, fulltext: Any) -> dict[str, str] | None:
    """``{"abstract": name, "fulltext": name}`` from the two options, None when neither is set;
    raises :class:`BioragError` when only one is set, either is not a name, or they are equal."""
    if abstract is None and fulltext is None:
        return None
    if abstract is None or fulltext is None:
        given, missing = ("abstract", "fulltext") if fulltext is None else ("fulltext", "abstract")
        raise BioragError(
            f"iprar {given}_corpus is set but {missing}_corpus is not; set both (the names of "
            "the abstract index and the full-text index) or neither (the one-index proxy)"
        )
    for level, value in (("abstract", abstract), ("fulltext", fulltext)):
        if not isinstance(value, str) or not value.strip():
            raise BioragError(f"iprar {level}_corpus must be an index name, got {value!r}")
    if abstract == fulltext:
        raise BioragError(
            f"iprar abstract_corpus and fulltext_corpus both name {abstract!r}; index the "
            "abstracts and the full texts separately (formats paper-abstracts and paper-fulltexts)"
        )
    return {"abstract": abstract, "fulltext": fulltext}


class _GivenSource:
    """The question's passages searched in memory, dense (cosine) or BM25, at either level."""

    def __init__(self, question: Question, embedder: Any):

        self.passages = given_passages(question)
        self.embedder = embedder
        self.vectors = np.asarray(embedder.embed([p.text for p in self.passages]))
        self.bm25 = BM25Index.build([p.chunk_id for p in self.passages], question.passages)

    def search(self, query: str, k: int, retriever: str, level: str) -> list[Any]:
        if retriever == "bm25":
            hits = self.bm25.search([query], len(self.passages))[0]
            by_id = {p.chunk_id: p for p in self.passages}
            scored = [(by_id[h.id], float(h.score)) for h in hits]
        else:
            sims = self.vectors @ np.asarray(self.embedder.embed([query]))[0]
            order = np.argsort(-sims, kind="stable")
            scored = [(self.passages[i], float(sims[i])) for i in order]
        out: list[Any] = []
        docs: set[str] = set()
        for p, s in scored:
            if level == "doc" and p.doc_id in docs:
                continue
            docs.add(p.doc_id)
            out.append(p.__class__(**{**p.to_dict(), "score": s, "rank": len(out) + 1}))
        return out[:k]


class IPRAR(ProgressiveGeneration, QAMethod):
    """IP-RAR (see module doc). Options: ``DEFAULTS``."""

    name = "iprar"
    needs_index = True

    def __init__(self, runtime: Runtime, **options: Any):
        merged = merge_options(self.name, options, DEFAULTS, typed=False)  # checked below
        check_options(merged)
        if not (merged["use_abstract_level"] or merged["use_fulltext_level"]):
            raise BioragError("iprar needs use_abstract_level or use_fulltext_level")
        self.corpora = _level_corpora(merged["abstract_corpus"], merged["fulltext_corpus"])
        if (over := merged["reasoning_model"]) is not None:
            variant_settings(runtime.settings, over, "iprar reasoning_model")
            if over.get("backend") == "none":
                raise BioragError('iprar reasoning_model cannot set backend "none"')
        super().__init__(runtime, **merged)
        self._reasoning: ChatModel | None = None
        self._corpora_checked = False
        if self.corpora and self.rt.index_paths:
            self._check_corpora([str(read_manifest(p)["name"]) for p in self.rt.index_paths])

    def _check_corpora(self, names: list[str]) -> None:
        """Raise unless every corpus of ``abstract_corpus``/``fulltext_corpus`` is in ``names``."""
        for level, corpus in (self.corpora or {}).items():
            if corpus not in names:
                raise BioragError(
                    f"iprar {level}_corpus {corpus!r} is not among the indexes "
                    f"({', '.join(map(repr, names)) or 'none'}); add its index or set the "
                    "option to one of these names (an index's manifest name)",
                    param="index",
                )
        self._corpora_checked = True

    def level_sources(self, question: Question) -> dict[str, str]:
        """Where each enabled level searches for ``question`` (``details["levels"]``)."""
        if question.passages:
            modes = _GIVEN
        elif self.corpora:
            modes = {lv: f"corpus:{c}" for lv, c in self.corpora.items()}
        else:
            modes = _PROXY
        return {lv: modes[lv] for lv in LEVELS if self.options[f"use_{lv}_level"]}

    # -- components --------------------------------------------------------------------------
    def reasoning_llm(self) -> ChatModel | None:
        """The final-answer model: the runtime's shared variant of [llm] with the
        ``reasoning_model`` overrides (built once per runtime, its calls in this question's
        accounting), else the main LLM."""
        over = self.options["reasoning_model"]
        if not over or self.rt.llm is None:
            return self.rt.llm
        if self._reasoning is None:
            self._reasoning = self.rt.llm_variant(over)
        return self._reasoning

    # -- 1. pre-retrieval reasoning ----------------------------------------------------------
    async def prereason(self, question: Question) -> dict[str, Any]:
        plain_va = " ".join([question.text, *question.options.values()]).strip()
        llm = self.rt.llm
        if llm is None:
            return {
                "keywords": plain_keywords(question.text),
                "synonyms": {},
                "virtual_answer": plain_va,
            }
        values = {"question": question.text, "options": question.options_block()}
        resp = await self._chat(llm, "iprar_prereason", values, json_schema=PREREASON_SCHEMA)
        got = resp.parsed if isinstance(resp.parsed, dict) else {}
        kws = [str(x).strip() for x in got.get("keywords") or [] if str(x).strip()]
        raw_syn = got.get("synonyms")
        syn_in = raw_syn if isinstance(raw_syn, dict) else {}
        syns = {
            str(k): [str(x) for x in v if str(x).strip()]
            for k, v in syn_in.items()
            if isinstance(v, list)
        }
        va = str(got.get("virtual_answer") or "").strip()
        return {
            "keywords": kws or plain_keywords(question.text),
            "synonyms": syns,
            "virtual_answer": va or plain_va,
            **({"parse_error": resp.parse_error or "no JSON object"} if not got else {}),
        }

    # -- 2. multi-level x multi-granularity retrieval ---------------------------------------
    async def retrieve(self, question: Question, pre: dict[str, Any]) -> tuple[dict, dict]:
        """``(lists, passages)``: list name -> rows of dicts; chunk id -> Passage."""
        o, k = self.options, int(self.options["k"])
        scope = self._mask_scope(question)
        real = scope.unmask if scope is not None else (lambda text: text)
        queries = {"question": (real(question.text), "dense")}
        if o["use_virtual_answer"]:
            queries["virtual"] = (real(pre["virtual_answer"]), "dense")
        if o["use_keywords"]:
            terms = [*pre["keywords"], *(s for v in pre["synonyms"].values() for s in v)]
            queries["keyword"] = (real(" ".join(terms) or question.text), "bm25")
        levels = [lv for lv in LEVELS if o[f"use_{lv}_level"]]
        if question.passages:
            src = await asyncio.to_thread(_GivenSource, question, self.rt.embedder)

            def search(q: str, r: str, lv: str) -> list[Any]:
                return src.search(q, k, r, lv)
        elif self.corpora:
            searcher, corpora = self.rt.searcher, self.corpora
            if not self._corpora_checked and getattr(searcher, "names", None) is not None:
                self._check_corpora(list(searcher.names))

            def search(q: str, r: str, lv: str) -> list[Any]:
                return searcher.search([q], k, r, "chunk", corpora=[corpora[lv]])[0]
        else:
            searcher = self.rt.searcher

            def search(q: str, r: str, lv: str) -> list[Any]:
                return searcher.search([q], k, r, LEVELS[lv])[0]

        lists: dict[str, list[dict[str, Any]]] = {}
        passages: dict[str, Any] = {}
        for gran, (text, retr) in queries.items():
            for lv in levels:
                if gran == "keyword" and lv not in o["keyword_levels"]:
                    continue
                found = await asyncio.to_thread(search, text, retr, lv)
                sims = [p.score for p in found]
                if retr == "bm25":  # similarity for the aggregator: cosine to the question
                    sims = await asyncio.to_thread(
                        self._cosines, real(question.text), [p.text for p in found]
                    )
                rows = []
                for p, s in zip(found, sims, strict=True):
                    passages.setdefault(p.chunk_id, p)
                    row = {
                        "chunk_id": p.chunk_id,
                        "doc_id": p.doc_id,
                        "source_id": p.source_id,
                        "similarity": float(s),
                    }
                    rows.append(row | ({"bm25": p.score} if retr == "bm25" else {}))
                lists[f"{gran}@{lv}"] = rows
        if scope is not None:  # the model sees the retrieved text masked like its question
            masked = await scope.mask_passages(list(passages.values()))
            passages = {p.chunk_id: p for p in masked}
        return lists, passages

    def _mask_scope(self, question: Question) -> Any:
        """The question's masking labels for retrieval (``eval --mask-entities`` on a setting
        that searches), or ``None``: the queries written from the masked question are searched
        with the real names, and what is found is masked with the question's labels."""
        if question.mask_mapping is None or question.passages:
            return None

        return MaskScope(EntityMasker(self.rt.llm), question.mask_mapping)

    # -- 3. aggregation, then 4-5. progressive generation and the exact answer -------------
    async def answer(self, question: Question) -> Answer:
        with stage("prereason"):
            pre = await self.prereason(question)
        with stage("retrieve"):
            lists, passages = await self.retrieve(question, pre)
        # R_i per article: the paper (pid) when the levels are split corpora, else the document.
        by: Literal["doc_id", "source_id"] = (
            "source_id" if self.corpora and not question.passages else "doc_id"
        )
        tuples = {
            n: [(r["chunk_id"], r[by], r["similarity"]) for r in rows] for n, rows in lists.items()
        }
        ranked = (
            aggregate(tuples, self.options["weights"])
            if self.options["use_aggregator"]
            else by_similarity(tuples)
        )
        aggregated = []
        for c in ranked:
            p = passages[c.chunk_id]
            row = {k: v for k, v in c.to_dict().items() if k != "terms"}
            aggregated.append(row | {"doc_id": p.doc_id, "source_id": p.source_id})
        details = IPRARDetails(
            prereasoning=pre,
            levels=self.level_sources(question),
            same_doc_by=by,
            lists=lists,
            aggregated=aggregated,
        )
        with stage("generate"):
            return await self.generate(question, ranked, passages, details)
