"""Triplet extraction for the VectorGraphRAG knowledge graph (seed 004, Sec. 3.2).

One ``(subject, predicate, object)`` triplet per question-answer pair, built from the question,
its correct answer and (when the dataset has one, e.g. MedMCQA's ``exp``) the explanation:

* ``extract_qa_triplets(pairs, llm)``: one LLM call per pair (stage ``kg_triplets``, reply as
  ``SUBJECT:``/``PREDICATE:``/``OBJECT:`` lines; a bare ``(s, p, o)`` line as the paper's model
  wrote is accepted too). ``batch_size > 1`` numbers many pairs in one call (stage
  ``kg_triplets_batch``, a JSON list back); pairs the batch reply loses or garbles are asked
  again one by one.
* ``extract_text_triplets(texts, llm)``: triplets from free text, one per sentence (stage
  ``kg_triplets_text``) or, with ``mode="claims"``, the claims and triples of
  :func:`biorag.extract.build_extraction`.
* ``llm=None`` (the no-LLM floor): :func:`~biorag.extract.patterns.pattern_triple`, then
  :func:`~biorag.extract.entities.rule_based_triple`, over the explanation sentences naming the
  answer, else the "answer sentence" (the question with the answer appended). Model ``rule-based``.

Empty and malformed triplets (a missing field, a placeholder such as ``n/a``, subject equal to
object) are dropped and reported in :class:`ExtractionReport` as ``(source_id, reason)``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from biorag.corpus.models import Chunk
from biorag.corpus.sentences import sentence_texts
from biorag.extract import build_extraction
from biorag.extract.entities import rule_based_triple
from biorag.extract.parsing import parse_triple_fields
from biorag.extract.patterns import pattern_triple
from biorag.kg import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.kg.models import Triplet, normalize_key
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage, numbered_passages
from biorag.llm.jsonparse import parse_json_lenient
from biorag.llm.prompts import PromptTemplate
from biorag.llm.types import ChatRequest

__all__ = [
    "ExtractionReport",
    "QAPair",
    "extract_qa_triplets",
    "extract_text_triplets",
    "parse_triplet_reply",
    "qa_pairs_from_items",
    "read_explanations",
]

PROMPTS = "biorag.kg.prompts"
RULE_MODEL = "rule-based"
MAX_FIELD_CHARS = 200
WINDOW = 256  # requests in flight per gather (the LLM client limits concurrency itself)
_PLACEHOLDER = frozenset({"", "n/a", "na", "none", "null", "unknown", "-", "?", "...", "tbd"})
_TUPLE = re.compile(r"\(([^()]*)\)")


@dataclass(frozen=True)
class QAPair:
    """A question with its correct answer (and the dataset's explanation, if any)."""

    id: str
    question: str
    answer: str
    explanation: str = ""


@dataclass
class ExtractionReport:
    """The triplets extracted, the dropped ones as ``(source_id, reason)``, and counters
    (``calls``, ``batch_calls``, ``batch_fallbacks``, ``failed_calls``, ``sources``)."""

    triplets: list[Triplet] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)


@cache
def _template(name: str) -> PromptTemplate:
    return PromptTemplate.load(PROMPTS, name)


def qa_pairs_from_items(
    items: Iterable[Any], explanations: dict[str, str] | None = None
) -> list[QAPair]:
    """QA pairs from :class:`~biorag.corpus.datasets.base.QAItem` s with a gold option letter."""
    exp = explanations or {}
    out = []
    for it in items:
        answer = it.options.get(it.gold, "") if isinstance(it.gold, str) else ""
        if answer:
            out.append(QAPair(it.id, it.question, answer, (exp.get(it.id) or "").strip()))
    return out


def read_explanations(path: str | Path, field_name: str = "exp") -> dict[str, str]:
    """``id -> explanation`` from a raw JSON Lines file (MedMCQA keeps it in ``exp``; the
    dataset loader does not copy it)."""
    out: dict[str, str] = {}
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            v = rec.get(field_name) if isinstance(rec, dict) else None
            if isinstance(v, str) and v.strip() and rec.get("id"):
                out[str(rec["id"]).strip()] = v.strip()
    return out


def _clean(value: Any) -> str:
    v = " ".join(str(value if value is not None else "").split()).strip("*_` ")
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1].strip()
    return v


