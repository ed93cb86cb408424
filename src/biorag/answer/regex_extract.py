"""Regular-expression answer extraction (VectorGraphRAG style): the option letter a reply chose.

VectorGraphRAG (seed 004, Sec. 4: "To extract the answer from the model output, we utilized
regular expressions") scores MedMCQA this way instead of with a second LLM call. Its public
code tries, in order: a reply shorter than 4 characters holding one letter; a reply equal to an
option line; an "answer is X" pattern; the letter most often followed by punctuation; an option
text found in the reply. That "answer is" pattern is written ``[aA]answer`` -- a typo that only
matches "aanswer", so the branch never fires. This module implements the intended pattern
(case-insensitive "answer"), and it departs from that code where the code guesses:

* the LAST explicit statement wins ("not A ... the answer is C" gives C; the public code
  took the first match);
* the weaker cues (a bold letter, option markers at line starts, a parenthesised letter, an
  option text) count only when they name exactly one option; conflicting cues give ``None``
  rather than a majority vote or the first option listed;
* nothing matched gives ``None``: the caller records a parse failure, never a guess.

Tiers, first to match wins:

1. the whole reply is one letter, maybe decorated: ``B``, ``(b)``, ``**B.**``;
2. a JSON field ``"answer": "b"`` (the CLAIMS extraction format), last one;
3. an explicit statement, last one in the text: "answer is (B)", "Answer: B", "final answer:
   **B**", "the correct option is B", "B is the correct answer", or, given ``options``, the
   option text itself ("Answer: maybe");
4. bold letters (``**B**``, ``**B. text**``), if all name one option;
5. option markers at line starts (``B.``, ``B)``, ``(B)``, ``B:``), if all name one option;
6. parenthesised letters ``(B)``, if all name one option; then quoted letters (``"B"``,
   ``'B'``: a small model's "the answer to whether ... is \"B\""), if all name one option;
7. given ``options``, option texts (4+ characters, whole words, not part of a longer matched
   option) found in the reply, if exactly one.

Lower-case letters are accepted, except that a bare "a" or "i" (an article or a pronoun) must be
bracketed, bold, quoted or followed by punctuation or the end of the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["extract_letter_regex", "parse_letters"]

_PRE = r"[\s\*_\"'`\(\[]*"  # decoration before a letter: spaces, bold, quotes, brackets
_AFTER_OK = re.compile(r"\s*(?:$|[\.\)\]\*\"'`:,;!?])")


def parse_letters(letters: Sequence[str] | str) -> list[str]:
    """Option letters from a list (``["A", "B"]``), a string (``"ABCD"``) or a range (``"A-D"``)."""
    if isinstance(letters, str):
        s = letters.strip()
        if re.fullmatch(r"[A-Za-z]-[A-Za-z]", s):
            lo, hi = ord(s[0]), ord(s[2])
            return [chr(c) for c in range(lo, hi + 1)]
        return [c for c in s if c.isalpha()]
    out = [str(x).strip() for x in letters]
    bad = [x for x in out if len(x) != 1 or not x.isalpha()]
    if bad:
        raise ValueError(f"option letters must be single letters, got {bad!r}")
    return out


def _canonical(ch: str, letters: list[str]) -> str | None:
    return next((x for x in letters if x.upper() == ch.upper()), None)


def _letter_ok(text: str, m: re.Match[str], group: str = "l") -> bool:
    """Reject a lower-case bare "a"/"i" that reads as an English word."""
    ch = m.group(group)
    if ch not in ("a", "i"):
        return True
    start = m.start(group)
    before = text[max(0, start - 1) : start]
    return before in ("(", "[", "*", '"', "'", "`") or bool(_AFTER_OK.match(text, m.end(group)))


def _unique(found: list[str]) -> tuple[bool, str | None]:
    """(any found, the one letter if all agree)."""
    distinct = set(found)
    return bool(found), (found[0] if len(distinct) == 1 else None)


def _explicit_statements(
    text: str, cls: str, letter: str, texts: Mapping[str, str]
) -> list[tuple[int, str]]:
    """Tier 3: (position, letter) of every explicit answer statement in ``text``."""
    keyword = (
        r"(?:\banswer\b|\b(?:correct|right|best)\s+(?:option|choice|letter|response)\b)"
        r"[\*_]*\s*(?:(?:is|would\s+be|should\s+be|will\s+be|=)\b\s*)?[:\-=]?\s*"
        r"(?:(?:option|choice|letter)\s*)?"
    )
    statements: list[tuple[int, str]] = []
    for m in re.finditer(keyword + _PRE + letter, text, flags=re.IGNORECASE):
        if _letter_ok(text, m):
            statements.append((m.start(), m.group("l")))
    reverse = (
        r"(?:\b(?:option|choice)\s+)?[\(\*\[]*(?<![\w'\-])"
        rf"(?P<l>{cls})[\)\*\]\.]*\s+(?:is|would\s+be)\s+"
        r"(?:the\s+)?(?:correct|right|best|most\s+(?:likely|appropriate))\b"
    )
    for m in re.finditer(reverse, text):
        if m.group("l").isupper() or _letter_ok(text, m):
            statements.append((m.start(), m.group("l")))
    if texts:
        alts = "|".join(re.escape(v) for v in sorted(texts.values(), key=len, reverse=True))
        for m in re.finditer(keyword + _PRE + rf"(?P<t>{alts})(?!\w)", text, flags=re.IGNORECASE):
            said = m.group("t").casefold()
            key = next((k for k, v in texts.items() if v.casefold() == said), None)
            if key is not None:
                statements.append((m.start(), key))
    return statements


def _weak_cues(text: str, cls: str, valid: list[str]) -> tuple[bool, str | None]:
    """Tiers 4-6: (a cue found, its one letter if unambiguous) for the first cue kind found."""
    cues = (
        rf"\*\*\s*\(?(?P<l>{cls})(?:\)|\.|:|\*\*|\s*\*\*)",
        rf"(?m)^[ \t>\*\-]*\(?(?P<l>{cls})[\.\):](?!\w)",
        rf"\((?P<l>{cls})\)",
        rf"[\"'`\u201c\u2018](?P<l>{cls})[\"'`\u201d\u2019]",
    )
    for pattern in cues:
        found = [
            c
            for m in re.finditer(pattern, text)
            if _letter_ok(text, m) and (c := _canonical(m.group("l"), valid)) is not None
        ]
        seen, one = _unique(found)
        if seen:
            return seen, one
    return False, None


def _option_text_hit(text: str, texts: Mapping[str, str], valid: list[str]) -> str | None:
    """Tier 7: the letter of the one option text found in ``text``, else ``None``."""
    low = text.casefold()
    hits = [
        k
        for k, v in texts.items()
        if len(v) >= 4 and re.search(rf"(?<!\w){re.escape(v.casefold())}(?!\w)", low)
    ]
    hits = [
        k
        for k in hits
        if not any(o != k and texts[k].casefold() in texts[o].casefold() for o in hits)
    ]
    if len(hits) == 1:
        return _canonical(hits[0], valid)
    return None


def extract_letter_regex(
    text: str | None,
    letters: Sequence[str] | str = "ABCD",
    options: Mapping[str, str] | None = None,
) -> str | None:
    """The option letter ``text`` chose, spelled as in ``letters``, or ``None`` if unclear.

    ``letters``: the valid letters (``"ABCD"``, ``"A-E"`` or a list). ``options``: letter ->
    option text, enabling the option-text tiers (3 and 7 in the module docstring).
    """
    if not text or not text.strip():
        return None
    valid = parse_letters(letters)
    if not valid:
        return None
    cls = "[" + "".join(re.escape(c.upper()) + re.escape(c.lower()) for c in valid) + "]"
    letter = rf"(?P<l>{cls})(?![\w'\-])(?!\.\w)"

    # 1. the whole reply is a letter
    m = re.fullmatch(rf"[\W_]*(?P<l>{cls})[\W_]*", text.strip())
    if m:
        return _canonical(m.group("l"), valid)

    # 2. JSON {"answer": "b"}
    js = re.findall(rf"[\"']answer[\"']\s*:\s*[\"']\s*\(?({cls})\)?\s*[\"']", text, re.IGNORECASE)
    if js:
        return _canonical(js[-1], valid)

    # 3. explicit statements, last one wins
    texts = {k: v.strip() for k, v in (options or {}).items() if v and v.strip()}
    statements = _explicit_statements(text, cls, letter, texts)
    if statements:
        picked = max(statements, key=lambda s: s[0])[1]
        return _canonical(picked, valid)

    # 4-6. weaker cues, each must be unambiguous
    seen, one = _weak_cues(text, cls, valid)
    if seen:
        return one

    # 7. exactly one option text appears in the reply
    if texts:
        return _option_text_hit(text, texts, valid)
    return None
