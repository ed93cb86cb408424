"""The BioASQ exact answer of a question, by type: yes/no, ranked factoid candidates, a list.

An ideal (free-text) answer is not what BioASQ scores for typed questions; this step derives the
exact answer from the context passages and the method's ideal or draft answer:

* yesno: ``"yes"`` or ``"no"``;
* factoid: up to :data:`MAX_FACTOID` candidate names, most likely first;
* list: the item names (at most :data:`MAX_LIST`).

LLM operator (:func:`exact_answer_llm`, stage ``exact_answer``): one call with the question, its
type, the numbered passages and the ideal answer, asking for ``{"answer": ...}`` under a JSON
schema of the type. The value is parsed leniently (:func:`parse_exact`): a string where a list
was expected is split at line breaks and semicolons, bullets and list numbers are dropped, items
are deduplicated case-insensitively and capped; "yes" and "no" are no factoid or list items
(SmolLM2 answered them to 53 of 72 BioASQ factoid calls when the prompt described all three
formats; it now describes only the asked type's). An answer that yields nothing usable is a result
flagged ``parse_failed`` with the raw text; the step never raises on a model's answer.

No-LLM floor (:func:`exact_answer_floor`), labelled as such (``method="floor"``):

* yesno: the no-LLM answerer's decision (:func:`biorag.answer.floor.answer_without_llm` with the
  options yes/no: the relevance-weighted share of negation cues among the context sentences
  closest to the question);
* factoid/list: candidates from the passages' sentences (:func:`candidates`): gene/protein
  symbols, drug and disease words, numbers (only for "how many/much..." questions) and noun
  phrases, their edges trimmed of the question's words and of generic heads ("BRCA1 mutations"
  -> "BRCA1"); a candidate made only of question words is dropped. Score = prior x the sum,
  over the sentences naming the candidate, of max(0, cosine(sentence, question)) with the
  bundled embedder (frequency weighted by relevance). The prior is 1, +0.5 when the candidate
  holds a gene/drug/disease-like word, +0.5 more when that kind is the one the question asks
  for ("Which gene ..."), divided by ``1 + 0.15 x (words - 1)`` (shorter names first), and
  x 0.6 for a lone lower-case word of no such kind; vague lone words (generic nouns, section
  headers, short or -ed/-ing/-ly forms) are no candidates. Tuned lightly on BioASQ 10b (dev).
  Factoid = the top 5; list = the candidates scoring at least ``list_ratio`` (0.5) of the best
  one, at most ``list_max`` (10).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from biorag.answer import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.answer.exact_result import ExactAnswer
from biorag.answer.floor import answer_without_llm
from biorag.answer.reader import number_passages
from biorag.corpus.sentences import split_sentences
from biorag.extract.entities import is_disease_word, is_drug_word, is_gene_like
from biorag.extract.lexicon import DISEASE_WORDS, STOPWORDS
from biorag.extract.nlp import noun_chunks, tokenize, verb_flags
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import neutralize
from biorag.llm.jsonparse import parse_json_lenient
from biorag.llm.prompts import PromptTemplate

PROMPTS = "biorag.answer.prompts"
STAGE = "exact_answer"
EXACT_TYPES = ("yesno", "factoid", "list")
MAX_FACTOID = 5
MAX_LIST = 100
MAX_ITEM_CHARS = 200
# list markers: "-", "*", "1.", "2)", "(3)", "a)", "(b)"; not "e." (E. coli, S. aureus)
_BULLET = re.compile(r"^\s*(?:[-*\u2022\u2013]+|\(?\d{1,3}[.):]|\(?[a-z]\))\s+")
_EDGE = re.compile(r"^[\s\"'`]+|[\s\"'`.,;:]+$")
_YESNO_WORD = re.compile(r"^\W*(yes|no)\b", re.I)
_ANSWER_KEYS = ("answer", "answers", "exact_answer", "candidates", "items", "entities")


def answer_schema(qtype: str) -> dict[str, Any]:
    """The JSON schema of ``{"answer": ...}`` for a question type."""
    if qtype == "yesno":
        value: dict[str, Any] = {"type": "string", "enum": ["yes", "no"]}
    else:
        value = {"type": "array", "items": {"type": "string"}}
        if qtype == "factoid":
            value["maxItems"] = MAX_FACTOID
    return {"type": "object", "properties": {"answer": value}, "required": ["answer"]}


def _check_type(qtype: str) -> None:
    if qtype not in EXACT_TYPES:
        raise ValueError(f"exact answers exist for {', '.join(EXACT_TYPES)}, not {qtype!r}")


# -- parsing ------------------------------------------------------------------------------------


def _unwrap(value: Any) -> Any:
    """The answer inside a JSON object (``{"answer": ...}`` and a few other key names)."""
    while isinstance(value, dict):
        key = next((k for k in _ANSWER_KEYS if k in value), None)
        if key is None:
            vals = list(value.values())
            if len(vals) != 1:
                return None
            value = vals[0]
        else:
            value = value[key]
    return value


def clean_items(value: Any, limit: int) -> list[str]:
    """Names from a string or a (nested) list: split, bullets dropped, deduplicated, capped.

    A string is split at line breaks and semicolons; a nested list (synonyms) gives its first
    name. Items are stripped of list numbers, bullets, quotes and trailing punctuation; empty
    and over-long items are dropped; duplicates (case and spacing ignored) keep the first.
    """
    if value is None:
        return []
    if isinstance(value, str):
        raw: list[Any] = re.split(r"[\n;]+", value)
    elif isinstance(value, list | tuple):
        raw = [v[0] if isinstance(v, list | tuple) and v else v for v in value]
    else:
        raw = [value]
    out: list[str] = []
    seen: set[str] = set()
    for item in raw:
        if item is None or isinstance(item, dict | list | tuple | bool):
            continue
        text = _EDGE.sub("", _BULLET.sub("", str(item)))
        key = " ".join(text.split()).casefold()
        if not key or len(text) > MAX_ITEM_CHARS or key in seen:
            continue
        seen.add(key)
        out.append(" ".join(text.split()))
        if len(out) >= limit:
            break
    return out


FORMATS = {
    "yesno": 'The exact answer of a yes/no question is the single word "yes" or "no".',
    "factoid": "The exact answer of a factoid question is a ranked list of at most 5 candidate "
    "names (an entity, a number with its unit, a short term), the most likely first: each the "
    "name alone, as the literature writes it, without numbering or commentary. It is never "
    '"yes" or "no".',
    "list": "The exact answer of a list question is every item that answers it, each a short "
    "name (a gene, drug, disease, organism, method...), without numbering, duplicates or "
    'commentary. It is never "yes" or "no".',
}
_YES_NO_ITEM = {"yes", "no"}


def parse_exact(qtype: str, parsed: Any, text: str) -> tuple[str | list[str] | None, str]:
    """``(value, "")`` from a model's answer, or ``(None, why)`` when nothing usable is in it.

    ``parsed`` is the JSON value the backend parsed (None if none); the raw ``text`` is parsed
    again without the schema (a bare list or string is accepted), and a yes/no answer may be
    the bare word.
    """

    _check_type(qtype)
    value = _unwrap(parsed) if parsed is not None else None
    if value is None:
        loose, _err = parse_json_lenient(text)
        value = _unwrap(loose) if loose is not None else None
    if qtype == "yesno":
        if isinstance(value, list | tuple) and value:
            value = value[0]
        if isinstance(value, bool):
            return ("yes" if value else "no"), ""
        for cand in (value, text if value is None else None):
            m = _YESNO_WORD.match(str(cand)) if isinstance(cand, str) else None
            if m:
                return m.group(1).lower(), ""
        return None, "no yes/no in the answer"
    if value is None:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if lines and all(_BULLET.match(ln) for ln in lines):  # a bulleted list, no JSON
            value = lines
        else:
            return None, "no JSON answer"
    items = clean_items(value, MAX_FACTOID if qtype == "factoid" else MAX_LIST)
    if not items:
        return None, "no answer items"
    names = [x for x in items if x.strip(" .!").lower() not in _YES_NO_ITEM]
    if not names:  # a yes/no is no name: a small model's confusion of the question types
        return None, f"a {qtype} answer of yes/no only"
    return names, ""


# -- the LLM operator ---------------------------------------------------------------------------


async def exact_answer_llm(
    llm: ChatModel, question: str, qtype: str, contexts: list[str], ideal: str
) -> ExactAnswer:
    """One ``exact_answer`` call: the exact answer of a ``qtype`` question (see module doc)."""

    _check_type(qtype)
    tpl = PromptTemplate.load(PROMPTS, "exact_answer")
    values = {
        "qtype": qtype,
        "question": question,
        "context": number_passages(contexts) if contexts else "(no passages)",
        "ideal": neutralize(ideal.strip()) or "(none)",
        # only the asked type's format: a small model shown all three copied "yes" into lists
        "format": FORMATS[qtype],
        "shape": '"yes" or "no"' if qtype == "yesno" else '["...", "..."]',
    }
    max_tokens = {
        "yesno": budget.EXACT_YESNO,
        "factoid": budget.EXACT_FACTOID,
        "list": budget.EXACT_LIST,
    }[qtype]
    req = tpl.request(values, stage=STAGE, json_schema=answer_schema(qtype), max_tokens=max_tokens)
    resp = await llm.chat(req)
    value, error = parse_exact(qtype, resp.parsed, resp.text)
    failed = value is None
    return ExactAnswer(
        value=value, raw=resp.text, parse_failed=failed, method="llm", qtype=qtype, error=error
    )


# -- the no-LLM floor ---------------------------------------------------------------------------

_GENERIC_HEADS = frozenset(
    "gene genes protein proteins mutation mutations variant variants expression level levels "
    "activity activities isoform isoforms transcript transcripts mrna gene-encoded".split()
)
_WEAK = frozenset(
    "novel new several other different various many multiple specific significant important "
    "major potential possible recent previous current first second both such same certain "
    "known main key common increased decreased reduced elevated higher lower high low plus via "
    "including like".split()
)
_VAGUE = frozenset(
    "study studies result results analysis analyses role effect effects use data method "
    "methods approach patients patient case cases review report model models evidence "
    "association function functions mechanism mechanisms type types number group groups "
    "level levels expression treatment therapy disease diseases response responses part range "
    "addition member family point design human humans inside background objective objectives "
    "purpose aim aims introduction conclusion conclusions methods identification".split()
)
_NUMERIC_Q = re.compile(
    r"\b(how (?:many|much|long|old|often)|what (?:percentage|proportion|number|fraction|age|"
    r"dose|size|frequency)|at what age)\b",
    re.I,
)
_KIND_WORDS = {  # what a question asks for -> the kind of name that answers it
    "gene": r"genes?|proteins?|enzymes?|kinases?|receptors?|factors?|targets?|biomarkers?|"
    r"markers?|mutations?|loci|locus|transporters?|channels?",
    "drug": r"drugs?|medications?|medicines?|treatments?|therap(?:y|ies)|inhibitors?|"
    r"antibod(?:y|ies)|agents?|compounds?|vaccines?",
    "disease": r"diseases?|disorders?|syndromes?|cancers?|tumou?rs?|conditions?|infections?",
}
_KINDS = {k: re.compile(rf"\b({v})\b", re.I) for k, v in _KIND_WORDS.items()}
MAX_PHRASE_WORDS = 6
_VERBISH = ("ed", "ing", "ly")
PLAIN_FACTOR = 0.6


def _stem(word: str) -> str:
    """A crude stem: alphabetic words cut to 5 letters (plural ``s`` dropped when shorter);
    words holding digits stay exact (BRCA1 is not BRCA2)."""
    w = word.lower()
    if any(c.isdigit() for c in w):
        return w
    return w[:5] if len(w) > 5 else w.rstrip("s") or w


def _kind(tok: str) -> str | None:

    if is_gene_like(tok):
        return "gene"
    if is_drug_word(tok):
        return "drug"
    if is_disease_word(tok):
        return "disease"
    return None


def _plain_word(word: str) -> bool:
    """A lone word too vague to be an answer: a generic noun or section header, a short
    lower-case word, or a lower-case verb/adverb form (-ed, -ing, -ly) the tagger let through."""
    w = word.lower()
    if w in _VAGUE or len(w) < 2:
        return True
    return word.islower() and _kind(word) is None and (len(w) < 4 or w.endswith(_VERBISH))


def _sentence_candidates(sentence: str, q_stems: set[str], numeric: bool) -> list[str]:
    """Candidate names of one sentence (see :func:`candidates`)."""

    tokens = tokenize(sentence)
    if not tokens:
        return []
    flags = verb_flags(tokens)
    out: list[str] = []

    for i, j in noun_chunks(tokens, flags, link_of=False):
        for k in range(i, j):  # specific names inside any phrase count on their own
            t = tokens[k].text
            kind = _kind(t)
            if (
                kind
                and _stem(t) not in q_stems
                and (kind != "disease" or t.lower() not in DISEASE_WORDS)
            ):
                out.append(t)
        while i < j and (
            _stem(tokens[i].text) in q_stems
            or tokens[i].lower in _WEAK
            or tokens[i].lower in STOPWORDS
        ):
            i += 1
        while j > i and (
            _stem(tokens[j - 1].text) in q_stems or tokens[j - 1].lower in _GENERIC_HEADS
        ):
            j -= 1
        if j <= i or j - i > MAX_PHRASE_WORDS:
            continue
        words = [t.text for t in tokens[i:j]]
        if not numeric and all(re.fullmatch(r"[\d.,/%-]+", w) for w in words):
            continue
        if j - i == 1 and _plain_word(words[0]):
            continue
        out.append(sentence[tokens[i].start : tokens[j - 1].end])
    return out


def candidates(question: str, contexts: list[str], embedder: Any) -> list[dict[str, Any]]:
    """Scored candidate names from ``contexts``, best first: ``{name, score, count}``."""
    import numpy as np

    sents = [
        t[s:e].strip() for t in contexts for s, e in split_sentences(t) if len(t[s:e].strip()) > 3
    ]
    if not sents:
        return []
    q_stems = {_stem(w) for w in re.findall(r"[\w\-]+", question) if len(w) > 1}
    numeric = bool(_NUMERIC_Q.search(question))
    wanted = {k for k, rx in _KINDS.items() if rx.search(question)}
    vecs = np.asarray(embedder.embed([question, *sents]), dtype=np.float64)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    rel = np.clip(vecs[1:] @ vecs[0], 0.0, None)
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    surface: dict[str, str] = {}
    for si, sent in enumerate(sents):
        for name in dict.fromkeys(_sentence_candidates(sent, q_stems, numeric)):
            key = " ".join(name.split()).casefold()
            surface.setdefault(key, name)
            total[key] = total.get(key, 0.0) + float(rel[si])
            count[key] = count.get(key, 0) + 1
    rows: list[dict[str, Any]] = []
    for key, rel_sum in total.items():
        words = surface[key].split()
        kinds = {_kind(w) for w in words} - {None}
        prior = 1.0 + 0.5 * bool(kinds) + 0.5 * bool(kinds & wanted)
        prior /= 1.0 + 0.15 * (len(words) - 1)
        if len(words) == 1 and not kinds and words[0].islower():
            prior *= PLAIN_FACTOR
        rows.append({"name": surface[key], "score": round(prior * rel_sum, 6), "count": count[key]})
    rows.sort(key=lambda r: -r["score"])  # stable: ties keep text order
    return rows


def exact_answer_floor(
    question: str,
    qtype: str,
    contexts: list[str],
    embedder: Any,
    *,
    list_ratio: float = 0.5,
    list_max: int = 10,
) -> ExactAnswer:
    """The no-LLM exact answer (see module doc); ``method="floor"``."""

    _check_type(qtype)
    if qtype == "yesno":
        res = answer_without_llm(
            question,
            {"A": "yes", "B": "no"},
            [(f"ctx{i}", t) for i, t in enumerate(contexts)],
            embedder,
        )
        return ExactAnswer(value=res.answer_text, raw=res.rationale, method="floor", qtype=qtype)
    rows = candidates(question, contexts, embedder)
    if qtype == "factoid":
        picked = rows[:MAX_FACTOID]
    else:
        best = rows[0]["score"] if rows else 0.0
        picked = [r for r in rows if r["score"] >= list_ratio * best and r["score"] > 0]
        picked = picked[: max(1, min(list_max, MAX_LIST))]
    return ExactAnswer(
        value=[r["name"] for r in picked],
        raw="",
        method="floor",
        qtype=qtype,
        candidates=rows[:20],
    )


async def exact_answer(
    llm: ChatModel | None,
    question: str,
    qtype: str,
    contexts: list[str],
    ideal: str,
    embedder: Any,
) -> ExactAnswer:
    """The LLM operator when ``llm`` is given, else the floor (run in a worker thread)."""
    if llm is not None:
        return await exact_answer_llm(llm, question, qtype, contexts, ideal)
    return await asyncio.to_thread(exact_answer_floor, question, qtype, contexts, embedder)