def make_triplet(
    subject: Any, predicate: Any, obj: Any, source_id: str, model: str
) -> Triplet | str:
    """A triplet, or why these fields do not make one (empty, placeholder, too long, s == o)."""
    vals = {"subject": _clean(subject), "predicate": _clean(predicate), "object": _clean(obj)}
    for name, v in vals.items():
        if v.lower() in _PLACEHOLDER:
            return f"empty {name}" if not v else f"placeholder {name} {v!r}"
        if len(v) > MAX_FIELD_CHARS:
            return f"{name} longer than {MAX_FIELD_CHARS} characters"
    if normalize_key(vals["subject"]) == normalize_key(vals["object"]):
        return "subject equals object"
    t = Triplet(**vals, source_id=source_id, model=model)
    return t if t.is_valid() else (t.problem() or "invalid triplet")


def parse_triplet_reply(text: str) -> tuple[str, str, str] | str:
    """``(subject, predicate, object)`` from labelled lines or a ``(s, p, o)`` tuple, else why
    not."""
    if not text or not text.strip():
        return "empty reply"
    f = parse_triple_fields(text)
    if len(f) == 3:
        return f["SUBJECT"], f["PREDICATE"], f["OBJECT"]
    for cand in [*_TUPLE.findall(text), text.strip()]:
        parts = " ".join(cand.split()).split(", ")
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
    return "no SUBJECT/PREDICATE/OBJECT lines in the reply"


def _explanation_line(exp: str) -> str:
    return f"\nExplanation: {' '.join(exp.split())}" if exp else ""


def _pair_text(p: QAPair, use_explanation: bool) -> str:
    exp = _explanation_line(p.explanation if use_explanation else "")
    return f"Question: {p.question.strip()}\nCorrect answer: {p.answer.strip()}{exp}"


def _single_request(p: QAPair, use_explanation: bool) -> ChatRequest:
    values = {"pair": format_passage(p.id, _pair_text(p, use_explanation))}
    return _template("kg_triplet").request(
        values, stage="kg_triplets", max_tokens=budget.TRIPLE, stop=budget.STOP_QUESTION
    )


def _batch_request(batch: Sequence[QAPair], use_explanation: bool) -> ChatRequest:
    blocks = numbered_passages(_pair_text(p, use_explanation) for p in batch)
    return _template("kg_triplet_batch").request(
        {"pairs": blocks},
        stage="kg_triplets_batch",
        max_tokens=budget.fixed_list(len(batch), budget.BATCH_TRIPLET),
    )


def _batch_items(text: str, n: int) -> dict[int, tuple[Any, Any, Any]]:
    """Position (0-based) -> fields of the well-formed items of a batch reply."""
    value, _ = parse_json_lenient(text)
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list):
        return {}
    items = [x for x in value if isinstance(x, dict)]
    out: dict[int, tuple[Any, Any, Any]] = {}
    positional = len(items) == n and not any("id" in x for x in items)
    for pos, x in enumerate(items):
        try:
            idx = pos if positional else int(str(x.get("id")).strip().strip("[]")) - 1
        except ValueError:
            continue
        if (
            0 <= idx < n
            and idx not in out
            and all(k in x for k in ("subject", "predicate", "object"))
        ):
            out[idx] = (x["subject"], x["predicate"], x["object"])
    return out


async def _chat(
    llm: ChatModel, reqs: Sequence[ChatRequest], report: ExtractionReport
) -> list[str | None]:
    texts: list[str | None] = []
    for s in range(0, len(reqs), WINDOW):
        res = await asyncio.gather(
            *(llm.chat(r) for r in reqs[s : s + WINDOW]), return_exceptions=True
        )
        for r in res:
            if isinstance(r, BaseException) and not isinstance(r, Exception):
                raise r
            report.stats["calls"] += 1
            report.stats["failed_calls"] += isinstance(r, Exception)
            texts.append(None if isinstance(r, Exception) else r.text)
    return texts


def _keep(report: ExtractionReport, result: Triplet | str, source_id: str, how: str) -> None:
    if isinstance(result, Triplet):
        report.triplets.append(result)
        report.stats[f"source_{how}"] += 1
    else:
        report.dropped.append((source_id, result))


async def _single(
    llm: ChatModel, pairs: Sequence[QAPair], use_exp: bool, report: ExtractionReport, how: str
) -> None:
    texts = await _chat(llm, [_single_request(p, use_exp) for p in pairs], report)
    for p, text in zip(pairs, texts, strict=True):
        parsed = "the LLM call failed" if text is None else parse_triplet_reply(text)
        result = parsed if isinstance(parsed, str) else make_triplet(*parsed, p.id, llm.model)
        _keep(report, result, p.id, how)


