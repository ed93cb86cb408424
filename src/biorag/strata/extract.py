"""Entity-level typed triplets from an abstract (document-level facts: :mod:`.doclevel`).

Entity types: Gene, Protein, Drug, Disease. Relation schema (subject -> object):

* ``treats`` (Drug -> Disease), ``causes`` (any -> Disease), ``associated_with`` (any <-> any,
  the default), ``interacts_with`` (Gene/Protein/Drug <-> Gene/Protein/Drug), ``inhibits`` and
  ``activates`` (Drug/Gene/Protein -> Gene/Protein), ``biomarker_of`` (Gene/Protein -> Disease),
  ``targets`` (Drug -> Gene/Protein), ``expressed_in`` (Gene/Protein -> Disease), ``encodes``
  (Gene -> Protein), ``prevents`` (Drug -> Disease), ``synergizes_with`` and ``antagonizes``
  (Drug -> Drug; the no-LLM floor finds them from a synergy/antagonism word between two drugs).

With an LLM (stage ``strata_triplets``) the answer is a JSON list of ``{subject, subject_type,
relation, object, object_type}``; rows with other types are dropped, other relations become
``associated_with``. Without one, the FLOOR: vocabulary names/synonyms are matched in each
sentence; in sentences with at least two typed mentions the pattern extractor
(:func:`biorag.extract.patterns.pattern_triple`) gives the predicate, mapped onto the schema by
keywords, and its subject/object phrases must each contain a mention (negated predicates are
skipped). It finds far fewer triplets than an LLM.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from biorag.corpus.sentences import sentence_texts
from biorag.errors import LLMError
from biorag.extract.patterns import pattern_triple
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage
from biorag.llm.prompts import PromptTemplate
from biorag.strata import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.strata.doclevel import DocInfo, extract_doc_llm, extract_doc_rules
from biorag.strata.vocab import ENTITY_TYPES, Vocabulary

log = logging.getLogger(__name__)

__all__ = [
    "RELATIONS",
    "DocInfo",
    "EntityTriplet",
    "extract_doc_llm",
    "extract_doc_rules",
    "extract_triplets_llm",
    "extract_triplets_rules",
    "find_mentions",
]

RELATIONS = (
    "treats", "causes", "associated_with", "interacts_with", "inhibits", "activates",
    "biomarker_of", "targets", "expressed_in", "encodes", "prevents",
    "synergizes_with", "antagonizes",
)  # fmt: skip
# Drug-drug interaction words: a sentence naming two drugs and one of these (not negated) gives
# the floor a drug-drug triplet. "antagonist" (a receptor antagonist) is not one of them.
_DRUG_PAIR = (
    (re.compile(r"\bsynerg\w*", re.I), "synergizes_with"),
    (
        re.compile(r"\bantagoni(?:sm|stic|stically|ze[sd]?|zing|se[sd]?|sing)\b", re.I),
        "antagonizes",
    ),
)

TRIPLET_PROMPT = PromptTemplate.load("biorag.strata.prompts", "strata_triplets")
MAX_TRIPLET_TOKENS = 1024  # the ceiling of the triplet list's budget, whatever the abstract
TRIPLET_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            k: {"type": "string"}
            for k in ("subject", "subject_type", "relation", "object", "object_type")
        },
        "required": ["subject", "subject_type", "relation", "object", "object_type"],
    },
}

_REL_KEYWORDS = (
    ("inhibit", "inhibits"), ("suppress", "inhibits"), ("block", "inhibits"),
    ("synerg", "synergizes_with"), ("antagoniz", "antagonizes"), ("antagonis", "antagonizes"),
    ("activat", "activates"), ("upregulat", "activates"), ("induc", "causes"),
    ("caus", "causes"), ("treat", "treats"), ("prevent", "prevents"), ("target", "targets"),
    ("bind", "interacts_with"), ("interact", "interacts_with"), ("marker", "biomarker_of"),
    ("express", "expressed_in"), ("encod", "encodes"),
)  # fmt: skip
_NEGATION = re.compile(r"\b(not|no|never|failed|fails|without)\b", re.I)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]*")


@dataclass(frozen=True)
class EntityTriplet:
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    source: str = "llm"  # llm | pattern


def _drug_pair(sent: str, mentions: list[tuple[str, str, int, int]]) -> list[EntityTriplet]:
    """One drug-drug triplet for the first synergy/antagonism word of ``sent``, if two distinct
    drugs are named and the word is not negated just before it ("no synergy", "did not
    antagonize"). Direction: a drug before the word acts on one after it; with "... by" after
    the word (passive) the drug after it is the agent; with both drugs on one side, the order of
    mention."""
    drugs: list[tuple[str, int]] = []
    for m in mentions:
        if m[1] == "Drug" and m[0].lower() not in {d[0].lower() for d in drugs}:
            drugs.append((m[0], m[2]))
    if len(drugs) < 2:
        return []
    for pattern, relation in _DRUG_PAIR:
        hit = pattern.search(sent)
        if hit is None:
            continue
        if _NEGATION.search(sent[max(0, hit.start() - 30) : hit.start()]):
            return []
        before = [d for d, start in drugs if start < hit.start()]
        after = [d for d, start in drugs if start >= hit.end()]
        subject, obj = drugs[0][0], drugs[1][0]
        if before and after:
            subject, obj = before[-1], after[0]
            if re.match(r"\s+by\b", sent[hit.end() :]):
                subject, obj = obj, subject
        return [EntityTriplet(subject, "Drug", relation, obj, "Drug", "pattern")]
    return []


def map_relation(predicate: str) -> str:
    """A relation of the schema for a free-text predicate (default ``associated_with``)."""
    p = predicate.lower().replace(" ", "_")
    if p in RELATIONS:
        return p
    for kw, rel in _REL_KEYWORDS:
        if kw in p:
            return rel
    return "associated_with"


def _clean(rows: object) -> list[EntityTriplet]:
    if isinstance(rows, dict):
        rows = rows.get("triplets", [rows])
    out = []
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        vals = [str(r.get(k) or "").strip() for k in
                ("subject", "subject_type", "relation", "object", "object_type")]  # fmt: skip
        s, st, rel, o, ot = vals
        st, ot = st.capitalize(), ot.capitalize()
        if s and o and st in ENTITY_TYPES and ot in ENTITY_TYPES:
            out.append(EntityTriplet(s, st, map_relation(rel), o, ot, "llm"))
    return out


def extract_triplets_llm(
    llm: ChatModel, title: str, abstract: str, pid: str = "paper"
) -> list[EntityTriplet]:
    """Typed triplets from the LLM (stage ``strata_triplets``; the paper is one passage block
    with id ``pid``); LLMError when the call fails."""
    req = TRIPLET_PROMPT.request(
        {"paper": format_passage(pid, f"Title: {title}\nAbstract: {abstract}")},
        system_vars={"relations": ", ".join(RELATIONS)},
        stage="strata_triplets",
        json_schema=TRIPLET_SCHEMA,
        max_tokens=budget.JSON_TRIPLETS.for_text(f"{title} {abstract}", cap=MAX_TRIPLET_TOKENS),
    )
    resp = llm.run_sync(llm.chat_json(req))
    if resp.parse_error is not None:
        raise LLMError(f"strata_triplets answer is not JSON: {resp.parse_error}")
    return _clean(resp.parsed)


class MentionMatcher:
    """Longest-match dictionary lookup of vocabulary surfaces (up to 8 words) in text.

    Surfaces of at most 4 characters (gene symbols, abbreviations) match case-sensitively,
    longer ones case-insensitively. A surface shared by several types takes the type of the
    entry whose preferred name it is, else the first entry's.
    """

    def __init__(self, vocab: Vocabulary, max_words: int = 8) -> None:
        self.max_words = max_words
        self._exact: dict[str, str] = {}
        self._lower: dict[str, str] = {}
        for surface, entry in vocab.surfaces():
            norm = " ".join(_WORD.findall(surface))
            if not norm:
                continue
            table, k = (self._exact, norm) if len(norm) <= 4 else (self._lower, norm.lower())
            if k not in table or entry.name == surface:
                table[k] = entry.type

    def find(self, text: str) -> list[tuple[str, str, int, int]]:
        """(surface as written, type, start, end) of each non-overlapping match."""
        words = list(_WORD.finditer(text))
        out, i = [], 0
        while i < len(words):
            hit = None
            for n in range(min(self.max_words, len(words) - i), 0, -1):
                span = " ".join(w.group() for w in words[i : i + n])
                t = self._exact.get(span) if len(span) <= 4 else self._lower.get(span.lower())
                if t is not None:
                    hit = (text[words[i].start() : words[i + n - 1].end()], t, n)
                    break
            if hit is None:
                i += 1
                continue
            s, t, n = hit
            out.append((s, t, words[i].start(), words[i + n - 1].end()))
            i += n
        return out


def find_mentions(text: str, vocab: Vocabulary) -> list[tuple[str, str, int, int]]:
    return MentionMatcher(vocab).find(text)


def _mention_in(phrase: str, mentions: list[tuple[str, str, int, int]]):
    for m in mentions:
        if re.search(r"(?<![A-Za-z0-9])" + re.escape(m[0]) + r"(?![A-Za-z0-9])", phrase):
            return m
    return None


def extract_triplets_rules(
    abstract: str, vocab: Vocabulary, matcher: Any = None
) -> list[EntityTriplet]:
    """The no-LLM floor: pattern triples between two dictionary-matched typed entities, and a
    drug-drug ``synergizes_with`` / ``antagonizes`` triplet for a sentence that names two drugs
    and a synergy/antagonism word without a negation. ``matcher``: anything with the
    :class:`MentionMatcher` ``find`` (a :class:`~biorag.strata.word_shapes.ShapeMatcher` when
    there is no vocabulary)."""
    matcher = matcher or MentionMatcher(vocab)
    out: list[EntityTriplet] = []
    for sent in sentence_texts(abstract):
        mentions = matcher.find(sent)
        if len({m[0].lower() for m in mentions}) < 2:
            continue
        out.extend(_drug_pair(sent, mentions))
        t = pattern_triple(sent)
        if t is None or _NEGATION.search(t.predicate):
            continue
        s, o = _mention_in(t.subject, mentions), _mention_in(t.object, mentions)
        if s is None or o is None or s[0].lower() == o[0].lower():
            continue
        out.append(EntityTriplet(s[0], s[1], map_relation(t.predicate), o[0], o[1], "pattern"))
    return list(dict.fromkeys(out))
