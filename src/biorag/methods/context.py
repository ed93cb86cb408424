"""What the retrieval baselines share: options, reranking, filling the context, reading it.

The baselines of the CLAIMS paper (section 4.2 and appendix J) all end the same way: ranked
texts (chunks, tree nodes or claims) are added to the reader's context in rank order until the
context limit is reached, then the reader answers from that context (no LLM: the option-scoring
floor over the same texts). :func:`fill_context` is that step; :func:`answer_from_context`
builds the :class:`~biorag.methods.base.Answer` every baseline returns; :func:`read_ranked` is
the two together, from ranked items to the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, TypeVar

from biorag.answer.floor import answer_without_llm
from biorag.answer.reader import (
    read_free_text,
    read_multiple_choice,
    read_multiple_choice_mirage,
    read_multiple_choice_once,
)
from biorag.corpus.tokens import TokenCounter, default_counter
from biorag.errors import BioragError
from biorag.llm.base import ChatModel
from biorag.methods.base import (
    Answer,
    AnswerSentence,
    Evidence,
    QAMethod,
    Question,
    given_passages,
    retrieve_passages,
)
from biorag.methods.details import AnswerDetails
from biorag.methods.exact_step import wants_exact, with_exact
from biorag.methods.stages import stage
from biorag.retrieve.query import build_query, plain_query
from biorag.runtime import Runtime
from biorag.summarize.base import truncate_tokens

T = TypeVar("T")

#: The context limit of every method: the CLAIMS paper's (2,000 tokens), so every method reads
#: the same amount of text.
DEFAULT_TOKEN_LIMIT: int = 2000
READERS = ("two-call", "one-call")
FLOOR_NOTE = "no-LLM floor (configure [llm] for a real reader)"


def fill_context(
    texts_ranked: Sequence[str],
    token_limit: int = DEFAULT_TOKEN_LIMIT,
    counter: TokenCounter | None = None,
) -> list[str]:
    """The texts, in rank order, added while their token total stays within ``token_limit``.

    Filling stops at the first text that does not fit ("until the context limit is reached");
    a first text that alone exceeds the limit is cut to it, so the context is never empty when
    there is text. Empty texts are skipped. Counts use ``counter`` (default: the bundled
    WordPiece tokenizer), whose pre-tokenizer splits on whitespace, so the texts joined by blank
    lines count exactly the sum of their counts.
    """

    counter = counter or default_counter()
    out: list[str] = []
    used = 0
    for text in texts_ranked:
        if not text or not text.strip():
            continue
        n = counter.count(text)
        if used + n > token_limit:
            if not out and token_limit > 0:
                cut = truncate_tokens(text, token_limit, counter)
                if cut:
                    out.append(cut)
            break
        out.append(text)
        used += n
    return out


def fill_ranked(
    ranked: Sequence[T],
    key: Callable[[T], str],
    token_limit: int = DEFAULT_TOKEN_LIMIT,
    counter: TokenCounter | None = None,
) -> list[tuple[T, str]]:
    """:func:`fill_context` over items: ``(item, text as it entered the context)`` in rank
    order (the first text may have been cut to the limit; items with empty text are skipped)."""
    kept = [it for it in ranked if key(it) and key(it).strip()]
    texts = fill_context([key(it) for it in kept], token_limit, counter)
    return list(zip(kept, texts, strict=False))


async def rerank(
    rt: Runtime, query: str, items: Sequence[T], key: Callable[[T], str]
) -> list[tuple[T, float]]:
    """``(item, score)`` best first by ``rt.reranker`` against ``query`` (ties keep the input
    order). An LLM judge (``ascore``) runs on this event loop; other rerankers in a worker
    thread (they are synchronous)."""
    if not items:
        return []
    reranker = rt.reranker
    ascore = getattr(reranker, "ascore", None)
    with stage("rerank"):
        if ascore is None:
            return await asyncio.to_thread(reranker.rerank, query, list(items), key)
        import numpy as np

        scores = np.asarray(await ascore(query, [key(it) for it in items]), dtype=np.float64)
        return [(items[i], float(scores[i])) for i in np.argsort(-scores, kind="stable")]


def merge_options(
    method: str, options: dict[str, Any], defaults: dict[str, Any], *, typed: bool = True
) -> dict[str, Any]:
    """``defaults`` updated with ``options``; unknown names and bad readers are clear errors,
    and so (``typed``) is an option whose value does not convert to its default's type (a
    method with checks of its own passes ``typed=False``)."""
    unknown = set(options) - set(defaults)
    if unknown:
        raise BioragError(
            f"unknown {method} option(s) {sorted(unknown)}; allowed: {sorted(defaults)}"
        )
    merged = {**defaults, **(typed_options(method, options, defaults) if typed else options)}
    if "reader" in merged and merged["reader"] not in READERS:
        raise BioragError(f"{method} reader must be one of {READERS}, got {merged['reader']!r}")
    if "token_limit" in merged and int(merged["token_limit"]) < 1:
        raise BioragError(f"{method} token_limit must be at least 1")
    return merged


def typed_options(
    method: str,
    options: dict[str, Any],
    defaults: dict[str, Any],
    nullable: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """``options`` converted to the types of their defaults (a number given as text is read;
    ``"x"`` for a number is a clear error, not a failure halfway through an answer). Options
    whose default is None or text pass as given, and None for those in ``nullable`` (an off
    switch)."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        default = defaults.get(name)
        try:
            if value is None and name in nullable:
                out[name] = None
            elif isinstance(default, bool):
                out[name] = _flag(value)
            elif isinstance(default, float) and not isinstance(value, bool):
                out[name] = float(value)
            elif isinstance(default, int) and not isinstance(value, bool):
                number = float(value)
                if not number.is_integer():
                    raise ValueError(value)
                out[name] = int(number)
            elif isinstance(default, int | float):
                raise ValueError(value)
            else:
                out[name] = value
        except (TypeError, ValueError):
            kinds = {bool: "true or false", int: "a whole number", float: "a number"}
            kind = kinds.get(type(default), type(default).__name__)
            raise BioragError(
                f"{method} option {name} must be {kind} (the default is {default!r}), not {value!r}"
            ) from None
    return out


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError(value)


