"""The no-LLM claim extractor: sentences, split at coordinated clauses, references resolved.

This is a floor, not a reader. A claim is a sentence of the chunk, or a clause of it:

* ``"X increased A and decreased B"`` -> ``"X increased A."`` + ``"X decreased B."`` (a verb
  phrase after ``and``/``but`` gets the words before the first clause's main verb);
* ``"X increased A and Y decreased B"``, ``"..., whereas ..."``, ``"...; ..."``,
  ``"..., while ..."``, ``"..., but ..."`` -> two claims when both halves have a verb;
* pronouns and demonstratives are replaced by their antecedent (:mod:`biorag.extract.coref`);
  the references left over are counted per claim in ``unresolved_references``.

Section labels (``RESULTS:``) are dropped, and so are fragments of fewer than ``min_words``
words or verbless fragments of fewer than six words.
"""

from __future__ import annotations

import asyncio
import re

from biorag.corpus.models import Chunk
from biorag.corpus.sentences import split_sentences
from biorag.corpus.text import clean_text
from biorag.extract.coref import ReferenceResolver, count_references
from biorag.extract.lexicon import ADVERBS, DETERMINERS, NEGATIONS, PREPOSITIONS
from biorag.extract.models import Claim
from biorag.extract.nlp import (
    Token,
    is_adverb,
    is_content,
    is_finite,
    main_verb,
    tokenize,
    verb_flags,
)
from biorag.extract.parsing import normalize_claim

__all__ = ["RuleClaimExtractor", "split_clauses"]

_LABEL_RE = re.compile(
    r"^(?:[A-Z][A-Z /&-]{2,}|(?:Background|Methods?|Results?|Conclusions?|Objectives?|Aims?|"
    r"Purpose|Introduction|Discussion|Findings|Design|Setting|Interpretation|Context)):\s+(?=\S)"
)
_LEADING_CONNECTIVE_RE = re.compile(
    r"^(?:however|in contrast|by contrast|moreover|furthermore|in addition|additionally)\s*,?\s*",
    re.IGNORECASE,
)
_MAX_NP_BEFORE_VERB = 6


def _has_verb(flags: list[bool], lo: int, hi: int) -> bool:
    return any(flags[lo:hi])


def _first_word(tokens: list[Token], lo: int, hi: int) -> int:
    """Index of the first token of ``tokens[lo:hi]`` that is not an adverb (-1 if none)."""
    for i in range(lo, hi):
        w = tokens[i].lower
        if not (w in ADVERBS or is_adverb(w) or w == ","):
            return i
    return -1


def _right_clause_kind(tokens: list[Token], flags: list[bool], lo: int) -> str | None:
    """``"vp"`` when ``tokens[lo:]`` starts with a finite verb, ``"clause"`` when it is a short
    noun phrase followed by a finite verb, else None."""
    first = _first_word(tokens, lo, len(tokens))
    if first < 0:
        return None
    if is_finite(tokens, flags, first) and tokens[first].lower not in NEGATIONS:
        return "vp"
    for i in range(first, min(len(tokens), first + _MAX_NP_BEFORE_VERB + 1)):
        if flags[i]:
            return "clause" if i > first and is_finite(tokens, flags, i) else None
        w = tokens[i].lower
        if w in DETERMINERS and i == first:
            continue
        if not is_content(tokens[i]) or w in PREPOSITIONS:
            return None
    return None


def _join(left: str, right: str) -> tuple[str, str]:
    left = left.rstrip(" ,;:")
    if left and left[-1] not in ".!?":
        left += "."
    right = _LEADING_CONNECTIVE_RE.sub("", right.strip(" ,;:"))
    if right:
        right = right[0].upper() + right[1:]
    return left, right


