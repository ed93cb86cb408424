"""The no-LLM claim extractor: sentences, split at coordinated clauses, references resolved.

This is a floor, not a reader. A claim is a sentence of the chunk, or a clause of it:

* ``"X increased A and decreased B"`` -> ``"X increased A."`` + ``"X decreased B."`` (a verb
  phrase after ``and``/``but`` gets the words before the first clause's main verb);
* ``"X increased A and Y decreased B"``, ``"..., whereas ..."``, ``"...; ..."``,
  ``"..., while ..."``, ``"..., but ..."`` -> two claims when both halves have a verb;
* pronouns and demonstratives are replaced by their antecedent (:mod:`biorag.extract.coref`);
  the references left over are counted per claim in ``unresolved_references``.

Section labels (``RESULTS:``) are dropped, and so is every clause that is no claim
(:func:`claim_problem`): a question (and every clause of a question), an enumeration item, an
aim ("To determine whether ..."), a fragment without a finite verb, one of fewer than
``min_words`` words, or one whose subject names no entity (a pronoun, "we", "our study"); an
expletive "There was X" is rewritten "X was observed" (:func:`without_expletive`).
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

__all__ = ["RuleClaimExtractor", "claim_problem", "split_clauses"]

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


# an item of a list: "(2) only ...", "2) ...", "ii) ...", "- ...", two "(n)" markers in a clause,
# or one after a colon ("The groups were: (1) ...")
# (not "E. coli ...": a capital and a period is a species' abbreviation)
_ENUMERATION_RE = re.compile(
    r"^(?:\(?\d{1,2}\)|\d{1,2}\.\s+[A-Za-z]|\(?[a-h]\)|\(?[ivx]{1,4}\))\s|^[-*•]\s|"
    r"\(\d{1,2}\)[^()]*\(\d{1,2}\)|:\s*\(?\d{1,2}\)"
)
# a question turned statement: "In particular, are there ...", "Does X ..." (case-sensitive:
# "WHO guidelines", "May-Thurner" and "When compared with placebo, X fell" are no questions)
_QUESTION_RE = re.compile(
    r"^(?:In particular,?\s+|Moreover,?\s+|And\s+|But\s+)?(?:(?:Is|Are|Was|Were|Do|Does|Did|"
    r"Can|Could|Should|Would|Will|Has|Have|Had)\s(?!not\b)|(?<=particular, )(?:is|are|was|were|"
    r"do|does|did|can|could|should|would|will|has|have|had)\s|"
    # "Whether X ..." asks, unless the clause goes on to say it is unclear, unknown ...
    r"Whether\s(?!.*\b(?:remains?|is|was|are|were)\s(?:still\s)?(?:unclear|unknown|uncertain|"
    r"not known|controversial|debated)\b))"
)
#: subjects that are no entity: pronouns, expletives, the authors and their study
_CONNECTIVE = (
    r"(?:(?:However|Moreover|Furthermore|In addition|In particular|Thus|Therefore|Overall|"
    r"Finally|In conclusion|In summary),?\s+)"
)
_BAD_SUBJECT_RE = re.compile(
    rf"^(?:{_CONNECTIVE}(?:we|it|they|this|these|those|there|our)\s|(?:We|I|It|They|He|She|"
    r"There|Here|Our|Its|Their)\s|(?:This|These|Those|That)\s(?:is|are|was|were|has|have|had|"
    r"may|might|can|could|would|should|will|do|does|did|suggests?|shows?|showed|indicates?|"
    r"indicated|means?|implies|confirms?|confirmed|reflects?|led|resulted)\b|(?:The|This|Our|"
    r"The present|The current|A)\s(?:study|studies|trial|work|paper|article|report|review|"
    r"analysis|survey|investigation|data|results?|findings?|authors?)\b)"
)


_EXPLETIVE_RE = re.compile(r"^There\s+(is|are|was|were|has been|have been)\s+(.+?)[.;]?$")


# "It is known that X" states X; "It is possible/likely/thought that X" does not (a hedge)
_IT_THAT_RE = re.compile(
    r"^It (?:is|was|has been) (?:well |now |widely |generally )?(?:known|established|accepted|"
    r"recognized|shown|clear|evident) that (.+)$"
)


def _capitalized(text: str) -> str:
    """``text`` with a capital first letter, unless its first word is written as it must be
    ("mRNA", "p53", "iPSC")."""
    first = text.split(" ", 1)[0]
    if any(c.isupper() for c in first[1:]) or any(c.isdigit() for c in first):
        return text
    return text[:1].upper() + text[1:]


def without_expletive(clause: str) -> str:
    """``"There was no difference in X."`` -> ``"No difference in X was observed."``: the
    expletive's noun phrase made the subject; ``"It is well known that X."`` -> ``"X."``
    (other clauses unchanged)."""
    it = _IT_THAT_RE.match(clause.strip())
    if it is not None:
        return _capitalized(it.group(1))
    m = _EXPLETIVE_RE.match(clause.strip())
    if m is None:
        return clause
    rest = m.group(2)
    tokens = tokenize(rest)
    flags = verb_flags(tokens)
    if any(_finite_verb(tokens, flags, i) for i in range(len(tokens))):
        return clause  # "There were differences when X were compared": no clean subject
    return f"{_capitalized(rest)} {m.group(1)} observed."


_AIM_RE = re.compile(
    r"^(?:to [a-z]+\b|the (?:main |primary )?(?:aim|goal|purpose|objective|hypothesis)s? of "
    r"(?:this|the|the present|our|the current)\b)",
    re.IGNORECASE,
)
#: after a past form, words that make it a participle ("rats divided into groups")
_PARTICIPLE_AFTER = frozenset("into as between among over across against".split())


def _finite_verb(tokens: list[Token], flags: list[bool], i: int) -> bool:
    """A verb that can head a clause: no "-ing" form, no capitalized word inside the clause (a
    name: "Prince Rashed"), no past form before "into", "as", "between" ... (a participle:
    "rats divided into groups"); a past form before "with", "by" ... still counts ("a woman
    presented with fever")."""
    if not flags[i]:
        return False
    tok = tokens[i]
    if (i > 0 and tok.text[:1].isupper()) or tok.lower.endswith("ing"):
        return False
    nxt = tokens[i + 1].lower if i + 1 < len(tokens) else ""
    return not (tok.lower.endswith("ed") and nxt in _PARTICIPLE_AFTER)


def claim_problem(clause: str, min_words: int = 3) -> str:
    """Why ``clause`` is no claim ("" when it is one): too short, a question, an enumeration
    item, an aim, a subject that names no entity (a pronoun, "we", "our study"; an expletive is
    rewritten before, :func:`without_expletive`), or a fragment without a finite verb."""
    text = clause.strip()
    tokens = tokenize(text)
    words = [t for t in tokens if t.is_word]
    if len(words) < min_words:
        return "too short"
    if text.endswith("?") or _QUESTION_RE.match(text):
        return "question"
    if _ENUMERATION_RE.search(text):
        return "enumeration"
    if _AIM_RE.match(text):
        return "aim, not a finding"
    if _BAD_SUBJECT_RE.match(text):
        return "subject names no entity"
    flags = verb_flags(tokens)
    # the verb lexicon has gaps ("WHO guidelines recommend ..."): a clause with no verb-like
    # word at all is a fragment only when short; one whose verb-like words are all participles
    # or gerunds ("Fifteen rats divided into three groups") is one at any length
    if not any(flags):
        return "no finite verb" if len(words) < 6 else ""
    if not any(_finite_verb(tokens, flags, i) for i in range(len(tokens))):
        return "no finite verb"
    return ""


def _keep(clause: str, min_words: int, strict: bool = True) -> bool:
    if strict:
        return not claim_problem(clause, min_words)
    # the rules before claim_problem (strict=False, for comparison): a verb or six words
    tokens = tokenize(clause)
    words = [t for t in tokens if t.is_word]
    return len(words) >= min_words and (any(verb_flags(tokens)) or len(words) >= 6)


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
        strict: bool = True,
    ) -> None:
        self.split = split
        self.resolve = resolve
        self.min_words = min_words
        self.window = window
        self.clean = clean
        self.strict = strict  # False: the looser rules before claim_problem (a comparison)
        self.unresolved_total = 0

    def claim_texts(self, text: str) -> list[tuple[str, int]]:
        """``(claim text, unresolved references)`` for one chunk text, in order."""
        text = clean_text(text) if self.clean else text
        resolver = ReferenceResolver(window=self.window)
        out: list[tuple[str, int]] = []
        for s, e in split_sentences(text):
            sentence = _LABEL_RE.sub("", " ".join(text[s:e].split()))
            if not sentence or (self.strict and sentence.endswith("?")):
                continue  # a question's clauses are no claims
            if self.resolve:
                sentence = resolver.resolve(sentence)
            for part in split_clauses(sentence) if self.split else [sentence]:
                clause = without_expletive(part) if self.strict else part
                if _keep(clause, self.min_words, self.strict):
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
