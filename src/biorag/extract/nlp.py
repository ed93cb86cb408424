"""A tiny rule-based shallow parser for the no-LLM operators (no model, no POS tagger).

* :func:`tokenize`: word tokens with character offsets (``IL-6``, ``TNF-α``, ``HbA1c``,
  ``5.2`` and ``mg/dL`` stay whole; punctuation is one token).
* :func:`verb_flags`: which tokens are verb-like in context. Auxiliaries and irregular pasts
  always are; a known verb's ``-s`` form is a verb unless a determiner or preposition precedes
  it ("the causes"); its ``-ed``/``-ing`` form is an adjective when it opens a noun phrase
  ("with reduced ejection fraction"); a base form is a verb after a modal, ``to``, ``not`` or a
  noun ("statins lower LDL") but a noun after a determiner or adjective ("an increase").
* :func:`noun_chunks`: maximal runs of content tokens, optionally joined by ``of``.
* :func:`main_verb` / :func:`subject_span`: the first finite-looking verb (skipping participle
  modifiers such as "patients *treated* with X") and the words before it.

It is a heuristic floor: it gets simple declarative biomedical sentences right and says nothing
about anything harder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from biorag.extract.lexicon import (
    ADJECTIVE_CUES,
    ADJECTIVE_SUFFIXES,
    ADVERBS,
    AUXILIARIES,
    CONJUNCTIONS,
    DETERMINERS,
    DO_FORMS,
    MODALS,
    NEGATIONS,
    PREPOSITIONS,
    QUANTIFIERS,
    STOPWORDS,
    STRICT_ADJECTIVE_SUFFIXES,
    VERB_FORMS,
)

_TOKEN_RE = re.compile(
    r"[\w\u0370-\u03ff\u00b5](?:[\w\u0370-\u03ff\u00b5'’+]|[-/.](?=[\w\u0370-\u03ff\u00b5])"
    r"|(?<=\d),(?=\d{3}\b))*"
    r"|[^\w\s]"
)
_NOT_ED = frozenset("need seed speed breed feed hundred bleed embed indeed".split())
_PARTICIPLE_NEXT = frozenset("by with in for to at from on under".split())


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def is_word(self) -> bool:
        return self.text[0].isalnum() or "\u0370" <= self.text[0] <= "\u03ff"


def tokenize(text: str) -> list[Token]:
    """Tokens of ``text`` with their character offsets."""
    return [Token(m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _is_number(w: str) -> bool:
    return bool(re.fullmatch(r"[\d.,/%-]+", w))


def is_content(tok: Token) -> bool:
    """A word that can belong to a noun phrase (not a function word, not punctuation)."""
    return tok.is_word and tok.lower not in STOPWORDS


def _adjective_like(w: str, strict: bool = False) -> bool:
    """An adjective cue; ``strict`` leaves out the suffixes that nouns share (-al, -ant, -ent:
    "trial", "patient", "treatment")."""
    if w in ADJECTIVE_CUES:
        return True
    suffixes = STRICT_ADJECTIVE_SUFFIXES if strict else ADJECTIVE_SUFFIXES
    return len(w) > 4 and w.endswith(suffixes)


def _ed_form(w: str) -> bool:
    return len(w) >= 5 and w.endswith("ed") and w not in _NOT_ED and w not in STOPWORDS


def verb_flags(tokens: list[Token]) -> list[bool]:
    """For each token, whether it is verb-like in context (see the module docstring)."""
    flags: list[bool] = []
    adjectival = False  # the previous token was an -ed/-ing adjective opening a noun phrase
    for i, tok in enumerate(tokens):
        w = tok.lower
        prev = tokens[i - 1].lower if i > 0 else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        flag = False
        info = VERB_FORMS.get(w)
        kind = info[1] if info else ("past" if _ed_form(w) else None)
        np_context = prev is None or prev in DETERMINERS or prev in PREPOSITIONS or adjectival
        np_context = np_context or (prev is not None and not tokens[i - 1].is_word)
        adjectival = False
        if not tok.is_word or _is_number(w):
            flag = False
        elif w in AUXILIARIES:
            flag = True
        elif kind is None and w not in STOPWORDS and _after_auxiliary(tokens, i):
            flag = True  # an unknown verb: "did not *alleviate*", "may *ameliorate*"
        elif kind in ("past", "ing"):
            if np_context and nxt is not None and is_content(nxt) and nxt.lower not in VERB_FORMS:
                adjectival = True
            elif kind == "ing" and (prev in PREPOSITIONS or prev is None):
                flag = False  # "by reducing", sentence-initial gerund
            else:
                flag = True
        elif kind == "3sg":  # "similar results", "the causes": nouns
            flag = not (
                prev is None
                or prev in DETERMINERS
                or prev in PREPOSITIONS
                or prev in QUANTIFIERS
                or _adjective_like(prev, strict=True)
            )
        elif kind == "base":
            if prev in MODALS or prev in DO_FORMS or prev in ("not", "n't", "never", "to"):
                flag = True
            elif prev is None or np_context or prev in QUANTIFIERS or _adjective_like(prev):
                flag = False
            else:
                flag = prev not in STOPWORDS
        flags.append(flag)
    for i in range(len(tokens) - 1):  # "results suggest": a noun before a verb
        info = VERB_FORMS.get(tokens[i].lower)
        nxt_lower = tokens[i + 1].lower
        if (
            flags[i]
            and flags[i + 1]
            and info
            and info[1] == "3sg"
            and tokens[i].lower != "has"
            and (nxt_lower not in AUXILIARIES or nxt_lower in MODALS)
        ):
            flags[i] = False
    return flags


def _after_auxiliary(tokens: list[Token], i: int) -> bool:
    """Whether token ``i`` follows a modal, a form of *do*, or one of them plus ``not``."""
    k = i - 1
    if k >= 0 and tokens[k].lower in NEGATIONS:
        k -= 1
    return k >= 0 and (tokens[k].lower in MODALS or tokens[k].lower in DO_FORMS)


def is_finite(tokens: list[Token], flags: list[bool], i: int) -> bool:
    """Whether verb-like token ``i`` looks finite: an auxiliary, an ``-s`` form, a past form not
    directly followed by a preposition (that would be a participle modifier), or a base form
    after a plural noun."""
    if not flags[i]:
        return False
    w = tokens[i].lower
    if w in AUXILIARIES:
        return True
    kind = VERB_FORMS.get(w, ("", "past" if _ed_form(w) else ""))[1]
    if kind == "ing":
        return False
    if kind == "past":
        nxt = tokens[i + 1].lower if i + 1 < len(tokens) else ""
        return nxt not in _PARTICIPLE_NEXT
    return True


def main_verb(tokens: list[Token], flags: list[bool], lo: int = 0, hi: int | None = None) -> int:
    """Index of the main verb in ``tokens[lo:hi]`` (-1 when there is none).

    The first verb-like token, except that a past participle right after a noun and before a
    preposition ("patients treated with X ...") is skipped when a later verb exists.
    """
    hi = len(tokens) if hi is None else hi
    candidates = [i for i in range(lo, hi) if flags[i]]
    for n, i in enumerate(candidates):
        later = candidates[n + 1 :]
        if (
            later
            and i > lo
            and is_content(tokens[i - 1])
            and tokens[i].lower not in AUXILIARIES
            and not is_finite(tokens, flags, i)
        ):
            continue
        return i
    return -1


def noun_chunks(
    tokens: list[Token], flags: list[bool], link_of: bool = True, lo: int = 0, hi: int | None = None
) -> list[tuple[int, int]]:
    """Token spans ``[i, j)`` of noun phrases: runs of non-verb content words (numbers and
    ``%`` included), joined across ``of`` when ``link_of``."""
    hi = len(tokens) if hi is None else hi
    spans: list[tuple[int, int]] = []
    i = lo
    while i < hi:
        if np_token(tokens[i], flags[i]):
            j = i
            while j < hi and np_token(tokens[j], flags[j]):
                j += 1
            if (
                link_of
                and spans
                and i >= 1
                and tokens[i - 1].lower == "of"
                and spans[-1][1] == i - 1
            ):
                spans[-1] = (spans[-1][0], j)
            else:
                spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


_NOT_ADVERB = frozenset(
    "family supply assembly anomaly italy july rally monopoly reply early belly jelly holly "
    "bully".split()
)


def is_adverb(w: str) -> bool:
    """An ``-ly`` adverb ("significantly"), not a noun such as "family"."""
    return len(w) >= 5 and w.endswith("ly") and w not in _NOT_ADVERB


def np_token(tok: Token, flag: bool) -> bool:
    """Whether a token can be part of a noun phrase (given its verb flag)."""
    if flag:
        return False
    if tok.text in ("%",):
        return True
    return is_content(tok) and not is_adverb(tok.lower) and tok.lower not in ADVERBS


def subject_span(tokens: list[Token], flags: list[bool], lo: int = 0, hi: int | None = None):
    """Token span ``[i, j)`` of the subject of the clause ``tokens[lo:hi]``, or None.

    The words before the main verb; an introductory phrase ending in a comma ("In patients with
    diabetes, metformin ...") and a leading complementizer are left out.
    """
    v = main_verb(tokens, flags, lo, hi)
    if v <= lo:
        return None
    start = lo
    commas = [k for k in range(lo, v) if tokens[k].text == ","]
    if commas and tokens[lo].lower in PREPOSITIONS | CONJUNCTIONS | {"compared", "overall"}:
        start = commas[-1] + 1
    elif commas:  # "Metformin, a biguanide, lowers ...": drop the appositive
        end = commas[0]
        return (start, end) if end > start else None
    while start < v and (
        tokens[start].lower in CONJUNCTIONS or tokens[start].lower in ("then", "also")
    ):
        start += 1
    while v > start and (
        tokens[v - 1].lower in NEGATIONS | {"also", "further"} or is_adverb(tokens[v - 1].lower)
    ):
        v -= 1
    return (start, v) if v > start else None


def span_text(text: str, tokens: list[Token], span: tuple[int, int]) -> str:
    """The original text covered by a token span."""
    i, j = span
    return text[tokens[i].start : tokens[j - 1].end]
