"""Degenerate repetition: a completion that loops until ``max_tokens``, cut back to one copy.

Small models (SmolLM2-135M and the like) often stop following the format and repeat the same
claim, line or JSON item until the token limit. :func:`find_loop` finds such a loop at the end
of a text; :func:`cut_repetition` returns the text with the loop cut back to its first copy, so
the parsers keep what came before it (and one copy of the repeated item). Two rules, the one that
removes more wins:

* **span**: the text ends in at least :data:`MIN_COPIES` back-to-back copies of a span of at
  least :data:`MIN_SPAN_TOKENS` tokens (words and punctuation marks; whitespace is ignored). A
  shorter unit counts in multiples that reach the minimum span, so ``"no no no ..."`` needs 40
  words. The last copy may be partial (the model was cut off in the middle of it).
* **line**: the text ends in at least :data:`MIN_LINE_COPIES` copies of the same line (blank lines
  between them are ignored; a line needs a letter or digit, so runs of closing brackets of
  pretty-printed JSON never count; again the last copy may be partial).
* **word**: the last word ends in a run of at least :data:`MIN_WORD_LOOP_CHARS` characters (and
  :data:`MIN_COPIES` copies) repeating a unit of at most :data:`MAX_WORD_UNIT_CHARS` characters,
  as ``"jimmyjimjimjim...jjjjjjj"``: the tokens rule never sees it, the whole run being one word.
  Such a word is never an answer, so the cut drops it whole.

The cut keeps the first copy whole and prefers to end at a line break, else after a ``,`` /
``.`` / ``;`` / ``}`` / ``]`` (so a cut JSON list ends between two items and
:func:`~biorag.llm.jsonparse.parse_json_lenient` keeps the complete ones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MIN_COPIES",
    "MIN_LINE_COPIES",
    "MIN_SPAN_TOKENS",
    "MIN_WORD_LOOP_CHARS",
    "WATCH_MIN_TOKENS",
    "Loop",
    "cut_repetition",
    "find_loop",
]

MIN_COPIES = 5
MIN_SPAN_TOKENS = 8
MIN_LINE_COPIES = 4
#: a run of characters inside one word this long (longer than any biomedical repeat an answer
#: spells out, such as a (CAG)n tract, which is written as a count) is a loop
MIN_WORD_LOOP_CHARS = 64
MAX_WORD_UNIT_CHARS = 16
#: only the last this many tokens are searched (a loop long enough to matter ends there)
MAX_TAIL_TOKENS = 6000
#: answers with a smaller budget are not watched for a loop as they are generated (too short
#: to loop for long; ``llm.stop_loops``)
WATCH_MIN_TOKENS = 64

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Loop:
    """A loop at the end of a text: ``text[:keep]`` is what stays (the first copy included),
    ``unit`` one copy of the repeated span or line, ``copies`` how many copies there were."""

    keep: int
    unit: str
    copies: int
    rule: str  # "span" | "line" | "word"


def _span_loop(text: str, min_copies: int, min_span: int) -> Loop | None:
    matches = list(_TOKEN.finditer(text))[-MAX_TAIL_TOKENS:]
    loop = _periodic_tail(text, matches, min_copies, min_span)
    if loop is None and len(matches) > 1:  # the last word may be cut off in the middle
        loop = _periodic_tail(text, matches[:-1], min_copies, min_span)
    return loop


def _periodic_tail(
    text: str, matches: list[re.Match[str]], min_copies: int, min_span: int
) -> Loop | None:
    toks = [m.group() for m in matches]
    n = len(toks)
    if n < min_copies * min_span:
        return None
    for p in range(1, n // min_copies + 1):
        # run: how many positions from the end match the token p earlier
        run = 0
        j = n - 1
        while j - p >= 0 and toks[j] == toks[j - p]:
            run += 1
            j -= 1
        region = run + p  # tokens in the periodic tail (its first copy included)
        unit = p * -(-min_span // p)  # the shortest multiple of p with >= min_span tokens
        if region < min_copies * unit:
            continue
        start = n - region
        # the cut: after the first copy, at a token boundary within the second copy that ends a
        # line, else after a separator, else right after the first copy
        cuts = range(start + p, start + 2 * p)
        best = min(cuts, key=lambda k: (_boundary_rank(text, matches, toks, k), k))
        keep = matches[best - 1].end()
        unit_text = text[matches[start].start() : matches[start + p - 1].end()]
        return Loop(keep=keep, unit=unit_text, copies=region // p, rule="span")
    return None


def _boundary_rank(text: str, matches: list[re.Match[str]], toks: list[str], k: int) -> int:
    """How good a place to cut is just before token ``k`` (lower is better): a line break, the
    end of a JSON item (``},`` ``],``), of a JSON string (``",``), a closing bracket, the end of a
    sentence, a comma; anything else last."""
    if "\n" in text[matches[k - 1].end() : matches[k].start()]:
        return 0
    prev = toks[k - 1]
    before = toks[k - 2] if k >= 2 else ""
    if prev == "," and before in ("}", "]"):
        return 1
    if prev == "," and before == '"':
        return 2
    return {"}": 3, "]": 3, ".": 4, ";": 4, ",": 5}.get(prev, 6)


def _line_loop(text: str, min_copies: int) -> Loop | None:
    body: list[tuple[int, str, str]] = []  # (offset, line, stripped) of the non-blank lines
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            body.append((pos, line, line.strip()))
        pos += len(line)
    if len(body) < min_copies:
        return None
    i = len(body) - 1
    ref = body[i][2]
    if i > 0 and ref != body[i - 1][2] and body[i - 1][2].startswith(ref):
        i -= 1  # the last line is a partial copy of the one before it
        ref = body[i][2]
    if not re.search(r"\w", ref):
        return None
    copies, first = 0, i
    while i >= 0 and body[i][2] == ref:
        copies, first, i = copies + 1, i, i - 1
    if copies < min_copies:
        return None
    offset, line, _ = body[first]
    return Loop(keep=offset + len(line.rstrip("\r\n")), unit=ref, copies=copies, rule="line")


def _word_loop(text: str, min_copies: int) -> Loop | None:
    offset = max(0, len(text) - 4 * MAX_TAIL_TOKENS)
    words = list(re.finditer(r"\w+", text[offset:]))
    last = words[-1] if words else None
    # the last word, long enough to hold a loop, and at the end (but for a closing quote or so)
    if last is None or len(last.group()) < MIN_WORD_LOOP_CHARS:
        return None
    if len(text[offset + last.end() :].strip()) > 3:
        return None
    word = last.group()
    n = len(word)
    for p in range(1, MAX_WORD_UNIT_CHARS + 1):
        run = 0  # characters from the end equal to the one p earlier
        while run + p < n and word[n - 1 - run] == word[n - 1 - run - p]:
            run += 1
        region = run + p
        if region >= max(MIN_WORD_LOOP_CHARS, min_copies * p):
            unit = word[n - region : n - region + p]
            return Loop(keep=offset + last.start(), unit=unit, copies=region // p, rule="word")
    return None


def find_loop(
    text: str,
    *,
    min_copies: int = MIN_COPIES,
    min_span_tokens: int = MIN_SPAN_TOKENS,
    min_line_copies: int = MIN_LINE_COPIES,
) -> Loop | None:
    """The loop at the end of ``text`` (see the module docstring), or None."""
    if not text:
        return None
    found = [
        loop
        for loop in (
            _span_loop(text, min_copies, min_span_tokens),
            _line_loop(text, min_line_copies),
            _word_loop(text, min_copies),
        )
        if loop is not None and loop.keep < len(text.rstrip())
    ]
    return min(found, key=lambda loop: loop.keep) if found else None


def cut_repetition(text: str, **kw: int) -> tuple[str, int]:
    """``(text with a trailing loop cut back to its first copy, characters removed)``; the text
    unchanged and 0 when it does not loop. ``kw``: the thresholds of :func:`find_loop`."""
    loop = find_loop(text, **kw)
    if loop is None:
        return text, 0
    kept = text[: loop.keep].rstrip()
    return kept, len(text) - len(kept)
