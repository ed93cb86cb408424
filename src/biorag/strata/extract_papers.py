"""BioStrataKG's per-paper extraction (entity triplets and the document level), resumable,
here or on a batch executor.

Each paper is one unit: its entity triplets and methods/datasets/domains, by the LLM with the
no-LLM floor for a paper whose call failed, or by the floor alone. Results are appended to
``OUT/strata_checkpoint.jsonl`` batch by batch (:mod:`biorag.executor.checkpoint`), so a build
killed midway extracts only the papers left when run again; the build deletes the file when it
has stored everything. On a Ray executor each worker builds the LLM from the settings and the
matchers from the vocabulary once; what comes back is what this process would have found, and
:func:`biorag.strata.build.build_strata` writes the store from it in paper order.
Normalization is the next stage (:mod:`biorag.strata.normalize_mentions`); the store's writes
stay in the driver.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from biorag.config import Settings
from biorag.errors import LLMError, LLMUnavailableError
from biorag.executor.checkpoint import RunBatches, content_hash, on_executor
from biorag.kg.extract_triplets import RULE_MODEL
from biorag.llm.accounting import Accounting, note_fallback
from biorag.llm.base import ChatModel
from biorag.llm.shared import SharedLLM
from biorag.strata.extract import (
    MentionMatcher,
    extract_doc_llm,
    extract_doc_rules,
    extract_triplets_llm,
    extract_triplets_rules,
)
from biorag.strata.vocab import Vocabulary
from biorag.strata.word_shapes import ShapeMatcher

log = logging.getLogger(__name__)

CHECKPOINT = "strata_checkpoint.jsonl"
PAPERS_PER_BATCH = 16


def paper_units(papers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One unit per paper: ``sid`` (pid), ``hash`` and ``paper`` (pid, title, abstract,
    keywords)."""
    out = []
    for p in papers:
        body = [
            str(p["pid"]),
            str(p.get("title") or ""),
            str(p.get("abstract") or ""),
            [str(k) for k in p.get("keywords") or []],
        ]
        out.append({"sid": body[0], "hash": content_hash(body), "paper": body})
    return out


def matcher_for(vocab: Vocabulary) -> MentionMatcher | ShapeMatcher:
    """Vocabulary lookup where there is a vocabulary, else word shapes."""
    return MentionMatcher(vocab) if len(vocab) else ShapeMatcher()


def header(llm: ChatModel | None, vocab: Vocabulary) -> dict[str, Any]:
    """What a checkpoint's results depend on: the extractor and the vocabulary."""
    entries = sorted([e.id, e.type, e.surfaces()] for e in vocab.entries)
    return {
        "checkpoint": 1,
        "extractor": RULE_MODEL if llm is None else f"llm:{llm.model}",
        "vocabulary": f"{len(entries)}:{content_hash(entries)}",
    }


def extract_paper(
    llm: ChatModel | None, vocab: Vocabulary, matcher: MentionMatcher | ShapeMatcher, unit: dict
) -> dict[str, Any]:
    """One paper's result: ``triplets``, ``doc``, ``model`` (who found the triplets),
    ``fell_back`` (an LLM call failed: the floor stood in) and ``tally`` (with an LLM: the
    LLM's triplets and document facts counted, None for a stage that failed)."""
    pid, title, abstract, keywords = unit["paper"]
    triplets, doc, model, fell_back = None, None, RULE_MODEL, False
    if llm is not None:
        try:
            triplets = extract_triplets_llm(llm, title, abstract, pid)
            model = str(llm.model)
            doc = extract_doc_llm(llm, title, abstract, keywords, pid)
        except LLMUnavailableError:
            raise  # no model at all: stop, do not run on without it
        except LLMError as e:
            log.warning("paper %s: LLM extraction failed (%s); using patterns", pid, e)
            fell_back = True
            note_fallback(llm, "strata_triplets")
    tally = None
    if llm is not None:
        facts = None if doc is None else [*doc.methods, *doc.datasets, *doc.domains]
        tally = [None if triplets is None else len(triplets), None if facts is None else len(facts)]
    if triplets is None:
        triplets = extract_triplets_rules(f"{title}. {abstract}", vocab, matcher)
    if doc is None:
        doc = extract_doc_rules(title, abstract, keywords)
    return {
        "sid": unit["sid"],
        "hash": unit["hash"],
        "triplets": [asdict(t) for t in triplets],
        "doc": asdict(doc),
        "model": model,
        "fell_back": fell_back,
        "tally": tally,
    }


def local_batches(llm: ChatModel | None, vocab: Vocabulary) -> RunBatches:
    """``run_batches`` in this process with the caller's LLM, a paper at a time."""
    matcher = matcher_for(vocab)

    def run(todo: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        for start in range(0, len(todo), PAPERS_PER_BATCH):
            chunk = todo[start : start + PAPERS_PER_BATCH]
            yield [extract_paper(llm, vocab, matcher, u) for u in chunk]

    return run


class PaperWorker:
    """A batch executor's worker: the LLM the settings describe (none: the floor) and the
    vocabulary's matcher, built once; each batch of paper units (JSON) comes back as JSON
    results, the batch's LLM accounting on the first."""

    def __init__(self, settings: dict[str, Any], vocab: Vocabulary) -> None:

        self.acc = Accounting()
        self.llm = SharedLLM(Settings.model_validate({**settings, "executor": {}})).client(self.acc)
        self.vocab, self.matcher = vocab, matcher_for(vocab)

    def __call__(self, batch: list[str]) -> list[str]:
        results = [extract_paper(self.llm, self.vocab, self.matcher, json.loads(x)) for x in batch]
        if results:
            results[0]["accounting"] = self.acc.report()
            self.acc.reset()
        return [json.dumps(r, ensure_ascii=False) for r in results]


def executor_batches(
    executor: Any, settings: dict[str, Any], vocab: Vocabulary, accounting: Any | None
) -> RunBatches:
    """``run_batches`` on ``executor``'s :class:`PaperWorker` s."""
    per_batch = max(1, min(PAPERS_PER_BATCH, executor.settings.batch_size))
    return on_executor(executor, PaperWorker, (settings, vocab), per_batch, accounting)
