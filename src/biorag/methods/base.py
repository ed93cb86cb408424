"""What every QA method takes and returns (the runtime it draws its components from is
:mod:`biorag.runtime`)."""

from __future__ import annotations

import abc
import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_serializer

from biorag.corpus.datasets.base import Question
from biorag.methods.details import AnswerDetails, ContextFit, MethodDetails
from biorag.runtime import Runtime
from biorag.verify.models import SentenceSupport, Verification, evidence_key


class AnswerSentence(BaseModel):
    """One sentence of an answer, the passages it cites (evidence keys: a chunk id, or
    ``triplet:<rank>`` for a knowledge-graph triplet) and, once checked, its support."""

    text: str
    chunk_ids: list[str] = Field(default_factory=list)
    support: SentenceSupport | None = Field(
        default=None, description="the verdict on this sentence against the passages it cites"
    )


class Evidence(BaseModel):
    """One piece of evidence an answer rests on, in the order the method used them: a retrieved
    chunk (``kind="chunk"``: where it is in which document of which corpus) or a knowledge-graph
    triplet (``kind="triplet"``: VectorGraphRAG). Serialized without the other kind's fields."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["chunk", "triplet"] = "chunk"
    text: str
    score: float = 0.0
    rank: int = 0
    source_id: str = ""
    chunk_id: str | None = None
    doc_id: str | None = None
    title: str | None = None
    corpus: str | None = None
    retriever: str | None = None
    start: int | None = None
    end: int | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    model: str | None = None

    @classmethod
    def of_passage(cls, passage: Any) -> Evidence:
        """The evidence of a retrieved :class:`~biorag.retrieve.search.Passage`."""
        return cls.model_validate(passage.to_dict())

    @model_serializer(mode="wrap")
    def _without_empty_fields(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class Answer(BaseModel):
    """A method's answer with the evidence it rests on."""

    method: str
    question_id: str
    answer: str = Field(description="option letter for multiple-choice questions, else text")
    answer_text: str = ""
    sentences: list[AnswerSentence] = Field(default_factory=list)
    exact: str | list[str] | None = Field(
        default=None,
        description="the exact answer by question type, when the method gives one: 'yes'/'no', "
        "up to 5 ranked factoid candidates, or the items of a list answer",
    )
    parse_failed: bool = False
    raw_output: str = ""
    context: str = Field(default="", description="the context the reader was given, if any")
    evidence: list[Evidence] = Field(default_factory=list)
    llm_used: bool = False
    notes: list[str] = Field(default_factory=list)
    details: MethodDetails = Field(
        default_factory=AnswerDetails,
        description="how the method answered: its typed trace (biorag.methods.details)",
    )
    accounting: dict[str, Any] = Field(
        default_factory=dict,
        description="this answer's LLM calls, cache hits and tokens per stage, and its "
        "wall-clock seconds (wall_s); {} until biorag.asking.ask fills it",
    )
    verification: Verification | None = Field(
        default=None,
        description="how the sentences' support was checked (biorag.verify); None: not checked",
    )
    _trace: Any = PrivateAttr(default=None)

    @property
    def trace(self) -> Any:
        """What the method built on the way, in memory and not serialized (CLAIMS: its
        :class:`~biorag.methods.claims.ClaimsRun`, with the local claim graph); None for
        methods that keep nothing beyond ``details``."""
        return self._trace

    def with_trace(self, trace: Any) -> Answer:
        self._trace = trace
        return self


def evidence_numbers(answer: dict[str, Any]) -> dict[str, int]:
    """Each cited id's 1-based position in the answer's ``evidence`` (as dumped)."""
    number: dict[str, int] = {}
    for i, e in enumerate(answer.get("evidence") or [], 1):
        key = evidence_key(e, i)
        if key is not None:
            number.setdefault(key, i)
    return number


SUPPORT_MARK = {"not_supported": "unsupported", "contradicted": "contradicted"}


