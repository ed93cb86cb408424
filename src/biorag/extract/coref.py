"""Rule-based reference resolution for the no-LLM claim extractor (a floor, not a coreference
model).

References it knows:

* pronouns ``it``, ``they``, ``them``, ``he``, ``she``, ``him`` and possessives ``its``,
  ``their``, ``his``, ``her`` (expletive "it is known that ..." is not a reference);
* bare demonstratives ``this`` / ``these`` ("This reduces ...");
* demonstrative noun phrases ``this drug``, ``these patients``, ``such patients``,
  ``those cells``, ``that study`` (``that`` only before a class or generic noun, since it is
  usually a complementizer; ``such as`` never).

How a reference is resolved, within one chunk:

* a demonstrative noun phrase takes the nearest preceding noun phrase that contains its head
  noun or belongs to its class (a drug-like phrase for "this drug/agent/therapy", a patient-like
  phrase for "these patients/participants", a gene-like one for "this protein", a disease word for
  "this condition"); other heads ("this effect") need the same head noun;
* a pronoun or bare demonstrative after the main verb takes the subject of its own sentence;
  otherwise the subject of the nearest preceding sentence (at most ``window`` back), then any
  preceding noun phrase, always agreeing in number (``it`` singular, ``they`` plural) and, for
  ``he``/``she``, a person-like phrase.

What cannot be resolved is left in the text; :func:`count_references` counts what is left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from biorag.extract.entities import is_disease_word, is_drug_word, is_gene_like
from biorag.extract.lexicon import (
    BE_FORMS,
    BIO_WORDS,
    CLASS_NOUNS,
    DISEASE_WORDS,
    PERSON_WORDS,
    PREPOSITIONS,
    STOPWORDS,
)
from biorag.extract.nlp import (
    Token,
    is_content,
    main_verb,
    noun_chunks,
    np_token,
    span_text,
    subject_span,
    tokenize,
    verb_flags,
)

_PRONOUNS = {"it": "sg", "they": "pl", "them": "pl", "he": "person", "she": "person",
             "him": "person"}  # fmt: skip
_POSSESSIVES = {"its": "sg", "their": "pl", "his": "person", "her": "person"}
_BARE = {"this": "sg", "these": "pl"}
_DETERMINERS = {"this": "sg", "these": "pl", "those": "pl", "that": "sg", "such": None}
_GENERIC = frozenset(
    "effect effects finding findings study studies trial trials association associations "
    "approach method result results change changes intervention interventions procedure "
    "mechanism process group groups model strategy".split()
)
_CLASS_OF = {w: cls for cls, words in CLASS_NOUNS.items() for w in words}
_EXPLETIVE_VERBS = BE_FORMS | {"seems", "seemed", "appears", "appeared", "remains", "remained"}
_EXPLETIVE_NEXT = frozenset("that whether to if how why".split())
_SINGULAR_S = frozenset(
    "diabetes mellitus sepsis analysis virus status series species news aids measles mumps "
    "rabies herpes lupus tetanus fetus uterus stimulus nucleus thrombus bronchus calculus "
    "pancreas atlas bias gas mass glucose".split()
)
_PLURAL = frozenset("people children men women mice feet teeth data bacteria criteria".split())


@dataclass(frozen=True)
class Reference:
    start: int  # character offsets into the text
    end: int
    kind: str  # pronoun | possessive | bare | demonstrative
    number: str | None  # sg | pl | person | None
    head: str | None  # the head noun of a demonstrative phrase
    index: int  # token index of the reference word


def _stem(w: str) -> str:
    w = w.lower()
    return w[:-1] if w.endswith("s") and not w.endswith("ss") else w


def is_plural(phrase: str) -> bool:
    """Number of a noun phrase from its head ("levels of IL-6", "adults with diabetes": plural)."""
    phrase = re.split(r"\s(?:of|with|without|in|on|for)\s", phrase.lower(), maxsplit=1)[0]
    words = phrase.split()
    if not words:
        return False
    if "and" in words:
        return True
    head = words[-1].strip(".,;:")
    if head in _PLURAL:
        return True
    if head in _SINGULAR_S or head.endswith(("ss", "us", "is", "itis", "osis")):
        return False
    return head.endswith("s") and len(head) > 3


def find_references(text: str, tokens: list[Token] | None = None) -> list[Reference]:
    """Unresolved-looking references in ``text``, in order."""
    tokens = tokens if tokens is not None else tokenize(text)
    flags = verb_flags(tokens)
    refs: list[Reference] = []
    n = len(tokens)
    for i, tok in enumerate(tokens):
        w = tok.lower
        nxt = tokens[i + 1] if i + 1 < n else None
        if w == "it" and _expletive(tokens, i):
            continue
        if w == "her" and nxt is not None and is_content(nxt) and not flags[i + 1]:
            refs.append(Reference(tok.start, tok.end, "possessive", "person", None, i))
        elif w in _PRONOUNS:
            refs.append(Reference(tok.start, tok.end, "pronoun", _PRONOUNS[w], None, i))
        elif w in _POSSESSIVES:
            refs.append(Reference(tok.start, tok.end, "possessive", _POSSESSIVES[w], None, i))
        elif w in _DETERMINERS and nxt is not None and nxt.lower != "as":
            j = i + 1
            while j < n and np_token(tokens[j], flags[j]):
                j += 1
            head = tokens[j - 1].lower if j > i + 1 else None
            known = head is not None and (head in _CLASS_OF or head in _GENERIC)
            # "that" is usually a complementizer ("showed that X ..."): a determiner only first
            # in the sentence or after a preposition, before a class or generic noun
            that_ok = known and (i == 0 or tokens[i - 1].lower in PREPOSITIONS)
            if head is not None and (w != "that" or that_ok):
                end = tokens[j - 1].end
                refs.append(Reference(tok.start, end, "demonstrative", _DETERMINERS[w], head, i))
            elif head is None and w in _BARE:
                refs.append(Reference(tok.start, tok.end, "bare", _BARE[w], None, i))
        elif w in _BARE and nxt is None:
            refs.append(Reference(tok.start, tok.end, "bare", _BARE[w], None, i))
    return refs


def _expletive(tokens: list[Token], i: int) -> bool:
    """ "it is known that", "it remains unclear whether", "it was difficult to"."""
    if i + 1 >= len(tokens) or tokens[i + 1].lower not in _EXPLETIVE_VERBS:
        return False
    return any(t.lower in _EXPLETIVE_NEXT for t in tokens[i + 2 : i + 7])


def count_references(text: str) -> int:
    """How many references :func:`find_references` sees in ``text``."""
    return len(find_references(text))


@dataclass
class _Mention:
    text: str
    plural: bool
    sentence_initial: bool


@dataclass
class _Sentence:
    subject: _Mention | None
    mentions: list[_Mention] = field(default_factory=list)  # in text order


def _class_match(cls: str | None, head: str, mention: _Mention) -> bool:
    words = [w.strip(".,;:()") for w in mention.text.split()]
    lows = {w.lower() for w in words}
    if _stem(head) in {_stem(w) for w in lows}:
        return True
    if cls == "drug":
        return any(is_drug_word(w) for w in words)
    if cls == "patient":
        return bool(lows & PERSON_WORDS)
    if cls == "gene":
        return any(is_gene_like(w) for w in words)
    if cls == "disease":
        return any(is_disease_word(w) for w in words)
    return False


def _agrees(number: str | None, mention: _Mention) -> bool:
    if number == "sg":
        return not mention.plural
    if number == "pl":
        return mention.plural
    if number == "person":
        return bool({w.lower() for w in mention.text.split()} & PERSON_WORDS)
    return True


def _surface(mention: _Mention, at_start: bool, possessive: bool) -> str:
    text = mention.text
    first = text.split()[0].lower()
    word = text.split()[0]
    common = first in STOPWORDS or first in _CLASS_OF or first in BIO_WORDS
    common = common or first in DISEASE_WORDS or is_drug_word(first)
    if mention.sentence_initial and common and word[:1].isupper() and word[1:] == word[1:].lower():
        text = text[0].lower() + text[1:]
    if at_start:
        text = text[0].upper() + text[1:]
    if possessive:
        text += "'" if text.endswith("s") and mention.plural else "'s"
    return text


class ReferenceResolver:
    """Resolves references sentence by sentence; create one per chunk."""

    def __init__(self, window: int = 3) -> None:
        self.window = window
        self.history: list[_Sentence] = []

    def resolve(self, sentence: str) -> str:
        """``sentence`` with the references it could resolve replaced by their antecedents."""
        tokens = tokenize(sentence)
        refs = find_references(sentence, tokens)
        flags = verb_flags(tokens)
        verb = main_verb(tokens, flags)
        subj = subject_span(tokens, flags)
        local = [
            (c, _Mention(span_text(sentence, tokens, c), False, c[0] == 0))
            for c in _extend_person_chunks(tokens, noun_chunks(tokens, flags))
        ]
        local = [(c, _Mention(m.text, is_plural(m.text), m.sentence_initial)) for c, m in local]
        out: list[str] = []
        cursor = 0
        subject_text: str | None = None
        for ref in refs:
            in_subject = subj is not None and subj[0] <= ref.index < subj[1]
            after_verb = verb >= 0 and ref.index > verb
            current = None
            if after_verb and subj is not None and not in_subject:
                raw = subject_text or span_text(sentence, tokens, subj)
                if not find_references(raw):
                    current = _Mention(raw, is_plural(raw), subj[0] == 0)
            before = [m for c, m in reversed(local) if c[1] <= ref.index]
            antecedent = self._antecedent(ref, current, before)
            out.append(sentence[cursor : ref.start])
            if antecedent is None:
                out.append(sentence[ref.start : ref.end])
            else:
                out.append(_surface(antecedent, ref.index == 0, ref.kind == "possessive"))
                if in_subject and ref.kind in ("pronoun", "bare", "demonstrative"):
                    subject_text = antecedent.text
            cursor = ref.end
        out.append(sentence[cursor:])
        resolved = "".join(out)
        self._remember(resolved)
        return resolved

    def _antecedent(
        self, ref: Reference, current: _Mention | None, before: list[_Mention]
    ) -> _Mention | None:
        if ref.kind == "demonstrative":
            assert ref.head is not None
            cls = _CLASS_OF.get(ref.head)
            pool = before + [m for s in reversed(self.history) for m in reversed(s.mentions)]
            return next((m for m in pool if _class_match(cls, ref.head, m)), None)
        recent = self.history[-self.window :][::-1]
        pool = [current] if current is not None else []
        pool += [s.subject for s in recent if s.subject is not None]
        pool += [m for s in recent for m in reversed(s.mentions)]
        pool += before
        return next((m for m in pool if _agrees(ref.number, m)), None)

    def _remember(self, sentence: str) -> None:
        tokens = tokenize(sentence)
        flags = verb_flags(tokens)
        blocked = {t for r in find_references(sentence, tokens) for t in _token_range(tokens, r)}
        mentions = []
        for c in _extend_person_chunks(tokens, noun_chunks(tokens, flags)):
            if blocked & set(range(*c)):
                continue
            text = span_text(sentence, tokens, c)
            if any(ch.isalpha() for ch in text):
                mentions.append(_Mention(text, is_plural(text), c[0] == 0))
        subj = subject_span(tokens, flags)
        if subj is not None and all(t.lower in STOPWORDS for t in tokens[subj[0] : subj[1]]):
            # "It is known that X ...": the subject of the clause after "that"
            that = [k for k in range(subj[1], len(tokens)) if tokens[k].lower == "that"]
            subj = subject_span(tokens, flags, that[0] + 1) if that else None
        subject = None
        if subj is not None and not (blocked & set(range(*subj))):
            text = span_text(sentence, tokens, subj)
            subject = _Mention(text, is_plural(text), subj[0] == 0)
        self.history.append(_Sentence(subject, mentions))


def _token_range(tokens: list[Token], ref: Reference) -> range:
    idx = [k for k, t in enumerate(tokens) if t.start >= ref.start and t.end <= ref.end]
    return range(idx[0], idx[-1] + 1) if idx else range(0)


def _extend_person_chunks(tokens: list[Token], chunks: list[tuple[int, int]]):
    """Join "patients" + "with type 2 diabetes" into one mention (the population matters)."""
    out: list[tuple[int, int]] = []
    for c in chunks:
        if (
            out
            and c[0] >= 2
            and out[-1][1] == c[0] - 1
            and tokens[c[0] - 1].lower in ("with", "without")
            and tokens[out[-1][1] - 1].lower in PERSON_WORDS
        ):
            out[-1] = (out[-1][0], c[1])
        else:
            out.append(c)
    return out