class Fit(TypedDict):
    """How full the context is: its tokens and the limit it was filled to."""

    context_tokens: int
    token_limit: int


@dataclass
class ContextItem:
    """One text of the context and the retrieved chunks it rests on."""

    text: str
    chunk_ids: list[str] = field(default_factory=list)
    score: float = 0.0
    key: str = ""


async def hyde_retrieve(
    rt: Runtime, question: Question, options: dict[str, Any], *, query_used: bool = True
) -> tuple[Any, list[Any]]:
    """The HyDE query (question + options + candidate answer; no LLM: question + options) and
    the top ``options["k"]`` chunks per index for it (``[retrieval]`` defaults when None).

    ``query_used=False``: the caller uses the query for the search only, so a question that
    brings its passages gets them with the plain query and no HyDE call (nothing to search)."""

    if question.passages and not query_used:
        return plain_query(question.text, question.options), given_passages(question)
    s = rt.settings.retrieval
    query = await build_query(rt.llm, question.text, question.options, rewrite=False, hyde=True)
    k = int(options["k"] if options["k"] is not None else s.k)
    retriever = str(options["retriever"] or s.retriever)
    return query, await retrieve_passages(rt, question, query.text, k, retriever)


def evidence_for(items: Sequence[ContextItem], passages: Sequence[Any]) -> list[Evidence]:
    """The passages behind ``items``, in the order the context first uses them."""
    by_id = {p.chunk_id: p for p in passages}
    seen: set[str] = set()
    out: list[Evidence] = []
    for it in items:
        for cid in it.chunk_ids:
            if cid in by_id and cid not in seen:
                seen.add(cid)
                out.append(Evidence.of_passage(by_id[cid]))
    return out


async def read_ranked(
    method: QAMethod,
    question: Question,
    ranked: Sequence[ContextItem],
    passages: Sequence[Any],
    details: Callable[[list[ContextItem], Fit], AnswerDetails],
    *,
    notes: list[str] | None = None,
    counter: TokenCounter | None = None,
) -> Answer:
    """The ending of the baselines: the ``ranked`` items (best first, each with its score) fill
    the context up to the method's ``token_limit`` option (:func:`fill_ranked`) and its
    ``reader`` reads it (:func:`answer_from_context`).

    ``details(items, fit)`` builds the answer's details from the items in the context (the
    first one's text may have been cut) and their :class:`Fit`.
    """
    counter = counter or default_counter()
    limit = int(method.options["token_limit"])
    filled = fill_ranked(ranked, lambda it: it.text, limit, counter)
    items = [replace(it, text=text) for it, text in filled]
    fit = Fit(context_tokens=sum(counter.count(it.text) for it in items), token_limit=limit)
    return await answer_from_context(
        method.rt,
        method.name,
        question,
        items,
        passages,
        reader=method.options["reader"],
        details=details(items, fit),
        notes=notes,
    )