def cited_sentences(answer: dict[str, Any], marks: bool = True) -> list[str]:
    """An answer's sentences (as :meth:`Answer.model_dump` gives it), each followed by ``[n]``
    markers: the 1-based positions in ``evidence`` of the passages it cites; with ``marks``, a
    checked sentence its citations do not support or contradict ends in ``(unsupported)`` or
    ``(contradicted)``, and one that cites nothing in ``(no source cited)``."""
    number = evidence_numbers(answer)
    out = []
    for s in answer.get("sentences") or []:
        cites = "".join(f"[{number[c]}]" for c in s["chunk_ids"] if c in number)
        label = (s.get("support") or {}).get("label")
        mark = ""
        if marks and s.get("support") and not s["chunk_ids"]:
            mark = " (no source cited)"
        elif marks and label in SUPPORT_MARK:
            mark = f" ({SUPPORT_MARK[label]})"
        out.append(f"{s['text']} {cites}".rstrip() + mark)
    return out


def given_passages(question: Question) -> list[Any]:
    """The question's own passages as retrieval results (corpus ``given``, in their order)."""
    from biorag.retrieve.search import Passage

    return [
        Passage(
            chunk_id=f"given:{question.id}:{i}",
            doc_id=f"given:{question.id}",
            source_id=question.id,
            title="",
            text=text,
            score=1.0,
            rank=i + 1,
            corpus="given",
            retriever="given",
            start=0,
            end=len(text),
        )
        for i, text in enumerate(question.passages)
    ]


async def retrieve_passages(
    rt: Runtime, question: Question, query: str, k: int, retriever: str
) -> list[Any]:
    """The question's given passages, or the top ``k`` chunks per index for ``query`` (masked
    with the question's labels when it carries a ``mask_mapping``)."""
    if question.passages:
        return given_passages(question)
    from biorag.methods.stages import stage

    with stage("retrieve"):
        if question.mask_mapping is None:
            return (await asyncio.to_thread(rt.searcher.search, [query], k, retriever, "chunk"))[0]
        from biorag.extract.masking import EntityMasker, MaskScope

        scope = MaskScope(EntityMasker(rt.llm), question.mask_mapping)
        real = scope.unmask(query)
        found = await asyncio.to_thread(rt.searcher.search, [real], k, retriever, "chunk")
        return await scope.mask_passages(found[0])


class QAMethod(abc.ABC):
    """A QA method: ``answer`` runs it on one question.

    Every subclass's ``answer`` is wrapped (:func:`_with_context_trace`) so that passages the
    LLM layer dropped to fit the model's context window show in the answer:
    ``details["context_fit"]`` lists each fitted request and a note counts the dropped ones.
    """

    name: str = ""
    needs_index: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "answer" in cls.__dict__ and not getattr(cls.answer, "_context_traced", False):
            # mypy cannot type a wrapper assigned over a method (the wrapper's self is Any)
            cls.answer = _with_context_trace(cls.answer)  # type: ignore[method-assign,assignment]

    def __init__(self, runtime: Runtime, **options: Any):
        self.rt = runtime
        self.options = options

    @abc.abstractmethod
    async def answer(self, question: Question) -> Answer: ...

    def answer_sync(self, question: Question) -> Answer:
        return asyncio.run(self.answer(question))


def _with_context_trace(
    answer: Callable[[Any, Question], Coroutine[Any, Any, Answer]],
) -> Callable[[Any, Question], Coroutine[Any, Any, Answer]]:
    """``answer`` recording the context fitting of its LLM requests into the answer."""
    from biorag.llm.context import collect_fits

    @functools.wraps(answer)
    async def traced(self: Any, question: Question) -> Answer:
        with collect_fits() as fits:
            result = await answer(self, question)
        if fits:
            result.details.context_fit = [
                *result.details.context_fit,
                *(ContextFit.model_validate(f) for f in fits),
            ]
            dropped = sum(len(f["dropped"]) for f in fits)
            if dropped:
                prompts = sum(bool(f["dropped"]) for f in fits)
                result.notes.append(
                    f"{dropped} lowest-ranked passage(s) left out of {prompts} prompt(s) to fit "
                    "the model's context window (details.context_fit)"
                )
            trimmed = sum(len(f.get("trimmed", [])) for f in fits)
            if trimmed:
                result.notes.append(
                    f"{trimmed} passage(s) cut to their first sentences: a prompt with one "
                    "passage was still longer than the context window (details.context_fit)"
                )
        return result

    traced._context_traced = True  # type: ignore[attr-defined]
    return traced
