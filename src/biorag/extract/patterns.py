"""Pattern-based triple extraction with a biomedical predicate lexicon (the no-LLM floor).

A predicate is a verb group around a lexicon verb (:data:`~biorag.extract.lexicon.
PREDICATE_VERBS`: increases, reduces, inhibits, activates, causes, induces, treats, prevents,
predicts, binds, expresses, regulates, improves, worsens, ...) with its auxiliaries, modals and
negation kept ("did not reduce", "may inhibit", "failed to improve", "has been shown to
reduce") and its particle ("is associated with", "correlates with", "leads to", "binds to");
or a copular pattern ("is a risk factor for", "is a marker of", "is higher in", "is lower
among"). The subject is the noun phrase before the predicate (an introductory phrase, a leading
complementizer and appositives dropped), the object the phrase after it up to the next clause.

Passive voice is turned around: "TNF-α is inhibited by IL-10" gives (IL-10, inhibits, TNF-α);
"... is not inhibited by ..." gives "does not inhibit". The predicate at the sentence's main verb
wins over one in a relative clause. When no lexicon or copular pattern matches, the main verb
group is the predicate ("received", "did not change", "presented with"), then a plain copula or
``has``/``have``; when even that fails the caller uses the rule-based fallback.
"""

from __future__ import annotations

import re

from biorag.extract.lexicon import (
    ADVERBS,
    AUXILIARIES,
    BE_FORMS,
    CONJUNCTIONS,
    DETERMINERS,
    NEGATIONS,
    PREDICATE_VERBS,
    PREPOSITIONS,
    VERB_FORMS,
    third_person,
)
from biorag.extract.models import Triple
from biorag.extract.nlp import Token, is_adverb, main_verb, tokenize, verb_flags

__all__ = ["pattern_triple"]

_COMPARATIVES = frozenset(
    "higher lower greater smaller elevated more less common prevalent frequent abundant "
    "enriched".split()
)
_ROLE_NOUNS = frozenset(
    "factor factors predictor predictors marker markers biomarker biomarkers cause causes "
    "determinant determinants target targets inhibitor inhibitors activator activators "
    "substrate substrates ligand ligands component components hallmark hallmarks "
    "complication complications consequence consequences source sources mediator mediators "
    "regulator regulators indicator indicators treatment therapy".split()
)
_ROLE_PREPS = frozenset("for of in against".split())
_INFINITIVE_CUES = frozenset("shown found reported known thought likely able failed fails fail "
                             "appears appeared seems seemed".split())  # fmt: skip
_ARTICLES = frozenset("a an the".split())
_EXPLETIVES = frozenset("it there this".split())
_OBJECT_STOP = frozenset(";: whereas while which because although but who thereby".split())
_AFTER_COMMA_STOP = frozenset(
    "which whereas while but and although who thereby suggesting indicating".split()
)


def _text(text: str, tokens: list[Token], i: int, j: int) -> str:
    return text[tokens[i].start : tokens[j - 1].end] if j > i else ""


def _group_start(tokens: list[Token], j: int) -> int:
    """Extend a verb group left over auxiliaries, negation, adverbs and "shown to"."""
    g = j
    while g > 0:
        w = tokens[g - 1].lower
        if w in AUXILIARIES or w in NEGATIONS or w in ADVERBS or is_adverb(w):
            g -= 1
        elif w == "to" and g >= 2 and tokens[g - 2].lower in _INFINITIVE_CUES:
            g -= 2
        else:
            break
    while g < j and (tokens[g].lower in ADVERBS or is_adverb(tokens[g].lower)):
        g += 1
    return g


def _surface(tokens: list[Token], g: int, k: int) -> str:
    """The predicate words of ``tokens[g:k]`` without adverbs."""
    keep = [t.text for t in tokens[g:k] if not (t.lower in ADVERBS or is_adverb(t.lower))]
    return " ".join(keep).replace(" n't", "n't")


