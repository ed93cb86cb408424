"""Joint support: whether the passages a sentence cites back it together when none backs it
fully alone (ALCE's "the union of its citations"), by claim alignment: the rules verifier's
floor, extended from one span to spans joined across passages.

1. Start from the best single passage's deciding span (its per-passage verdict).
2. Add the deciding span of the cited passage that raises the joined spans' score most (the
   score of :func:`biorag.verify.align.span_score`: stem coverage and cosine), while it rises;
   the spans are joined in citation order.
3. Label the joined spans as one span is labelled, without contradiction: a disagreement with
   spans pasted together from several passages contradicts none of them, so it only keeps the
   sentence at its single-passage verdict.
4. A joined passage is *needed* when leaving it out lowers the joint label (ALCE's citation
   precision counts it even when it supports nothing alone).

The joint verdict replaces the single-passage one only when it is stronger; a sentence a
passage contradicts keeps "contradicted" (a reader must see it), one a passage supports needs
no joint check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biorag.embed.base import Embedder
from biorag.verify.agreement import disagreement
from biorag.verify.align import Thresholds, label_of, span_score, stems
from biorag.verify.models import JointSupport, Label, PassageVerdict
from biorag.verify.support import RANK, strongest

_RISE = 1e-4  # the least gain for which another passage is joined


@dataclass(frozen=True)
class Joined:
    """The best joined spans found: indexes into the verdicts (citation order), the score of
    the spans joined, the score without each of them (same order), and any disagreement."""

    chosen: tuple[int, ...]
    score: float
    without: tuple[float, ...]
    reason: str


def _joined_text(verdicts: Sequence[PassageVerdict], chosen: Sequence[int]) -> str:
    return " ".join(verdicts[i].span.text for i in sorted(chosen))  # type: ignore[union-attr]


def best_joined(
    sentence: str, verdicts: Sequence[PassageVerdict], embedder: Embedder
) -> Joined | None:
    """The greedy joined spans of ``verdicts`` (rules verdicts, with their scores), or None
    when fewer than two cited passages have a span or no second span raises the score.
    Threshold-free: the labels are :func:`joint_support`'s."""
    usable = [i for i, v in enumerate(verdicts) if v.span is not None and v.span.text.strip()]
    if len({verdicts[i].passage_id for i in usable}) < 2:
        return None
    own = stems(sentence)
    sv = embedder.embed([sentence])[0]
    cache: dict[tuple[int, ...], float] = {}

    def scores(sets: list[tuple[int, ...]]) -> list[float]:
        todo = [s for s in dict.fromkeys(sets) if s not in cache]
        if todo:
            texts = [_joined_text(verdicts, s) for s in todo]
            for s, t, vec in zip(todo, texts, embedder.embed(texts), strict=True):
                cache[s] = span_score(own, sv, t, np.asarray(vec))
        return [cache[s] for s in sets]

    first = max(usable, key=lambda i: (verdicts[i].score, -i))
    chosen: tuple[int, ...] = (first,)
    current = scores([chosen])[0]
    while True:
        rest = [i for i in usable if i not in chosen]
        if not rest:
            break
        sets = [tuple(sorted((*chosen, i))) for i in rest]
        got = scores(sets)
        k = max(range(len(sets)), key=lambda j: got[j])
        if got[k] <= current + _RISE:
            break
        chosen, current = sets[k], got[k]
    if len(chosen) < 2:
        return None
    without = tuple(scores([tuple(j for j in chosen if j != i) for i in chosen]))
    reason = disagreement(sentence, _joined_text(verdicts, chosen))
    return Joined(chosen=chosen, score=current, without=without, reason=reason)


def joint_label(single: Label, joined: Joined | None, th: Thresholds) -> Label | None:
    """The joint verdict when it is stronger than ``single`` (the strongest single-passage
    verdict), else None; never from a disagreement (see the module docstring)."""
    if joined is None or joined.reason or single in ("supported", "contradicted"):
        return None
    label = label_of(joined.score, "", th)
    return label if RANK[label] > RANK[single] else None


def joint_support(
    sentence: str, verdicts: Sequence[PassageVerdict], embedder: Embedder, th: Thresholds
) -> JointSupport | None:
    """The cited passages' joint verdict on ``sentence`` when it is stronger than each one's
    alone (``verdicts``: the rules verifier's), else None."""
    single = strongest(v.label for v in verdicts)
    if single in ("supported", "contradicted"):
        return None
    joined = best_joined(sentence, verdicts, embedder)
    label = joint_label(single, joined, th)
    if label is None or joined is None:
        return None
    needed = [
        verdicts[i].passage_id
        for i, score in zip(joined.chosen, joined.without, strict=True)
        if RANK[label_of(score, "", th)] < RANK[label]
    ]
    return JointSupport(
        passage_ids=[verdicts[i].passage_id for i in joined.chosen],
        label=label,
        score=round(joined.score, 4),
        needed=needed,
    )
