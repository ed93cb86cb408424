"""The no-LLM answerer: a floor, not a reader.

It never understands the question; it measures how well each option is supported by the context:

* multiple choice: each option scored by its best embedding similarity to a context sentence
  (weighted by that sentence's relevance to the question) plus the share of its content words
  that occur in the context;
* yes/no(/maybe): the context sentences most similar to the question are checked for negation
  cues ("no significant", "did not", ...); when the relevance-weighted share of negated
  sentences passes one half the answer is "no", else "yes" ("maybe" is never chosen);
* free text: the context sentences most relevant to the question, chosen by maximal marginal
  relevance, each cited with its chunk.

Results from this answerer are labelled as the no-LLM floor wherever they are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from biorag.corpus.sentences import split_sentences

_WORD = re.compile(r"[a-z0-9][a-z0-9\-]+")
_STOP = frozenset(
    (
        "a an the of in on at to for from by with and or not no is are was were be been being "
        "which what who whom whose when where why how does do did this that these those it its "
        "as than then there their they them he she his her we our you your i can could may "
        "might should would will shall has have had into about over under between during after "
        "before most more less least following all any each other such only also very true "
        "false except"
    ).split()
)
NEGATION = re.compile(
    r"\b(no|not|never|neither|nor|none|without|cannot|failed to|fail to|did not|does not|"
    r"do not|was not|were not|is not|are not|no significant|not significant|nonsignificant|"
    r"non-significant|no difference|no association|no effect|unrelated|absence of|lack of)\b",
    re.IGNORECASE,
)
YES_NO = {"yes", "no", "maybe"}


@dataclass
class FloorResult:
    answer: str
    answer_text: str
    scores: dict[str, float] = field(default_factory=dict)
    sentences: list[tuple[str, str]] = field(default_factory=list)  # (sentence, chunk_id)
    rationale: str = ""


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _sentences(passages: list[tuple[str, str]]) -> list[tuple[str, str]]:

    out: list[tuple[str, str]] = []
    for chunk_id, text in passages:
        for s, e in split_sentences(text):
            sent = text[s:e].strip()
            if len(sent) > 3:
                out.append((sent, chunk_id))
    return out


def _is_yes_no(options: dict[str, str]) -> bool:
    return bool(options) and {v.strip().lower() for v in options.values()} <= YES_NO


def mmr(query: np.ndarray, cands: np.ndarray, k: int, lam: float = 0.7) -> list[int]:
    """Maximal marginal relevance over unit vectors: relevant, yet unlike those already chosen."""
    if len(cands) == 0:
        return []
    rel = cands @ query
    chosen: list[int] = [int(np.argmax(rel))]
    while len(chosen) < min(k, len(cands)):
        sim_to_chosen = (cands @ cands[chosen].T).max(axis=1)
        score = lam * rel - (1 - lam) * sim_to_chosen
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return chosen


def answer_without_llm(
    question: str,
    options: dict[str, str],
    passages: list[tuple[str, str]],
    embedder,
    top_sentences: int = 5,
) -> FloorResult:
    """Answer from ``passages`` ((chunk_id, text) pairs) with no language model."""
    sents = _sentences(passages)
    if not sents:
        if options:
            first = next(iter(options))
            return FloorResult(first, options[first], rationale="no context: first option")
        return FloorResult("", "", rationale="no context")
    vecs = embedder.embed([question] + [s for s, _ in sents])
    qv, sv = vecs[0], vecs[1:]
    relevance = sv @ qv
    order = np.argsort(-relevance)

    if _is_yes_no(options):
        top_idx = order[:top_sentences]
        top = [sents[i] for i in top_idx]
        # Each sentence votes with the square of its relevance, so the evidence closest to the
        # question outweighs loosely related sentences.
        weights = np.clip(relevance[top_idx], 0, None) ** 2
        negated = np.array([bool(NEGATION.search(s)) for s, _ in top])
        share = float(weights[negated].sum() / weights.sum()) if weights.sum() > 0 else 0.0
        label = "no" if share > 0.5 else "yes"
        letter = next((k for k, v in options.items() if v.strip().lower() == label), label)
        return FloorResult(
            letter,
            label,
            scores={"negated_share": share},
            sentences=top,
            rationale=f"{int(negated.sum())} of the {len(top)} most relevant sentences carry a "
            f"negation cue (relevance-weighted share {share:.2f})",
        )

    if options:
        letters = list(options)
        ov = embedder.embed([f"{question} {options[k]}" for k in letters])
        weight = np.clip(relevance, 0, None) + 1e-3
        ctx_words = content_words(" ".join(s for s, _ in sents))
        scores: dict[str, float] = {}
        support: dict[str, int] = {}
        for i, k in enumerate(letters):
            sims = sv @ ov[i]
            best = int(np.argmax(sims * weight))
            words = content_words(options[k])
            lexical = len(words & ctx_words) / len(words) if words else 0.0
            scores[k] = float(0.7 * sims[best] + 0.3 * lexical)
            support[k] = best
        win = max(letters, key=lambda k: (scores[k], -letters.index(k)))
        return FloorResult(
            win,
            options[win],
            scores=scores,
            sentences=[sents[support[win]]],
            rationale="option with the best similarity and word overlap with the context",
        )

    picked = mmr(qv, sv, top_sentences)
    chosen = [sents[i] for i in picked]
    return FloorResult(
        " ".join(s for s, _ in chosen),
        " ".join(s for s, _ in chosen),
        sentences=chosen,
        rationale="context sentences most relevant to the question (maximal marginal relevance)",
    )