def _left(text: str, tokens: list[Token], g: int) -> str:
    lo = 0
    for i in range(g - 1, -1, -1):
        w = tokens[i].lower
        if w in (";", ":", "whereas") or (w == "that" and i > 0) or (w == "while" and i > 0):
            lo = i + 1
            break
    commas = [i for i in range(lo, g) if tokens[i].text == ","]
    hi = g
    if commas and (tokens[lo].lower in PREPOSITIONS or tokens[lo].lower in CONJUNCTIONS):
        lo = commas[-1] + 1
    elif commas:
        hi = commas[0]
    while lo < hi and (tokens[lo].lower in _ARTICLES or tokens[lo].lower in CONJUNCTIONS):
        lo += 1
    while hi > lo and (
        not tokens[hi - 1].is_word
        or tokens[hi - 1].lower in ADVERBS
        or is_adverb(tokens[hi - 1].lower)
    ):
        hi -= 1
    return _text(text, tokens, lo, hi)


def _right(text: str, tokens: list[Token], k: int) -> str:
    hi = len(tokens)
    for i in range(k, len(tokens)):
        w = tokens[i].lower
        if w in _OBJECT_STOP or (
            w == "," and i + 1 < len(tokens) and tokens[i + 1].lower in _AFTER_COMMA_STOP
        ):
            hi = i
            break
    while k < hi and tokens[k].lower in _ARTICLES:
        k += 1
    while hi > k and not tokens[hi - 1].is_word and tokens[hi - 1].text not in ")%":
        hi -= 1
    return _text(text, tokens, k, hi)


def _negated(tokens: list[Token], g: int, j: int) -> bool:
    return any(t.lower in NEGATIONS for t in tokens[g:j])


def _lexicon_match(text: str, tokens: list[Token], flags: list[bool], j: int) -> Triple | None:
    info = VERB_FORMS.get(tokens[j].lower)
    if info is None or info[0] not in PREDICATE_VERBS or not flags[j]:
        return None
    base, kind = info
    g = _group_start(tokens, j)
    passive = kind == "past" and any(t.lower in BE_FORMS for t in tokens[g:j])
    nxt = tokens[j + 1].lower if j + 1 < len(tokens) else ""
    if passive and nxt == "by":
        pred = third_person(base)
        if _negated(tokens, g, j):
            pred = f"does not {base}"
        return _make(_right(text, tokens, j + 2), pred, _left(text, tokens, g))
    k = j + 1
    particle = PREDICATE_VERBS[base]
    if (particle and nxt == particle) or (passive and nxt in ("in", "with", "to", "for")):
        k = j + 2
    return _make(_left(text, tokens, g), _surface(tokens, g, k), _right(text, tokens, k))


def _copular_match(text: str, tokens: list[Token], i: int, plain: bool) -> Triple | None:
    """``be (not) higher in``, ``be (not) a risk factor for``; with ``plain`` also bare ``be``
    and ``has/have``."""
    w = tokens[i].lower
    if w not in BE_FORMS and not (plain and w in ("has", "have", "had")):
        return None
    k = i + 1
    while k < len(tokens) and (tokens[k].lower in NEGATIONS or is_adverb(tokens[k].lower)):
        k += 1
    g = _group_start(tokens, i)
    if w in BE_FORMS and k + 1 < len(tokens):
        if tokens[k].lower in _COMPARATIVES and tokens[k + 1].lower in ("in", "among", "than"):
            return _make(
                _left(text, tokens, g), _surface(tokens, g, k + 2), _right(text, tokens, k + 2)
            )
        m = k + (tokens[k].lower in DETERMINERS)
        while m < len(tokens) and tokens[m].lower not in _ROLE_NOUNS and m < k + 4:
            m += 1
        if (
            m + 1 < len(tokens)
            and tokens[m].lower in _ROLE_NOUNS
            and tokens[m + 1].lower in _ROLE_PREPS
        ):
            return _make(
                _left(text, tokens, g), _surface(tokens, g, m + 2), _right(text, tokens, m + 2)
            )
    if plain:
        return _make(_left(text, tokens, g), _surface(tokens, g, k), _right(text, tokens, k))
    return None