def _rule_candidates(p: QAPair, use_explanation: bool) -> list[str]:

    ans = p.answer.strip().lower()
    exp = p.explanation if use_explanation else ""
    exp_sents = [s for s in sentence_texts(exp) if ans and ans in s.lower()]
    stem = p.question.strip().rstrip("?:.-_ ")
    return [*exp_sents, f"{stem} {p.answer.strip()}".strip()]


def rule_triplet(texts: Sequence[str], source_id: str) -> Triplet | str:
    """The first pattern triplet of ``texts``, else the rule-based triple of the last text."""

    last: Triplet | str = "no text"
    for text in texts:
        t = pattern_triple(text)
        if t is not None and isinstance(
            r := make_triplet(t.subject, t.predicate, t.object, source_id, RULE_MODEL), Triplet
        ):
            return r
    if texts:
        t = rule_based_triple(texts[-1])
        last = make_triplet(t.subject, t.predicate, t.object, source_id, RULE_MODEL)
    return last


async def extract_qa_triplets(
    pairs: Sequence[QAPair],
    llm: ChatModel | None,
    *,
    batch_size: int = 1,
    use_explanation: bool = True,
) -> ExtractionReport:
    """One triplet per QA pair (see the module docstring); ``llm=None`` runs the rules."""
    report = ExtractionReport()
    if llm is None:
        for p in pairs:
            _keep(report, rule_triplet(_rule_candidates(p, use_explanation), p.id), p.id, "rules")
        return report
    if batch_size <= 1:
        await _single(llm, pairs, use_explanation, report, "llm")
        return report
    batches = [pairs[s : s + batch_size] for s in range(0, len(pairs), batch_size)]
    texts = await _chat(llm, [_batch_request(b, use_explanation) for b in batches], report)
    report.stats["batch_calls"] += len(batches)
    lost: list[QAPair] = []
    for batch, text in zip(batches, texts, strict=True):
        items = _batch_items(text or "", len(batch))
        for i, p in enumerate(batch):
            result = make_triplet(*items[i], p.id, llm.model) if i in items else "lost"
            if isinstance(result, Triplet):
                _keep(report, result, p.id, "llm_batch")
            else:
                lost.append(p)
    report.stats["batch_fallbacks"] += len(lost)
    await _single(llm, lost, use_explanation, report, "llm")
    return report


async def extract_text_triplets(
    texts: Sequence[tuple[str, str]],
    llm: ChatModel | None,
    *,
    mode: str = "sentences",
    min_chars: int = 20,
) -> ExtractionReport:
    """Triplets from ``(source_id, text)`` pairs: one per sentence, or the claims' triples."""

    report = ExtractionReport()
    if mode == "claims":
        chunks = [
            Chunk(id=f"{sid}:0-{len(t)}", doc_id=sid, index=0, start=0, end=len(t), text=t)
            for sid, t in texts
            if t.strip()
        ]
        claims = await build_extraction(llm).run(chunks)
        model = RULE_MODEL if llm is None else llm.model
        for c in claims:
            t = c.triple
            result = (
                make_triplet(t.subject, t.predicate, t.object, c.doc_id, model)
                if t
                else "no triple"
            )
            _keep(report, result, c.doc_id, str(c.triple_source or "claims"))
        return report
    if mode != "sentences":
        raise ValueError(f"unknown text extraction mode {mode!r}; use sentences or claims")
    sents = [
        (sid, s.strip())
        for sid, t in texts
        for s in sentence_texts(t)
        if len(s.strip()) >= min_chars
    ]
    if llm is None:
        for sid, s in sents:
            _keep(report, rule_triplet([s], sid), sid, "rules")
        return report
    tpl = _template("kg_triplet_text")
    reqs = [
        tpl.request(
            {"sentence": format_passage(sid, s)},
            stage="kg_triplets_text",
            max_tokens=budget.TRIPLE,
            stop=budget.STOP_SENTENCE,
        )
        for sid, s in sents
    ]
    replies = await _chat(llm, reqs, report)
    for (sid, _), text in zip(sents, replies, strict=True):
        parsed = "the LLM call failed" if text is None else parse_triplet_reply(text)
        _keep(
            report,
            parsed if isinstance(parsed, str) else make_triplet(*parsed, sid, llm.model),
            sid,
            "llm",
        )
    return report
