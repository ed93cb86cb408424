"""Paraphrased repeats: evaluated questions that ask what a KG's source question asked.

The exact guard of :mod:`.leakage` compares hashes, so a reworded question ("What is the drug of
choice for bacterial vaginosis in pregnancy?" / "Drug of choice for bacterial vaginosis during
pregnancy is:") passes it. :func:`near_duplicates` embeds both sides with the bundled
all-MiniLM-L6-v2 (the model :data:`THRESHOLD` was measured with, whatever ``[embed]`` says) and
takes a pair as a paraphrase when

1. the questions' cosine is >= :data:`THRESHOLD` (compared in blocks of source questions: matrix
   products, the source vectors never all in memory), and
2. where both answers are known, the cosine of "question answer" with "question answer" is too
   (the near-duplicate counterpart of the exact guard's question+answer hash): two questions
   that differ in one entity ("condition number 1"/"number 3", PRC1/PRC2) read alike, but their
   answers differ, and the KG does not hold the evaluated question's answer.

:data:`THRESHOLD` 0.92 was chosen by reading real near pairs, listed by
``benchmarks/bench_paraphrase_threshold.py``: every pair of distinct questions at question
cosine >= 0.84 among the 2,310 BioASQ Task B questions of 2019-2023 (questions re-asked across
years) and the 4,183 MedMCQA dev questions (a question bank's rewordings). On questions alone,
pairs at >= 0.95 are nearly all rewordings, but between 0.92 and 0.95 only about three in four
MedMCQA pairs and half the BioASQ ones are (the others differ in one entity); with the answer
check at 0.92 about 47 of 49 MedMCQA pairs and 19 of 21 BioASQ pairs flagged are the same
question, at the cost of some rewordings whose answers are worded apart (BioASQ summary
answers; "ZnPO4"/"Zinc phosphate"). Lower (0.90) adds more one-entity swaps in BioASQ than it
finds rewordings. Each flagged pair is reported with both cosines and both texts.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from biorag.embed.base import l2_normalize
from biorag.util.progress import progress_bar

__all__ = ["BLOCK", "THRESHOLD", "ParaphraseModel", "near_duplicates"]

log = logging.getLogger("biorag.eval")

THRESHOLD = 0.92
#: source questions embedded and compared at a time
BLOCK = 2048
MODEL_ID = "sentence-transformers:all-MiniLM-L6-v2"


class ParaphraseModel:
    """The bundled MiniLM for the check: the runtime's own embedder when it is that model,
    else one built on first use (through the embedding cache when ``[embed] cache`` is on, so
    a KG's source questions are embedded once) and closed by :meth:`close`."""

    def __init__(self, runtime: Any) -> None:
        self.rt = runtime
        self._own: Any = None

    def get(self) -> Any:
        settings = self.rt.settings
        # the configured name first: reading the runtime's embedder loads it, which is waste
        # when it is another model (a local path to MiniLM just gets its own copy)
        if (
            settings.embed.backend == "sentence-transformers"
            and settings.embed.model == (MODEL_ID.split(":", 1)[1])
        ):
            emb = self.rt.embedder
            if str(getattr(emb, "model_id", "")).split("#")[0] == MODEL_ID:
                return emb
        if self._own is None:
            from biorag.embed.cache import CachedEmbedder
            from biorag.embed.st_embedder import SentenceTransformerEmbedder

            model: Any = SentenceTransformerEmbedder(device=settings.embed.device)
            if settings.embed.cache:
                model = CachedEmbedder(model, settings.embed_cache_dir())
            self._own = model
        return self._own

    def close(self) -> None:
        own, self._own = self._own, None
        closer = getattr(own, "close", None)
        if closer is not None:
            closer()


def near_duplicates(
    questions: list[str],
    sources: list[str],
    embedder: Any,
    threshold: float = THRESHOLD,
    answers: list[str] | None = None,
    source_answers: list[str] | None = None,
    block: int = BLOCK,
) -> list[tuple[int, int, float, float | None]]:
    """``(question index, source index, question cosine, question+answer cosine or None)``:
    for each question its closest source question that passes both tests of the module
    (the answer test only where ``answers[i]`` and ``source_answers[j]`` are both given)."""
    if not questions or not sources:
        return []
    q = l2_normalize(np.asarray(embedder.embed(list(questions)), dtype=np.float32))
    candidates: list[tuple[int, int, float]] = []
    bar = progress_bar(len(sources), "paraphrase check", unit="question")
    try:
        for start in range(0, len(sources), block):
            part = sources[start : start + block]
            s = l2_normalize(np.asarray(embedder.embed(part), dtype=np.float32))
            sims = q @ s.T
            for i, j in zip(*np.nonzero(sims >= threshold), strict=True):
                candidates.append((int(i), int(j) + start, float(sims[i, j])))
            bar.update(len(part))
    finally:
        bar.close()
    pair = _pair_cosines(candidates, questions, sources, answers, source_answers, embedder)
    best: dict[int, tuple[int, int, float, float | None]] = {}
    score: dict[int, float] = {}
    for (i, j, cos), with_answers in zip(candidates, pair, strict=True):
        if with_answers is not None and with_answers < threshold:
            continue  # alike questions, different answers
        # rounded: one text embedded in two batches differs in the last float bits, and a tie
        # must go to the first source, however the sources were blocked
        both = round(min(cos, cos if with_answers is None else with_answers), 5)
        if both > score.get(i, -2.0):
            score[i] = both
            best[i] = (
                i,
                j,
                round(cos, 4),
                None if with_answers is None else round(with_answers, 4),
            )
    return [best[i] for i in sorted(best)]


def _pair_cosines(
    candidates: list[tuple[int, int, float]],
    questions: list[str],
    sources: list[str],
    answers: list[str] | None,
    source_answers: list[str] | None,
    embedder: Any,
) -> list[float | None]:
    """Each candidate's cosine of "question answer" texts (None where an answer is unknown)."""
    if answers is None or source_answers is None:
        return [None] * len(candidates)

    def text(question: str, answer: str) -> str:
        return f"{question} {answer}"

    wanted = [(i, j) for i, j, _ in candidates if answers[i].strip() and source_answers[j].strip()]
    texts = list(dict.fromkeys(
        t for i, j in wanted
        for t in (text(questions[i], answers[i]), text(sources[j], source_answers[j]))
    ))  # fmt: skip
    if not texts:
        return [None] * len(candidates)
    vectors = l2_normalize(np.asarray(embedder.embed(texts), dtype=np.float32))
    row = {t: n for n, t in enumerate(texts)}
    out: list[float | None] = []
    for i, j, _ in candidates:
        if not (answers[i].strip() and source_answers[j].strip()):
            out.append(None)
            continue
        a = vectors[row[text(questions[i], answers[i])]]
        b = vectors[row[text(sources[j], source_answers[j])]]
        out.append(float(a @ b))
    return out
