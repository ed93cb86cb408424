"""Whether a sentence and the passage span it aligns with agree: in negation, in their numbers
and units, and in the direction of an effect. Each check returns the reason it fails, or "".

These are the rules verifier's contradiction tests (:mod:`biorag.verify.align`); they run only
on a span that already says much the same as the sentence, where a flipped "not", a changed
number or an opposite direction means the two disagree rather than talk of different things.
"""

from __future__ import annotations

import re

from biorag.answer.floor import NEGATION

_NUMBER = re.compile(
    r"(?<![\w.\-/])(\d+(?:[.,]\d+)*)(?:\s*(%|percent\b|per cent\b|fold\b|-fold\b|"
    r"[mµun]?g(?:/k?g|/d[lL]|/m[lL])?\b|k?g\b|m?[lL]\b|mmol(?:/[lL])?\b|mm\s?hg\b|mmhg\b|"
    r"years?\b|months?\b|weeks?\b|days?\b|hours?\b|h\b|min(?:utes?)?\b|patients?\b|cases?\b|"
    r"subjects?\b|participants?\b|women\b|men\b|children\b|cells?\b))?",
    re.IGNORECASE,
)
_UNIT_ALIASES = {"percent": "%", "per cent": "%", "-fold": "fold", "minute": "min",
                 "minutes": "min", "h": "hour", "hours": "hour"}  # fmt: skip
# directions of a quantity only; valence words (improve, worse, alleviate) are left out: "X
# alleviated symptoms" and "X improved symptoms" say the same
_UP = re.compile(
    r"\b(increas\w*|rais(?:e|ed|es|ing)|higher|elevat\w*|greater|more|up-?regulat\w*|"
    r"enhanc\w*|activat\w*|induc\w*|stimulat\w*|augment\w*)\b",
    re.IGNORECASE,
)
_DOWN = re.compile(
    r"\b(decreas\w*|reduc\w*|lower\w*|less|fewer|down-?regulat\w*|diminish\w*|declin\w*|"
    r"inhibit\w*|suppress\w*|attenuat\w*)\b",
    re.IGNORECASE,
)
_NOT_ONLY = re.compile(r"\bnot only\b", re.IGNORECASE)


def numbers(text: str) -> set[tuple[str, str]]:
    """The (value, unit) pairs written in ``text``: ``"12.5 mg"`` -> ``("12.5", "mg")``;
    thousands separators dropped, units lower-cased and singular."""
    found = set()
    for m in _NUMBER.finditer(text):
        value = m.group(1).replace(",", "")
        if re.fullmatch(r"(19|20)\d\d", value) and not m.group(2):
            continue  # a year says when, not how much
        unit = (m.group(2) or "").lower().strip()
        unit = _UNIT_ALIASES.get(unit, unit)
        if unit.endswith("s") and unit not in {"%"} and len(unit) > 3:
            unit = unit[:-1]
        found.add((value, unit))
    return found


def negated(text: str) -> bool:
    """Whether ``text`` says its claim negatively (an odd number of negation cues; "not only
    ... but also" is none)."""
    return len(NEGATION.findall(_NOT_ONLY.sub("", text))) % 2 == 1


def direction(text: str) -> int:
    """+1 when ``text`` speaks only of an increase, -1 only of a decrease, 0 otherwise."""
    up, down = bool(_UP.search(text)), bool(_DOWN.search(text))
    return 0 if up == down else (1 if up else -1)


def disagreement(sentence: str, span: str) -> str:
    """Why ``sentence`` contradicts ``span`` (an aligned span), or "" when no check fails."""
    if negated(sentence) != negated(span):
        side = "the sentence" if negated(sentence) else "the passage"
        return f"negation: only {side} negates the claim"
    # only numbers with a unit are compared: a bare one is as often a name ("type 2"), a
    # reference or a p-value as a quantity
    said = {n for n in numbers(sentence) if n[1]}
    given = {n for n in numbers(span) if n[1]}
    for value, unit in sorted(said - given):
        same_unit = [v for v, u in sorted(given - said) if u == unit]
        if same_unit:
            said_text, given_text = f"{value} {unit}".strip(), f"{same_unit[0]} {unit}".strip()
            return f"numbers: the sentence says {said_text}, the passage {given_text}"
    d_sentence, d_span = direction(sentence), direction(span)
    if d_sentence and d_span and d_sentence != d_span:
        return "direction: the sentence and the passage give opposite directions of the effect"
    return ""
