"""Abbreviation expansion of queries, with pairs mined from the corpus itself (Schwartz & Hearst).

Schwartz and Hearst (2003), "A simple algorithm for identifying abbreviation definitions in
biomedical text": a short form in parentheses after its long form, "C-reactive protein (CRP)",
is accepted when the short form's characters occur in order in the words before it, right to
left, its first character starting a word, within ``min(len(sf) + 5, 2 * len(sf))`` words.
Mined over an index's chunks, each short form keeps its most frequent long form (lowercased).

A query that names a short form as a word (case kept: "CRP") gains its long form; one that names
a long form gains its short form. ``retrieval.abbreviations`` chooses the pairs: ``off``,
``corpus`` (mined from the index, cached beside it until its chunks change) or a file of pairs
(JSON ``{"CRP": "C-reactive protein"}``, or one ``short<TAB>long`` pair per line).

The PyPI package ``abbreviations`` implements the same algorithm, but configures the root logger
when imported; these few lines avoid that.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from biorag.errors import BioragError
from biorag.util.files import write_json_atomic

_PAREN = re.compile(r"\(([^()]{2,10})\)")
_SENTENCE_END = re.compile(r"[.;:!?]\s|\)\s")
_WORD = re.compile(r"\S+")
CACHE = "abbreviations.json"
FORMAT = "biorag-abbreviations/1"


def _valid_short_form(sf: str) -> bool:
    """Schwartz & Hearst's conditions (2-10 characters, at most two words, a letter, starting
    alphanumeric), and an upper-case letter and no comparison or percent sign: "(n = 5)",
    "(see below)" and "(95%)" are not abbreviations."""
    return (
        2 <= len(sf) <= 10
        and len(sf.split()) <= 2
        and sf[0].isalnum()
        and any(c.isupper() for c in sf)
        and not any(c in sf for c in "=<>%,;")
    )


def best_long_form(short: str, before: str) -> str | None:
    """The shortest tail of ``before`` that ``short`` abbreviates, or None (Schwartz & Hearst's
    ``findBestLongForm``)."""
    s, i = len(short) - 1, len(before) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while i >= 0 and (before[i].lower() != c or (s == 0 and i > 0 and before[i - 1].isalnum())):
            i -= 1
        if i < 0:
            return None
        i -= 1
        s -= 1
    start = before.rfind(" ", 0, i + 1) + 1
    return before[start:].strip()


def pairs_in(text: str) -> list[tuple[str, str]]:
    """The (short form, long form) pairs defined in ``text``."""
    out = []
    for m in _PAREN.finditer(text):
        sf = m.group(1).strip()
        if not _valid_short_form(sf):
            continue
        head = text[: m.start()]
        cut = max((e.end() for e in _SENTENCE_END.finditer(head)), default=0)
        words = _WORD.findall(head[cut:])
        limit = min(len(sf) + 5, 2 * len(sf))
        window = " ".join(words[-limit:])
        lf = best_long_form(sf, window)
        if not lf or len(lf) <= len(sf) or sf.lower() in lf.lower().split():
            continue
        if len(lf.split()) > limit or lf.count("(") != lf.count(")"):
            continue
        out.append((sf, lf.lower()))
    return out


def mine(texts: Iterable[str]) -> dict[str, str]:
    """Each short form defined in ``texts`` with its most frequent long form (ties: the first)."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        for sf, lf in pairs_in(text):
            seen[sf][lf] += 1
    return {sf: forms.most_common(1)[0][0] for sf, forms in seen.items()}


def load_pairs(path: str | Path) -> dict[str, str]:
    """Pairs from a JSON object or a TSV file; a file that does not parse is a one-line error
    naming ``retrieval.abbreviations``."""
    p = Path(path)
    fix = 'give a JSON object {"CRP": "C-reactive protein"} or short<TAB>long lines'
    if not p.is_file():
        raise BioragError(
            f"retrieval.abbreviations: {p} is not a file; use off, corpus, or a pairs file ({fix})",
            param="retrieval.abbreviations",
        )
    text = p.read_text(encoding="utf-8", errors="replace")
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise BioragError(
                f"retrieval.abbreviations: {p.name} is not valid JSON ({e}); {fix}",
                param="retrieval.abbreviations",
            ) from None
        bad = [k for k, v in data.items() if not isinstance(v, str) or not v.strip()]
        if bad:
            raise BioragError(
                f"retrieval.abbreviations: {p.name} gives {bad[0]!r} no long form; {fix}",
                param="retrieval.abbreviations",
            )
        return {str(k).strip(): v.strip().lower() for k, v in data.items() if str(k).strip()}
    out = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise BioragError(
                f"retrieval.abbreviations: {p.name} line {n} is not short<TAB>long; {fix}",
                param="retrieval.abbreviations",
            )
        out[parts[0].strip()] = parts[1].strip().lower()
    return out


class Expander:
    """Adds the other form of every abbreviation a query names."""

    def __init__(self, pairs: dict[str, str]):
        self.pairs = pairs
        self._short = {sf: lf for sf, lf in pairs.items()}
        self._long = {lf: sf for sf, lf in pairs.items()}
        # word-bounded alternations, longest first so "c-reactive protein" beats "protein"
        sfs = sorted(self._short, key=len, reverse=True)
        lfs = sorted(self._long, key=len, reverse=True)
        self._sf_re = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sfs)) + r")(?![\w-])")
        self._lf_re = re.compile(
            r"(?<![\w-])(" + "|".join(map(re.escape, lfs)) + r")(?![\w-])", re.I
        )

    def expand(self, query: str) -> str:
        """``query`` followed by the long forms of its short forms and the short forms of its
        long forms (each once); ``query`` itself when it names none."""
        if not self.pairs:
            return query
        extra = [self._short[m] for m in self._sf_re.findall(query)]
        extra += [self._long[m.lower()] for m in self._lf_re.findall(query)]
        extra = [e for e in dict.fromkeys(extra) if e.lower() not in query.lower()]
        return " ".join([query, *extra]) if extra else query


def corpus_pairs(index: Path, key: str, texts: Iterable[str]) -> dict[str, str]:
    """The pairs mined from an index's chunk ``texts``, cached in ``index/abbreviations.json``
    under ``key`` (the state of its chunks): mined again only when the chunks changed."""
    cache = index / CACHE
    if cache.is_file():
        try:
            data = json.loads(cache.read_text(encoding="utf-8"))
            if data.get("format") == FORMAT and data.get("key") == key:
                return dict(data["pairs"])
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache is mined again
    pairs = mine(texts)
    with contextlib.suppress(OSError):  # a read-only index still expands, mining each time
        write_json_atomic(cache, {"format": FORMAT, "key": key, "pairs": pairs})
    return pairs


def state_key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
