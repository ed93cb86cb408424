"""Rule-based biomedical entity detection: the last triple fallback and the no-LLM floor.

:func:`rule_based_entities` stands in for the paper's SciSpaCy fallback (no trained model is
available offline). It returns noun phrases in text order, biomedical-looking ones first:

* gene/protein-like tokens (``BRCA1``, ``IL-6``, ``TNF-α``, ``NF-κB``, ``p53``, ``HbA1c``,
  ``mTOR``) and upper-case abbreviations (``LDL``, ``COPD``);
* drugs by suffix (``-mab``, ``-nib``, ``-pril``, ``-statin``, ``-olol``, ...) or a short list;
* disease words (``cancer``, ``syndrome``, ``-itis``, ``-oma``, ``-emia``, ...);
* numbers with units (``5 mg``, ``30%``, ``12 weeks``);
* capitalized words that do not start the sentence, and common biomedical nouns.

When fewer than two such phrases are found, the subject (the phrase before the main verb) is
added, then all the other noun phrases, and as a last resort the text is split around its main
verb, so a claim with two content phrases always yields two entities.
"""

from __future__ import annotations

import re

from biorag.extract.lexicon import (
    BIO_WORDS,
    CLASS_NOUNS,
    DISEASE_SUFFIXES,
    DISEASE_WORDS,
    DRUG_SUFFIXES,
    KNOWN_DRUGS,
    STOPWORDS,
    UNITS,
)
from biorag.extract.models import Triple
from biorag.extract.nlp import Token, main_verb, noun_chunks, span_text, tokenize, verb_flags

__all__ = [
    "is_disease_word",
    "is_drug_word",
    "is_gene_like",
    "looks_biomedical",
    "rule_based_entities",
    "rule_based_triple",
]

#: The relation of a rule-based fallback triple (as in the paper's SciSpaCy fallback).
RULE_PREDICATE = "associated"

_GREEK = "\u0370-\u03ff"
_GENE_RES = [
    re.compile(rf"[A-Z]{{2,}}[A-Za-z]*-?[0-9{_GREEK}]+[A-Za-z0-9{_GREEK}]*"),  # BRCA1 IL-6 COX-2
    re.compile(rf"[A-Z]{{2,}}(?:-[A-Za-z0-9{_GREEK}]+)+"),  # NF-κB, TNF-α
    re.compile(r"[a-z]{1,2}[A-Z]{2,}[A-Za-z0-9]*"),  # mTOR, mRNA, siRNA
    re.compile(r"[A-Z][a-z][A-Z0-9][A-Za-z0-9]*"),  # HbA1c
    re.compile(r"p[0-9]{2,3}"),  # p53, p21
    re.compile(r"[A-Z]{2,6}s?"),  # LDL, COPD, HDL
]
_ROMAN = frozenset("II III IV VI VII VIII IX XI XII".split())


def is_gene_like(word: str) -> bool:
    """A gene/protein-like token or an upper-case abbreviation."""
    if word in _ROMAN or word.lower() in UNITS:
        return False
    return any(r.fullmatch(word) for r in _GENE_RES)


def is_drug_word(word: str) -> bool:
    w = word.lower()
    return w in KNOWN_DRUGS or (len(w) > 6 and w.endswith(DRUG_SUFFIXES))


def is_disease_word(word: str) -> bool:
    w = word.lower()
    return w in DISEASE_WORDS or (len(w) > 6 and w.endswith(DISEASE_SUFFIXES))


def _number_with_unit(tokens: list[Token], i: int) -> bool:
    t = tokens[i].lower
    if not re.fullmatch(r"\d+(?:[.,]\d+)?%?", t):
        return False
    if t.endswith("%"):
        return True
    return i + 1 < len(tokens) and tokens[i + 1].lower in UNITS


def looks_biomedical(tokens: list[Token], i: int, sentence_start: bool = False) -> bool:
    """Whether token ``i`` is a biomedical cue (gene, drug, disease, measured quantity,
    capitalized name, common biomedical noun)."""
    tok = tokens[i]
    w = tok.lower
    if w in STOPWORDS:
        return False
    if is_gene_like(tok.text) or is_drug_word(w) or is_disease_word(w):
        return True
    if _number_with_unit(tokens, i) or w in BIO_WORDS:
        return True
    return tok.text[:1].isupper() and not sentence_start


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for x in items:
        k = " ".join(x.lower().split())
        if k and k not in seen:
            seen.add(k)
            out.append(x)
    return out


def rule_based_entities(text: str) -> list[str]:
    """Entity phrases of ``text`` in order (see the module docstring); [] for empty text."""
    tokens = tokenize(text)
    if not tokens:
        return []
    flags = verb_flags(tokens)
    chunks = noun_chunks(tokens, flags)
    bio = [
        c
        for c in chunks
        if any(looks_biomedical(tokens, k, sentence_start=k == 0) for k in range(*c))
        or any(tokens[k].lower in CLASS_NOUNS["patient"] for k in range(*c))
    ]
    out = _dedupe([span_text(text, tokens, c) for c in bio])
    if len(out) >= 2:
        return out
    v = main_verb(tokens, flags)
    before = [c for c in chunks if c[1] <= v]
    if before and before[-1] not in bio:  # add the subject: the phrase before the main verb
        picked = sorted([*bio, before[-1]])
        out = _dedupe([span_text(text, tokens, c) for c in picked])
        if len(out) >= 2:
            return out
    out = _dedupe([span_text(text, tokens, c) for c in chunks])
    if len(out) >= 2:
        return out
    return _dedupe(out + _split_at_verb(text, tokens, flags))


def _split_at_verb(text: str, tokens: list[Token], flags: list[bool]) -> list[str]:
    """The content words before and after the main verb (or the two halves of the text)."""
    v = main_verb(tokens, flags)
    if v < 0:
        v = len(tokens) // 2
    words = [t for t in tokens if t.is_word]
    left = [t for t in tokens[:v] if t.is_word and t.lower not in STOPWORDS]
    right = [t for t in tokens[v + 1 :] if t.is_word and t.lower not in STOPWORDS]
    if not left and not right:
        return [text[words[0].start : words[-1].end]] if words else []
    parts = []
    for side in (left, right):
        if side:
            parts.append(text[side[0].start : side[-1].end])
    return parts


def rule_based_triple(text: str) -> Triple:
    """The last fallback: the first two rule-based entities, related by ``"associated"``.

    With one entity the rest of the text is the object; with none the claim stands on both
    sides, so a claim always gets a triple.
    """
    ents = rule_based_entities(text)
    if len(ents) >= 2:
        return Triple(subject=ents[0], predicate=RULE_PREDICATE, object=ents[1])
    stripped = " ".join(text.split()).strip(" .")
    if len(ents) == 1:
        rest = " ".join(stripped.replace(ents[0], " ").split()).strip(" .,") or stripped
        return Triple(subject=ents[0], predicate=RULE_PREDICATE, object=rest)
    return Triple(subject=stripped or "?", predicate=RULE_PREDICATE, object=stripped or "?")