def _split_once(text: str) -> list[str] | None:
    tokens = tokenize(text)
    flags = verb_flags(tokens)
    n = len(tokens)
    for k, tok in enumerate(tokens):
        w = tok.lower
        comma_before = k > 0 and tokens[k - 1].text == ","
        if not (0 < k < n - 1) or not _has_verb(flags, 0, k):
            continue
        left_txt, right_txt = text[: tok.start], text[tok.end :]
        if w == ";" or w == "whereas" or (w in ("while", "but") and comma_before):
            if not _has_verb(flags, k + 1, n):
                continue
            if _right_clause_kind(tokens, flags, k + 1) == "vp":
                right_txt = _prefix(text, tokens, flags, k) + " " + right_txt.strip(" ,")
            return list(_join(left_txt, right_txt))
        if w in ("and", "but"):
            kind = _right_clause_kind(tokens, flags, k + 1)
            if kind == "vp":
                prefix = _prefix(text, tokens, flags, k)
                if prefix:
                    return list(_join(left_txt, prefix + " " + right_txt.strip(" ,")))
            elif kind == "clause":
                return list(_join(left_txt, right_txt))
    return None


def _prefix(text: str, tokens: list[Token], flags: list[bool], k: int) -> str:
    """The words before the main verb of ``tokens[:k]`` (the shared subject)."""
    v = main_verb(tokens, flags, 0, k)
    if v <= 0:
        return ""
    while v > 0 and (tokens[v - 1].lower in ("also", "further") or is_adverb(tokens[v - 1].lower)):
        v -= 1
    return text[: tokens[v - 1].end].strip() if v > 0 else ""


def split_clauses(sentence: str, max_parts: int = 8) -> list[str]:
    """Split a sentence at coordinated clauses (see the module docstring)."""
    parts = [sentence.strip()]
    done: list[str] = []
    while parts and len(done) + len(parts) < max_parts:
        head = parts.pop(0)
        split = _split_once(head)
        if split is None or not all(p.strip(" .") for p in split):
            done.append(head)
        else:
            parts = split + parts
    return [p for p in done + parts if p]


def _keep(clause: str, min_words: int) -> bool:
    tokens = tokenize(clause)
    words = [t for t in tokens if t.is_word]
    if len(words) < min_words:
        return False
    return any(verb_flags(tokens)) or len(words) >= 6


class RuleClaimExtractor:
    """No-LLM claim extraction (the floor): sentence claims split at coordinated clauses, with
    pronouns and demonstratives resolved by rules. ``unresolved_total`` is the number of
    references left unresolved by the last :meth:`extract_claims` call."""

    def __init__(
        self,
        *,
        split: bool = True,
        resolve: bool = True,
        min_words: int = 3,
        window: int = 3,
        clean: bool = True,
    ) -> None:
        self.split = split
        self.resolve = resolve
        self.min_words = min_words
        self.window = window
        self.clean = clean
        self.unresolved_total = 0

    def claim_texts(self, text: str) -> list[tuple[str, int]]:
        """``(claim text, unresolved references)`` for one chunk text, in order."""
        text = clean_text(text) if self.clean else text
        resolver = ReferenceResolver(window=self.window)
        out: list[tuple[str, int]] = []
        for s, e in split_sentences(text):
            sentence = _LABEL_RE.sub("", " ".join(text[s:e].split()))
            if not sentence:
                continue
            if self.resolve:
                sentence = resolver.resolve(sentence)
            for clause in split_clauses(sentence) if self.split else [sentence]:
                if _keep(clause, self.min_words):
                    out.append((clause, count_references(clause)))
        return out

    async def extract_claims(self, chunks: list[Chunk]) -> list[Claim]:
        """Claims of all chunks, deduplicated on normalized text (first occurrence kept); the
        rules run in a worker thread, off the event loop."""
        return await asyncio.to_thread(self.claims_of, chunks)

    def claims_of(self, chunks: list[Chunk]) -> list[Claim]:
        """:meth:`extract_claims`, synchronously."""
        seen: set[str] = set()
        claims: list[Claim] = []
        for chunk in chunks:
            for text, unresolved in self.claim_texts(chunk.text):
                key = normalize_claim(text)
                if not key or key in seen:
                    continue
                seen.add(key)
                claims.append(
                    Claim(
                        id=Claim.make_id(chunk.id, text),
                        text=text,
                        chunk_id=chunk.id,
                        doc_id=chunk.doc_id,
                        unresolved_references=unresolved,
                    )
                )
        self.unresolved_total = sum(c.unresolved_references for c in claims)
        return claims
