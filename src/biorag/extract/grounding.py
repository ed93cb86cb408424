"""Is a claim taken from its text? A lexical check that drops claims the model made up.

A claim extractor must restate its chunk, not invent. Small models do invent: SmolLM2-135M
copies the prompt's few-shot example (a made-up empagliflozin trial) into the claims of
abstracts about lace plants and strabismus. Those claims then cost triple, repair and
summary calls and put false statements into the graph.

:func:`grounded_share` is the share of a claim's content words (no stop words; words cut to
their first :data:`STEM` characters, so "reduced" matches "reduces" and "reduction") that occur
in the source text; numbers must occur as they are. A claim below :data:`MIN_GROUNDED_SHARE`
is ungrounded. Decontextualized claims add the population and conditions from elsewhere in the
same chunk, which the check allows; paraphrase and abbreviations the chunk never spells out
cost words, which the low threshold tolerates. Measured on PubMedQA PQA-L (the first 500
questions): the authors' own conclusions, abstractive statements about their abstract, pass
against it in 489 of 500 cases at 0.3 (369 at 0.5), and against a random other abstract in 9 of
500 (2 at 0.5); the no-LLM floor's 2,122 claims of 200 abstracts all pass (share 1.0). A
copied few-shot example scores 0.0.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

__all__ = ["MIN_GROUNDED_SHARE", "STEM", "grounded_share", "is_grounded"]

#: claims with fewer of their content words in the source are dropped as made up
MIN_GROUNDED_SHARE = 0.3
#: characters of a word compared (a crude stemmer)
STEM = 5
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


@cache
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _keys(text: str) -> list[str]:
    stop = _stop_words()
    out = []
    for w in _WORD.findall(text.lower()):
        if w in stop or (len(w) < 3 and not w[0].isdigit()):
            continue
        out.append(w if w[0].isdigit() else w[:STEM])
    return out


@lru_cache(maxsize=256)
def _source_keys(source: str) -> frozenset[str]:
    """The content words of a source text, kept for the next claims of the same chunk."""
    return frozenset(_keys(source))


def grounded_share(claim: str, source: str) -> float:
    """The share of ``claim``'s content words found in ``source`` (1.0 when it has none)."""
    words = _keys(claim)
    if not words:
        return 1.0
    have = _source_keys(source)
    return sum(w in have for w in words) / len(words)


def is_grounded(claim: str, source: str, threshold: float = MIN_GROUNDED_SHARE) -> bool:
    """True when at least ``threshold`` of ``claim``'s content words occur in ``source``."""
    return grounded_share(claim, source) >= threshold
