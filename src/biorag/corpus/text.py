"""Text cleaning before extraction: the CLAIMS-style removal of special characters and symbols.

:func:`clean_text` normalizes Unicode (NFKC), drops control and formatting characters, private-use
and unassigned code points, emoji and other decorative symbols, and normalizes whitespace. It keeps
letters of any script (Greek included), combining marks, digits, all punctuation, math operators
(``± × ≤ ≥ → …``), currency signs and a few scientific symbols (``° % ‰ µ``). NFKC turns the micro
sign into Greek mu, ligatures into letters and superscripts into digits.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["clean_text", "normalize_whitespace"]

# "So" (other symbols) and "Sk" (modifier symbols) kept; everything else in those classes goes.
_KEEP_SYMBOLS = frozenset("°^`©®™℃℉Ω℧★†‡§¶")
_HSPACE_RE = re.compile(r"[ \t\f\v]+")
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")
_SPACE_AROUND_NL_RE = re.compile(r" *\n *")
_ANY_SPACE_RE = re.compile(r"\s+")

# Decision per Unicode general category: keep, drop (remove silently), space (replace by a space).
_KEEP_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No"})
_PUNCT_CATEGORIES = frozenset({"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc"})


def _char_action(ch: str) -> str:
    """``"keep"``, ``"drop"`` or ``"space"`` for one character (after NFKC)."""
    if ch in "\n\t ":
        return "keep"
    cat = unicodedata.category(ch)
    if cat in _KEEP_CATEGORIES or cat in _PUNCT_CATEGORIES:
        return "keep"
    if cat in ("Zs", "Zl", "Zp"):
        return "space" if cat == "Zs" else "newline"
    if cat == "Cc":
        return "newline" if ch in "\r\x0b\x0c\x1c\x1d\x1e\x85" else "drop"
    if cat == "Cf":  # zero-width joiners, soft hyphens, BOM: remove without a gap
        return "drop"
    if cat in ("So", "Sk"):
        return "keep" if ch in _KEEP_SYMBOLS else "space"
    return "space"  # Co (private use), Cs (surrogates), Cn (unassigned)


_ACTION_CACHE: dict[str, str] = {}


def normalize_whitespace(text: str, keep_newlines: bool = True) -> str:
    """Collapse runs of spaces and tabs, strip lines, keep at most one blank line.

    With ``keep_newlines=False`` every whitespace run becomes a single space.
    """
    if not keep_newlines:
        return _ANY_SPACE_RE.sub(" ", text).strip()
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _HSPACE_RE.sub(" ", text)
    text = _SPACE_AROUND_NL_RE.sub("\n", text)
    text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()


def clean_text(text: str, keep_newlines: bool = True) -> str:
    """Remove special/control characters and odd symbols; NFKC-normalize; normalize whitespace.

    >>> clean_text("IL-6\\u200b levels ↑ 20 %\\u00a0(p\\u00a0<\\u00a00.05) 😀 at 37 °C, 5 µg")
    'IL-6 levels ↑ 20 % (p < 0.05) at 37 °C, 5 μg'
    """
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    cache = _ACTION_CACHE
    for ch in text:
        if ch.isascii() and (ch.isalnum() or ch == " "):
            out.append(ch)
            continue
        action = cache.get(ch)
        if action is None:
            action = _char_action(ch)
            if len(cache) < 100_000:
                cache[ch] = action
        if action == "keep":
            out.append(ch)
        elif action == "space":
            out.append(" ")
        elif action == "newline":
            out.append("\n")
    return normalize_whitespace("".join(out), keep_newlines=keep_newlines)
