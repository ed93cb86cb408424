"""BioStrataKG's entity normalization as a batch stage, resumable, here or on a batch executor.

After extraction, every distinct (mention, type) pair the store will meet (each paper's triplet
subjects and objects, then the vocabulary's mentions in its title and abstract, papers in
order) is one unit, normalized by a :class:`~biorag.strata.normalize.Normalizer` (an exact
match, else candidates by embedding, chosen by the LLM or the similarity threshold). Results
are appended to ``OUT/normalize_checkpoint.jsonl`` batch by batch
(:mod:`biorag.executor.checkpoint`), so a build killed while normalizing asks only the mentions
left when run again. On a Ray executor each worker builds the embedder, the LLM and the
vocabulary's surface vectors once. The build then primes its own normalizer with the results
(:meth:`~biorag.strata.normalize.Normalizer.prime`): the store is written as if it had
normalized each mention itself, in the same order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from biorag.config import Settings
from biorag.executor.checkpoint import RunBatches, content_hash, on_executor, run_checkpointed
from biorag.llm.accounting import Accounting
from biorag.llm.shared import SharedLLM
from biorag.runtime import Runtime
from biorag.strata.extract import MentionMatcher
from biorag.strata.extract_papers import header as extraction_header
from biorag.strata.extract_papers import matcher_for
from biorag.strata.normalize import Normalized, Normalizer, mention_key
from biorag.strata.vocab import Vocabulary
from biorag.strata.word_shapes import ShapeMatcher

CHECKPOINT = "normalize_checkpoint.jsonl"
MENTIONS_PER_BATCH = 64

Pair = tuple[str, str]  # (mention, type)


def mentions_in_order(
    papers: list[dict[str, Any]],
    extracted: list[dict[str, Any]],
    matcher: MentionMatcher | ShapeMatcher,
) -> tuple[list[list[Pair]], list[Pair]]:
    """Per paper, the vocabulary's mentions in its title and abstract (sorted, as the store
    links them); and every distinct pair of all papers in the order the store meets them, each
    as first written (a mention's later spellings share its result, as in the normalizer)."""
    per_paper: list[list[Pair]] = []
    order: dict[tuple[str, str], Pair] = {}
    for p, got in zip(papers, extracted, strict=True):
        text = f"{p.get('title') or ''}. {p.get('abstract') or ''}"
        mentioned = sorted({(m[0], m[1]) for m in matcher.find(text)})
        per_paper.append(mentioned)
        ends = [(t[e], t[f"{e}_type"]) for t in got["triplets"] for e in ("subject", "object")]
        for mention, type_ in [*ends, *mentioned]:
            order.setdefault(mention_key(mention, type_), (" ".join(mention.split()), type_))
    return per_paper, list(order.values())


def mention_units(pairs: list[Pair]) -> list[dict[str, Any]]:
    """One unit per pair: ``sid`` (type and lower-cased mention), ``hash`` (of the mention as
    written), ``mention`` and ``type``."""
    return [
        {"sid": f"{t}\t{m.lower()}", "hash": content_hash([m, t]), "mention": m, "type": t}
        for m, t in pairs
    ]


def header(normalizer: Normalizer, vocab_header: str) -> dict[str, Any]:
    """What a checkpoint's results depend on: the vocabulary, the embedder, the LLM and the
    threshold."""
    return {
        "checkpoint": 1,
        "vocabulary": vocab_header,
        "embedder": getattr(normalizer.embedder, "model_id", None),
        "chooser": f"llm:{normalizer.llm.model}" if normalizer.llm is not None else "threshold",
        "threshold": normalizer.threshold,
        "top_k": normalizer.top_k,
    }


def normalize_batch(normalizer: Normalizer, units: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each unit's result: ``normalized`` (the :class:`~biorag.strata.normalize.Normalized`),
    the LLM's choices asked together; what they counted (``stats``: asked, answered, failed)
    on the first result, as a batch is checkpointed whole."""
    before = Counter(normalizer.stats)
    found = normalizer.normalize_many([(u["mention"], u["type"]) for u in units])
    results = [
        {"sid": u["sid"], "hash": u["hash"], "normalized": asdict(n), "stats": {}}
        for u, n in zip(units, found, strict=True)
    ]
    if results:
        results[0]["stats"] = dict(normalizer.stats - before)
    return results


def local_batches(normalizer: Normalizer) -> RunBatches:
    """``run_batches`` in this process with the build's normalizer."""

    def run(todo: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        for start in range(0, len(todo), MENTIONS_PER_BATCH):
            yield normalize_batch(normalizer, todo[start : start + MENTIONS_PER_BATCH])

    return run


class NormalizeWorker:
    """A batch executor's worker: the embedder and the LLM the settings describe (no LLM: the
    threshold chooses) and a normalizer over the vocabulary, built once; each batch of units
    (JSON) comes back as JSON results, the batch's LLM accounting on the first."""

    def __init__(self, settings: dict[str, Any], vocab: Vocabulary, threshold: float) -> None:

        s = Settings.model_validate({**settings, "executor": {}})
        self.acc = Accounting()
        self.runtime = Runtime(s, llm=None)
        llm = SharedLLM(s).client(self.acc)
        self.normalizer = Normalizer(vocab, self.runtime.embedder, llm, threshold=threshold)

    def __call__(self, batch: list[str]) -> list[str]:
        results = normalize_batch(self.normalizer, [json.loads(x) for x in batch])
        if results:
            results[0]["accounting"] = self.acc.report()
            self.acc.reset()
        return [json.dumps(r, ensure_ascii=False) for r in results]


def executor_batches(
    executor: Any,
    settings: dict[str, Any],
    vocab: Vocabulary,
    threshold: float,
    accounting: Any | None,
) -> RunBatches:
    """``run_batches`` on ``executor``'s :class:`NormalizeWorker` s."""
    per_batch = max(1, min(MENTIONS_PER_BATCH, executor.settings.batch_size))
    return on_executor(executor, NormalizeWorker, (settings, vocab, threshold), per_batch,
                       accounting)  # fmt: skip


def normalize_mentions(
    papers: list[dict[str, Any]],
    extracted: list[dict[str, Any]],
    normalizer: Normalizer,
    out: Path,
    *,
    executor: Any | None = None,
    worker_settings: dict[str, Any] | None = None,
) -> tuple[list[list[Pair]], int]:
    """Normalize every pair the store will meet, resumably, and prime ``normalizer`` with the
    results (its ``stats`` then count the LLM choices of all of them, resumed ones included).
    Returns each paper's vocabulary mentions (:func:`mentions_in_order`) and how many pairs a
    killed build had normalized. ``executor``: one other than local normalizes on its
    workers, built from ``worker_settings``."""
    vocab = normalizer.vocab
    per_paper, pairs = mentions_in_order(papers, extracted, matcher_for(vocab))
    units = mention_units(pairs)
    if executor is not None:
        if worker_settings is None:
            raise ValueError("an executor needs the settings its workers build from")
        accounting = getattr(normalizer.llm, "accounting", None)
        run = executor_batches(executor, worker_settings, vocab, normalizer.threshold, accounting)
    else:
        run = local_batches(normalizer)
    head = header(normalizer, extraction_header(normalizer.llm, vocab)["vocabulary"])
    done, resumed = run_checkpointed(units, out / CHECKPOINT, head, run, "normalizing mentions")
    results = [done[(u["sid"], u["hash"])] for u in units]
    normalizer.prime(
        [
            (u["mention"], u["type"], Normalized(**r["normalized"]))
            for u, r in zip(units, results, strict=True)
        ]
    )
    normalizer.stats = Counter()
    for r in results:
        normalizer.stats.update(r["stats"])
    return per_paper, resumed