def _main_verb_match(text: str, tokens: list[Token], flags: list[bool], v: int) -> Triple | None:
    """Any main verb group as the predicate ("received", "did not change", "presented with")."""
    g = _group_start(tokens, v)
    k = v
    while k < len(tokens) and (
        flags[k] or tokens[k].lower in NEGATIONS or tokens[k].lower in ADVERBS
        or is_adverb(tokens[k].lower)
    ):  # fmt: skip
        k += 1
    if k < len(tokens) and tokens[k].lower in PREPOSITIONS and tokens[k].lower != "of":
        k += 1
    return _make(_left(text, tokens, g), _surface(tokens, g, k), _right(text, tokens, k))


def _balance(s: str) -> str:
    """Drop an unclosed parenthesis and what follows it ("myocardial infarction (MI")."""
    s = s.strip()
    if s.count("(") > s.count(")"):
        s = s[: s.rfind("(")].rstrip(" ,;")
    if s.count(")") > s.count("(") and s.endswith(")"):
        s = s[:-1].rstrip()
    return s


#: entities that name nothing: pronouns, expletives, the authors and their study, bare numbers
_NO_ENTITY = re.compile(
    r"^(?:we|i|us|our|it|they|them|he|she|this|these|those|that|there|here|one|"
    r"(?:the |this |our |the present |the current )?(?:study|studies|trial|work|paper|article|"
    r"report|review|analysis|results?|findings?|authors?|data)|[\d.,%\s<>=±+-]+)$",
    re.IGNORECASE,
)


def is_entity(name: str) -> bool:
    """Whether ``name`` can be a graph entity: it has a letter, and it is no pronoun,
    expletive, "our study" or bare number ("18.0%")."""
    return bool(re.search(r"[A-Za-z]", name)) and not _NO_ENTITY.match(name.strip())


def _make(subject: str, predicate: str, obj: str) -> Triple | None:
    subject, predicate, obj = _balance(subject), predicate.strip(), _balance(obj)
    if not (subject and predicate and obj) or not (is_entity(subject) and is_entity(obj)):
        return None
    return Triple(subject=subject, predicate=predicate, object=obj)


_REPORTING = frozenset(
    "show shows showed shown suggest suggests suggested demonstrate demonstrates demonstrated "
    "indicate indicates indicated reveal reveals revealed find finds found report reports "
    "reported confirm confirms confirmed conclude concludes concluded".split()
)


def pattern_triple(text: str) -> Triple | None:
    """The lexicon/pattern triple of a claim, or None when no pattern fits.

    "Studies showed that X reduces Y" is read as its complement clause "X reduces Y".
    """
    tokens = tokenize(text)
    if len(tokens) < 3:
        return None
    flags = verb_flags(tokens)
    v = main_verb(tokens, flags)
    if 0 <= v < len(tokens) - 3 and tokens[v].lower in _REPORTING:
        k = v + 1
        while k < len(tokens) and (tokens[k].lower in ADVERBS or is_adverb(tokens[k].lower)):
            k += 1
        if k < len(tokens) and tokens[k].lower == "that":
            inner = pattern_triple(text[tokens[k].end :])
            if inner is not None:
                return inner
    near = list(range(v, min(len(tokens), v + 4))) if v >= 0 else []  # the main verb group
    rest = [j for j in range(len(tokens)) if j not in near]
    found = _first(text, tokens, flags, near)
    if found is None and v >= 0:
        found = _main_verb_match(text, tokens, flags, v)
    found = found or _first(text, tokens, flags, rest)
    if found is None:
        found = next((t for j in near + rest if (t := _copular_match(text, tokens, j, True))), None)
    if found is not None and found.subject.lower() in _EXPLETIVES:
        # "It is unclear whether X ...", "There is evidence that X ...": the inner clause
        for k, tok in enumerate(tokens):
            if tok.lower in ("that", "whether") and k > v >= 0:
                return pattern_triple(text[tok.end :]) or found
    return found


def _first(
    text: str, tokens: list[Token], flags: list[bool], positions: list[int]
) -> Triple | None:
    """The first lexicon or copular-pattern triple at one of ``positions``."""
    for j in positions:
        t = _lexicon_match(text, tokens, flags, j) or _copular_match(text, tokens, j, False)
        if t is not None:
            return t
    return None
