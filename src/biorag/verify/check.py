"""Check an answer's sentences against the passages they cite (:func:`verify_answer`), the
step every ask ends with (:mod:`biorag.asking`) unless ``answer.verify = "off"``.

Which verifier: ``answer.verifier = "rules"`` (claim alignment, no LLM, :mod:`.align`),
``"llm"`` (:mod:`.llm_verifier`), or ``"auto"``: the LLM one when there is a model and its
estimated cost is under ``answer.verify_max_share`` (20%) of the answer's size (the estimated
tokens of the context it was read from and its question: a number a cached rerun gives again,
unlike the accounted tokens), else the rules one (a note says why). ``answer.verify = "on"``
takes the named verifier at any cost (``auto``: the LLM one when there is a model).

Under the rules verifier a sentence no cited passage supports fully alone is checked against
its passages together (:mod:`.joint`); the LLM verifier judges each passage alone.

A cited id that is not in the answer's evidence is reported in the sentence's
``unknown_citations`` (never dropped); a sentence that cites nothing, or only unknown ids, is
not supported; an empty passage is not supported.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from biorag.config import AnswerSettings
from biorag.embed.base import Embedder
from biorag.errors import LLMError
from biorag.llm.base import ChatModel
from biorag.verify.align import Thresholds, candidate_spans, verify_pairs
from biorag.verify.joint import joint_support
from biorag.verify.llm_verifier import Pair, estimate_tokens, verify_with_llm
from biorag.verify.models import (
    LABELS,
    JointSupport,
    PassageVerdict,
    SentenceSupport,
    Verification,
    evidence_key,
)
from biorag.verify.support import union_label


class _Sentence(Protocol):
    text: str
    chunk_ids: list[str]
    support: SentenceSupport | None


class _Evidence(Protocol):
    @property
    def text(self) -> str: ...

    def model_dump(self) -> dict[str, Any]: ...


class Answer(Protocol):
    """What the check reads and writes of an answer (a :class:`biorag.methods.base.Answer`;
    verify imports nothing of the methods)."""

    @property
    def sentences(self) -> Sequence[_Sentence]: ...

    @property
    def evidence(self) -> Sequence[_Evidence]: ...

    verification: Verification | None
    notes: list[str]


RULES_NOTE = (
    "sentences checked by claim alignment (no LLM: word and embedding similarity with "
    "negation, number and direction agreement; the cited passages together where none "
    "supports a sentence alone), a floor"
)


def cited_pairs(answer: Answer) -> tuple[list[Pair], dict[int, list[str]]]:
    """The (sentence, cited passage) pairs of ``answer`` and, per sentence (0-based), the
    cited ids its evidence does not hold."""
    text_of: dict[str, str] = {}
    for i, e in enumerate(answer.evidence, 1):
        key = evidence_key(e.model_dump(), i)
        if key is not None:
            text_of.setdefault(key, e.text)
    pairs: list[Pair] = []
    unknown: dict[int, list[str]] = {}
    for n, s in enumerate(answer.sentences):
        for cid in dict.fromkeys(s.chunk_ids):
            if cid in text_of:
                pairs.append(Pair(n + 1, s.text, cid, text_of[cid]))
            else:
                unknown.setdefault(n, []).append(cid)
    return pairs, unknown


def choose_verifier(
    settings: AnswerSettings, llm: ChatModel | None, pairs: list[Pair], answer_tokens: int
) -> tuple[str, str]:
    """("rules" | "llm", why) for this answer."""
    if settings.verifier == "rules" or llm is None:
        return "rules", ""
    if settings.verifier == "llm" or settings.verify == "on":
        return "llm", ""
    cost = estimate_tokens(pairs)
    if cost <= settings.verify_max_share * answer_tokens:
        return "llm", ""
    return "rules", (
        f"the LLM check would cost about {cost} tokens, over {settings.verify_max_share:.0%} of "
        f'the answer\'s {answer_tokens}: checked by rules instead (answer.verify = "on" to use '
        "the model)"
    )


A = TypeVar("A", bound=Answer)


async def verify_answer(
    answer: A,
    settings: AnswerSettings,
    embedder: Embedder | Callable[[], Embedder],
    llm: ChatModel | None,
    answer_tokens: int = 0,
) -> A:
    """``answer`` with a :class:`SentenceSupport` on each sentence and its ``verification``.

    ``embedder`` may be a function giving it (called only when some sentence cites a passage:
    an answer with no citations loads no model). A failed LLM check (the server down, say) is
    no failed answer: the pairs are checked by rules and a note says why."""
    if settings.verify == "off" or not answer.sentences:
        return answer
    start = time.perf_counter()
    pairs, unknown = cited_pairs(answer)
    kind, note = choose_verifier(settings, llm, pairs, answer_tokens)
    th = Thresholds(
        settings.verify_supported, settings.verify_partial, settings.verify_contradicted
    )
    triples = [(p.sentence, p.passage_id, p.passage) for p in pairs]
    rules = []

    def model() -> Embedder:  # resolved in a worker thread (a first use loads a model)
        return embedder if isinstance(embedder, Embedder) else embedder()

    if pairs:
        rules = await asyncio.to_thread(lambda: verify_pairs(triples, model(), th))
    by_pair = {(p.sentence_no, p.passage_id): v for p, v in zip(pairs, rules, strict=True)}
    tokens_before = _tokens(llm)
    if kind == "llm" and pairs:
        assert llm is not None
        try:
            got, unreadable = await verify_with_llm(llm, pairs)
        except LLMError as e:
            got, unreadable = {}, len(pairs)
            note = f"the LLM check failed ({e}); "
        if not got:
            kind = "rules"  # the model gave no verdict at all: every pair is the rules'
        fallbacks = sum(k not in got for k in by_pair)
        for key, v in got.items():
            if v.span is None:  # the model's span is not in the passage: the aligned one
                v.span = by_pair[key].span
            by_pair[key] = v
        if fallbacks and kind == "llm":
            note += (
                f"{fallbacks} of {len(pairs)} pairs had no usable verdict from the model "
                f"({unreadable} unreadable answers): checked by rules"
            )
    verdicts: dict[int, list[PassageVerdict]] = {}
    for p in pairs:
        verdicts.setdefault(p.sentence_no - 1, []).append(by_pair[(p.sentence_no, p.passage_id)])
    joints: dict[int, JointSupport | None] = {}
    if kind == "rules" and any(len(vs) > 1 for vs in verdicts.values()):
        sentences = [s.text for s in answer.sentences]

        def run_joint() -> dict[int, JointSupport | None]:
            m = model()
            return {n: joint_support(sentences[n], vs, m, th) for n, vs in verdicts.items()}

        joints = await asyncio.to_thread(run_joint)
    counts: dict[str, int] = dict.fromkeys(LABELS, 0)
    for n, s in enumerate(answer.sentences):
        vs, joint = verdicts.get(n, []), joints.get(n)
        s.support = SentenceSupport(
            label=union_label(vs, joint), verdicts=vs, joint=joint,
            unknown_citations=unknown.get(n, []),
        )  # fmt: skip
        counts[s.support.label] += 1
    answer.verification = Verification(
        verifier=kind,  # type: ignore[arg-type]
        sentences=len(answer.sentences),
        counts=counts,
        uncited=sum(not s.chunk_ids for s in answer.sentences),
        unknown_citations=sum(len(u) for u in unknown.values()),
        tokens=_tokens(llm) - tokens_before if kind == "llm" else 0,
        seconds=round(time.perf_counter() - start, 4),
        note=" ".join(x for x in (RULES_NOTE if kind == "rules" else "", note) if x),
    )
    if answer.verification.unknown_citations:
        answer.notes.append(
            f"{answer.verification.unknown_citations} cited passage id(s) are not in the "
            "evidence (see each sentence's unknown_citations)"
        )
    return answer


def _tokens(llm: ChatModel | None) -> int:
    if llm is None:
        return 0
    total: Any = llm.accounting.total()
    return int(total.prompt_tokens + total.completion_tokens)


__all__ = ["candidate_spans", "choose_verifier", "cited_pairs", "verify_answer"]