async def answer_from_context(
    rt: Runtime,
    method: str,
    question: Question,
    items: Sequence[ContextItem],
    passages: Sequence[Any],
    *,
    reader: str = "two-call",
    details: AnswerDetails | None = None,
    notes: list[str] | None = None,
    floor_items: Sequence[ContextItem] | None = None,
    all_evidence: bool = False,
    exact: bool = True,
) -> Answer:
    """Read ``items`` (already filled to the limit, in rank order) and answer ``question``: the
    one answer step of every method that reads a context.

    The context string is the item texts joined by blank lines; evidence is the passages the
    items rest on (``all_evidence``: every passage retrieved). With no LLM the floor answers
    over the same texts, or over ``floor_items`` when there are no items (CLAIMS without
    claims reads its chunks). ``notes`` follow the floor's note.

    Questions scored on an exact answer (BioASQ factoid, list, option-less yes/no) also get it
    (:func:`~biorag.methods.exact_step.with_exact`, from the texts read), unless ``exact`` is
    off because the method draws it itself (IP-RAR, SELF-RAG).
    """
    with stage("answer"):
        ans = await _answer(
            rt, method, question, items, passages, reader, details, notes, floor_items,
            all_evidence,
        )  # fmt: skip
    if not (exact and wants_exact(question)):
        return ans
    texts = [it.text for it in items] or [it.text for it in floor_items or []]
    return await with_exact(rt, question, ans, texts)


async def _answer(
    rt: Runtime,
    method: str,
    question: Question,
    items: Sequence[ContextItem],
    passages: Sequence[Any],
    reader: str,
    details: AnswerDetails | None,
    notes: list[str] | None,
    floor_items: Sequence[ContextItem] | None,
    all_evidence: bool,
) -> Answer:
    texts = [it.text for it in items]
    base: dict[str, Any] = {
        "method": method,
        "question_id": question.id,
        "context": "\n\n".join(texts),
        "evidence": (
            [Evidence.of_passage(p) for p in passages]
            if all_evidence
            else evidence_for(items, passages)
        ),
        "details": details if details is not None else AnswerDetails(),
    }
    notes = list(notes or [])
    llm = rt.llm
    if llm is None:
        floor = list(items) or list(floor_items or [])
        return await _floor_answer(rt, question, floor, base, notes)
    if question.options:
        if rt.settings.answer.prompt == "mirage":
            r = await read_multiple_choice_mirage(llm, question.text, question.options, texts)
        else:
            read = read_multiple_choice_once if reader == "one-call" else read_multiple_choice
            r = await read(
                llm, question.text, question.options, texts or [""], rt.settings.answer.extraction
            )
        return Answer(
            **base,
            answer=r.answer,
            answer_text=r.answer_text,
            raw_output=r.raw_output,
            parse_failed=r.parse_failed,
            llm_used=True,
            notes=notes,
        )
    return await _free_text_answer(llm, question, items, base, notes)


async def _floor_answer(
    rt: Runtime,
    question: Question,
    items: Sequence[ContextItem],
    base: dict[str, Any],
    notes: list[str],
) -> Answer:
    """The no-LLM floor's answer over ``items`` (in a worker thread), its sentences cited."""

    key_of = {f"ctx{i}": it.chunk_ids for i, it in enumerate(items)}
    res = await asyncio.to_thread(
        answer_without_llm,
        question.text,
        question.options,
        [(f"ctx{i}", it.text) for i, it in enumerate(items)],
        rt.embedder,
    )
    return Answer(
        **base,
        answer=res.answer,
        answer_text=res.answer_text,
        sentences=[AnswerSentence(text=s, chunk_ids=key_of.get(k, [])) for s, k in res.sentences],
        notes=[FLOOR_NOTE, *notes, res.rationale],
    )


async def _free_text_answer(
    llm: ChatModel,
    question: Question,
    items: Sequence[ContextItem],
    base: dict[str, Any],
    notes: list[str],
) -> Answer:
    """The model's cited free-text answer; each sentence carries the chunks it cites."""

    r = await read_free_text(llm, question.text, [it.text for it in items])
    return Answer(
        **base,
        answer=r.answer,
        answer_text=r.answer_text,
        raw_output=r.raw_output,
        sentences=[
            AnswerSentence(
                text=s,
                # in citation order, each chunk once
                chunk_ids=list(dict.fromkeys(c for i in cites for c in items[i - 1].chunk_ids)),
            )
            for s, cites in r.sentences
        ],
        llm_used=True,
        notes=notes,
    )
